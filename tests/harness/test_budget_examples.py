"""The scenarios every budget check of a family judges before its drawn ones
(``specconform.harness.cases.budget.EXAMPLES``): reachable, judged by the oracle as their comments say, passed by the
reference, and failed on their own requirement by an engine with the defect each one catches."""

import pytest

from specconform.harness.adapters.oracle import OracleBudget, OracleEngine
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.adapters.zoo import make_mutant
from specconform.harness.cases.budget import EXAMPLES, BudgetFamily, unreachable
from specconform.harness.checks.budget import replay_scenario

TB_CORE = ("TB-MARK-1", "TB-COUNT-1", "TB-FORCE-1", "TB-FORCE-4", "TB-NATURAL-1", "TB-UNTRACKED-1")
TB_PROMPT = ("TB-PROMPT-1", "TB-PROMPT-2", "TB-PROMPT-3")


def _vector(name: str) -> dict:
    vector = EXAMPLES[name].vector(name, [])
    vector["max_spec_len"] = 0
    return vector


class CloseHiddenByStrayEnd(OracleBudget):
    """Misses the first natural close after an end marker emitted before any start marker (one-token
    markers): the section stays open and keeps counting, as a stale end-marker position would make it."""

    stray = False

    def update_state(self, rows):
        (start,), (end,) = self.batch.start.marker, self.batch.end.marker
        seen = []
        for token in (t for t in rows[0] if t != -1):
            if token == end and self.stray == "opened":
                self.stray, token = False, max(start, end) + 1  # the close goes unseen: a token that is no marker
            elif token == end and not self.stray:
                self.stray = "stray"
            elif token == start and self.stray == "stray":
                self.stray = "opened"
            seen.append(token)
        super().update_state([seen + [-1] * (len(rows[0]) - len(seen))])


class HidesCloseAfterStrayEnd(OracleEngine):
    def budget_state(self, *args, **kwargs):
        return CloseHiddenByStrayEnd(super().budget_state(*args, **kwargs).batch)


def test_every_example_is_reachable_and_its_last_row_is_as_its_comment_says():
    assert all(unreachable(example) is None for example in EXAMPLES.values())
    rows = [step["expected_forced"] for step in _vector("stray-end-then-sections")["steps"]]
    assert rows == [[-1]] * 5  # the second section starts with nothing spent: nothing is ever forced
    assert _vector("start-inside-prompt-section")["steps"][0]["expected_forced"] == [2]
    assert _vector("partial-end-after-repeated-start")["steps"][0]["expected_forced"] == [3]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_reference_passes_every_example(name):
    assert replay_scenario(ReferenceEngine(), _vector(name), TB_CORE + TB_PROMPT) is None


@pytest.mark.req("TB-NATURAL-1")
def test_a_close_hidden_by_a_stray_end_fails_tb_natural_1():
    divergence = replay_scenario(HidesCloseAfterStrayEnd(), _vector("stray-end-then-sections"), TB_CORE)
    assert divergence.fingerprint == "TB-NATURAL-1/forced-a-free-row" and divergence.step == 4


@pytest.mark.req("TB-PROMPT-1", "TB-PROMPT-3")
@pytest.mark.parametrize(
    "name,fingerprint",
    [
        # only the prompt's two tokens after S put the count at the budget: the row left free is TB-PROMPT-1's, which
        # TB-PROMPT-2 (the first generated token forced) builds on
        ("start-inside-prompt-section", "TB-PROMPT-1/left-a-forced-row-free"),
        ("partial-end-after-repeated-start", "TB-PROMPT-3/left-a-forced-row-free"),
    ],
)
def test_a_count_restarted_by_a_repeated_start_fails_the_prompt_examples(name, fingerprint):
    mutant = make_mutant("start-looked-for-inside-section")  # counts from the last S, as vLLM 0.33's MRV2 does
    assert replay_scenario(mutant, _vector(name), TB_PROMPT).fingerprint == fingerprint


def test_an_example_the_family_cannot_draw_is_refused():
    with pytest.raises(ValueError, match=r"examples\[0\] is not a scenario of this family: markers of lengths"):
        BudgetFamily(examples=(EXAMPLES["partial-end-after-repeated-start"],))
