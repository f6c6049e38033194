"""Exact comparison with the oracle: generated cases of a ``RejectionFamily`` compared token for token, each
request counting for the requirements it exercises (``request_requirements``), a mismatch blamed on the first that
applies and minimised into a reproduction; the exact families are declared here as data (``declare_exact``)."""

from __future__ import annotations

import itertools

import numpy as np

from ... import cases, shrink, vectors
from ...cases.rejection import (
    LAST_IDS,
    TILE_REMAINDER_VOCABS,
    RejectionFamily,
    case_size,
    rejection_cases,
    smaller_cases,
)
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ...oracle import rng as reference_rng
from ..catalogue import declare
from .output import describe_case, output_problem, outside_contract, sample_output


def has_tie(logits: np.ndarray) -> bool:
    finite = np.where(np.isneginf(logits), -np.inf, logits)
    return bool(((finite == finite.max(axis=-1, keepdims=True)).sum(axis=-1) > 1).any())


def non_finite_forced_rows(case: rs.RejectionCase) -> list[int]:
    """The forced rows of ``case`` whose logits hold NaN or +inf or no finite value: valid input, since a forced
    row's logits are not read (RS-FORCE-1, RS-INPUT-3)."""
    if case.forced_token_ids is None:
        return []
    logits = case.target_logits
    bad = np.isnan(logits).any(axis=1) | np.isposinf(logits).any(axis=1) | ~np.isfinite(logits).any(axis=1)
    return np.flatnonzero(bad & (case.forced_token_ids != -1)).tolist()


def outside_variant(profile, case: rs.RejectionCase) -> str | None:
    """Why ``case`` is not judged under ``profile``'s declared variant (None: it is): the large-constant variant
    (TB-FORCE-6) raises the forced logit beside the row's own, which forces the row only where those are finite, so
    its promise does not reach a forced row holding NaN or +inf (a row of -inf alone it forces)."""
    if profile.forced_logit != "large-constant" or case.forced_token_ids is None:
        return None
    logits = case.target_logits
    beaten = (np.isnan(logits).any(axis=1) | np.isposinf(logits).any(axis=1)) & (case.forced_token_ids != -1)
    if rows := np.flatnonzero(beaten).tolist():
        return f"forced rows {rows} hold NaN or +inf: the declared forced_logit large-constant forces finite rows only"
    return None


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
    try:
        tokens, got_num = sample_output(engine, profile, case) if profile else engine.rejection_sample(case)
    except (ValueError, rs.InvalidCase) as exc:
        if not non_finite_forced_rows(case):
            raise
        rows = non_finite_forced_rows(case)
        return "RS-FORCE-1", "forced-row-logits-read", f"rejected as {exc}; forced rows {rows} hold non-finite logits"
    problem = output_problem(case, tokens, got_num)
    if problem:
        return problem[0], problem[1], f"{problem[2]} ({describe_case(case)})"
    tokens = np.asarray(tokens)[:, : expected.shape[1]]
    for i in range(case.batch_size):
        tags = request_requirements(case, i, int(num[i]), tie_break) & set(requirements)
        if tokens[i].tolist() != expected[i].tolist():
            evidence = (
                f"request {i}: emitted {tokens[i].tolist()}, expected {expected[i].tolist()} ({describe_case(case)})"
            )
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
    entry = vectors.exact_case("minimal", [rid, *[r for r in requirements if r != rid]], minimal)
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


def drawn_cases(seed: int, *families: tuple[RejectionFamily, int]):
    """The cases of each ``(family, count)`` in turn, all drawn from ``seed``: a family added after the others
    leaves their cases (and case numbers) as they were."""
    return itertools.chain.from_iterable(cases.draw(rejection_cases(f), seed, count) for f, count in families)


def exact_check(
    family: RejectionFamily,
    requirements: tuple[str, ...],
    count: int = 150,
    boundary: tuple[RejectionFamily, int] | None = None,
):
    """Compare ``count`` cases of ``family`` (drawn from ``ctx.seed``), then those of ``boundary`` (``(family,
    count)``: the inputs real models and requests have that ``family`` draws rarely), with the oracle token for
    token; every case is judged, and the first failure of each requirement is minimised into a reproduction."""
    families = ((family, count),) + ((boundary,) if boundary else ())

    def run(engine, ctx: Context) -> Outcome:
        tie_break = ctx.profile.tie_break
        # under the declared tie_break: any variant, RS-GREEDY-3 is waived and tied cases are skipped
        waived = ("RS-GREEDY-3",) if tie_break == "any" and "RS-GREEDY-3" in requirements else ()
        tally = Tally(requirements, conditional=waived)
        compared = skipped = outside = 0
        for n, case in enumerate(drawn_cases(ctx.seed, *families)):
            if not comparable(case, tie_break):
                skipped += 1
                continue
            if why := outside_contract(ctx.profile, case) or outside_variant(ctx.profile, case):
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
    boundary: tuple[RejectionFamily, int] | None = None,
) -> None:
    """Declare a check that compares cases of ``family`` (and ``boundary``'s after them) with the oracle token for
    token (``exact_check``)."""
    declare(
        name,
        cls=cls,
        covers=covers,
        needs=needs,
        description=description,
        build=lambda requirements: exact_check(family, requirements, boundary=boundary),
    )


# mass on the vocabulary's last ids only (the last partial tile of a tiling), in vocabularies a tiling can split
LAST_IDS_CASES = 20


# The exact families: one check each, over cases drawn from its RejectionFamily.
declare_exact(
    "rejection/greedy",
    "rs.greedy",
    ("RS-GREEDY-1", "RS-GREEDY-2", "RS-GREEDY-3"),
    "greedy cases with ties and masks equal the oracle",
    RejectionFamily(greedy="all", ties=True),
    boundary=(
        RejectionFamily(greedy="all", ties=True, masks=(LAST_IDS,), vocabs=TILE_REMAINDER_VOCABS),
        LAST_IDS_CASES,
    ),
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
    # forced rows whose logits are NaN, +inf or all -inf: not read, so never an error (RS-INPUT-3 spares them)
    boundary=(RejectionFamily(greedy="all", forced=True, forced_logits="non-finite"), 20),
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
    boundary=(RejectionFamily(greedy="none", masks=(LAST_IDS,), vocabs=TILE_REMAINDER_VOCABS), LAST_IDS_CASES),
)
