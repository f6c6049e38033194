"""Properties of the thinking-budget oracle, checked against a naive segmentation."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specconform.harness.cases.budget import BudgetFamily
from specconform.harness.cases.budget import markers as marker_pairs
from specconform.harness.oracle import budget as tb
from specconform.harness.oracle.naive import sections, thinking_tokens

ALPHABET = st.integers(0, 3)  # small, so that markers recur and overlap often
# The oracle's automaton must hold for any markers, so this family lets S and E share ids.
MARKERS = marker_pairs(BudgetFamily(marker_lengths=(3, 3), alphabet=4, disjoint_markers=False))


@st.composite
def generations(draw):
    start, end = draw(MARKERS)
    prompt = draw(st.lists(ALPHABET, max_size=8))
    budget = draw(st.one_of(st.just(0), st.just(1), st.integers(0, 6), st.integers(20, 40)))
    scope = draw(st.sampled_from(tb.SCOPES))
    proposals = draw(st.lists(ALPHABET, min_size=1, max_size=40))
    return start, end, prompt, budget, scope, proposals


@pytest.mark.req("TB-MARK-1", "TB-MARK-2", "TB-MARK-3", "TB-COUNT-1")
@given(MARKERS, st.lists(ALPHABET, max_size=40))
@settings(max_examples=300, deadline=None)
def test_automaton_finds_the_same_sections_as_naive_slicing(pair, stream):
    start, end = pair
    state = tb.RequestBudget(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), budget=None)
    opened = []
    for i, token in enumerate(stream):
        was_open = state.in_section
        state.feed(token)
        if state.in_section and not was_open:
            opened.append(i + 1)
        if state.in_section:
            # count includes a trailing partial E (TB-COUNT-1)
            assert state.count == i + 1 - opened[-1]
    assert opened == [o for o, _ in sections(stream, start, end)]


@pytest.mark.req(
    "TB-FORCE-1",
    "TB-FORCE-2",
    "TB-SCOPE-1",
    "TB-SCOPE-2",
    "TB-PROMPT-1",
    "TB-PROMPT-2",
    "TB-PROMPT-3",
    "TB-FORCE-4",
)
@given(generations())
@settings(max_examples=400, deadline=None)
def test_no_section_ever_exceeds_its_budget(case):
    start, end, prompt, budget, scope, proposals = case
    state = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), budget, prompt, scope)
    out = tb.generate_with_budget(state, proposals)
    spent = 0
    for thinking, generated, _closed in thinking_tokens(prompt + out, start, end, len(prompt)):
        left = budget if scope == "section" else budget - spent
        prompt_part = thinking - generated
        assert generated <= max(left - prompt_part, 0), (thinking, generated, left)
        spent += thinking


@pytest.mark.req("TB-FORCE-1", "TB-NATURAL-1")
@given(MARKERS, st.integers(0, 8), st.lists(st.integers(4, 9), min_size=20, max_size=30))
@settings(max_examples=200, deadline=None)
def test_section_holds_exactly_the_budget_when_the_model_never_starts_the_end(pair, budget, filler):
    start, end = pair
    # The model opens a section and then proposes tokens outside both markers' alphabets.
    state = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), budget, [])
    out = tb.generate_with_budget(state, list(start) + filler)
    found = thinking_tokens(out, start, end, 0)
    assert found[0][2], "the section must be closed by forcing"
    assert found[0][0] == budget
    # E arrives whole, contiguous, right after the budget
    opened = len(start)
    assert out[opened + budget : opened + budget + len(end)] == list(end)


@pytest.mark.req("TB-NATURAL-1", "TB-UNTRACKED-1")
@given(generations())
@settings(max_examples=200, deadline=None)
def test_untracked_requests_and_natural_closes_are_never_forced(case):
    start, end, prompt, _, scope, proposals = case
    state = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), None, prompt, scope)
    assert tb.generate_with_budget(state, proposals) == proposals
    big = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), 10_000, prompt, scope)
    assert tb.generate_with_budget(big, proposals) == proposals


@pytest.mark.req("TB-SPEC-1", "TB-SPEC-2", "TB-SPEC-4", "TB-BATCH-5")
@given(generations(), st.lists(st.lists(ALPHABET, max_size=4), min_size=1, max_size=3))
@settings(max_examples=200, deadline=None)
def test_forced_rows_with_drafts_equal_sequential_replay(case, drafts_per_slot):
    start, end, prompt, budget, scope, proposals = case
    batch = tb.BudgetBatch(start, end, max_num_reqs=len(drafts_per_slot), scope=scope)

    class Update:
        batch_size = len(drafts_per_slot)
        removed = []
        added = [
            type("A", (), {"index": i, "budget": budget, "prompt_token_ids": prompt})
            for i in range(len(drafts_per_slot))
        ]
        moved = []

    batch.apply(Update)
    rows = batch.forced_rows([len(d) for d in drafts_per_slot], [t for d in drafts_per_slot for t in d])
    offset = 0
    for drafts in drafts_per_slot:
        for j in range(len(drafts) + 1):
            replay = tb.RequestBudget.from_prompt(batch.start, batch.end, budget, prompt, scope)
            for token in drafts[:j]:  # decoded one by one, as sequential decoding would commit them
                replay.feed(token)
            expected = replay.forced_token()
            assert rows[offset + j] == expected
        offset += len(drafts) + 1
    assert offset == len(rows)


@pytest.mark.req("TB-API-1", "TB-API-2")
@given(st.one_of(st.integers(-100, 100), st.booleans(), st.floats(allow_nan=True), st.text(max_size=3), st.none()))
def test_budget_validation(value):
    valid = value is None or (isinstance(value, int) and not isinstance(value, bool) and value >= -1)
    if valid:
        assert tb.validate_budget(value) == (None if value in (None, -1) else value)
    else:
        with pytest.raises(ValueError, match="budget"):
            tb.validate_budget(value)
