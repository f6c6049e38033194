"""Thinking-budget checks of the input contract: budget values and markers validated (``budget/api``), and batch
updates naming an emptied or out-of-range slot, or logits of the wrong row count, rejected naming the field
(``budget/batch-errors``)."""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import AddedRequest, BatchUpdate, Move

from ...cases.budget import BudgetScenario
from ...core import Context, Outcome, Tally
from ...vectors import SlotStep
from ..catalogue import check
from .minimal import judge_scenario


@check(
    "budget/api",
    cls="tb.api",
    covers=("TB-API-1", "TB-API-2", "TB-API-3"),
    needs=("budget",),
    description="budget values and markers are validated",
)
def api_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-API-1..3: untracked budgets, invalid budgets rejected naming the field (the floats among them NaN and
    ±inf, which an int32 budget field would cast to an arbitrary integer), empty markers rejected."""
    tally = Tally(requirements)
    for value in (-2, True, 1.5, "1", float("nan"), float("inf"), float("-inf")):
        try:
            state = engine.budget_state([1], [2], 2, ctx.profile.scope)
            state.sync_batch(BatchUpdate(1, added=(AddedRequest(0, value, (1,)),)))
        except (ValueError, TypeError, ArithmeticError) as exc:  # int(inf) raises OverflowError: no field named
            if "budget" in str(exc):
                tally.exercised("TB-API-2")
            else:
                tally.violated("TB-API-2", "error-does-not-name-budget", f"budget {value!r} rejected as: {exc}")
            continue
        tally.violated("TB-API-2", "invalid-budget-accepted", f"budget {value!r} was accepted")
    state = engine.budget_state([1], [2], 2, ctx.profile.scope)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, -1, (1, 3)), AddedRequest(1, None, (1, 3)))))
    if any(int(x) != -1 for x in state.forced_tokens(None, None)):
        tally.violated("TB-API-1", "untracked-request-forced", "a request with budget -1 or None was forced")
    else:
        tally.exercised("TB-API-1")
    for start, end in (([], [2]), ([1], [])):
        try:
            engine.budget_state(start, end, 2, ctx.profile.scope)
        except ValueError:
            tally.exercised("TB-API-3")
            continue
        tally.violated("TB-API-3", "empty-marker-accepted", f"empty marker accepted: S={start} E={end}")
    _extreme_values(engine, ctx, tally)
    return tally.outcome(
        "invalid budgets and markers rejected naming the field; -1 and None untracked; markers holding the largest "
        "token id and a budget beyond 32 bits work"
    )


def _extreme_case(start: int, end: int, large_budget: int) -> BudgetScenario:
    """Three requests: budget 0 and ``large_budget`` with prompts that open a section (``5, S``), and budget 0 with
    a prompt that does not (``5``). Request 0 commits the forced E, request 1 a thinking token, request 2 S; in the
    judged step E is forced for request 2 alone."""
    added = (AddedRequest(0, 0, (5, start)), AddedRequest(1, large_budget, (5, start)), AddedRequest(2, 0, (5,)))
    first = (SlotStep([], 0, end), SlotStep([], 0, 6), SlotStep([], 0, start))
    judged = tuple(SlotStep([], 0, 6) for _ in range(3))
    return BudgetScenario((start,), (end,), "request", 3, ((BatchUpdate(3, added=added), first), (None, judged)))


def _extreme_values(engine, ctx: Context, tally: Tally) -> None:
    """TB-API-3 and TB-API-1 at the top of their ranges: markers holding the largest token id in contract,
    ``2^31 − 1`` (S) and ``2^31 − 2`` (E), with two requests whose prompts open a section: budget 0 forces E
    at once, and budget ``2^40`` (any integer ``B ≥ 0`` is a budget) forces nothing. The same case with small ids and
    budgets is judged first: where the engine fails that, the failure is the forcing's (minimised and attributed),
    not the range's, and both requirements read BLOCKED by it."""
    ordinary = _extreme_case(1, 2, 2)
    found = judge_scenario(engine, ctx.profile, tally, ("TB-API-3",), ordinary, 0, "the case with small ids")
    if found:
        tally.blocked("TB-API-1", found, "the same case with a small budget fails")
        return
    top = 2**31 - 1
    case = _extreme_case(top, top - 1, 2**40)
    try:
        vector = case.vector("extreme-values", ["TB-API-3"])
        state = engine.budget_state([top], [top - 1], 3, ctx.profile.scope)
        state.sync_batch(BatchUpdate.from_json(vector["steps"][0]["update"]))
        state.forced_tokens(None, None)
        state.update_state(vector["steps"][0]["sampled_token_ids"])
        forced = [int(x) for x in state.forced_tokens(None, None)]
    except ValueError as exc:
        tally.violated("TB-API-3", "extreme-value-rejected", f"S=[{top}], E=[{top - 1}], budgets 0 and 2**40: {exc}")
        return
    if forced[0] == -1 and forced[2] == top - 1:  # request 0 committed E; request 2 committed S
        tally.exercised("TB-API-3")
    else:
        tally.violated(
            "TB-API-3",
            "large-marker-id-not-matched",
            f"budget 0, E=[{top - 1}] committed after S=[{top}] in the prompt, and S committed: forced {forced}",
        )
    if forced[1] == -1:
        tally.exercised("TB-API-1")
    else:
        tally.violated("TB-API-1", "large-budget-forced", f"budget 2**40, nothing thought yet: forced {forced[1]}")


@check(
    "budget/batch-errors",
    cls="tb.batch",
    covers=("TB-BATCH-4", "TB-BATCH-5"),
    needs=("budget",),
    description=(
        "removing, moving from or swapping with a slot that a removal emptied is an error naming the slot; a "
        "step before the first update lays out no row"
    ),
)
def batch_errors_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-BATCH-4 on slots that a removal or a UNIDIRECTIONAL move emptied: a later removal of, move from or
    SWAP with such a slot, in the same update or the next, raises a ValueError that names the slot; on an engine that
    takes tensors, so do logits whose row count differs from the batch's rows. TB-BATCH-5
    on a state stepped before its first update: its batch holds no slot, so a step lays out no row."""
    tally = Tally(requirements)
    fresh = engine.budget_state([1], [2], 4, ctx.profile.scope)
    forced = list(fresh.forced_tokens(None, None))
    if forced:
        tally.violated("TB-BATCH-5", "rows-before-first-update", f"a step before any update forced rows {forced}")
    else:
        tally.exercised("TB-BATCH-5")
    full = BatchUpdate(3, added=tuple(AddedRequest(slot, slot + 1, (1,)) for slot in range(3)))
    _empty_batch(engine, ctx, full, tally)
    outside = ctx.profile.outside_contract({"invalid-batch-update"})
    if outside:  # every TB-BATCH-4 case is an update (or logits) the engine's own scheduler never produces
        tally.not_applicable(outside, "TB-BATCH-4")
        return tally.outcome("no row before any update, nor once every request is removed")
    emptied = BatchUpdate(2, removed=(2,))
    cases = {
        "move from a slot removed in the same update": [
            BatchUpdate(3, removed=(2,), moved=((2, 3, Move.UNIDIRECTIONAL),))
        ],
        "SWAP with a slot removed in the same update": [BatchUpdate(3, removed=(2,), moved=((0, 2, Move.SWAP),))],
        "removal of a slot removed the step before": [emptied, BatchUpdate(2, removed=(2,))],
        "move from a slot removed the step before": [emptied, BatchUpdate(3, moved=((2, 0, Move.SWAP),))],
        "move from a slot moved away in the same update": [
            BatchUpdate(4, moved=((2, 3, Move.UNIDIRECTIONAL), (2, 0, Move.SWAP)))
        ],
        "removal of a slot moved away the step before": [
            BatchUpdate(4, moved=((2, 3, Move.UNIDIRECTIONAL),)),
            BatchUpdate(4, removed=(2,)),
        ],
    }
    for case, updates in cases.items():
        state = engine.budget_state([1], [2], 4, ctx.profile.scope)
        state.sync_batch(full)
        for update in updates[:-1]:
            state.sync_batch(update)
        try:
            state.sync_batch(updates[-1])
        except ValueError as exc:
            if "2" in str(exc):
                tally.exercised("TB-BATCH-4")
            else:
                tally.violated("TB-BATCH-4", "error-does-not-name-slot", f"{case}: rejected as {exc}")
            continue
        tally.violated("TB-BATCH-4", "emptied-slot-accepted", f"{case}: {updates[-1].to_json()} was accepted")
    _slots_out_of_range(engine, ctx, full, tally)
    summary = (
        "updates naming a slot emptied by a removal or a move, or a slot outside [0, max_num_reqs), are rejected "
        "naming the slot"
    )
    if getattr(engine, "tensor_device", None) is not None and "budget-logits" in ctx.profile.capabilities:
        _logits_row_count(engine, ctx, tally)  # only an engine that takes tensors is handed logits by its caller
        summary += "; so are logits with a row more than the batch lays out"
    return tally.outcome(summary + "; no row before any update, nor once every request is removed")


def _slots_out_of_range(engine, ctx: Context, full: BatchUpdate, tally: Tally) -> None:
    """TB-BATCH-4 on slot indices just outside ``[0, 4)`` (an add, a removal, a move's source and destination),
    each given to a state holding ``full``: a ValueError naming the index."""
    cases = {
        "an add at slot -1": (BatchUpdate(4, added=(AddedRequest(-1, 1, (1,)),)), "-1"),
        "removal of slot 4": (BatchUpdate(2, removed=(4,)), "4"),
        "a SWAP from slot 4": (BatchUpdate(3, moved=((4, 0, Move.SWAP),)), "4"),
        "a UNIDIRECTIONAL move to slot 4": (BatchUpdate(3, moved=((0, 4, Move.UNIDIRECTIONAL),)), "4"),
    }
    for case, (update, index) in cases.items():
        state = engine.budget_state([1], [2], 4, ctx.profile.scope)
        state.sync_batch(full)
        try:
            state.sync_batch(update)
        except ValueError as exc:
            if index in str(exc):
                tally.exercised("TB-BATCH-4")
            else:
                tally.violated("TB-BATCH-4", "error-does-not-name-slot", f"{case}: rejected as {exc}")
            continue
        tally.violated("TB-BATCH-4", "slot-out-of-range-accepted", f"{case} (max_num_reqs 4) was accepted")


def _empty_batch(engine, ctx: Context, full: BatchUpdate, tally: Tally) -> None:
    """TB-BATCH-5 on a batch whose requests were all removed (``batch_size`` 0): a step lays out no row, with
    and without (empty) drafts."""
    state = engine.budget_state([1], [2], 4, ctx.profile.scope)
    state.sync_batch(full)
    try:
        state.sync_batch(BatchUpdate(0, removed=(0, 1, 2)))
        rows = [list(state.forced_tokens(None, None)), list(state.forced_tokens([], []))]
    except ValueError as exc:
        tally.violated("TB-BATCH-5", "empty-batch-rejected", f"removing every request, then a step: {exc}")
        return
    if rows == [[], []]:
        tally.exercised("TB-BATCH-5")
    else:
        tally.violated("TB-BATCH-5", "rows-for-empty-batch", f"every request removed: a step laid out rows {rows}")


def _logits_row_count(engine, ctx: Context, tally: Tally) -> None:
    """TB-BATCH-4 on ``apply_to_logits`` given logits float32 ``[3, V]`` for a batch that lays out 2 rows (TB-BATCH-5):
    a ValueError naming ``logits``."""
    state = engine.budget_state([1], [2], 4, ctx.profile.scope)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 0, (1,)), AddedRequest(1, None, (1,)))))
    logits = np.zeros((3, 4), dtype=np.float32)
    try:
        state.apply_to_logits(logits, None, None)
    except ValueError as exc:
        if "logits" in str(exc):
            tally.exercised("TB-BATCH-4")
        else:
            tally.violated("TB-BATCH-4", "error-does-not-name-field", f"logits [3, 4] for 2 rows: rejected as {exc}")
        return
    tally.violated("TB-BATCH-4", "logits-row-count-accepted", "logits [3, 4] for a batch of 2 rows were accepted")
