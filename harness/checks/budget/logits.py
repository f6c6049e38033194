"""The thinking-budget check on logits (``budget/forced-logits``): forced rows become one-hot, or hold the declared
large constant, and free rows stay untouched; a forced row after drafts left as it was is TB-SPEC-1's failure."""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import AddedRequest, BatchUpdate

from ...core import Context, Outcome, Tally
from ...vectors import FORMAT_VERSION
from .. import attribution
from ..catalogue import check

LARGE_FORCED_LOGIT = 1e8  # the least a large-constant forced cell may hold (vLLM writes 1e9)


# The drafted case of ``budget/forced-logits`` as a scenario of the golden-vector format: request 0 opens a section
# in its prompt with budget 2 and E = [7, 8], spends one token in an ordinary step, then drafts [3, 7]; the budget
# forces E[0] after 3 and E[1] after 7 (row 0 free). The check's untracked request 1 is left out: its rows are
# judged under TB-UNTRACKED-1 alone.
_DRAFTED_CASE = {
    "name": "end-marker-forced-across-drafts",
    "description": "the drafted case of budget/forced-logits: budget 2 in a prompt-opened section, one ordinary step "
    "(4), then drafts [3, 7]: the budget forces E[0] = 7 after 3 and E[1] = 8 after 7",
    "start_token_ids": [1],
    "end_token_ids": [7, 8],
    "scope": "section",
    "max_num_reqs": 1,
    "steps": [
        {
            "update": {
                "batch_size": 1,
                "removed": [],
                "added": [{"index": 0, "budget": 2, "prompt_token_ids": [1]}],
                "moved": [],
            },
            "num_draft_tokens": [0],
            "draft_token_ids": [],
            "expected_forced": [-1],
            "sampled_token_ids": [[4]],
        },
        {
            "update": None,
            "num_draft_tokens": [2],
            "draft_token_ids": [3, 7],
            "expected_forced": [-1, 7, 8],
            "sampled_token_ids": [[3, 7, 8]],
        },
    ],
    "max_spec_len": 2,
}
_DRAFTED_FEATURES = ("drafts", "multi-token-markers", "prompt-opened")


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

    Both forcing requirements are about how a forced position is forced. A forced row after drafts that the engine
    leaves as it was is not forced at all: that failure is TB-SPEC-1's (the row's state includes the drafts before
    it), and the check's own requirement reads BLOCKED by it."""
    variant = ctx.profile.forced_logit == "large-constant"
    forced_rid = "TB-FORCE-6" if variant else "TB-FORCE-5"
    tally = Tally((forced_rid, "TB-UNTRACKED-1"))
    state = engine.budget_state([1], [7, 8], 2, ctx.profile.scope, max_spec_len=2)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 2, (1,)), AddedRequest(1, None, (1,)))))
    state.forced_tokens(None, None)
    state.update_state([[4], [4]])  # one ordinary step: request 0 has spent one of its two tokens
    rng = np.random.default_rng(ctx.seed)
    logits = rng.normal(size=(5, 12)).astype(np.float32)
    logits[1, 7] = -np.inf  # the forced token was masked before
    out = np.asarray(state.apply_to_logits(logits.copy(), [2, 1], [3, 7, 5]))
    # request 0: after 4 and 3 the budget forces E[0], after 7 E[1]; rows 3 and 4 belong to the untracked request
    judged = [(logits, out, [-1, 7, 8, -1, -1], 3, _DRAFTED_FEATURES)]
    plain = engine.budget_state([1], [0], 2, ctx.profile.scope)  # E = [0]: the forced token is the id 0
    plain.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 0, (1,)), AddedRequest(1, None, (1,)))))
    logits = rng.normal(size=(2, 12)).astype(np.float32)
    judged.append((logits, np.asarray(plain.apply_to_logits(logits.copy())), [0, -1], 1, ("prompt-opened",)))
    judged.append(_non_finite_case(engine, ctx, rng))
    for logits, out, expected, untracked_from, features in judged:
        _judge_forced_logits(logits, out, expected, untracked_from, forced_rid, variant, tally, features)
    if variant:
        return tally.outcome(
            f"forced cells hold at least {LARGE_FORCED_LOGIT:g} (declared variant), rest untouched, NaN and ±inf cells "
            "included"
        )
    return tally.outcome(
        "forced rows one-hot (0 / -inf), free rows untouched, with drafts and without, NaN and ±inf cells included"
    )


def _non_finite_case(engine, ctx: Context, rng) -> tuple:
    """Logits float32 ``[3, 12]`` holding NaN, +inf and -inf (legal logits: thinking-budget.md section 10 asks only
    for a floating-point tensor) for a forced row (request 0, budget 0 in a prompt-opened section, E = [3]: NaN at
    the forced token 3 itself), a tracked free row (request 1, budget 5) and an untracked row (request 2). The forced
    row becomes one-hot whatever it held (TB-FORCE-5: nothing earlier changes a forced position), the free rows keep
    their non-finite cells bit for bit. ``(logits, output, expected forced ids, first untracked row, features)``."""
    state = engine.budget_state([1], [3], 3, ctx.profile.scope)
    added = (AddedRequest(0, 0, (1,)), AddedRequest(1, 5, (1,)), AddedRequest(2, None, (1,)))
    state.sync_batch(BatchUpdate(3, added=added))
    logits = rng.normal(size=(3, 12)).astype(np.float32)
    logits[:, 3] = np.nan
    logits[:, 5] = np.inf
    logits[:, 6] = -np.inf
    logits[1:, 0] = np.nan
    return logits, np.asarray(state.apply_to_logits(logits.copy())), [3, -1, -1], 2, ("prompt-opened",)


def _judge_forced_logits(
    logits, out, expected, untracked_from: int, forced_rid: str, variant: bool, tally, features=()
) -> None:
    """Each row of ``out`` float32 ``[rows, V]`` against ``logits`` before the call: one-hot (or, under the
    large-constant variant, large) at ``expected[row]`` where that is a token, unchanged where it is -1; rows from
    ``untracked_from`` on belong to untracked requests (TB-UNTRACKED-1). ``features`` are the case's
    (``attribution.CASE_FEATURES``): with drafts, a forced row after them left unchanged is TB-SPEC-1's failure."""
    for row, token in enumerate(expected):
        if token == -1:
            rid = "TB-UNTRACKED-1" if row >= untracked_from else forced_rid
            if np.array_equal(out[row], logits[row], equal_nan=True):
                tally.exercised(rid)
            else:
                tally.violated(rid, "free-row-changed", f"free row {row} was changed: {out[row].tolist()}")
        elif "drafts" in features and row > 0 and np.array_equal(out[row], logits[row], equal_nan=True):
            _record_unforced_draft_row(tally, forced_rid, row, token, features)
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


def _record_unforced_draft_row(tally: Tally, forced_rid: str, row: int, token: int, features) -> None:
    """A row after drafts that the budget forces to ``token``, left unchanged: the row was not forced at all, which
    is TB-SPEC-1's failure (row ``j`` judged on the state after the drafts before it), not the forcing form's; its
    reproduction is the drafted case as a scenario, and ``forced_rid`` reads BLOCKED by it."""
    finding = attribution.finding_key("TB-SPEC-1", features)
    reproduction = {
        "format": FORMAT_VERSION,
        "kind": "thinking-budget",
        "fingerprint": "TB-SPEC-1/left-a-forced-row-free",
        "scenarios": [{**_DRAFTED_CASE, "requirements": ["TB-SPEC-1"]}],
        "errors": [],
        "finding": finding,
    }
    tally.blocked(forced_rid, finding, f"forced row {row} after drafts was not forced at all (TB-SPEC-1)")
    tally.violated(
        "TB-SPEC-1",
        "left-a-forced-row-free",
        f"forced row {row} after drafts [3, 7] (the budget forces {token}) was left as it was",
        reproduction=reproduction,
        finding=finding,
    )
