"""A forced end that restarts E at E[0] (vLLM 0.33's legacy holder sets end_count = 0 when the budget runs out) is
TB-FORCE-2's, also where the first forced row takes the same token either way and only the free row after the close
shows it (``specconform.harness.checks.budget.replay``)."""

import pytest

from specconform.harness.adapters.oracle import OracleBudget, OracleEngine
from specconform.harness.checks.budget import replay_scenario
from specconform.harness.checks.budget.replay import BLAME_ORDER

# the minimal cases of the vLLM 0.33 legacy-runner run that were blamed on TB-MARK-1 and TB-PROMPT-3
ENDS_AFTER_PARTIAL_E = {  # S=[1] E=[7, 7], budget 1, prompt [1]: the model writes 7, which is E[0]
    "start": [1],
    "end": [7, 7],
    "prompt": [1],
    "budget": 1,
    "commits": [[7], [7], [0]],
    "expected": [[-1], [7], [-1]],
}
PROMPT_ENDS_IN_E = {  # S=[2] E=[0, 0], budget 0, the prompt [2, 0] ends with E[0]
    "start": [2],
    "end": [0, 0],
    "prompt": [2, 0],
    "budget": 0,
    "commits": [[0], [1]],
    "expected": [[0], [-1]],
}


def _vector(case: dict) -> dict:
    add = {"index": 0, "budget": case["budget"], "prompt_token_ids": case["prompt"]}
    steps = [
        {
            "update": {"batch_size": 1, "removed": [], "added": [add], "moved": []} if i == 0 else None,
            "num_draft_tokens": [0],
            "draft_token_ids": [],
            "expected_forced": expected,
            "sampled_token_ids": [commit],
        }
        for i, (commit, expected) in enumerate(zip(case["commits"], case["expected"]))
    ]
    return {
        "name": "end-restart",
        "requirements": list(BLAME_ORDER),
        "start_token_ids": case["start"],
        "end_token_ids": case["end"],
        "scope": "section",
        "max_num_reqs": 1,
        "steps": steps,
        "max_spec_len": 0,
    }


class EndRestartedAtBudget(OracleBudget):
    """One request, no drafts: once the oracle forces a row, forces E[0], E[1], ... from scratch until all of E is
    forced, whatever partial match of E the thinking tokens ended with."""

    next_end: int | None = None

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        if self.next_end is not None:
            return [self.batch.end.marker[self.next_end]]
        forced = super().forced_tokens(num_draft_tokens, draft_token_ids)
        return [self.batch.end.marker[0] if forced[0] != -1 else -1]

    def update_state(self, rows):
        forced = self.forced_tokens([0], [])[0]
        super().update_state(rows)
        if forced != -1:
            self.next_end = (self.next_end or 0) + 1
            self.next_end = None if self.next_end == len(self.batch.end) else self.next_end


class RestartsEnd(OracleEngine):
    def budget_state(self, *args, **kwargs):
        return EndRestartedAtBudget(super().budget_state(*args, **kwargs).batch)


@pytest.mark.req("TB-FORCE-2")
@pytest.mark.parametrize("case", [ENDS_AFTER_PARTIAL_E, PROMPT_ENDS_IN_E], ids=["model-wrote-E0", "prompt-ends-in-E0"])
def test_a_free_row_forced_after_a_restarted_end_is_tb_force_2(case):
    vector = _vector(case)
    assert replay_scenario(OracleEngine(), vector, tuple(BLAME_ORDER)) is None  # the rows are the oracle's
    divergence = replay_scenario(RestartsEnd(), vector, tuple(BLAME_ORDER))
    last = len(case["commits"]) - 1
    assert (divergence.fingerprint, divergence.step) == ("TB-FORCE-2/forced-a-free-row", last)
    assert divergence.got[0] == case["end"][1]  # E[1]: E[0] went to the row the oracle gave E[1]


@pytest.mark.req("TB-FORCE-2")
def test_a_restart_that_forces_the_same_rows_is_no_failure():
    """Where the thinking tokens end with no partial match of E, restarting E is what TB-FORCE-2 asks."""
    case = {**ENDS_AFTER_PARTIAL_E, "commits": [[5], [7], [7], [0]], "expected": [[-1], [7], [7], [-1]]}
    assert replay_scenario(RestartsEnd(), _vector(case), tuple(BLAME_ORDER)) is None
