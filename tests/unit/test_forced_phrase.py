"""Forced versus natural end (specs/thinking-budget.md §9, TB-END-1/2/3): the oracle's semantics on cases
worked out by hand from the spec, the validation of F, and the ``forced_end`` profile declaration."""

import pytest

from specconform.harness import checks, profiles
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.core import PASS, Context
from specconform.harness.oracle import budget as tb

S, E, F = (9,), (7, 8), (3, 4, 7, 8)  # F = the phrase [3, 4] then E


def _generate(budget, prompt, proposals, forced=F):
    batch = tb.BudgetBatch(S, E, 1, forced_token_ids=forced)
    state = batch.request_type.from_prompt(batch.start, batch.end, budget, prompt, "request", batch.forced)
    return tb.generate_with_budget(state, proposals), state


def test_the_phrase_then_the_end_marker_is_forced_and_the_section_closes():
    out, state = _generate(2, [9], [5, 5, 5, 5, 5, 5, 5, 5])
    assert out == [5, 5, 3, 4, 7, 8, 5, 5]
    assert state.sections == [4] and not state.in_section  # the phrase's tokens are thinking tokens


def test_forcing_continues_the_phrase_the_model_began():
    out, _ = _generate(2, [9], [5, 3, 5, 5, 5, 5])
    assert out == [5, 3, 4, 7, 8, 5]


def test_a_partial_end_marker_is_not_continued_when_it_is_not_a_partial_phrase():
    out, _ = _generate(2, [9], [5, 7, 5, 5, 5, 5, 5])
    assert out == [5, 7, 3, 4, 7, 8, 5]


def test_the_end_marker_alone_closes_the_section():
    out, state = _generate(3, [9], [5, 7, 8, 5, 5, 5, 5])
    assert out == [5, 7, 8, 5, 5, 5, 5] and state.sections == [1] and state.forced_positions == 0


def test_request_scope_spends_the_phrase():
    out, _ = _generate(4, [9], [5, 5, 7, 8, 9, 5, 5, 5, 5, 5])  # 2 spent, 2 left in the re-opened section
    assert out == [5, 5, 7, 8, 9, 5, 5, 3, 4, 7, 8][:10]


@pytest.mark.parametrize(
    "forced, problem",
    [((3, 4), "must end with the end marker"), ((7, 8, 3, 7, 8), "only at its end"), ((), "at least one")],
)
def test_a_forced_sequence_that_is_not_a_phrase_then_e_is_an_error_naming_the_field(forced, problem):
    with pytest.raises(ValueError, match="forced_token_ids") as error:
        tb.BudgetBatch(S, E, 1, forced_token_ids=forced)
    assert problem in str(error.value)


def test_forcing_e_itself_is_the_canonical_marker_variant():
    assert tb.BudgetBatch(S, E, 1, forced_token_ids=E).forced is None


def test_the_profile_declares_the_phrase_and_claims_its_class(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("forced_end: phrase\n")
    declared = profiles.load_profile(str(path))
    assert declared.forced_end == "phrase" and declared.claims("tb.forced-phrase")
    assert not profiles.canonical().claims("tb.forced-phrase")
    path.write_text("forced_end: words\n")
    with pytest.raises(ValueError, match="forced_end must be one of marker, phrase; got 'words'"):
        profiles.load_profile(str(path))


def test_the_oracle_declaring_the_phrase_passes_the_check():
    engine = OracleEngine()
    engine.profile = profiles.with_variant(engine.profile, "forced_end", "phrase")
    outcome = checks.by_name()["budget/forced-phrase"].run(engine, Context(profile=engine.profile))
    assert outcome.status == PASS, outcome.message
    assert all(result.cases for result in outcome.requirements.values())


OTHER = (6,)  # an end marker accepted beside E (TB-END-3)


def _generate_with_others(budget, proposals, others=(OTHER,), forced=None):
    batch = tb.BudgetBatch(S, E, 1, forced_token_ids=forced, other_end_token_ids=others)
    state = batch.request_type.from_prompt(batch.start, batch.end, budget, [9], "request", batch.forced, batch.others)
    return tb.generate_with_budget(state, proposals), state


def test_another_accepted_end_marker_closes_the_section():
    out, state = _generate_with_others(3, [5, 6, 5, 5, 5, 5])
    assert out == [5, 6, 5, 5, 5, 5] and state.sections == [1] and not state.in_section


def test_the_budget_still_forces_e_and_never_continues_another_marker():
    out, state = _generate_with_others(2, [5, 5, 5, 5], others=((6, 5),))  # 6 then 5 would close; 5 5 does not
    assert out == [5, 5, 7, 8] and state.sections == [2]


def test_the_longest_marker_completing_at_a_token_closed_the_section():
    out, state = _generate_with_others(5, [5, 7, 8, 5], others=((8,),))  # E = [7, 8] and [8] complete together
    assert state.sections == [1]


def test_another_end_marker_inside_the_forced_phrase_is_an_error_naming_both_fields():
    with pytest.raises(ValueError, match="other_end_token_ids \\[4\\] occurs inside forced_token_ids"):
        tb.BudgetBatch(S, E, 1, forced_token_ids=F, other_end_token_ids=[(4,)])


def test_the_oracle_declaring_several_end_markers_passes_the_check():
    engine = OracleEngine()
    engine.profile = profiles.with_variant(engine.profile, "end_markers", "several")
    assert engine.profile.claims("tb.end-markers") and not profiles.canonical().claims("tb.end-markers")
    outcome = checks.by_name()["budget/other-end-markers"].run(engine, Context(profile=engine.profile))
    assert outcome.status == PASS, outcome.message
    assert outcome.requirements["TB-END-3"].cases
