"""Rejection-sampling checks: exact comparison with the oracle (greedy rows, and probabilistic rows
under the reference draws), the output contract, seeded independence, and calibrated distribution
checks (specs/statistics.md).

Generated cases come from the shared strategies (``harness.cases.rejection``, which documents why
each is reachable). Cases are independent, so a check judges every case after a mismatch too; each case counts for the
requirements it exercises, and a mismatch is blamed on the requirement of the first diverging request.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from .. import cases, contract, shrink, stats, vectors
from ..cases.rejection import MASKS, VOCABS, RejectionFamily, case_size, rejection_cases, smaller_cases
from ..core import PRECONDITION_FAILED, Context, Outcome, Tally, uniform_outcome
from ..oracle import counting as ac
from ..oracle import rejection as rs
from ..oracle import rng as reference_rng
from .catalogue import check, declare


def outside_contract(profile, case: rs.RejectionCase) -> str | None:
    """Why ``case`` is not run against an engine with ``profile`` (None: it is): it needs an input the engine's
    contract says its callers never produce (``harness.contract``)."""
    return profile.outside_contract(
        contract.rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
    )


def sample_output(engine, profile, case: rs.RejectionCase) -> tuple[np.ndarray, np.ndarray]:
    """``(token_ids [B, W], num_emitted [B])`` from the engine, in the canonical layout. Under the
    declared ``layout: padded`` variant (RS-LAYOUT-3) a row's tail after ``num_emitted`` is unspecified:
    it is read through ``num_emitted`` and judged as ``-1`` placeholders."""
    tokens, num = engine.rejection_sample(case)
    tokens, num = np.array(tokens), np.asarray(num)
    if profile.layout == "padded" and tokens.ndim == 2 and num.shape == (tokens.shape[0],):
        tokens[np.arange(tokens.shape[1])[None, :] >= num[:, None]] = -1
    return tokens, num


def output_problem(case: rs.RejectionCase, tokens, num) -> tuple[str, str, str] | None:
    """The first structural violation of one output: ``(requirement, mode, evidence)`` or None
    (RS-LAYOUT-2, RS-INPUT-1, RS-PROB-3, AC-COUNT-5, RS-FORCE-1)."""
    V = case.vocab_size
    tokens = np.asarray(tokens)
    num = np.asarray(num)
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    if tokens.ndim != 2 or tokens.shape[0] != case.batch_size or tokens.shape[1] < width:
        return (
            "RS-LAYOUT-2",
            "wrong-shape",
            f"token_ids has shape {tokens.shape}; expected ({case.batch_size}, >= {width})",
        )
    offsets = case.row_offsets()
    for i in range(case.batch_size):
        row = tokens[i].tolist()
        n = ac.num_emitted(row)
        if any(t != -1 for t in row[n:]):
            return "RS-LAYOUT-2", "token-after-placeholder", f"request {i}: real tokens after a placeholder: {row}"
        if not 1 <= n <= case.num_draft_tokens[i] + 1:
            return (
                "RS-LAYOUT-2",
                "emitted-count-out-of-range",
                f"request {i} emitted {n} tokens with K = {case.num_draft_tokens[i]}",
            )
        if any(not 0 <= t < V for t in row[:n]):
            return "RS-INPUT-1", "id-outside-vocabulary", f"request {i}: ids outside [0, {V}): {row}"
        if int(num[i]) != n:
            return (
                "AC-COUNT-5",
                "num-emitted-differs",
                f"request {i}: num_emitted {int(num[i])} but the row holds {n} tokens",
            )
        for j, t in enumerate(row[:n]):
            r = offsets[i] + j
            forced = -1 if case.forced_token_ids is None else int(case.forced_token_ids[r])
            if forced == -1 and np.isneginf(case.target_logits[r, t]):
                return "RS-PROB-3", "zero-probability-token", f"request {i} position {j}: emitted token {t} has p = 0"
            if forced != -1 and j == n - 1 and t != forced:
                return "RS-FORCE-1", "forced-row-ignored", f"request {i} position {j}: forced {forced}, emitted {t}"
    return None


def has_tie(logits: np.ndarray) -> bool:
    finite = np.where(np.isneginf(logits), -np.inf, logits)
    return bool(((finite == finite.max(axis=-1, keepdims=True)).sum(axis=-1) > 1).any())


def request_requirements(case: rs.RejectionCase, i: int, emitted: int, tie_break: str) -> set[str]:
    """The requirements request ``i`` of a case exercises when compared exactly with the oracle."""
    K = int(case.num_draft_tokens[i])
    rows = slice(case.row_offsets()[i], case.row_offsets()[i] + K + 1)
    greedy = case.temperature[i] == 0
    forced = case.forced_token_ids is not None and (np.asarray(case.forced_token_ids)[rows] != -1).any()
    tags = {"AC-COUNT-1", "AC-COUNT-5", "RS-RNG-3", "RS-LAYOUT-1"}
    if K == 0:
        tags.add("RS-ZERO-1")
    if forced:
        tags.add("RS-FORCE-1")
    if greedy and K:
        tags.add("RS-GREEDY-1")
        if emitted <= K:
            tags.add("RS-GREEDY-2")
    if greedy and tie_break == "lowest" and has_tie(case.target_logits[rows]):
        tags.add("RS-GREEDY-3")
    if not greedy and K:
        tags |= {"RS-PROB-1", "RS-ONEHOT-2"} if case.draft_probs is not None else {"RS-ONEHOT-1", "RS-PROB-1"}
        if emitted <= K:
            tags |= {"RS-PROB-2", "RS-RNG-2"}
    if len(set(case.temperature == 0)) > 1:
        tags.add("RS-MIXED-1")
    return tags


_BLAME_ORDER = (  # a mismatch that no misreading explains (``_misreading``) is blamed on the first that applies
    "RS-FORCE-1",
    "RS-ZERO-1",
    "RS-GREEDY-3",
    "RS-GREEDY-2",
    "RS-GREEDY-1",
    "RS-ONEHOT-1",
    "RS-PROB-2",
    "RS-PROB-1",
    "RS-MIXED-1",
    "AC-COUNT-1",
)


def judge_exact(
    engine,
    case: rs.RejectionCase,
    requirements: tuple[str, ...],
    tie_break: str,
    tally: Tally | None = None,
    profile=None,
) -> tuple[str, str, str] | None:
    """Compare one case with the oracle: ``(requirement, mode, evidence)`` of its first violation or
    None; the requests compared before it count in ``tally`` (when given). ``None`` as well for a case
    that cannot be compared (``comparable`` says which)."""
    expected, num, _ = rs.sample_case(case)
    tokens, got_num = sample_output(engine, profile, case) if profile else engine.rejection_sample(case)
    problem = output_problem(case, tokens, got_num)
    if problem:
        return problem[0], problem[1], f"{problem[2]} ({_describe(case)})"
    tokens = np.asarray(tokens)[:, : expected.shape[1]]
    for i in range(case.batch_size):
        tags = request_requirements(case, i, int(num[i]), tie_break) & set(requirements)
        if tokens[i].tolist() != expected[i].tolist():
            evidence = f"request {i}: emitted {tokens[i].tolist()}, expected {expected[i].tolist()} ({_describe(case)})"
            explained = _misreading(case, i, tokens[i].tolist(), tags)
            if explained:
                return explained[0], explained[1], f"{evidence}; {explained[2]}"
            blame = next((r for r in _BLAME_ORDER if r in tags), requirements[0])
            return blame, "token-differs-from-oracle", evidence
        if tally is not None:
            tally.exercised(*tags)
    return None


def _oracle_row(case: rs.RejectionCase, i: int, q_rows, noise_purpose: int) -> list[int]:
    """Request ``i``'s oracle row (``-1`` padded) under the reference draws, with ``q_rows`` as its
    draft probabilities and its tokens sampled from the ``noise_purpose`` stream."""
    row_slice, draft_slice = rs.request_slices(case, i)
    forced = (
        case.forced_token_ids[row_slice]
        if case.forced_token_ids is not None
        else [-1] * (row_slice.stop - row_slice.start)
    )
    position = 0 if case.positions is None else int(case.positions[i])
    draws = rs.counter_draws(int(case.seeds[i]), position, case.vocab_size, noise_purpose)
    emitted = rs.verify_request(
        case.target_logits[row_slice],
        case.draft_token_ids[draft_slice],
        q_rows,
        float(case.temperature[i]),
        forced,
        draws,
    ).emitted
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    return emitted + [-1] * (width - len(emitted))


def _misreading(case: rs.RejectionCase, i: int, row: list[int], tags: set[str]) -> tuple[str, str, str] | None:
    """Name the rule a probabilistic request's mismatch breaks when the oracle reproduces it exactly
    under one specific misreading: its emitted token sampled from the acceptance stream (RS-RNG-2), or its
    draft probabilities read at other rows than its drafts' (RS-ONEHOT-2): in the padded layout
    (``i * max K + j``) or one row off."""
    if case.seeds is None or case.temperature[i] == 0:
        return None
    _, draft_slice = rs.request_slices(case, i)
    own_q = None if case.draft_probs is None else case.draft_probs[draft_slice]
    if "RS-RNG-2" in tags and row == _oracle_row(case, i, own_q, reference_rng.PURPOSE_ACCEPT):
        return (
            "RS-RNG-2",
            "acceptance-draw-reused",
            "the oracle emits this row when the token is sampled from the acceptance stream",
        )
    if "RS-ONEHOT-2" not in tags or own_q is None:
        return None
    total, first, K = len(case.draft_probs), draft_slice.start, draft_slice.stop - draft_slice.start
    readings = {
        "padded": [min(i * int(case.num_draft_tokens.max()) + j, total - 1) for j in range(K)],
        "one row early": [max(first + j - 1, 0) for j in range(K)],
        "one row late": [min(first + j + 1, total - 1) for j in range(K)],
    }
    for name, rows in readings.items():
        if rows != list(range(first, first + K)) and row == _oracle_row(
            case, i, case.draft_probs[rows], reference_rng.PURPOSE_SAMPLE
        ):
            return "RS-ONEHOT-2", "draft-probs-misaligned", f"the oracle emits this row when draft_probs is read {name}"
    return None


def comparable(case: rs.RejectionCase, tie_break: str) -> bool:
    """False for a case within 1e-5 of a floating-point decision (RS-RNG-3), or with a tie that the
    profile lets the engine break either way."""
    _, _, traces = rs.sample_case(case)
    if any(min(t.accept_margins, default=np.inf) < 1e-5 or t.sample_margin < 1e-5 for t in traces):
        return False
    return not (tie_break == "any" and has_tie(case.target_logits))


def _reproduction(engine, case, failure, requirements, tie_break, profile) -> tuple[rs.RejectionCase, dict]:
    """The failing case minimised on the same fingerprint, and its standalone vector document."""
    rid, mode, _ = failure

    def still_fails(candidate: rs.RejectionCase) -> bool:
        try:
            candidate.validate()
            if not comparable(candidate, tie_break):
                return False
            found = judge_exact(engine, candidate, requirements, tie_break, profile=profile)
        except Exception:  # invalid, or the engine fails otherwise: not the same failure
            return False
        return found is not None and found[:2] == (rid, mode)

    minimal = shrink.minimise(case, smaller_cases, still_fails)
    entry = vectors._exact_case("minimal", [rid, *[r for r in requirements if r != rid]], minimal)
    entry["tie_break"] = tie_break
    document = {
        "format": vectors.FORMAT_VERSION,
        "kind": "rejection",
        "fingerprint": f"{rid}/{mode}",
        "original_size": case_size(case),
        "minimal_size": case_size(minimal),
        "exact": [entry],
        "errors": [],
    }
    return minimal, document


def exact_check(family: RejectionFamily, requirements: tuple[str, ...], count: int = 150):
    """Compare ``count`` cases of ``family`` (drawn from ``ctx.seed``) with the oracle token for token;
    every case is judged, and the first failure of each requirement is minimised into a reproduction."""

    def run(engine, ctx: Context) -> Outcome:
        tie_break = ctx.profile.tie_break
        # under the declared tie_break: any variant, RS-GREEDY-3 is waived and tied cases are skipped
        waived = ("RS-GREEDY-3",) if tie_break == "any" and "RS-GREEDY-3" in requirements else ()
        tally = Tally(requirements, conditional=waived)
        compared = skipped = outside = 0
        for n, case in enumerate(cases.draw(rejection_cases(family), ctx.seed, count)):
            if not comparable(case, tie_break):
                skipped += 1
                continue
            if why := outside_contract(ctx.profile, case):
                outside += 1
                tally.not_applicable(why, *requirements)
                continue
            compared += 1
            failure = judge_exact(engine, case, requirements, tie_break, tally, ctx.profile)
            if failure is None:
                continue
            rid, mode, evidence = failure
            if rid in tally.failures:
                tally.violated(rid, mode, "")
                continue
            minimal, document = _reproduction(engine, case, failure, requirements, tie_break, ctx.profile)
            shown = judge_exact(engine, minimal, requirements, tie_break, profile=ctx.profile)
            if shown is not None and shown[:2] == (rid, mode):
                evidence = f"{shown[2]}; minimised from case {n} ({case_size(case)} rows to {case_size(minimal)})"
            tally.violated(rid, mode, f"case {n}: {evidence}", reproduction=document)
        return tally.outcome(
            f"{compared} cases compared with the oracle, {skipped} skipped at a rounding boundary"
            + (f", {outside} outside the engine's contract" if outside else "")
        )

    return run


def declare_exact(
    name: str,
    cls: str,
    covers: tuple[str, ...],
    description: str,
    family: RejectionFamily,
    needs: tuple[str, ...] = ("rejection",),
) -> None:
    """Declare a check that compares cases of ``family`` with the oracle token for token (``exact_check``)."""
    declare(
        name,
        cls=cls,
        covers=covers,
        needs=needs,
        description=description,
        build=lambda requirements: exact_check(family, requirements),
    )


# The exact families: one check each, over cases drawn from its RejectionFamily.
declare_exact(
    "rejection/greedy",
    "rs.greedy",
    ("RS-GREEDY-1", "RS-GREEDY-2", "RS-GREEDY-3"),
    "greedy cases with ties and masks equal the oracle",
    RejectionFamily(greedy="all", ties=True),
)
declare_exact(
    "rejection/zero-draft",
    "rs.zero-draft",
    ("RS-ZERO-1",),
    "zero-draft requests emit exactly one token",
    RejectionFamily(greedy="all", zero_drafts="most"),
)
declare_exact(
    "rejection/forced",
    "rs.forced",
    ("RS-FORCE-1",),
    "forced rows are one-hot before verification",
    RejectionFamily(greedy="all", forced=True),
)
declare_exact(
    "rejection/reference-draws",
    "rs.seeded",
    (
        "RS-RNG-3",
        "RS-PROB-1",
        "RS-PROB-2",
        "RS-ONEHOT-1",
        "RS-MIXED-1",
        "RS-LAYOUT-1",
        "RS-RNG-2",
        "RS-ONEHOT-2",
    ),
    "mixed batches equal the oracle under the reference draws; a token sampled from the acceptance "
    "stream (RS-RNG-2) or from misaligned draft probabilities (RS-ONEHOT-2) is named",
    RejectionFamily(greedy="mixed", forced=True),
    needs=("rejection", "reference-draws"),
)


def _describe(case: rs.RejectionCase) -> str:
    return (
        f"K={case.num_draft_tokens.tolist()}, V={case.vocab_size}, T={case.temperature.tolist()}, "
        f"drafts={case.draft_token_ids.tolist()}, q {'given' if case.draft_probs is not None else 'none'}"
    )


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
    valid = {
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
    cases = {  # what is wrong -> (the field an error must name, the fields that differ from the valid case)
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
    the invalid ids of ``invalid_ids_check`` may give any tokens or an error, but every id emitted lies in
    ``[0, V)``. An engine that also claims to validate contradicts itself: PRECONDITION_FAILED."""
    if "input-validation" in ctx.profile.capabilities:
        return uniform_outcome(
            PRECONDITION_FAILED,
            "the engine validates its input (capability input-validation); RS-INPUT-7 binds a mode without it",
            ("RS-INPUT-7",),
        )
    tally = Tally(("RS-INPUT-7",))
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    invalid_ids = (  # the ids just outside their ranges that RS-INPUT-5 has a validating engine reject
        {"forced_token_ids": [-2, -1, -1]},
        {"forced_token_ids": [-1, -1, vocab]},
        {"draft_token_ids": [-2, 1]},
        {"draft_token_ids": [1, vocab]},
    )
    refused = []
    for change in invalid_ids:
        fields = {"draft_token_ids": [1, 2], "forced_token_ids": None, **change}
        case = rs.RejectionCase(logits.copy(), num_draft_tokens=[2], temperature=[1.0], seeds=[1], **fields)
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
    count, judged row by row against the oracle), and invalid input (draft ids -1 and V, forced ids -2 and V)
    gives unspecified tokens, but every emitted id lies in ``[0, V)`` and every row emits 1 to K + 1 of them.
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
        forced = None if case.forced_token_ids is None else case.forced_token_ids.tolist()
        label = f"forced ids {forced} (V = {vocab}) without validation"
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
    invalid = (  # draft ids -1 and V, forced ids -2 and V; and V = 1, where every id but 0 is outside
        replace(valid, draft_token_ids=[-1, vocab, vocab], forced_token_ids=[vocab, -2, -1, -1, vocab]),
        rs.RejectionCase(np.zeros((2, 1), np.float32), [1], [1], [1.0], forced_token_ids=[1, 1], seeds=[1]),
    )
    for case in invalid:
        tokens, num = engine.rejection_sample_tensors(*_mode_tensors(case, device), validate=False)
        rows = _emitted_rows(tokens.cpu(), num.cpu())
        outside = [t for row in rows for t in row if not 0 <= t < case.vocab_size]
        if outside or not all(1 <= len(row) <= k + 1 for row, k in zip(rows, case.num_draft_tokens)):
            tally.violated(
                "RS-INPUT-7",
                "id-outside-vocabulary",
                f"draft ids {case.draft_token_ids.tolist()}, forced ids {case.forced_token_ids.tolist()} without "
                f"validation emitted {rows} (V = {case.vocab_size})",
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
    outside = 0
    for n, case in enumerate(cases.draw(rejection_cases(family), ctx.seed, 120)):
        if why := outside_contract(ctx.profile, case):
            outside += 1
            tally.not_applicable(why, *requirements)
            continue
        try:
            tokens, num = sample_output(engine, ctx.profile, case)
        except (ValueError, rs.InvalidCase) as exc:
            masked = np.isneginf(case.target_logits).any()
            tally.violated(
                "RS-INPUT-2" if masked else "RS-INPUT-1", "valid-input-rejected", f"case {n}: {exc} ({_describe(case)})"
            )
            continue
        problem = output_problem(case, tokens, num)
        if problem:
            tally.violated(problem[0], problem[1], f"case {n}: {problem[2]} ({_describe(case)})")
            continue
        tally.exercised("RS-INPUT-1", "RS-LAYOUT-2", "RS-PROB-3")
        if np.isneginf(case.target_logits).any():
            tally.exercised("RS-INPUT-2")
    return tally.outcome(
        "120 cases, V from 1 to 262,144: -1-padded prefixes of 1..K+1 ids in [0, V), no p = 0 token, counts agree"
        + (f"; {outside} outside the engine's contract, not run" if outside else "")
    )


@check(
    "rejection/seeded-independence",
    cls="rs.seeded",
    covers=("RS-RNG-1",),
    needs=("rejection", "seeded"),
    description="a seeded request's tokens do not depend on its batch",
)
def seeded_independence(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    for n in range(20):
        V = int(rng.choice([7, 100, 1000]))
        K = int(rng.integers(1, 4))
        logits = rng.normal(size=(K + 1, V))
        q = rng.dirichlet(np.ones(V), size=K)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        alone, _ = sample_output(
            engine, ctx.profile, rs.RejectionCase(logits, drafts, [K], [1.0], q, seeds=[seed], positions=[position])
        )
        others = int(rng.integers(1, 4))
        batch = rs.RejectionCase(
            np.concatenate([rng.normal(size=(2 * others, V)), logits]),
            [int(rng.integers(0, V)) for _ in range(others)] + drafts,
            [1] * others + [K],
            [0.7] * others + [1.0],
            np.concatenate([rng.dirichlet(np.ones(V), size=others), q]),
            seeds=list(rng.integers(0, 2**62, others)) + [seed],
            positions=[0] * others + [position],
        )
        together, _ = sample_output(engine, ctx.profile, batch)
        if np.asarray(together)[-1, : K + 1].tolist() != np.asarray(alone)[0, : K + 1].tolist():
            tally.violated(
                "RS-RNG-1",
                "depends-on-batch",
                f"case {n}: seeded request emitted {np.asarray(alone)[0].tolist()} alone and "
                f"{np.asarray(together)[-1].tolist()} in a batch of {others + 1}",
            )
        else:
            tally.exercised("RS-RNG-1")
    return tally.outcome("20 seeded requests alone and in a batch")


@check(
    "rejection/counter-based-draws",
    cls="rs.seeded",
    covers=("RS-RNG-1",),
    needs=("rejection", "seeded"),
    description="a seeded step resumed at the next position replays the same tokens, whatever the call order",
    # where a seeded request's draws start is the caller's to say: an adapter that picks it is judged here
    observes={"RS-RNG-1": ("draw_offsets",)},
)
def counter_based_draws(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-RNG-1 beyond batch independence: a seeded request's draws are a function of ``(seed, position)``.

    A request at position ``P`` verifies drafts ``d0 d1`` over rows ``r0 r1 r2``; when it accepts
    ``d0``, the same seed at position ``P + 1`` verifying ``d1`` over rows ``r1 r2`` replays the rest of
    that step, so it must emit exactly what the first call emitted after ``d0``. Each pair is asked
    twice, in both orders. A generator seeded once per request (or per call) and advanced by its
    draws fails: its draws depend on how many came before, not on the position."""
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    replayed = 0
    for n in range(200):
        V = int(rng.choice([5, 37, 100]))
        logits = rng.normal(scale=1.5, size=(3, V))
        q = rng.dirichlet(np.ones(V) * 0.5, size=2)
        drafts = [int(rng.choice(V, p=row)) for row in q]
        seed, position = int(rng.integers(0, 2**62)), int(rng.integers(0, 2**30))
        whole = rs.RejectionCase(logits, drafts, [2], [1.0], q, seeds=[seed], positions=[position])
        rest = rs.RejectionCase(logits[1:], drafts[1:], [1], [1.0], q[1:], seeds=[seed], positions=[position + 1])
        first, _ = sample_output(engine, ctx.profile, whole)
        first = [int(t) for t in np.asarray(first)[0, :3]]
        if first[0] != drafts[0] or first[1] == -1:
            continue  # d0 rejected: the rest of the step was never drawn
        for order in ("rest after whole", "rest before whole"):
            again, _ = sample_output(engine, ctx.profile, rest)
            if order == "rest before whole":
                sample_output(engine, ctx.profile, whole)
            again = [int(t) for t in np.asarray(again)[0, :2]]
            if again != first[1:]:
                tally.violated(
                    "RS-RNG-1",
                    "draws-depend-on-call-history",
                    f"case {n} ({order}): seed {seed} emitted {first} from position {position}, but {again} when "
                    f"the same step resumes at position {position + 1} (V={V}, drafts {drafts})",
                )
                break
            tally.exercised("RS-RNG-1")
        replayed += 1
    return tally.outcome(f"{replayed} accepted first drafts replayed from the next position, in both call orders")


# Fixed-draft cases of the acceptance-rule check: (name, logits [2, V] (draft row, bonus row), q of the
# draft row or None (one-hot), draft, requirement of the acceptance rate, requirement of the residual).
_NEG = -np.inf
_RULE_CASES = (
    (
        "residual",
        [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6],
        [0.05, 0.1, 0.5, 0.2, 0.15, 0.0],
        2,
        "RS-PROB-1",
        "RS-PROB-2",
    ),
    ("one-hot", [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6], None, 1, "RS-ONEHOT-1", "RS-ONEHOT-1"),
    (
        "zero-q",
        [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6],
        [0.0, 0.3, 0.3, 0.2, 0.2, 0.0],
        0,
        "RS-PROB-3",
        "RS-PROB-2",
    ),
    ("empty-residual", [[0.0, 0.0, _NEG, _NEG], [0.0] * 4], [0.5, 0.5, 0.0, 0.0], 2, "RS-PROB-3", "RS-PROB-4"),
)


def _rule_expectation(logits, q_row, draft) -> tuple[float, np.ndarray]:
    """``(acceptance probability, distribution of the token emitted on rejection)`` at temperature 1."""
    p = rs.target_probs(np.asarray(logits, dtype=np.float64), 1.0)
    q = np.eye(len(p))[draft] if q_row is None else np.asarray(q_row, dtype=np.float64)
    accept = 0.0 if q[draft] == 0 else min(1.0, p[draft] / q[draft])
    residual = np.maximum(p - q, 0.0)
    return accept, (residual / residual.sum() if residual.sum() > 0 else p)


def _rule_batch(rng, logits, q_row, draft, trials: int, layout: str):
    """``trials`` seeded requests of one fixed-draft case (K = 1, temperature 1), alone
    (``homogeneous``) or with a request of another draft count (``ragged``: K = 0 and K = 2 in
    turn, same temperature) or a greedy request (``mixed``) after every fourth. Returns the case,
    the batch index of every trial request and the greedy requests' indices."""
    V = len(logits[0])
    rows, drafts, num, temps, q, trial_index, greedy_index = [], [], [], [], [], [], []
    for t in range(trials):
        trial_index.append(len(num))
        rows += logits
        drafts.append(draft)
        num.append(1)
        temps.append(1.0)
        q.append(np.eye(V)[draft] if q_row is None else q_row)
        if layout == "homogeneous" or t % 4:
            continue
        k = 1 if layout == "mixed" else (0, 2)[(t // 4) % 2]
        filler = [list(rng.normal(size=V)) for _ in range(k + 1)]
        if layout == "mixed":
            greedy_index.append(len(num))
        rows += filler
        fill_drafts = [int(rng.integers(0, V)) for _ in range(k)]
        drafts += fill_drafts
        num.append(k)
        temps.append(0.0 if layout == "mixed" else 1.0)
        q += [np.eye(V)[d] for d in fill_drafts]
    case = rs.RejectionCase(
        np.array(rows),
        drafts,
        num,
        temps,
        None if q_row is None else np.array(q),  # one-hot verification: no draft probabilities at all
        seeds=rng.integers(0, 2**62, len(num)),
        positions=rng.integers(0, 2**40, len(num)),
    )
    return case, trial_index, greedy_index


def _greedy_row(case: rs.RejectionCase, i: int) -> list[int]:
    """The oracle's first two tokens of greedy request ``i`` (``-1`` padded)."""
    row_slice, draft_slice = rs.request_slices(case, i)
    rows = case.target_logits[row_slice]
    emitted = rs.verify_request(rows, case.draft_token_ids[draft_slice], None, 0.0, [-1] * len(rows), None).emitted
    return (emitted + [-1, -1])[:2]


_BLAME = {"homogeneous": None, "ragged": "RS-LAYOUT-1", "mixed": "RS-MIXED-1"}


def _rule_trials(accept: float, residual: np.ndarray, target: stats.Power, alpha_test: float) -> int:
    """Trials of one fixed-draft case after which its acceptance-rate test and, on the rejected trials, its
    rejection-token test reach the trials ``target`` needs (STAT-POWER-1)."""
    needed = stats.trials_needed(np.array([accept, 1 - accept]), target, alpha_test)
    if accept < 1:
        needed = max(needed, stats.trials_to_reach(stats.trials_needed(residual, target, alpha_test), 1 - accept))
    return needed


@dataclass
class RuleRun:
    """One fixed-draft case of the acceptance-rule check in one batch layout, sampled by an engine: the
    greedy requests' failure (exact, or None) and the two tests, each ``(what, counts, probs, reach)``
    (the acceptance rate of the draft row, then the token emitted on rejection, which a conforming
    engine reaches with probability ``1 - accept``)."""

    greedy_failure: str | None
    tests: list[tuple[str, np.ndarray, np.ndarray, float]]


def run_rule(engine, profile, logits, q_row, draft: int, layout: str, trials: int, seed: int) -> RuleRun:
    """``trials`` seeded requests of one fixed-draft case (``logits [2, V]``: the draft row and the bonus
    row, ``q_row [V]`` or None for one-hot, ``draft``) in ``layout``, drawn from ``seed``."""
    accept, residual = _rule_expectation(logits[0], q_row, draft)
    rows = [list(row) for row in logits]
    case, trial_index, greedy_index = _rule_batch(np.random.default_rng(seed), rows, q_row, draft, trials, layout)
    tokens, _ = sample_output(engine, profile, case)
    tokens = np.asarray(tokens)
    greedy_failure = None
    if greedy_index:
        expected = {i: _greedy_row(case, i) for i in greedy_index}
        wrong = [i for i in greedy_index if tokens[i, :2].tolist() != expected[i]]
        if wrong:
            greedy_failure = (
                f"greedy request {wrong[0]} emitted {tokens[wrong[0], :2].tolist()}, expected {expected[wrong[0]]}"
            )
    trial_tokens = tokens[trial_index, :2]
    accepted = trial_tokens[:, 1] != -1
    rejected_tokens = trial_tokens[~accepted, 0]
    in_range = rejected_tokens[(rejected_tokens >= 0) & (rejected_tokens < len(residual))]
    tests = [
        ("acceptance-rate", np.array([accepted.sum(), (~accepted).sum()]), np.array([accept, 1 - accept]), 1.0),
        ("rejection-token", np.bincount(in_range, minlength=len(residual)), np.asarray(residual), 1 - accept),
    ]
    return RuleRun(greedy_failure, tests)


def rule_reproduction(name, logits, q_row, draft, layout, trials, seed, alpha_test, rid, mode, run: RuleRun) -> dict:
    """A standalone document for one failed test of the acceptance-rule check: the fixed-draft case, its
    layout and run (trials, seed, α_test), the test (``mode``) and its observed counts against the
    expected probabilities (``specconform replay`` re-runs the same test)."""
    entry = {
        "name": f"{name}-{layout}",
        "requirements": [rid],
        "test": mode,
        "target_logits": vectors.encode_matrix(logits),
        "q": None if q_row is None else [vectors.encode_float(x) for x in q_row],
        "draft": draft,
        "layout": layout,
        "trials": trials,
        "seed": seed,
        "alpha_test": alpha_test,
        "observed_counts": {what: counts.tolist() for what, counts, _, _ in run.tests},
        "expected_probabilities": {what: [vectors.encode_float(x) for x in probs] for what, _, probs, _ in run.tests},
        "greedy_failure": run.greedy_failure,
    }
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "rejection",
        "fingerprint": f"{rid}/{mode}",
        "exact": [],
        "acceptance_rule": [entry],
        "errors": [],
    }


def replay_rule(engine, profile, entry: dict) -> tuple[str, str]:
    """Re-run an ``acceptance_rule`` entry: ``(fingerprint, evidence)``, the fingerprint empty when its test
    passes."""
    logits = np.array(entry["target_logits"], dtype=np.float64)
    q_row = None if entry["q"] is None else np.array(entry["q"], dtype=np.float64)
    layout, trials, seed = entry["layout"], int(entry["trials"]), int(entry["seed"])
    run = run_rule(engine, profile, logits, q_row, int(entry["draft"]), layout, trials, seed)
    rid, mode = entry["requirements"][0], entry["test"]
    if mode == "greedy-request-differs":
        return (f"{rid}/{mode}", run.greedy_failure) if run.greedy_failure else ("", "greedy requests equal the oracle")
    what, counts, probs, _ = next(t for t in run.tests if t[0] == mode)
    result = stats.g_test(counts, probs, float(entry["alpha_test"]))
    line = f"{what} counts {counts.tolist()} against {np.round(probs, 4).tolist()}: p = {result.p_value:.3g}"
    return (f"{rid}/{mode}" if not result.passed else "", line)


@check(
    "rejection/acceptance-rule",
    cls="rs.probabilistic",
    covers=("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-PROB-4", "RS-ONEHOT-1", "RS-MIXED-1", "RS-LAYOUT-1"),
    needs=("rejection",),
    description=(
        "fixed drafts under the engine's own draws: acceptance rate and rejection token G-tested, alone, in "
        "ragged and in mixed batches"
    ),
)
def acceptance_rule(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-PROB-1..4, RS-ONEHOT-1, RS-MIXED-1 and RS-LAYOUT-1 under the engine's own draws.

    For fixed drafts, the acceptance rate of the draft row is G-tested against ``min(1, p(d)/q(d))`` and
    the token emitted on rejection against the residual (``p`` where the residual is empty). Each case
    runs alone, in a ragged batch (other draft counts) and in a mixed batch (greedy requests, which must
    emit the oracle's tokens exactly); a deviation only in a ragged or mixed batch is blamed on
    RS-LAYOUT-1 or RS-MIXED-1. Trials are sized from the declared ``Power(ctx.deviation, ctx.power)``
    (at most ``ctx.trials`` per case and layout); a test counts as a case only when it detects and
    certifies that deviation (STAT-POWER-1, STAT-CERT-1). An engine that does not claim greedy
    verification (``rs.greedy``) gets no mixed batch: RS-MIXED-1 stays NOT_RUN, and does not hold back the
    check's PASS (RUN-STATUS-3: it applies only to an engine with both rules). Each case and layout draws
    from its own seed, so a failed test leaves a reproduction that re-runs it alone."""
    greedy = "rs.greedy" in ctx.profile.classes
    tally = Tally(requirements, conditional=() if greedy else ("RS-MIXED-1",))  # no mixed batch without greedy
    layouts = ("homogeneous", "ragged", "mixed") if greedy else ("homogeneous", "ragged")
    alpha_test = stats.sidak(ctx.alpha, 2 * (len(_RULE_CASES) + len(layouts) - 1))
    target = stats.Power(ctx.deviation, ctx.power)
    worst_p, total, uncounted = 1.0, 0, []

    def violated(rid, mode, evidence, document) -> None:
        tally.violated(rid, mode, evidence, reproduction=None if rid in tally.failures else document())

    for number, (name, logits, q_row, draft, accept_rid, residual_rid) in enumerate(_RULE_CASES):
        if why := ctx.profile.outside_contract(contract.rule_preconditions(q_row, draft)):
            tally.not_applicable(why, accept_rid, residual_rid)
            uncounted.append(f"{name}: not run, outside the engine's contract")
            continue
        accept, residual = _rule_expectation(logits[0], q_row, draft)
        trials = min(_rule_trials(accept, residual, target, alpha_test), ctx.trials)
        failed_alone = False
        for index, layout in enumerate(layouts if number == 0 else layouts[:1]):  # the first case in every layout
            seed = ctx.seed + 3 * number + index
            run = run_rule(engine, ctx.profile, logits, q_row, draft, layout, trials, seed)
            total += trials
            label = f"{name} ({layout}, {trials} trials)"
            blame = _BLAME[layout]

            def document(rid, mode, case=(name, logits, q_row, draft, layout, trials, seed), run=run):
                return lambda: rule_reproduction(*case, alpha_test, rid, mode, run)

            if run.greedy_failure:
                mode = "greedy-request-differs"
                violated("RS-MIXED-1", mode, f"{label}: {run.greedy_failure}", document("RS-MIXED-1", mode))
            elif layout == "mixed":
                tally.exercised("RS-MIXED-1")
            for (what, counts, probs, reach), rid in zip(run.tests, (accept_rid, residual_rid)):
                judgement = stats.judge(stats.g_test(counts, probs, alpha_test), probs, target, reach)
                result = judgement.result
                worst_p = min(worst_p, result.p_value)
                if judgement.failed:
                    failed_alone |= blame is None
                    culprit = rid if blame is None or failed_alone else blame
                    violated(
                        culprit,
                        what,
                        f"{label}: {what} counts {counts.tolist()} against {np.round(probs, 4).tolist()}: "
                        f"p = {result.p_value:.3g} < α_test {alpha_test:.2g}, {result.zero_hits} on p = 0",
                        document(culprit, what),
                    )
                elif judgement.counted:
                    tally.exercised(rid if blame is None else blame)
                elif reach > 0:
                    uncounted.append(f"{label} {what}: not counted, {judgement.reason}")
    return tally.outcome(
        "\n".join(
            [
                f"{len(_RULE_CASES)} fixed-draft cases alone, the first also in {' and '.join(layouts[1:])} batches, "
                f"{total} trials in all (sized for TV {target.deviation} at power {target.power}, at most {ctx.trials} "
                f"per case); smallest p {worst_p:.3g} at α_test {alpha_test:.2g}; {len(uncounted)} tests not counted",
                *uncounted,
            ]
        ),
        p_value=worst_p,
        alpha=alpha_test,
        trials=total,
    )


def _engine_sampler(engine, profile):
    def sample(logits, drafts, num, q, temperature, seeds, positions):
        case = rs.RejectionCase(logits, drafts, num, temperature, q, seeds=seeds, positions=positions)
        return sample_output(engine, profile, case)[0]

    return sample


def _device_sampler(engine, profile):
    """The engine's ``rejection_sample_tensors`` as a ``stats.DeviceSampler``, read like ``sample_output``."""
    import torch

    def sample(logits, drafts, num, q, temperature, seeds, positions):
        tokens, num_emitted = engine.rejection_sample_tensors(logits, drafts, num, q, temperature, seeds, positions)
        if profile.layout == "padded":
            columns = torch.arange(tokens.shape[1], device=tokens.device)
            tokens = tokens.masked_fill(columns[None, :] >= num_emitted[:, None], -1)
        return tokens

    return sample


def run_distribution(engine, ctx: Context, case: stats.DistributionCase, trials: int, alpha_test: float, seed: int):
    """``case``'s trials on ``engine`` judged against the declared power: on the engine's device when it takes
    tensors there (``tensor_device`` and ``rejection_sample_tensors``), else through ``rejection_sample``."""
    target = stats.Power(ctx.deviation, ctx.power)
    device = getattr(engine, "tensor_device", None)
    if device is not None:
        sampler = _device_sampler(engine, ctx.profile)
        return stats.distribution_check_on_device(sampler, case, trials, alpha_test, seed, target, device)
    return stats.distribution_check(_engine_sampler(engine, ctx.profile), case, trials, alpha_test, seed, target)


def distribution_check(requirements: tuple[str, ...], one_hot: bool):
    """Calibrated G-tests of every position and of the accepted length (specs/statistics.md).

    The trials of each case follow from the declared ``Power(ctx.deviation, ctx.power)`` per position
    (``stats.planned_trials``), capped at ``ctx.trials``. A position counts as a case of RS-PROB-5 (the
    accepted length of RS-PROB-6) only when its test passes, the trials that reached it detect the
    declared deviation with the declared power, and it certifies ``TV ≤ deviation``; otherwise it stays
    uncounted, and a requirement no position counted for is NOT_RUN. STAT-POWER-1 and STAT-CERT-1 count
    only for a case whose every reachable test was counted."""

    def run(engine, ctx: Context) -> Outcome:
        cases = stats.standard_cases(large_vocab=1000)
        if one_hot:  # the same kinds, drafts drawn from a stated q and verified as one-hot
            cases = stats.one_hot_cases(cases)
        target = stats.Power(ctx.deviation, ctx.power)
        alpha_test = stats.family_alpha_test(ctx.alpha, cases)
        tally = Tally(requirements)
        plots, lines, trials, counted, uncounted, worst_p = [], [], [], 0, 0, 1.0
        for i, case in enumerate(cases):
            n = stats.planned_trials(case, target, alpha_test, ctx.trials)
            trials.append(n)
            report = run_distribution(engine, ctx, case, n, alpha_test, ctx.seed + i)
            document = functools.partial(
                statistical_reproduction, engine, ctx, case, report, requirements, seed=ctx.seed + i
            )
            judge_report(report, requirements, tally, document)
            lines += report.position_lines()
            reachable = [j for j, r in zip(report.positions, report.reach) if r > stats.UNREACHABLE]
            tests = reachable + [report.accepted_length]
            counted += sum(t.counted for t in tests)
            uncounted += sum(not t.counted and not t.failed for t in tests)
            worst_p = min([worst_p] + [t.result.p_value for t in tests if t.result.trials])
            plots.append(_distribution_plot(case, report))
        summary = (
            f"{len(cases)} cases, {min(trials)}..{max(trials)} trials each (sized for TV {target.deviation} at "
            f"power {target.power}, at most {ctx.trials}); {counted} tests certify TV ≤ {target.deviation}, "
            f"{uncounted} not counted; smallest p {worst_p:.3g} at α_test {alpha_test:.2g}\n" + "\n".join(lines)
        )
        return tally.outcome(summary, p_value=worst_p, alpha=alpha_test, trials=sum(trials), plots=plots)

    return run


STATISTICAL = (
    "RS-PROB-5",
    "RS-INPUT-1",
    "RS-PROB-6",
    "STAT-CASE-1",
    "STAT-CASE-2",
    "STAT-TEST-1",
    "STAT-TEST-2",
    "STAT-TEST-3",
    "STAT-TEST-4",
    "STAT-POWER-1",
    "STAT-CERT-1",
    "STAT-SEED-1",
)  # what the calibrated distribution check judges: the distribution, and the statistics that judge it

declare(
    "rejection/distribution",
    cls="rs.probabilistic",
    covers=STATISTICAL,
    needs=("rejection",),
    description="calibrated G-tests of every position and of the accepted length",
    build=functools.partial(distribution_check, one_hot=False),
)
declare(
    "rejection/distribution-one-hot",
    cls="rs.one-hot",
    covers=("RS-PROB-5", "RS-PROB-6"),
    needs=("rejection",),
    description="drafts verified as one-hot keep the target distribution",
    build=functools.partial(distribution_check, one_hot=True),
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
    or equal to V are errors naming the field (a ValueError), never tokens; so are fractional draft ids and integer
    logits, on an engine that takes tensors (``tensor_device``: the canonical case stores floats and integers)."""
    tally = Tally(requirements)
    vocab = 6
    logits = np.random.default_rng(ctx.seed).normal(size=(3, vocab)).astype(np.float32)
    cases = {
        "forced_token_ids": ({"forced_token_ids": [-2, -1, -1]}, {"forced_token_ids": [-1, -1, vocab]}),
        "draft_token_ids": ({"draft_token_ids": [-2, 1]}, {"draft_token_ids": [1, vocab]}),
    }
    for field_name, changes in cases.items():
        for change in changes:
            fields = {"draft_token_ids": [1, 2], "forced_token_ids": None, **change}
            case = rs.RejectionCase(logits.copy(), num_draft_tokens=[2], temperature=[1.0], seeds=[1], **fields)
            try:
                engine.rejection_sample(case)
            except (ValueError, rs.InvalidCase) as exc:
                if field_name in str(exc):
                    tally.exercised("RS-INPUT-5")
                else:
                    tally.violated("RS-INPUT-5", "error-does-not-name-field", f"{change}: rejected as {exc}")
                continue
            tally.violated("RS-INPUT-5", "invalid-id-accepted", f"{change} was accepted")
    summary = "ids just outside the allowed ranges are rejected naming the field"
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


def judge_report(
    report: stats.DistributionReport, requirements: tuple[str, ...], tally: Tally, reproduction=None
) -> None:
    """Count ``report``'s judged tests into ``tally`` for ``requirements``: failures violate RS-PROB-5,
    RS-PROB-6 or RS-INPUT-1; a counted position exercises RS-PROB-5 and the position-level requirements
    the check names; the harness's STAT-* requirements count once for a case whose every reachable test
    was counted (STAT-POWER-1 can then not be PASS at trials that cannot reach the declared deviation).
    ``reproduction(requirement, mode)``, when given, makes the document a failure leaves."""

    def violated(rid: str, mode: str, evidence: str) -> None:
        document = reproduction(rid, mode) if reproduction and rid not in tally.failures else None
        tally.violated(rid, mode, evidence, reproduction=document)

    if report.out_of_range:
        violated("RS-INPUT-1", "id-outside-vocabulary-or-broken-row", f"{report.case}: {report.out_of_range} bad rows")
    elif "RS-INPUT-1" in requirements:
        tally.exercised("RS-INPUT-1")
    per_position = ["RS-PROB-5"] if "RS-PROB-5" in requirements else []
    complete = True
    for j, judgement in enumerate(report.positions):
        if judgement.failed:
            kind = "zero-probability-token" if judgement.result.zero_hits else "position-distribution"
            violated("RS-PROB-5", kind, judgement.line(f"{report.case} position {j}"))
        elif judgement.counted:
            tally.exercised(*per_position)
        elif report.reach[j] > stats.UNREACHABLE:
            complete = False
    length = report.accepted_length
    if length.failed:
        violated("RS-PROB-6", "accepted-length-law", length.line(f"{report.case} accepted length"))
    elif length.counted:
        tally.exercised(*[r for r in ("RS-PROB-6",) if r in requirements])
    else:
        complete = False
    if complete:
        tally.exercised(*[r for r in requirements if r.startswith("STAT-")])


# Statistical candidates cost a whole test each: a few, biggest cuts first.
MAX_STATISTICAL_EVALUATIONS = 6


def smaller_distribution_cases(case: stats.DistributionCase):
    """Candidate reductions of a distribution case: fewer draft positions (``K' = 1 .. K - 1``), the
    vocabulary without every id that no target row and no draft distribution gives mass, then (for
    ``V ≤ 16``) without one id at a time; ``q`` rows renormalised, ``V ≥ 2``, every row keeps mass."""
    for k in range(1, case.K):
        yield replace(case, target_logits=case.target_logits[: k + 1], q=case.q[:k])
    p, q = case.p, case.q
    used = (p > 0).any(axis=0) | (q > 0).any(axis=0)  # [V]
    drops = [~used] if (~used).any() else []
    if len(used) <= 16:
        drops += [np.arange(len(used)) == v for v in range(len(used))]
    for drop in drops:
        keep = ~drop
        if keep.sum() < 2 or not (q[:, keep].sum(axis=1) > 0).all() or not (p[:, keep].sum(axis=1) > 0).all():
            continue
        kept_q = q[:, keep] / q[:, keep].sum(axis=1, keepdims=True)
        yield replace(case, target_logits=case.target_logits[:, keep], q=kept_q)


def _rerun(engine, ctx: Context, case, report: stats.DistributionReport, seed: int) -> stats.DistributionReport:
    """``case`` run as ``report``'s case was: the same trials, α_test, declared power and seed."""
    return run_distribution(engine, ctx, case, report.trials, report.alpha_test, seed)


def statistical_reproduction(
    engine,
    ctx: Context,
    case: stats.DistributionCase,
    report: stats.DistributionReport,
    requirements: tuple[str, ...],
    rid: str,
    mode: str,
    *,
    seed: int,
) -> dict:
    """A standalone ``sampled_drafts`` document for a failed distribution test of ``case``, shrunk to the
    fewest draft positions and ids that fail ``rid`` the same way under the same run: the case (target
    logits ``[K + 1, V]`` at its temperature, draft distributions ``q [K, V]``, drafts drawn from ``q`` by
    ``seed``), the run (trials, α_test, declared deviation and power), and the observed against the
    expected per-position frequencies ``[K + 1][V]`` and accepted-length frequencies ``[K + 1]``
    (``specconform replay`` re-runs the same test)."""

    def still_fails(candidate: stats.DistributionCase) -> bool:
        tally = Tally(requirements)
        try:
            judge_report(_rerun(engine, ctx, candidate, report, seed), requirements, tally)
        except Exception:  # the engine fails otherwise on this candidate: not the same failure
            return False
        return tally.failures.get(rid, ("",))[0] == mode

    original = case
    case = shrink.minimise(case, smaller_distribution_cases, still_fails, MAX_STATISTICAL_EVALUATIONS)
    if case is not original:
        report = _rerun(engine, ctx, case, report, seed)
    entry = {
        "name": case.name,
        "requirements": [rid, *[r for r in requirements if r != rid]],
        "description": "; ".join(report.position_lines()),
        "p": vectors.encode_matrix(case.p),
        "target_logits": vectors.encode_matrix(case.target_logits),
        "temperature": case.temperature,
        "q": vectors.encode_matrix(case.q),
        "pass_q": case.pass_q,
        "seed": seed,
        "trials": report.trials,
        "alpha_test": report.alpha_test,
        "deviation": report.target.deviation,
        "power": report.target.power,
        "expected_position_marginals": vectors.encode_matrix(case.p),
        "expected_accepted_length": [vectors.encode_float(x) for x in case.length_law()],
        "observed_position_marginals": vectors.encode_matrix(report.empirical),
        "observed_accepted_length": [vectors.encode_float(x) for x in report.lengths],
    }
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "rejection",
        "fingerprint": f"{rid}/{mode}",
        "original_shape": {"K": original.K, "vocab_size": int(original.target_logits.shape[1])},
        "minimal_shape": {"K": case.K, "vocab_size": int(case.target_logits.shape[1])},
        "exact": [],
        "sampled_drafts": [entry],
        "errors": [],
    }


def _distribution_plot(case: stats.DistributionCase, report: stats.DistributionReport) -> dict:
    return {
        "kind": "distribution",
        "case": case.name,
        "target": case.p.tolist(),
        "deviation": report.target.deviation,
        "power": report.target.power,
        "positions": [j.to_json() for j in report.positions],
        "accepted_length": report.accepted_length.to_json(),
        "empirical": report.empirical,
        "lengths": report.lengths,
        "expected_lengths": report.expected_lengths,
    }
