"""The thinking-budget check on logits (``budget/forced-logits``): forced rows become one-hot, or hold the declared
large constant, and free rows stay untouched. Which rows are forced is judged first, as a scenario: a case whose forced
rows leave the oracle's is that failure, minimised and attributed (``minimal``)."""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import AddedRequest, BatchUpdate

from ...cases.budget import BudgetScenario
from ...core import Context, Outcome, Tally
from ...vectors import FORMAT_VERSION, SlotStep
from .. import attribution
from ..catalogue import check
from .minimal import judge_scenario

LARGE_FORCED_LOGIT = 1e8  # the least a large-constant forced cell may hold (vLLM writes 1e9)


def _case(start, end, budgets: tuple, steps: tuple, scope: str) -> BudgetScenario:
    """A scenario of requests ``budgets`` (each with the prompt ``(1,)``, which opens a section when S = [1]) and
    ``steps``: each step the drafts of each request (the last step is the one judged)."""
    added = BatchUpdate(len(budgets), added=tuple(AddedRequest(i, b, (1,)) for i, b in enumerate(budgets)))
    proposals = [tuple(SlotStep(list(drafts), 0, 4) for drafts in step) for step in steps]
    return BudgetScenario(
        tuple(start),
        tuple(end),
        scope,
        len(budgets),
        tuple((added if i == 0 else None, p) for i, p in enumerate(proposals)),
    )


@check(
    "budget/forced-logits",
    cls="tb.core",
    covers=("TB-FORCE-5", "TB-FORCE-6", "TB-UNTRACKED-1"),
    needs=("budget", "budget-logits"),
    description="forced rows become one-hot (or hold the declared large constant), free rows stay untouched",
)
def forced_logits_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-FORCE-5 (TB-FORCE-6 under the declared large-constant variant) and TB-UNTRACKED-1 on logits,
    after one ordinary step (drafts only once output exists), and on logits holding NaN and ±inf
    (``_non_finite_case``).

    Both forcing requirements are about how a forced position is forced, not which: each case is first replayed as a
    scenario through ``forced_tokens``, and where its forced rows leave the oracle's (a forced row after drafts not
    forced at all is TB-SPEC-1's), that failure is minimised and attributed, and the check's own requirement reads
    BLOCKED by it."""
    variant = ctx.profile.forced_logit == "large-constant"
    forced_rid = "TB-FORCE-6" if variant else "TB-FORCE-5"
    tally = Tally((forced_rid, "TB-UNTRACKED-1"))
    scope = ctx.profile.scope
    rng = np.random.default_rng(ctx.seed)
    cases = (
        # request 0 (budget 2, E = [7, 8]) spends one token (4), then drafts [3, 7]: E[0] is forced after 3, E[1]
        # after 7; request 1 is untracked
        (_case([1], [7, 8], (2, None), (((), ()), ((3, 7), (5,))), scope), 2, lambda: _drafted_case(engine, ctx, rng)),
        # budget 0 in the prompt's section with E = [0]: the forced token is the id 0
        (_case([1], [0], (0, None), (((), ()),), scope), 0, lambda: _plain_case(engine, ctx, rng)),
        (_case([1], [3], (0, 5, None), (((), (), ()),), scope), 0, lambda: _non_finite_case(engine, ctx, rng)),
    )
    for number, (scenario, max_spec, judged_logits) in enumerate(cases):
        # which rows are forced, and to what, is the forcing rule's matter: a case whose forced rows already leave the
        # oracle's is that failure (minimised and attributed), and how this case's rows are forced is not judged past it
        found = judge_scenario(engine, ctx.profile, tally, (forced_rid,), scenario, max_spec, f"case {number}")
        if found:
            continue
        drafted = scenario.vector(f"case-{number}", ["TB-SPEC-1"]) if max_spec else None
        _judge_forced_logits(*judged_logits(), forced_rid, variant, tally, drafted)
    if variant:
        return tally.outcome(
            f"forced cells hold at least {LARGE_FORCED_LOGIT:g} (declared variant), rest untouched, NaN and ±inf cells "
            "included"
        )
    return tally.outcome(
        "forced rows one-hot (0 / -inf), free rows untouched, with drafts and without, NaN and ±inf cells included"
    )


# (logits float32 [rows, V] before the call, the engine's output, the expected forced id of each row (-1: free),
# the first untracked row): a case _judge_forced_logits judges
_Judged = tuple[np.ndarray, np.ndarray, list[int], int]


def _drafted_case(engine, ctx: Context, rng) -> _Judged:
    """Logits float32 ``[5, 12]`` after drafts ``[3, 7]`` of request 0 (budget 2, E = [7, 8], one token spent) and
    ``[5]`` of the untracked request 1, the forced token masked before in row 1. ``(logits, output, expected
    forced ids, first untracked row)``."""
    state = engine.budget_state([1], [7, 8], 2, ctx.profile.scope, max_spec_len=2)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 2, (1,)), AddedRequest(1, None, (1,)))))
    state.forced_tokens(None, None)
    state.update_state([[4], [4]])
    logits = rng.normal(size=(5, 12)).astype(np.float32)
    logits[1, 7] = -np.inf
    return logits, np.asarray(state.apply_to_logits(logits.copy(), [2, 1], [3, 7, 5])), [-1, 7, 8, -1, -1], 3


def _plain_case(engine, ctx: Context, rng) -> _Judged:
    """Logits float32 ``[2, 12]`` of request 0 (budget 0 in the prompt's section, E = [0]) and an untracked one."""
    plain = engine.budget_state([1], [0], 2, ctx.profile.scope)
    plain.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 0, (1,)), AddedRequest(1, None, (1,)))))
    logits = rng.normal(size=(2, 12)).astype(np.float32)
    return logits, np.asarray(plain.apply_to_logits(logits.copy())), [0, -1], 1


def _non_finite_case(engine, ctx: Context, rng) -> _Judged:
    """Logits float32 ``[3, 12]`` holding NaN, +inf and -inf (legal logits: thinking-budget.md section 10 asks only
    for a floating-point tensor) for a forced row (request 0, budget 0 in a prompt-opened section, E = [3]: NaN at
    the forced token 3 itself), a tracked free row (request 1, budget 5) and an untracked row (request 2). The forced
    row becomes one-hot whatever it held (TB-FORCE-5: nothing earlier changes a forced position), the free rows keep
    their non-finite cells bit for bit. ``(logits, output, expected forced ids, first untracked row)``."""
    state = engine.budget_state([1], [3], 3, ctx.profile.scope)
    added = (AddedRequest(0, 0, (1,)), AddedRequest(1, 5, (1,)), AddedRequest(2, None, (1,)))
    state.sync_batch(BatchUpdate(3, added=added))
    logits = rng.normal(size=(3, 12)).astype(np.float32)
    logits[:, 3] = np.nan
    logits[:, 5] = np.inf
    logits[:, 6] = -np.inf
    logits[1:, 0] = np.nan
    return logits, np.asarray(state.apply_to_logits(logits.copy())), [3, -1, -1], 2


def _judge_forced_logits(
    logits, out, expected, untracked_from: int, forced_rid: str, variant: bool, tally, drafted: dict | None = None
) -> None:
    """Each row of ``out`` float32 ``[rows, V]`` against ``logits`` before the call: one-hot (or, under the
    large-constant variant, large) at ``expected[row]`` where that is a token, unchanged where it is -1; rows from
    ``untracked_from`` on belong to untracked requests (TB-UNTRACKED-1). ``drafted`` is the case as a scenario where it
    has drafts: a forced row after them that the logits leave as they were was not forced at all (the forced tokens
    say it is), which is TB-SPEC-1's failure (the row's state includes the drafts before it), not the forcing form's."""
    for row, token in enumerate(expected):
        if token == -1:
            rid = "TB-UNTRACKED-1" if row >= untracked_from else forced_rid
            if np.array_equal(out[row], logits[row], equal_nan=True):
                tally.exercised(rid)
            else:
                tally.violated(rid, "free-row-changed", f"free row {row} was changed: {out[row].tolist()}")
        elif drafted and row > 0 and np.array_equal(out[row], logits[row], equal_nan=True):
            _record_unforced_draft_row(tally, forced_rid, row, token, drafted)
        elif variant:  # the declared variant (TB-FORCE-6)
            if not (np.isfinite(out[row, token]) and out[row, token] >= LARGE_FORCED_LOGIT):
                tally.violated(
                    "TB-FORCE-6", "forced-logit-not-large", f"forced row {row}: {out[row, token]} at {token}"
                )
            elif not np.array_equal(np.delete(out[row], token), np.delete(logits[row], token), equal_nan=True):
                tally.violated(
                    "TB-FORCE-6", "other-cells-changed", f"forced row {row}: cells other than {token} were changed"
                )
            else:
                tally.exercised("TB-FORCE-6")
        elif out[row, token] == 0 and np.isneginf(np.delete(out[row], token)).all():
            tally.exercised("TB-FORCE-5")
        else:
            tally.violated(
                "TB-FORCE-5",
                "forced-row-not-one-hot",
                f"forced row {row} is not one-hot at {token}: {out[row].tolist()}",
            )


def _record_unforced_draft_row(tally: Tally, forced_rid: str, row: int, token: int, drafted: dict) -> None:
    """A row after drafts that the budget forces to ``token``, left unchanged by the logits: recorded under TB-SPEC-1
    with the drafted case as its reproduction, and ``forced_rid`` reads BLOCKED by it."""
    finding = attribution.finding_key("TB-SPEC-1", attribution.case_features(drafted))
    reproduction = {
        "format": FORMAT_VERSION,
        "kind": "thinking-budget",
        "fingerprint": "TB-SPEC-1/left-a-forced-row-free",
        "scenarios": [drafted],
        "errors": [],
        "finding": finding,
    }
    tally.blocked(forced_rid, finding, f"forced row {row} after drafts was not forced at all (TB-SPEC-1)")
    tally.violated(
        "TB-SPEC-1",
        "left-a-forced-row-free",
        f"forced row {row} after drafts (the budget forces {token}) was left as it was",
        reproduction=reproduction,
        finding=finding,
    )
