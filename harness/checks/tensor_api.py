"""Checks of the tensor-level API (thinking-budget.md section 10, rejection-sampling.md section 9,
accepted-tokens.md section 4): the engine's own entry points (``engine.tensor_api``, capability ``tensor-api``)
called with each hostile argument must raise a ValueError naming it and change nothing; legal values at the
edges of their ranges must be accepted and judged as the oracle judges them.

The budget state's and the sampler's tensors are built with ``torch`` on ``tensor_api.device``, except the draft
counts that the spec asks to be range-checked only where that costs no device synchronisation (CPU tensors);
counting and metrics tensors are CPU tensors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from specs.interface import AddedRequest, BatchUpdate, Move

from ..core import Context, Outcome, Tally
from ..oracle import budget as tb
from ..oracle import counting as ac
from ..oracle import rejection as rs
from .catalogue import check

START, END = [1], [2]  # one-token markers; an id 2**32 + 2 wraps onto E in 32 bits
FREE = 7  # a token that is no marker
# the requests every budget case starts from: slot 0 in a section with budget 1 (free now, forced after one
# more token), slot 1 untracked, slot 2 in a section with budget 0 after one thinking token (forced now)
BASE = BatchUpdate(3, added=(AddedRequest(0, 1, (1,)), AddedRequest(1, None, (FREE,)), AddedRequest(2, 0, (1, FREE))))


def _tensor(values, dtype: str, device: str = "cpu"):
    import torch

    return torch.tensor(values, dtype=getattr(torch, dtype), device=device)


def _ints(values) -> list:
    """A tensor or sequence of ids (any nesting) as plain ints."""
    return np.asarray(values.cpu() if hasattr(values, "cpu") else values).astype(np.int64).tolist()


def _rejects(tally: Tally, rid: str, case: str, argument: str | tuple[str, ...], call: Callable[[], object]) -> bool:
    """Run ``call``, which hands ``argument`` a value outside its legal range (a tuple: arguments that disagree,
    either of which the error may name): a ValueError that names it (case-insensitive) exercises ``rid``;
    anything else violates it. True when the call raised."""
    names = (argument,) if isinstance(argument, str) else argument
    try:
        call()
    except ValueError as exc:
        if any(name.lower() in str(exc).lower() for name in names):
            tally.exercised(rid)
        else:
            tally.violated(rid, "error-does-not-name-argument", f"{case}: rejected as {exc}")
        return True
    except Exception as exc:  # noqa: BLE001 - any other exception is no ValueError naming the argument
        tally.violated(rid, "not-a-value-error", f"{case}: raised {type(exc).__name__}: {exc}")
        return True
    tally.violated(rid, "invalid-value-accepted", f"{case} was accepted")
    return False


REJECTED = object()  # what ``_accepts`` returns when a call with legal values raised


def _accepts(tally: Tally, rid: str, case: str, call: Callable[[], object]):
    """Run ``call`` with legal values only: its result, or REJECTED (and ``rid`` violated) when it raised."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - a legal value must not raise at all
        tally.violated(rid, "legal-value-rejected", f"{case}: raised {type(exc).__name__}: {exc}")
        return REJECTED


# ---------------------------------------------------------------------------------------------
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
    observed, expected = _ints(state.forced_tokens()), list(oracle.forced_rows(None, None))
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
        "removed given as an int": ("removed", BatchUpdate(3, removed=2)),
        "added given as one AddedRequest": ("added", BatchUpdate(4, added=AddedRequest(3, 1, (1,)))),
        "moved given as a string": ("moved", BatchUpdate(3, moved="02")),
        "an added entry given as a tuple, beside a SWAP": ("added", BatchUpdate(4, added=((3, 1, (1,)),), moved=swap)),
        "an added entry of another type with AddedRequest's fields": (
            "added",
            BatchUpdate(4, added=(SimpleNamespace(index=3, budget=1, prompt_token_ids=(1,)),)),
        ),
        "a boolean slot": ("index", BatchUpdate(3, added=(AddedRequest(True, 1, (1,)),))),
        "a prompt given as a string": ("prompt_token_ids", BatchUpdate(4, added=(AddedRequest(3, 1, "1"),))),
        "a float prompt id, beside a SWAP": (
            "prompt_token_ids",
            BatchUpdate(4, added=(AddedRequest(3, 1, (1.0,)),), moved=swap),
        ),
        "a boolean prompt id": ("prompt_token_ids", BatchUpdate(4, added=(AddedRequest(3, 1, (True,)),))),
        "a 2-D prompt tensor": (
            "prompt_token_ids",
            BatchUpdate(4, added=(AddedRequest(3, 1, _tensor([[1]], "int64", device)),)),
        ),
        "a float prompt tensor": (
            "prompt_token_ids",
            BatchUpdate(4, added=(AddedRequest(3, 1, _tensor([1.0], "float32", device)),)),
        ),
        "a move given as a pair, after a removal": ("moved", BatchUpdate(2, removed=(2,), moved=((0, 1),))),
        "a move kind given as a string": ("move", BatchUpdate(3, moved=((0, 2, "SWAP"),))),
        "batch_size -1": ("batch_size", BatchUpdate(-1)),
        "batch_size 3.0": ("batch_size", BatchUpdate(3.0)),
        "a string budget, beside an add and a SWAP": (
            "budget",
            BatchUpdate(4, added=(AddedRequest(3, 0, (1,)), AddedRequest(3, "1", (1,))), moved=swap),
        ),
    }


def _step_cases(device: str) -> dict[str, tuple[str | tuple[str, ...], dict]]:
    """Arguments of ``forced_tokens`` on a batch of 3 slots with ``max_spec_len`` 2, each with one value outside
    its legal range; committed tokens ride along with some, which must then not be committed."""
    counts, drafts = _tensor([1, 0, 2], "int64", device), _tensor([FREE, FREE, FREE], "int64", device)
    committed = _tensor([[FREE], [FREE], [FREE]], "int64", device)  # would make slot 0 forced
    cpu = "cpu"  # counts checked where it costs no device synchronisation (section 10)
    return {
        "num_draft_tokens without draft_token_ids": ("draft_token_ids", {"num_draft_tokens": counts}),
        "float num_draft_tokens": (
            "num_draft_tokens",
            {"num_draft_tokens": _tensor([1.0, 0.0, 2.0], "float32", device), "draft_token_ids": drafts},
        ),
        "boolean num_draft_tokens": (
            "num_draft_tokens",
            {"num_draft_tokens": _tensor([True, False, True], "bool", device), "draft_token_ids": drafts[:2]},
        ),
        "float draft_token_ids, beside committed tokens": (
            "draft_token_ids",
            {
                "num_draft_tokens": counts,
                "draft_token_ids": _tensor([7.0, 7.0, 7.0], "float32", device),
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
            {"num_draft_tokens": _tensor([3, 0, 0], "int64", cpu), "draft_token_ids": drafts},
        ),
        "a negative draft count": (
            "num_draft_tokens",
            {"num_draft_tokens": _tensor([-1, 0, 2], "int64", cpu), "draft_token_ids": drafts[:1]},
        ),
        "counts summing to 3 for 2 drafts, beside committed tokens": (
            ("num_draft_tokens", "draft_token_ids"),
            {
                "num_draft_tokens": _tensor([1, 0, 2], "int64", cpu),
                "draft_token_ids": drafts[:2],
                "sampled_token_ids": committed,
            },
        ),
        "float sampled_token_ids": ("sampled_token_ids", {"sampled_token_ids": committed.float()}),
        "1-D sampled_token_ids": ("sampled_token_ids", {"sampled_token_ids": committed[:, 0]}),
        "sampled_token_ids for 2 of 3 slots": ("sampled_token_ids", {"sampled_token_ids": committed[:2]}),
    }


def _logits_cases(device: str) -> dict[str, tuple[str, object]]:
    """``logits`` outside its legal values (E = [2]), each beside committed tokens that must not be committed."""
    return {
        "integer logits": _tensor(np.zeros((3, 8)).tolist(), "int64", device),
        "logits of V = 2, below E's id": _tensor(np.zeros((3, 2)).tolist(), "float32", device),
        "1-D logits": _tensor(np.zeros(8).tolist(), "float32", device),
        "logits with a row more than the batch lays out": _tensor(np.zeros((4, 8)).tolist(), "float32", device),
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
        _rejects(
            tally,
            rid,
            case,
            argument,
            lambda a=arguments: api.budget_state(
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
        if _rejects(tally, rid, case, argument, lambda s=state, u=update: s.sync_batch(u)):
            _rows_agree(tally, rid, "rejected-update-applied", case, state, oracle)
    _legal_prompt_tensor(api, ctx, device, tally)
    for case, (argument, arguments) in _step_cases(device).items():
        state, oracle = _budget_pair(api, ctx)
        if _rejects(tally, rid, case, argument, lambda s=state, a=arguments: s.forced_tokens(**a)):
            _rows_agree(tally, rid, "rejected-step-applied", case, state, oracle)
    committed = _tensor([[FREE], [FREE], [FREE]], "int64", device)
    for case, logits in _logits_cases(device).items():
        state, oracle = _budget_pair(api, ctx)
        call = lambda s=state, x=logits: s.apply_to_logits(x, sampled_token_ids=committed)  # noqa: E731
        if _rejects(tally, rid, f"{case}, beside committed tokens", "logits", call):
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
    state = _accepts(
        tally, rid, "S = [0], E = [2**31 - 1], max_num_reqs 1, defaults", lambda: api.budget_state([0], [top], 1)
    )
    if state is REJECTED:
        return
    oracle = tb.BudgetBatch([0], [top], 1, "request")
    update = BatchUpdate(1, added=(AddedRequest(0, 1, (0, FREE)),))  # a section opened, one thinking token

    def step():
        state.sync_batch(update)
        return _ints(state.forced_tokens(_tensor([0], "int64"), _tensor([], "int64")))

    observed = _accepts(tally, rid, "an update and a step of zero drafts on the defaults", step)
    oracle.apply(update)
    if observed is not REJECTED:
        expected = list(oracle.forced_rows([0], []))
        if observed == expected:
            tally.exercised(rid)
        else:
            message = f"defaults, budget 1 spent: forced {observed}, expected {expected}"
            tally.violated(rid, "legal-value-misjudged", message)
    _rejects(
        tally,
        rid,
        "a draft count of 1 where max_spec_len was omitted (0)",
        ("num_draft_tokens", "draft_token_ids"),
        lambda: state.forced_tokens(_tensor([1], "int64"), _tensor([FREE], "int64")),
    )


def _legal_prompt_tensor(api, ctx: Context, device: str, tally: Tally) -> None:
    """A prompt given as a 1-D integer tensor is the prompt of its ids."""
    rid = "TB-TENSOR-1"
    state, oracle = _budget_pair(api, ctx)
    prompt = _tensor([FREE, 1, FREE], "int64", device)
    update = BatchUpdate(4, added=(AddedRequest(3, 0, prompt),))
    if _accepts(tally, rid, "a prompt given as a 1-D integer tensor", lambda: state.sync_batch(update)) is not REJECTED:
        oracle.apply(BatchUpdate(4, added=(AddedRequest(3, 0, (FREE, 1, FREE)),)))
        _rows_agree(tally, rid, "legal-value-misjudged", "a prompt given as a 1-D integer tensor", state, oracle)


def _fused_advance(api, ctx: Context, device: str, tally: Tally) -> None:
    """Committed tokens given to ``forced_tokens`` (with drafts) and to ``apply_to_logits`` advance the state
    first: the rows equal the oracle's after the commit, and so do the rows of the next plain step."""
    rid = "TB-TENSOR-2"
    state, oracle = _budget_pair(api, ctx)
    committed = [[FREE, -1], [FREE, FREE], [2, -1]]  # slot 0 spends its budget; slot 2 closes its section
    counts, drafts = [1, 0, 2], [FREE, 1, FREE]
    observed = _ints(
        state.forced_tokens(
            _tensor(counts, "int64", device),
            _tensor(drafts, "int64", device),
            sampled_token_ids=_tensor(committed, "int64", device),
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
    logits = _tensor(np.zeros((3, 8)).tolist(), "float32", device)
    state.apply_to_logits(logits, sampled_token_ids=_tensor(committed, "int64", device))
    oracle.commit(committed)
    expected = list(oracle.forced_rows(None, None))
    written = [int(np.argmax(row)) if np.isneginf(row).any() else -1 for row in np.asarray(logits.cpu())]
    after = _ints(state.forced_tokens())
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
    state.update_state(_tensor(committed, "int64", device))
    oracle.commit(committed)
    _rows_agree(tally, rid, "id-compared-in-32-bits", f"after committing {committed}", state, oracle)


# ---------------------------------------------------------------------------------------------
# The sampler (RS-TENSOR-1)


@check(
    "rejection/tensor-api",
    cls="rs.tensor-api",
    covers=("RS-TENSOR-1",),
    needs=("rejection", "tensor-api"),
    description=(
        "the sampler's own entry point rejects draft counts, max_spec_len and validate of the wrong kind "
        "naming them; omitted, temperature verifies greedily and validate validates"
    ),
)
def rejection_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-TENSOR-1 through ``engine.tensor_api.rejection_sample`` on one request of 2 drafts over V = 6:
    ``num_draft_tokens`` of a float or bool dtype, ``max_spec_len`` -1, True or 2.0, and ``validate`` 1 or
    ``"no"`` each raise a ValueError naming the argument; ``temperature`` omitted verifies greedily (the rows
    equal the oracle's at temperature 0, with and without ``max_spec_len`` 0 on a zero-draft request), and
    ``validate`` omitted rejects a draft id V naming ``draft_token_ids``; ``seeds`` omitted draws fresh randomness
    per request (``_fresh_draws``)."""
    api = engine.tensor_api
    device = api.device
    tally = Tally(requirements)
    rid = "RS-TENSOR-1"
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    drafts = [int(np.argmax(logits[0])), (int(np.argmax(logits[1])) + 1) % vocab]  # accepted, then rejected
    fields = {
        "target_logits": _tensor(logits.tolist(), "float32", device),
        "draft_token_ids": _tensor(drafts, "int64", device),
        "num_draft_tokens": _tensor([2], "int64", device),
    }
    options = {"temperature": _tensor([0.0], "float32", device)}
    cases = {
        "float num_draft_tokens": ("num_draft_tokens", {"num_draft_tokens": _tensor([2.0], "float32", device)}, {}),
        "boolean num_draft_tokens": (
            "num_draft_tokens",
            {
                "num_draft_tokens": _tensor([True], "bool", device),
                "draft_token_ids": fields["draft_token_ids"][:1],
                "target_logits": fields["target_logits"][1:],
            },
            {},
        ),
        "max_spec_len -1": ("max_spec_len", {}, {"max_spec_len": -1}),
        "max_spec_len -1 without validation": ("max_spec_len", {}, {"max_spec_len": -1, "validate": False}),
        "max_spec_len True": ("max_spec_len", {}, {"max_spec_len": True}),
        "max_spec_len 2.0": ("max_spec_len", {}, {"max_spec_len": 2.0}),
        "validate 1": ("validate", {}, {"validate": 1}),
        "validate 'no'": ("validate", {}, {"validate": "no"}),
    }
    for case, (argument, changed, extra) in cases.items():
        given = {**fields, **changed}
        _rejects(
            tally,
            rid,
            case,
            argument,
            lambda g=given, o={**options, **extra}: api.rejection_sample(
                g["target_logits"], g["draft_token_ids"], g["num_draft_tokens"], **o
            ),
        )
    greedy = rs.RejectionCase(logits, drafts, [2], [0.0])
    expected = _ints(rs.sample_case(greedy)[0])
    observed = _accepts(
        tally,
        rid,
        "temperature omitted",
        lambda: _ints(api.rejection_sample(*fields.values())[0]),
    )
    if observed is not REJECTED:
        if observed == expected:
            tally.exercised(rid)
        else:
            tally.violated(rid, "omitted-temperature-not-greedy", f"temperature omitted: {observed}, greedy {expected}")
    zero = rs.RejectionCase(logits[2:], [], [0], [0.0])
    expected_tokens, expected_num, _ = rs.sample_case(zero)
    observed = _accepts(
        tally,
        rid,
        "max_spec_len 0 on a zero-draft request",
        lambda: api.rejection_sample(
            fields["target_logits"][2:], _tensor([], "int64", device), _tensor([0], "int64", device), max_spec_len=0
        ),
    )
    if observed is not REJECTED:  # the width is max_spec_len + 1; a row is read through num_emitted
        tokens, num = observed
        shape, rows = tuple(tokens.shape), [row[: int(n)] for row, n in zip(_ints(tokens), _ints(num))]
        expected = [row[: int(n)] for row, n in zip(_ints(expected_tokens), _ints(expected_num))]
        if shape == (1, 1) and rows == expected:
            tally.exercised(rid)
        else:
            message = f"max_spec_len 0, no drafts: output of shape {shape}, rows {rows}; expected (1, 1), {expected}"
            tally.violated(rid, "legal-value-misjudged", message)
    _rejects(
        tally,
        rid,
        "a draft id V with validate omitted",
        "draft_token_ids",
        lambda: api.rejection_sample(
            fields["target_logits"], _tensor([drafts[0], vocab], "int64", device), fields["num_draft_tokens"], **options
        ),
    )
    _fresh_draws(api, device, tally)
    return tally.outcome(
        "num_draft_tokens, max_spec_len and validate outside their legal values are rejected naming them; omitted, "
        "temperature verifies greedily, validate validates and seeds draw fresh"
    )


UNSEEDED_CALLS, UNSEEDED_VOCAB = 8, 64


def _fresh_draws(api, device: str, tally: Tally) -> None:
    """Two unseeded zero-draft requests with the same uniform distribution over 64 ids, sampled in 8 calls: with
    fresh draws they emit the same token in every call with probability ``64**-8 = 2**-48`` (the check's false
    alarm rate); requests that share one seed (all unseeded requests drawing seed 0) always do."""
    rid = "RS-TENSOR-1"
    logits = _tensor(np.zeros((2, UNSEEDED_VOCAB)).tolist(), "float32", device)
    pairs = []
    for _ in range(UNSEEDED_CALLS):
        tokens, _ = api.rejection_sample(
            logits,
            _tensor([], "int64", device),
            _tensor([0, 0], "int64", device),
            temperature=_tensor([1.0, 1.0], "float32", device),
        )
        first, second = _ints(tokens)
        pairs.append((first[0], second[0]))
    if all(a == b for a, b in pairs):
        message = f"two unseeded requests with the same input emitted the same token in {UNSEEDED_CALLS} calls: {pairs}"
        tally.violated(rid, "unseeded-requests-share-draws", message)
    else:
        tally.exercised(rid)


# ---------------------------------------------------------------------------------------------
# Counting and metrics (AC-TENSOR-1)

# (K, row, commit limit) steps of one request each, over max_positions 2 with EOS 9: an accepted run, a discarded
# row, an EOS ending the step at its first token, a commit limit of 2
STEPS = ((2, [4, 5, -1], None), (2, [-1, -1, -1], None), (1, [9, 3, -1], None), (2, [4, 5, 6], 2))
EOS = (9,)


def _metrics_of(stats) -> dict:
    return {
        "acceptance_rate": float(stats.acceptance_rate),
        "mean_acceptance_length": float(stats.mean_acceptance_length),
        "accepted_per_position": [int(a) for a in stats.accepted_per_position],
        "per_position_rates": [float(r) for r in stats.per_position_rates()],
        "num_discarded": int(stats.num_discarded),
    }


def _same_metrics(a: dict, b: dict) -> bool:
    def same(x, y):
        if isinstance(x, list):
            return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
        return (math.isnan(x) and math.isnan(y)) or x == y

    return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)


@check(
    "counting/tensor-api",
    cls="ac.tensor-api",
    covers=("AC-TENSOR-1",),
    needs=("counting", "metrics", "tensor-api"),
    description=(
        "the counting and metrics entry points reject arguments outside their legal values naming them, and a"
        " rejected step changes no metric; rows of width 0 and max_positions 0 are legal"
    ),
)
def counting_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """AC-TENSOR-1 through ``engine.tensor_api``: ``count_emitted_validated`` and ``acceptance_stats`` handed
    arguments outside their legal values (1-D or float or listed ``token_ids``, ``vocab_size`` 0, True or 4.0,
    ``max_positions`` -1, True or 2.0, EOS ids that are no integers, ``observe``'s counts and commit limits of
    the wrong kind, shape or range) each raise a ValueError naming the argument, and a rejected ``observe``
    leaves every metric equal to the oracle's over the steps observed; rows of width 0 count 0, and
    ``max_positions`` 0 is legal."""
    api = engine.tensor_api
    tally = Tally(requirements)
    rid = "AC-TENSOR-1"
    rows = _tensor([[1, -1, 3], [4, 2, -1]], "int64")
    counting = {
        "1-D token_ids": ("token_ids", _tensor([1, -1], "int64"), 5),
        "float token_ids": ("token_ids", rows.float(), 5),
        "token_ids given as a list": ("token_ids", [[1, -1]], 5),
        "vocab_size 0": ("vocab_size", rows, 0),
        "vocab_size True": ("vocab_size", rows, True),
        "vocab_size 4.0": ("vocab_size", rows, 4.0),
    }
    for case, (argument, token_ids, vocab_size) in counting.items():
        _rejects(tally, rid, case, argument, lambda t=token_ids, v=vocab_size: api.count_emitted_validated(t, v))
    empty_rows = _tensor([[], []], "int64")
    observed = _accepts(
        tally, rid, "rows of width 0", lambda: [_ints(x) for x in api.count_emitted_validated(empty_rows, 5)]
    )
    if observed is not REJECTED:
        expected = [[ac.num_emitted([]) for _ in range(2)], [0, 0], [0, 0]]
        if observed == expected:
            tally.exercised(rid)
        else:
            tally.violated(rid, "legal-value-misjudged", f"two rows of width 0: {observed}, expected {expected}")
    creation = {
        "max_positions -1": ("max_positions", -1, ()),
        "max_positions True": ("max_positions", True, ()),
        "max_positions 2.0": ("max_positions", 2.0, ()),
        "a float EOS id": ("eos_token_ids", 2, (1.5,)),
        "a boolean EOS id": ("eos_token_ids", 2, (True,)),
    }
    for case, (argument, max_positions, eos) in creation.items():
        _rejects(tally, rid, case, argument, lambda m=max_positions, e=eos: api.acceptance_stats(m, e))
    _metrics_cases(api, tally)
    return tally.outcome(
        "counting and metrics arguments outside their legal values are rejected naming the argument, and a rejected "
        "observe changes no metric; rows of width 0 and max_positions 0 are legal"
    )


def _observe_cases() -> dict[str, tuple[str, tuple]]:
    one_row = _tensor([[4, 5, -1]], "int64")
    two = _tensor([2], "int64")
    return {
        "1-D token_ids": ("token_ids", (two, one_row[0], None)),
        "float token_ids": ("token_ids", (two, one_row.float(), None)),
        "float num_draft_tokens": ("num_draft_tokens", (_tensor([2.0], "float32"), one_row, None)),
        "num_draft_tokens for 2 rows of 1": ("num_draft_tokens", (_tensor([1, 2], "int64"), one_row, None)),
        "a draft count above max_positions": ("num_draft_tokens", (_tensor([3], "int64"), one_row, None)),
        "a negative draft count": ("num_draft_tokens", (_tensor([-1], "int64"), one_row, None)),
        "float commit_limits": ("commit_limits", (two, one_row, _tensor([1.0], "float32"))),
        "a commit limit of 0": ("commit_limits", (two, one_row, _tensor([0], "int64"))),
        "commit_limits for 2 rows of 1": ("commit_limits", (two, one_row, _tensor([1, 1], "int64"))),
        "commit_limits given as a list": ("commit_limits", (two, one_row, [1])),
    }


def _metrics_cases(api, tally: Tally) -> None:
    """Each bad ``observe`` after the valid ``STEPS``: rejected naming its argument, every metric then the
    oracle's over ``STEPS``; a step of two rows (one without drafts) and ``max_positions`` 0 are legal."""
    rid = "AC-TENSOR-1"
    oracle = ac.AcceptanceMetrics(max_positions=2)
    for k, row, limit in STEPS:
        oracle.observe(k, row, EOS, limit)
    expected = {
        "acceptance_rate": oracle.acceptance_rate,
        "mean_acceptance_length": oracle.mean_acceptance_length,
        "accepted_per_position": oracle.accepted_per_position,
        "per_position_rates": oracle.per_position_rates(),
        "num_discarded": oracle.num_discarded,
    }

    def observed_steps():
        stats = api.acceptance_stats(2, EOS)
        for k, row, limit in STEPS:
            stats.observe(
                _tensor([k], "int64"), _tensor([row], "int64"), None if limit is None else _tensor([limit], "int64")
            )
        return stats

    stats = _accepts(tally, rid, "the valid steps", observed_steps)
    if stats is REJECTED:
        return
    if _same_metrics(_metrics_of(stats), expected):
        tally.exercised(rid)
    else:
        tally.violated(rid, "legal-value-misjudged", f"metrics {_metrics_of(stats)}, expected {expected}")
    for case, (argument, arguments) in _observe_cases().items():
        stats = observed_steps()
        rejected = _rejects(tally, rid, case, argument, lambda s=stats, a=arguments: s.observe(*a))
        if rejected and not _same_metrics(_metrics_of(stats), expected):
            message = f"{case}: metrics {_metrics_of(stats)}, expected {expected}"
            tally.violated(rid, "rejected-step-counted", message)
    two_rows = _accepts(
        tally,
        rid,
        "max_positions 0, a step of two rows without drafts",
        lambda: api.acceptance_stats(0, ()).observe(_tensor([0, 0], "int64"), _tensor([[4], [-1]], "int64")),
    )
    if two_rows is not REJECTED:
        if _ints(two_rows) == [0, 0]:
            tally.exercised(rid)
        else:
            tally.violated(rid, "legal-value-misjudged", f"no drafts: accepted {_ints(two_rows)}, expected [0, 0]")
