"""The sampler's input and output contract: invalid ids and layouts are errors naming the field (RS-INPUT-3,
RS-INPUT-5), a mode without validation emits in-range ids only (RS-INPUT-7), fixed-width output read through
``num_emitted`` (RS-LAYOUT-2), and every output a -1-padded prefix of in-range ids."""

from __future__ import annotations

from dataclasses import replace
from typing import TypedDict

import numpy as np
import numpy.typing as npt

from ...cases.rejection import LAST_IDS, MASKS, TILE_REMAINDER_VOCABS, VOCABS, RejectionFamily, case_size
from ...core import PRECONDITION_FAILED, Context, Outcome, Tally, uniform_outcome
from ...oracle import rejection as rs
from ...oracle import rejection_judge as rj
from ..catalogue import check
from . import minimal
from .exact import LAST_IDS_CASES, drawn_cases
from .minimal import comparable
from .output import describe_case, outside_contract, sample_output


class _IdChange(TypedDict, total=False):
    """The fields an invalid-id case changes in ``_id_case``'s valid one (RS-INPUT-5, RS-INPUT-7)."""

    draft_token_ids: list[int]
    forced_token_ids: list[int] | None
    temperature: list[float]


def _id_case(logits: np.ndarray, change: _IdChange) -> rs.RejectionCase:
    """One seeded request with two drafts, ``logits`` ``[3, V]`` float32, free rows and T = 1, but for ``change``."""
    fields: _IdChange = {"draft_token_ids": [1, 2], "forced_token_ids": None, "temperature": [1.0], **change}
    return rs.RejectionCase(logits.copy(), num_draft_tokens=[2], seeds=[1], **fields)


def _forced_ids(case: rs.RejectionCase) -> list[int] | None:
    """The case's forced ids as a list, or None where it forces none."""
    return None if case.forced_token_ids is None else case.forced_token_ids.tolist()


@check(
    "rejection/invalid-layout",
    cls="rs.input",
    covers=("RS-INPUT-3", "RS-INPUT-5"),
    needs=("rejection", "input-validation"),
    description=(
        "a NaN in a free row beside a forced row, and tensors whose layout disagrees with num_draft_tokens "
        "(shapes, negative or mis-summed draft counts) or whose kind is wrong, are errors naming the field"
    ),
)
def invalid_layout_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-INPUT-3 on a NaN in a free row of a case that forces another row: an error naming ``target_logits``.
    RS-INPUT-5 on layouts that disagree with ``num_draft_tokens`` and on ``draft_probs`` and forced ids of the
    wrong kind, handed to an engine that takes tensors (``tensor_device``; the canonical case cannot hold them):
    each must raise a ValueError naming the field. The valid case they depart from: ``target_logits`` float32
    ``[3, 6]``, ``draft_token_ids`` int64 ``[1, 2]``, ``num_draft_tokens`` int64 ``[2]``, ``temperature`` float32
    ``[1.0]``, ``seeds`` int64 ``[1]``."""
    import torch

    tally = Tally(requirements)
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(4, vocab)).astype(np.float32)
    nan_free_row = logits[:3].copy()
    nan_free_row[1, 2] = np.nan  # row 1 is free; row 0 is forced
    case = rs.RejectionCase(nan_free_row, [1, 2], [2], [1.0], forced_token_ids=[3, -1, -1], seeds=[1])
    try:
        engine.rejection_sample(case)
    except (ValueError, rs.InvalidCase) as exc:
        if "target_logits" in str(exc):
            tally.exercised("RS-INPUT-3")
        else:
            tally.violated("RS-INPUT-3", "error-does-not-name-field", f"NaN in free row 1, row 0 forced: {exc}")
    else:
        tally.violated("RS-INPUT-3", "nan-accepted", "a NaN in free row 1 was accepted because row 0 was forced")
    device = getattr(engine, "tensor_device", None)
    if device is None:
        return tally.outcome("a NaN in a free row beside a forced one is rejected; the engine takes no tensors")
    # each field's values and dtype, or None for an optional field left out
    valid: dict[str, tuple[npt.ArrayLike, torch.dtype] | None] = {
        "target_logits": (logits[:3], torch.float32),
        "draft_token_ids": ([1, 2], torch.int64),
        "num_draft_tokens": ([2], torch.int64),
        "draft_probs": None,
        "temperature": ([1.0], torch.float32),
        "seeds": ([1], torch.int64),
        "positions": None,
        "forced_token_ids": None,
    }
    wide = np.full((2, vocab + 1), 1 / (vocab + 1), dtype=np.float32)  # rows sum to 1, one column too many
    # what is wrong -> (the field an error must name, the fields that differ from the valid case)
    cases: dict[str, tuple[str, dict[str, tuple[npt.ArrayLike, torch.dtype] | None]]] = {
        "a negative draft count": (
            "num_draft_tokens",
            {
                "num_draft_tokens": ([-1, 3], torch.int64),
                "temperature": ([1.0, 1.0], torch.float32),
                "seeds": ([1, 2], torch.int64),
                "target_logits": (logits, torch.float32),
            },
        ),
        "draft counts summing to 3 for 2 drafts": ("num_draft_tokens", {"num_draft_tokens": ([3], torch.int64)}),
        "1-D target_logits": ("target_logits", {"target_logits": (logits[0], torch.float32)}),
        "2-D num_draft_tokens": ("num_draft_tokens", {"num_draft_tokens": ([[2]], torch.int64)}),
        "2-D draft_token_ids": ("draft_token_ids", {"draft_token_ids": ([[1], [2]], torch.int64)}),
        "target_logits with a row more": ("target_logits", {"target_logits": (logits, torch.float32)}),
        "draft_probs with a column more": ("draft_probs", {"draft_probs": (wide, torch.float32)}),
        "two temperatures for one request": ("temperature", {"temperature": ([1.0, 1.0], torch.float32)}),
        "two seeds for one request": ("seeds", {"seeds": ([1, 2], torch.int64)}),
        "forced_token_ids for 2 of 3 rows": ("forced_token_ids", {"forced_token_ids": ([-1, -1], torch.int64)}),
        "integer draft_probs": ("draft_probs", {"draft_probs": (np.eye(vocab)[[1, 2]], torch.int64)}),
        "float forced ids": ("forced_token_ids", {"forced_token_ids": ([-1.0, -1.0, -1.0], torch.float32)}),
        "boolean draft ids": ("draft_token_ids", {"draft_token_ids": ([True, False], torch.bool)}),
    }
    for change, (field_name, fields) in cases.items():
        given = {**valid, **fields}
        tensors = {
            name: None if value is None else torch.tensor(np.asarray(value[0]), dtype=value[1], device=device)
            for name, value in given.items()
        }
        try:
            engine.rejection_sample_tensors(*tensors.values())
        except ValueError as exc:
            if field_name in str(exc):
                tally.exercised("RS-INPUT-5")
            else:
                tally.violated("RS-INPUT-5", "error-does-not-name-field", f"{change}: rejected as {exc}")
            continue
        tally.violated("RS-INPUT-5", "layout-disagreement-accepted", f"{change} was accepted")
    return tally.outcome(
        f"a NaN in a free row beside a forced one, and {len(cases)} tensors whose layout disagrees with "
        "num_draft_tokens or whose kind is wrong, are rejected naming the field"
    )


def _mode_tensors(case: rs.RejectionCase, device: str) -> list:
    """``case``'s fields as the tensors ``rejection_sample_tensors`` takes, in its order (None where absent)."""
    import torch

    def tensor(values, dtype):
        return None if values is None else torch.tensor(np.asarray(values), dtype=dtype, device=device)

    return [
        tensor(case.target_logits, torch.float32),
        tensor(case.draft_token_ids, torch.int64),
        tensor(case.num_draft_tokens, torch.int64),
        tensor(case.draft_probs, torch.float32),
        tensor(case.temperature, torch.float32),
        tensor(case.seeds, torch.int64),
        tensor(case.positions, torch.int64),
        tensor(case.forced_token_ids, torch.int64),
    ]


def _greedy_mode_case(ctx: Context, num_draft_tokens: list[int], vocab: int, forced=None) -> rs.RejectionCase:
    """A greedy case (deterministic, so judged exactly) with drafts equal to each row's argmax but the last of
    every request (accepted, then rejected)."""
    rng = np.random.default_rng(ctx.seed)
    rows = sum(k + 1 for k in num_draft_tokens)
    logits = rng.normal(size=(rows, vocab)).astype(np.float32)
    drafts, row = [], 0
    for k in num_draft_tokens:
        drafts += [
            int(np.argmax(logits[row + j])) if j < k - 1 else (int(np.argmax(logits[row + j])) + 1) % vocab
            for j in range(k)
        ]
        row += k + 1
    return rs.RejectionCase(logits, drafts, num_draft_tokens, [0.0] * len(num_draft_tokens), forced_token_ids=forced)


def _emitted_rows(tokens, num) -> list[list[int]]:
    return [[int(t) for t in row[: int(n)]] for row, n in zip(np.asarray(tokens), np.asarray(num))]


def _unvalidated_engine(engine, ctx: Context) -> Outcome:
    """RS-INPUT-7 for an engine judged wholly in a mode without input validation (capability ``unvalidated-mode``):
    the invalid ids of ``invalid_ids_check`` and its NaN and +inf temperatures may give any tokens or an error, but
    every id emitted lies in ``[0, V)``. An engine that also claims to validate contradicts itself:
    PRECONDITION_FAILED."""
    if "input-validation" in ctx.profile.capabilities:
        return uniform_outcome(
            PRECONDITION_FAILED,
            "the engine validates its input (capability input-validation); RS-INPUT-7 binds a mode without it",
            ("RS-INPUT-7",),
        )
    tally = Tally(("RS-INPUT-7",))
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    invalid_ids: tuple[_IdChange, ...] = (  # the ids just outside their ranges, and temperatures, RS-INPUT-5 rejects
        {"forced_token_ids": [-2, -1, -1]},
        {"forced_token_ids": [-1, -1, vocab]},
        {"draft_token_ids": [-2, 1]},
        {"draft_token_ids": [1, vocab]},
        {"temperature": [np.nan]},
        {"temperature": [np.inf]},
    )
    refused = []
    for change in invalid_ids:
        case = _id_case(logits, change)
        try:
            tokens, _ = sample_output(engine, ctx.profile, case)
        except Exception as exc:  # RS-INPUT-7 allows an error: the case shows no emitted id
            refused.append(f"{change}: {type(exc).__name__}")
            continue
        emitted = tokens[tokens != -1]
        if ((emitted < 0) | (emitted >= vocab)).any():
            tally.violated("RS-INPUT-7", "id-outside-vocabulary", f"{change}: emitted {tokens.tolist()}")
        else:
            tally.exercised("RS-INPUT-7")
    summary = "without input validation (RS-INPUT-6): invalid ids give ids in [0, V) or an error"
    return tally.outcome(summary + (f"; refused: {', '.join(refused)}" if refused else ""))


@check(
    "rejection/unvalidated-mode",
    cls="rs.input",
    covers=("RS-INPUT-7",),
    needs=("rejection",),
    description=(
        "without input validation (an engine judged in that mode, or a mode beside validation), invalid ids "
        "emit ids in [0, V) only or an error; valid input is sampled as with validation"
    ),
)
def unvalidated_mode_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-INPUT-7 on an engine that offers a mode without input validation (RS-INPUT-6), declared one of two
    ways. Judged wholly in that mode (capability ``unvalidated-mode``): see ``_unvalidated_engine``. Offering it
    beside validation (``tensor_modes`` holds ``"unvalidated"``: ``rejection_sample_tensors(..., validate=False)``):
    valid input is sampled as with validation (a greedy case with forced ids 0, V − 1 and one beyond the row
    count, judged row by row against the oracle), and invalid input (draft ids -1 and V, forced ids -2 and V, NaN
    and +inf temperatures) gives unspecified tokens, but every emitted id lies in ``[0, V)`` and every row emits 1
    to K + 1 of them.
    An engine that offers neither: NOT_RUN."""
    if "unvalidated-mode" in ctx.profile.capabilities:
        return _unvalidated_engine(engine, ctx)
    tally = Tally(requirements)
    device = getattr(engine, "tensor_device", None)
    if device is None or "unvalidated" not in getattr(engine, "tensor_modes", ()):
        return tally.outcome(
            "the engine offers no mode without input validation (RS-INPUT-6 permits one; RS-INPUT-7 judges it)"
        )
    vocab = 9
    valid = _greedy_mode_case(ctx, [2, 1], vocab, forced=[0, -1, -1, vocab - 1, 6])  # 5 rows: 6 lies beyond them
    for case in (valid, replace(valid, forced_token_ids=None)):
        label = f"forced ids {_forced_ids(case)} (V = {vocab}) without validation"
        try:
            tokens, num = engine.rejection_sample_tensors(*_mode_tensors(case, device), validate=False)
        except ValueError as exc:
            tally.violated("RS-INPUT-7", "valid-input-rejected", f"{label}: rejected as {exc}")
            continue
        got, expected = _emitted_rows(tokens.cpu(), num.cpu()), _emitted_rows(*rs.sample_case(case)[:2])
        if got == expected:
            tally.exercised("RS-INPUT-7")
        else:
            tally.violated("RS-INPUT-7", "valid-input-sampled-differently", f"{label}: {got}, expected {expected}")
    invalid = (  # draft ids -1 and V, forced ids -2 and V; V = 1, where every id but 0 is outside; NaN and +inf
        # temperatures, which a greedy test (T == 0) and a sampling one (T > 0) both miss
        # (arrays: mypy types replace() by the stored fields, not by RejectionCase's array-like __init__)
        replace(
            valid, draft_token_ids=np.array([-1, vocab, vocab]), forced_token_ids=np.array([vocab, -2, -1, -1, vocab])
        ),
        rs.RejectionCase(np.zeros((2, 1), np.float32), [1], [1], [1.0], forced_token_ids=[1, 1], seeds=[1]),
        replace(valid, forced_token_ids=np.full(5, -1), temperature=np.array([np.nan, np.inf]), seeds=np.array([1, 2])),
    )
    for case in invalid:
        tokens, num = engine.rejection_sample_tensors(*_mode_tensors(case, device), validate=False)
        rows = _emitted_rows(tokens.cpu(), num.cpu())
        outside = [t for row in rows for t in row if not 0 <= t < case.vocab_size]
        if outside or not all(1 <= len(row) <= k + 1 for row, k in zip(rows, case.num_draft_tokens)):
            tally.violated(
                "RS-INPUT-7",
                "id-outside-vocabulary",
                f"draft ids {case.draft_token_ids.tolist()}, forced ids {_forced_ids(case)}, "
                f"temperatures {case.temperature.tolist()} without validation emitted {rows} (V = {case.vocab_size})",
            )
        else:
            tally.exercised("RS-INPUT-7")
    return tally.outcome(
        "without validation: valid forced ids sampled as the oracle does; invalid ids emit ids in [0, V)"
    )


@check(
    "rejection/fixed-width",
    cls="rs.layout",
    covers=("RS-LAYOUT-2", "RS-INPUT-5"),
    needs=("rejection",),
    description=(
        "rows of a fixed-width output read through num_emitted equal the oracle's; a draft count above the "
        "width is an error naming it"
    ),
)
def fixed_width_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-LAYOUT-2 on an engine whose output can have a fixed width, the padded layout RS-LAYOUT-3 permits
    (``tensor_modes`` holds ``"fixed-width"``: ``rejection_sample_tensors(..., max_spec_len=M)`` gives
    ``[B, M + 1]``): greedy cases with M equal to the largest draft count, above it, and 0 for a batch without
    drafts, each row read through ``num_emitted`` and judged against the oracle; RS-INPUT-5: a draft count above
    M is an error naming ``max_spec_len``."""
    tally = Tally(requirements)
    device = getattr(engine, "tensor_device", None)
    if device is None or "fixed-width" not in getattr(engine, "tensor_modes", ()):
        return tally.outcome("the engine's output has no fixed width (RS-LAYOUT-3 permits one)")
    vocab = 7
    for counts, width in (([2, 0, 1], 2), ([2, 0, 1], 4), ([0, 0], 0)):
        case = _greedy_mode_case(ctx, counts, vocab)
        label = f"draft counts {counts}, max_spec_len {width}"
        try:
            tokens, num = engine.rejection_sample_tensors(*_mode_tensors(case, device), max_spec_len=width)
        except ValueError as exc:
            tally.violated("RS-LAYOUT-2", "valid-case-rejected", f"{label}: rejected as {exc}")
            continue
        got, expected = _emitted_rows(tokens.cpu(), num.cpu()), _emitted_rows(*rs.sample_case(case)[:2])
        if tuple(tokens.shape)[0] == len(counts) and got == expected:
            tally.exercised("RS-LAYOUT-2")
        else:
            tally.violated("RS-LAYOUT-2", "fixed-width-rows-differ", f"{label}: {got}, expected {expected}")
    case = _greedy_mode_case(ctx, [3, 1], vocab)
    try:
        engine.rejection_sample_tensors(*_mode_tensors(case, device), max_spec_len=2)
    except ValueError as exc:
        if "max_spec_len" in str(exc):
            tally.exercised("RS-INPUT-5")
        else:
            tally.violated("RS-INPUT-5", "error-does-not-name-field", f"3 drafts, max_spec_len 2: rejected as {exc}")
    else:
        tally.violated("RS-INPUT-5", "layout-disagreement-accepted", "3 drafts with max_spec_len 2 were accepted")
    return tally.outcome(
        "fixed-width rows read through num_emitted equal the oracle's; a draft count above the width is an error"
    )


@check(
    "rejection/output-contract",
    cls="rs.input",
    covers=("RS-INPUT-1", "RS-INPUT-2", "RS-LAYOUT-2", "RS-PROB-3"),
    needs=("rejection",),
    description="every output is a -1-padded prefix of in-range ids",
)
def output_contract(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    tally = Tally(requirements)
    family = RejectionFamily(forced=True, masks=MASKS, vocabs=VOCABS)  # the tail mask once returned id V
    # then mass on the last partial tile's ids only, where a tiling that drops that tile has nothing to sample
    last_ids = RejectionFamily(forced=True, masks=(LAST_IDS,), vocabs=TILE_REMAINDER_VOCABS)
    outside = 0
    seen: dict[str, tuple[str, rj.Violation]] = {}  # a first violation met before -> (own, owner) it went to
    for n, case in enumerate(drawn_cases(ctx.seed, (family, 120), (last_ids, LAST_IDS_CASES))):
        if why := outside_contract(ctx.profile, case):
            outside += 1
            tally.not_applicable(why, *requirements)
            continue
        first = rj.owner(minimal.judge(engine, ctx.profile, case, False, ctx.profile.tie_break))
        if first is None:
            tally.exercised("RS-INPUT-1", "RS-LAYOUT-2", "RS-PROB-3")
            if np.isneginf(case.target_logits).any():
                tally.exercised("RS-INPUT-2")
            continue
        own = first.requirement if first.requirement in requirements else "RS-LAYOUT-2"
        if first.fingerprint in seen:
            minimal.record(tally, ctx.profile, requirements, *seen[first.fingerprint], "")
            continue

        # the minimal case is judged whole: compared with the oracle too where it can be (a token with p = 0 that
        # a greedy request emitted may be its rule's error)
        tie_break = ctx.profile.tie_break
        compare = minimal.exactly_compared(ctx.profile) if comparable(case, tie_break) else False

        def usable(candidate: rs.RejectionCase, compare=compare, tie_break=tie_break) -> bool:
            return (not compare or comparable(candidate, tie_break)) and not outside_contract(ctx.profile, candidate)

        attributed = minimal.attribute(engine, ctx.profile, case, compare, tie_break, usable)
        seen[first.fingerprint] = (own, attributed.owner)
        evidence = (
            f"case {n}: {attributed.owner.evidence} ({describe_case(attributed.minimal)}); minimised from case {n} "
            f"({case_size(case)} rows to {case_size(attributed.minimal)})"
        )
        document = minimal.document(case, attributed, requirements, ctx.profile.tie_break)
        minimal.record(tally, ctx.profile, requirements, own, attributed.owner, evidence, document)
    return tally.outcome(
        f"{120 + LAST_IDS_CASES} cases, V from 1 to 262,144 ({LAST_IDS_CASES} with mass on the last partial tile's ids "
        "only): -1-padded prefixes of 1..K+1 ids in [0, V), no p = 0 token, counts agree"
        + (f"; {outside} outside the engine's contract, not run" if outside else "")
    )


@check(
    "rejection/invalid-ids",
    cls="rs.input",
    covers=("RS-INPUT-5",),
    needs=("rejection", "input-validation"),
    description="forced and draft ids just outside their allowed ranges are errors naming the field",
)
def invalid_ids_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-INPUT-5 at both ends of the allowed ranges: a forced id below -1 or equal to V and a draft id below -1
    or equal to V are errors naming the field (a ValueError), never tokens, and so are the temperatures outside
    ``[0, inf)`` that are no number below 0: NaN, +inf and -inf (a greedy test ``T == 0`` and a sampling test
    ``T > 0`` both let NaN through); so are fractional draft ids and integer logits, on an engine that takes tensors
    (``tensor_device``: the canonical case stores floats and integers)."""
    tally = Tally(requirements)
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    cases: dict[str, tuple[_IdChange, ...]] = {
        "forced_token_ids": ({"forced_token_ids": [-2, -1, -1]}, {"forced_token_ids": [-1, -1, vocab]}),
        "draft_token_ids": ({"draft_token_ids": [-2, 1]}, {"draft_token_ids": [1, vocab]}),
        "temperature": tuple({"temperature": [value]} for value in (np.nan, np.inf, -np.inf)),
    }
    for field_name, changes in cases.items():
        for change in changes:
            case = _id_case(logits, change)
            try:
                engine.rejection_sample(case)
            except (ValueError, rs.InvalidCase) as exc:
                if field_name in str(exc):
                    tally.exercised("RS-INPUT-5")
                else:
                    tally.violated("RS-INPUT-5", "error-does-not-name-field", f"{change}: rejected as {exc}")
                continue
            tally.violated("RS-INPUT-5", "invalid-id-accepted", f"{change} was accepted")
    summary = "ids just outside the allowed ranges, and NaN and ±inf temperatures, are rejected naming the field"
    device = getattr(engine, "tensor_device", None)
    if device is not None:  # only an engine that takes tensors can be handed tensors of the wrong kind
        _wrong_tensor_kinds(engine, device, logits, tally)
        summary += "; so are fractional draft ids and integer logits given as tensors"
    return tally.outcome(summary)


def _wrong_tensor_kinds(engine, device: str, logits: np.ndarray, tally: Tally) -> None:
    """RS-INPUT-5 on tensors of the wrong kind handed to ``engine``'s ``rejection_sample_tensors``: draft ids
    float32 ``[2]`` holding 1.5 (no id in ``[0, V)``) and ``target_logits`` int64 ``[3, V]`` (no logits); each
    must raise a ValueError naming its field and dtype."""
    import torch

    def tensor(values, dtype):
        return torch.tensor(values, dtype=dtype, device=device)

    drafts = [1.5, 2.0]
    cases = {
        f"float draft ids {drafts}": (
            "draft_token_ids",
            "invalid-id-accepted",
            tensor(logits, torch.float32),
            tensor(drafts, torch.float32),
        ),
        "int64 target logits": (
            "target_logits",
            "integer-logits-accepted",
            tensor(np.rint(logits), torch.int64),
            tensor([1, 2], torch.int64),
        ),
    }
    for change, (field_name, mode, target_logits, draft_token_ids) in cases.items():
        try:
            engine.rejection_sample_tensors(
                target_logits,
                draft_token_ids,
                tensor([2], torch.int64),
                None,
                tensor([1.0], torch.float32),
                tensor([1], torch.int64),
                None,
            )
        except ValueError as exc:
            wrong = target_logits if field_name == "target_logits" else draft_token_ids
            if field_name in str(exc) and str(wrong.dtype).removeprefix("torch.") in str(exc):
                tally.exercised("RS-INPUT-5")
            else:
                tally.violated("RS-INPUT-5", "error-does-not-name-field", f"{change}: rejected as {exc}")
            continue
        tally.violated("RS-INPUT-5", mode, f"{change} were accepted")
