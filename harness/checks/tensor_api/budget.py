"""The budget state's own entry points (TB-TENSOR-1, TB-TENSOR-2; thinking-budget.md section 10): creation
arguments, update entries and step tensors outside their legal values, the legal edges, committed tokens given to a
step, tracked requests and whole ids."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from specconform.specs.interface import AddedRequest, BatchUpdate, Move

from ...core import Context, Outcome, Tally
from ...oracle import budget as tb
from ..catalogue import check
from .common import REJECTED, accepts, as_ints, device_tensor, ill_typed, rejects

if TYPE_CHECKING:  # the light install has no torch: it is imported where it is used
    import torch

START, END = [1], [2]  # one-token markers; an id 2**32 + 2 wraps onto E in 32 bits
FREE = 7  # a token that is no marker
# the requests every budget case starts from: slot 0 in a section with budget 1 (free now, forced after one
# more token), slot 1 untracked, slot 2 in a section with budget 0 after one thinking token (forced now)
BASE = BatchUpdate(3, added=(AddedRequest(0, 1, (1,)), AddedRequest(1, None, (FREE,)), AddedRequest(2, 0, (1, FREE))))

# A lambda's defaults bind the loop's values as it is made; mypy cannot type such a lambda (python/mypy#15459,
# open), hence its `# type: ignore[misc]`.


# The budget state (TB-TENSOR-1, TB-TENSOR-2)


def _budget_pair(api, ctx: Context, max_spec_len: int = 2):
    """The engine's state and the oracle's, both holding ``BASE``."""
    state = api.budget_state(START, END, 4, max_spec_len=max_spec_len, scope=ctx.profile.scope)
    state.sync_batch(BASE)
    oracle = tb.BudgetBatch(START, END, 4, ctx.profile.scope)
    oracle.apply(BASE)
    return state, oracle


def _rows_agree(tally: Tally, rid: str, mode: str, case: str, state, oracle) -> None:
    """The state's forced rows (no drafts) equal the oracle's."""
    observed, expected = as_ints(state.forced_tokens()), list(oracle.forced_rows(None, None))
    if observed == expected:
        tally.exercised(rid)
    else:
        tally.violated(rid, mode, f"{case}: forced rows {observed}, expected {expected}")


def _creation_cases() -> dict[str, tuple[str, dict]]:
    return {
        "a string as the start marker": ("start_token_ids", {"start_token_ids": "1"}),
        "an integer as the start marker": ("start_token_ids", {"start_token_ids": 1}),
        "bytes as the start marker": ("start_token_ids", {"start_token_ids": b"\x01"}),
        "a start marker id -1": ("start_token_ids", {"start_token_ids": [-1]}),
        "a float end marker id": ("end_token_ids", {"end_token_ids": [2.0]}),
        "a boolean end marker id": ("end_token_ids", {"end_token_ids": [True]}),
        "an end marker id 2**31": ("end_token_ids", {"end_token_ids": [2**31]}),
        "max_num_reqs 0": ("max_num_reqs", {"max_num_reqs": 0}),
        "max_num_reqs True": ("max_num_reqs", {"max_num_reqs": True}),
        "max_num_reqs 2.0": ("max_num_reqs", {"max_num_reqs": 2.0}),
        "max_spec_len -1": ("max_spec_len", {"max_spec_len": -1}),
        "max_spec_len True": ("max_spec_len", {"max_spec_len": True}),
        "max_spec_len 1.0": ("max_spec_len", {"max_spec_len": 1.0}),
        "scope 'global'": ("scope", {"scope": "global"}),
    }


def _update_cases(device: str) -> dict[str, tuple[str, object]]:
    """Updates of a batch holding ``BASE``, each with one entry outside its legal values; the error must name the
    argument or field. Those beside a valid SWAP, removal or add show that a bad update applies nothing."""
    swap = ((0, 2, Move.SWAP),)
    return {
        "an update given as a dict": ("update", {"batch_size": 3}),
        "removed given as an int": ("removed", ill_typed(BatchUpdate, 3, removed=2)),
        "added given as one AddedRequest": ("added", ill_typed(BatchUpdate, 4, added=AddedRequest(3, 1, (1,)))),
        "moved given as a string": ("moved", ill_typed(BatchUpdate, 3, moved="02")),
        "an added entry given as a tuple, beside a SWAP": (
            "added",
            ill_typed(BatchUpdate, 4, added=((3, 1, (1,)),), moved=swap),
        ),
        "an added entry of another type with AddedRequest's fields": (
            "added",
            ill_typed(BatchUpdate, 4, added=(SimpleNamespace(index=3, budget=1, prompt_token_ids=(1,)),)),
        ),
        "a boolean slot": ("index", BatchUpdate(3, added=(AddedRequest(True, 1, (1,)),))),
        "a prompt given as a string": (
            "prompt_token_ids",
            BatchUpdate(4, added=(ill_typed(AddedRequest, 3, 1, "1"),)),
        ),
        "a float prompt id, beside a SWAP": (
            "prompt_token_ids",
            BatchUpdate(4, added=(ill_typed(AddedRequest, 3, 1, (1.0,)),), moved=swap),
        ),
        "a boolean prompt id": ("prompt_token_ids", BatchUpdate(4, added=(AddedRequest(3, 1, (True,)),))),
        "a 2-D prompt tensor": (
            "prompt_token_ids",
            BatchUpdate(4, added=(AddedRequest(3, 1, device_tensor([[1]], "int64", device)),)),
        ),
        "a float prompt tensor": (
            "prompt_token_ids",
            BatchUpdate(4, added=(AddedRequest(3, 1, device_tensor([1.0], "float32", device)),)),
        ),
        "a move given as a pair, after a removal": (
            "moved",
            ill_typed(BatchUpdate, 2, removed=(2,), moved=((0, 1),)),
        ),
        "a move kind given as a string": ("move", ill_typed(BatchUpdate, 3, moved=((0, 2, "SWAP"),))),
        "batch_size -1": ("batch_size", BatchUpdate(-1)),
        "batch_size 3.0": ("batch_size", ill_typed(BatchUpdate, 3.0)),
        "a string budget, beside an add and a SWAP": (
            "budget",
            BatchUpdate(4, added=(AddedRequest(3, 0, (1,)), AddedRequest(3, "1", (1,))), moved=swap),
        ),
    }


def _step_cases(device: str) -> dict[str, tuple[str | tuple[str, ...], dict]]:
    """Arguments of ``forced_tokens`` on a batch of 3 slots with ``max_spec_len`` 2, each with one value outside
    its legal range; committed tokens ride along with some, which must then not be committed."""
    counts, drafts = device_tensor([1, 0, 2], "int64", device), device_tensor([FREE, FREE, FREE], "int64", device)
    committed = device_tensor([[FREE], [FREE], [FREE]], "int64", device)  # would make slot 0 forced
    cpu = "cpu"  # counts checked where it costs no device synchronisation (section 10)
    return {
        "num_draft_tokens without draft_token_ids": ("draft_token_ids", {"num_draft_tokens": counts}),
        "float num_draft_tokens": (
            "num_draft_tokens",
            {"num_draft_tokens": device_tensor([1.0, 0.0, 2.0], "float32", device), "draft_token_ids": drafts},
        ),
        "boolean num_draft_tokens": (
            "num_draft_tokens",
            {"num_draft_tokens": device_tensor([True, False, True], "bool", device), "draft_token_ids": drafts[:2]},
        ),
        "float draft_token_ids, beside committed tokens": (
            "draft_token_ids",
            {
                "num_draft_tokens": counts,
                "draft_token_ids": device_tensor([7.0, 7.0, 7.0], "float32", device),
                "sampled_token_ids": committed,
            },
        ),
        "num_draft_tokens for 2 of 3 slots": (
            "num_draft_tokens",
            {"num_draft_tokens": counts[:2], "draft_token_ids": drafts[:1]},
        ),
        "2-D draft_token_ids, beside committed tokens": (
            "draft_token_ids",
            {"num_draft_tokens": counts, "draft_token_ids": drafts[:, None], "sampled_token_ids": committed},
        ),
        "a draft count above max_spec_len": (
            "num_draft_tokens",
            {"num_draft_tokens": device_tensor([3, 0, 0], "int64", cpu), "draft_token_ids": drafts},
        ),
        "a negative draft count": (
            "num_draft_tokens",
            {"num_draft_tokens": device_tensor([-1, 0, 2], "int64", cpu), "draft_token_ids": drafts[:1]},
        ),
        "counts summing to 3 for 2 drafts, beside committed tokens": (
            ("num_draft_tokens", "draft_token_ids"),
            {
                "num_draft_tokens": device_tensor([1, 0, 2], "int64", cpu),
                "draft_token_ids": drafts[:2],
                "sampled_token_ids": committed,
            },
        ),
        "float sampled_token_ids": ("sampled_token_ids", {"sampled_token_ids": committed.float()}),
        "1-D sampled_token_ids": ("sampled_token_ids", {"sampled_token_ids": committed[:, 0]}),
        "sampled_token_ids for 2 of 3 slots": ("sampled_token_ids", {"sampled_token_ids": committed[:2]}),
    }


def _logits_cases(device: str) -> dict[str, torch.Tensor]:
    """``logits`` outside its legal values (E = [2]), each beside committed tokens that must not be committed."""
    return {
        "integer logits": device_tensor(np.zeros((3, 8)).tolist(), "int64", device),
        "logits of V = 2, below E's id": device_tensor(np.zeros((3, 2)).tolist(), "float32", device),
        "1-D logits": device_tensor(np.zeros(8).tolist(), "float32", device),
        "logits with a row more than the batch lays out": device_tensor(np.zeros((4, 8)).tolist(), "float32", device),
    }


@check(
    "budget/tensor-api",
    cls="tb.tensor-api",
    covers=("TB-TENSOR-1", "TB-TENSOR-2"),
    needs=("budget", "tensor-api"),
    description=(
        "the budget state's own entry points reject each argument outside its legal values naming it, change "
        "nothing then, accept the legal edges, advance by committed tokens given to a step, and compare ids "
        "whole"
    ),
)
def budget_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-TENSOR-1 and TB-TENSOR-2 through ``engine.tensor_api``'s budget state (markers S = [1], E = [2]).

    TB-TENSOR-1: creation arguments, update entries and per-step tensors outside their legal values each raise a
    ValueError naming the argument, and the forced rows after a rejected update or step equal the oracle's for
    the state before it; the legal edges (marker ids 0 and 2**31 - 1, ``max_num_reqs`` 1, ``max_spec_len``
    omitted, a prompt given as a 1-D integer tensor) are accepted and judged as the oracle judges them.
    TB-TENSOR-2: committed tokens given to ``forced_tokens`` and ``apply_to_logits`` advance the state as
    ``update_state`` would, ``has_tracked_requests()`` follows adds, SWAPs and removals, and a committed id
    2**32 + 2 (E's id in its low 32 bits) matches no marker."""
    api = engine.tensor_api
    device = api.device
    tally = Tally(requirements)
    rid = "TB-TENSOR-1"
    legal = {"start_token_ids": START, "end_token_ids": END, "max_num_reqs": 4, "max_spec_len": 2}
    for case, (argument, change) in _creation_cases().items():
        arguments = {**legal, **change}
        rejects(
            tally,
            rid,
            case,
            argument,
            lambda a=arguments: api.budget_state(  # type: ignore[misc]
                a["start_token_ids"],
                a["end_token_ids"],
                a["max_num_reqs"],
                max_spec_len=a["max_spec_len"],
                scope=a.get("scope", ctx.profile.scope),
            ),
        )
    _legal_creation(api, ctx, tally)
    for case, (argument, update) in _update_cases(device).items():
        state, oracle = _budget_pair(api, ctx)
        if rejects(tally, rid, case, argument, lambda s=state, u=update: s.sync_batch(u)):  # type: ignore[misc]
            _rows_agree(tally, rid, "rejected-update-applied", case, state, oracle)
    _legal_prompt_tensor(api, ctx, device, tally)
    for case, (named, arguments) in _step_cases(device).items():
        state, oracle = _budget_pair(api, ctx)
        if rejects(tally, rid, case, named, lambda s=state, a=arguments: s.forced_tokens(**a)):  # type: ignore[misc]
            _rows_agree(tally, rid, "rejected-step-applied", case, state, oracle)
    committed = device_tensor([[FREE], [FREE], [FREE]], "int64", device)
    for case, logits in _logits_cases(device).items():
        state, oracle = _budget_pair(api, ctx)
        call = lambda s=state, x=logits: s.apply_to_logits(x, sampled_token_ids=committed)  # noqa: E731  # type: ignore[misc]
        if rejects(tally, rid, f"{case}, beside committed tokens", "logits", call):
            _rows_agree(tally, rid, "rejected-step-applied", case, state, oracle)
    _fused_advance(api, ctx, device, tally)
    _tracked_requests(api, ctx, tally)
    _whole_ids(api, ctx, device, tally)
    return tally.outcome(
        "creation arguments, update entries and step tensors outside their legal values are rejected naming the "
        "argument, and change nothing; legal edges are accepted; committed tokens given to a step advance it first; "
        "ids are compared whole"
    )


def _legal_creation(api, ctx: Context, tally: Tally) -> None:
    """A state created with marker ids 0 and 2**31 - 1, ``max_num_reqs`` 1 and ``max_spec_len`` and ``scope``
    omitted (0 and request: no drafts) forces as the oracle does, takes a step of zero drafts and rejects a
    draft count of 1 naming ``num_draft_tokens``."""
    rid, top = "TB-TENSOR-1", 2**31 - 1
    state = accepts(
        tally, rid, "S = [0], E = [2**31 - 1], max_num_reqs 1, defaults", lambda: api.budget_state([0], [top], 1)
    )
    if state is REJECTED:
        return
    oracle = tb.BudgetBatch([0], [top], 1, "request")
    update = BatchUpdate(1, added=(AddedRequest(0, 1, (0, FREE)),))  # a section opened, one thinking token

    def step():
        state.sync_batch(update)
        return as_ints(state.forced_tokens(device_tensor([0], "int64"), device_tensor([], "int64")))

    observed = accepts(tally, rid, "an update and a step of zero drafts on the defaults", step)
    oracle.apply(update)
    if observed is not REJECTED:
        expected = list(oracle.forced_rows([0], []))
        if observed == expected:
            tally.exercised(rid)
        else:
            message = f"defaults, budget 1 spent: forced {observed}, expected {expected}"
            tally.violated(rid, "legal-value-misjudged", message)
    rejects(
        tally,
        rid,
        "a draft count of 1 where max_spec_len was omitted (0)",
        ("num_draft_tokens", "draft_token_ids"),
        lambda: state.forced_tokens(device_tensor([1], "int64"), device_tensor([FREE], "int64")),
    )


def _legal_prompt_tensor(api, ctx: Context, device: str, tally: Tally) -> None:
    """A prompt given as a 1-D integer tensor is the prompt of its ids."""
    rid = "TB-TENSOR-1"
    state, oracle = _budget_pair(api, ctx)
    prompt = device_tensor([FREE, 1, FREE], "int64", device)
    update = BatchUpdate(4, added=(AddedRequest(3, 0, prompt),))
    if accepts(tally, rid, "a prompt given as a 1-D integer tensor", lambda: state.sync_batch(update)) is not REJECTED:
        oracle.apply(BatchUpdate(4, added=(AddedRequest(3, 0, (FREE, 1, FREE)),)))
        _rows_agree(tally, rid, "legal-value-misjudged", "a prompt given as a 1-D integer tensor", state, oracle)


def _fused_advance(api, ctx: Context, device: str, tally: Tally) -> None:
    """Committed tokens given to ``forced_tokens`` (with drafts) and to ``apply_to_logits`` advance the state
    first: the rows equal the oracle's after the commit, and so do the rows of the next plain step."""
    rid = "TB-TENSOR-2"
    state, oracle = _budget_pair(api, ctx)
    committed = [[FREE, -1], [FREE, FREE], [2, -1]]  # slot 0 spends its budget; slot 2 closes its section
    counts, drafts = [1, 0, 2], [FREE, 1, FREE]
    observed = as_ints(
        state.forced_tokens(
            device_tensor(counts, "int64", device),
            device_tensor(drafts, "int64", device),
            sampled_token_ids=device_tensor(committed, "int64", device),
        )
    )
    oracle.commit(committed)
    expected = list(oracle.forced_rows(counts, drafts))
    if observed != expected:
        message = f"forced_tokens after committing {committed}: {observed}, expected {expected}"
        tally.violated(rid, "committed-tokens-not-advanced", message)
    else:
        tally.exercised(rid)
    committed = [[1], [FREE], [1]]  # slot 2 opens a section with budget 0
    logits = device_tensor(np.zeros((3, 8)).tolist(), "float32", device)
    state.apply_to_logits(logits, sampled_token_ids=device_tensor(committed, "int64", device))
    oracle.commit(committed)
    expected = list(oracle.forced_rows(None, None))
    written = [int(np.argmax(row)) if np.isneginf(row).any() else -1 for row in np.asarray(logits.cpu())]
    after = as_ints(state.forced_tokens())
    if written == expected and after == expected:
        tally.exercised(rid)
    else:
        tally.violated(
            rid,
            "committed-tokens-not-advanced",
            f"apply_to_logits after committing {committed}: rows forced {written}, then {after}; expected {expected}",
        )


def _tracked_requests(api, ctx: Context, tally: Tally) -> None:
    """``has_tracked_requests()`` after each update of a batch whose one tracked request is added, swapped
    into another slot, kept while the untracked one is removed, and replaced by an untracked one: the oracle's
    answer (a slot of ``[0, batch_size)`` holding a request state) every time."""
    rid = "TB-TENSOR-2"
    state = api.budget_state(START, END, 4, max_spec_len=2, scope=ctx.profile.scope)
    oracle = tb.BudgetBatch(START, END, 4, ctx.profile.scope)
    updates = (
        BatchUpdate(2, added=(AddedRequest(0, None, ()),)),  # slot 1 is a hole of the batch
        BatchUpdate(2, added=(AddedRequest(1, -1, ()),)),
        BatchUpdate(3, added=(AddedRequest(2, 3, ()),)),
        BatchUpdate(3, moved=((2, 0, Move.SWAP),)),
        BatchUpdate(2, removed=(2,)),
        BatchUpdate(2, removed=(0,), added=(AddedRequest(0, None, ()),)),
    )
    for step, update in enumerate(updates):
        state.sync_batch(update)
        oracle.apply(update)
        expected = any(oracle.state(slot) is not None for slot in range(oracle.batch_size))
        observed = bool(state.has_tracked_requests())
        if observed != expected:
            message = f"after update {step} ({update.to_json()}): has_tracked_requests() {observed}, not {expected}"
            tally.violated(rid, "tracked-requests-misreported", message)
            return
    tally.exercised(rid)


def _whole_ids(api, ctx: Context, device: str, tally: Tally) -> None:
    """A committed id 2**32 + 2, whose low 32 bits are E's id, is a thinking token: slot 0 (budget 1) is then
    forced, as the oracle says; read as E it would close the section."""
    rid = "TB-TENSOR-2"
    state, oracle = _budget_pair(api, ctx)
    committed = [[2**32 + 2], [FREE], [FREE]]
    state.update_state(device_tensor(committed, "int64", device))
    oracle.commit(committed)
    _rows_agree(tally, rid, "id-compared-in-32-bits", f"after committing {committed}", state, oracle)
