"""Thinking-budget scenarios as an exported test states them: the case's literals and, per step, the forced token of
each logits row as the specification's oracle computes it.

A scenario (``specs/vectors/README.md``) is a sequence of engine steps over a persistent batch: each step's batch
update (``None``: unchanged), the drafts per slot (``num_draft_tokens [B]``, ``draft_token_ids`` flat), and the tokens
each slot commits after it (``sampled_token_ids``, one list per slot, ``-1`` padded). The expected rows are computed
here exactly as ``specconform replay`` computes them (``checks.budget.replay_scenario``): the oracle's
``BudgetBatch`` fed the same updates and commits. A draft row after the first draft a forced row rejects is discarded
by the engine whatever it holds (TB-SPEC-1), so it is ``None``: not judged, as the checks do not judge it.
"""

from __future__ import annotations

from dataclasses import dataclass

from specconform.specs.interface import BatchUpdate

from ..core import UsageError
from ..oracle import budget as tb


@dataclass
class BudgetCase:
    """One scenario, ready to be written as literals: ``steps`` keep the vector's own fields (plain JSON values);
    ``expected[i]`` holds one entry per logits row of step ``i`` (``sum(K_b + 1)`` rows): the forced id, ``-1`` for
    a free row, ``None`` for a discarded one."""

    name: str
    description: str
    requirements: list[str]
    start_token_ids: list[int]
    end_token_ids: list[int]
    scope: str
    max_num_reqs: int
    max_spec_len: int
    steps: list[dict]
    expected: list[list[int | None]]

    @property
    def has_drafts(self) -> bool:
        return any(any(step["num_draft_tokens"]) for step in self.steps)

    @property
    def longest_marker(self) -> int:
        return max(len(self.start_token_ids), len(self.end_token_ids))


def _judged(expected: list[int], num_draft_tokens: list[int], draft_token_ids: list[int]) -> list[int | None]:
    """``expected`` with the rows after a slot's first rejected draft set to ``None`` (TB-SPEC-1)."""
    out: list[int | None] = []
    row = offset = 0
    for k in num_draft_tokens:
        drafts = draft_token_ids[offset : offset + k]
        offset += k
        kept = tb.observable_rows(expected[row : row + k + 1], drafts)
        out += expected[row : row + kept] + [None] * (k + 1 - kept)
        row += k + 1
    return out


def budget_case(scenario: dict) -> BudgetCase:
    """The scenario with the oracle's forced rows; ``UsageError`` for a variant no exported test states (a forced end
    sequence other than E, TB-END-1, or further end markers, TB-END-3)."""
    if scenario.get("forced_token_ids") is not None or scenario.get("other_end_token_ids"):
        raise UsageError(
            f"scenario {scenario['name']!r} declares a forced end sequence or further end markers (TB-END-1, "
            "TB-END-3): no engine idiom states them yet"
        )
    start, end, scope = list(scenario["start_token_ids"]), list(scenario["end_token_ids"]), scenario["scope"]
    max_num_reqs = int(scenario["max_num_reqs"])
    max_spec_len = int(
        scenario.get("max_spec_len", max((max(s["num_draft_tokens"], default=0) for s in scenario["steps"]), default=0))
    )
    oracle = tb.BudgetBatch(start, end, max_num_reqs, scope)
    steps, expected = [], []
    for step in scenario["steps"]:
        if step["update"] is not None:
            oracle.apply(BatchUpdate.from_json(step["update"]))
        num, drafts = [int(k) for k in step["num_draft_tokens"]], [int(t) for t in step["draft_token_ids"]]
        expected.append(_judged([int(t) for t in oracle.forced_rows(num, drafts)], num, drafts))
        committed = [[int(t) for t in row] for row in step["sampled_token_ids"]]
        oracle.commit(committed)
        steps.append(
            {
                "update": step["update"],
                "num_draft_tokens": num,
                "draft_token_ids": drafts,
                "sampled_token_ids": committed,
            }
        )
    return BudgetCase(
        scenario["name"],
        scenario.get("description", ""),
        list(scenario["requirements"]),
        start,
        end,
        scope,
        max_num_reqs,
        max_spec_len,
        steps,
        expected,
    )


# The test each scenario becomes: the engine's driver (``EngineBudget``, the idiom's) stepped through the case, each
# step's forced rows compared with the oracle's. Shared by every engine idiom.
REPLAY = '''
def replay(case):
    """Step the engine through ``case``; fail at the first step whose forced rows differ from the expected ones."""
    budget = EngineBudget(
        case["start_token_ids"], case["end_token_ids"], case["max_num_reqs"], case["scope"], case["max_spec_len"]
    )
    for index, (step, expected) in enumerate(zip(case["steps"], case["expected_forced"])):
        budget.sync_batch(step["update"])
        forced = [int(t) for t in budget.forced_tokens(step["num_draft_tokens"], step["draft_token_ids"])]
        judged = [None if want is None else got for got, want in zip(forced, expected)]
        assert len(forced) == len(expected) and judged == expected, (
            f"step {index}: forced rows {forced}, expected {expected} (-1: free; None: not judged)"
        )
        budget.update_state(step["sampled_token_ids"])
'''
