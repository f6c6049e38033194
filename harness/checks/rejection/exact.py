"""Exact comparison with the oracle: generated cases of a ``RejectionFamily`` compared token for token, each
request counting for the requirements it exercises (``request_requirements``); a failing case is minimised and
recorded under the lowest requirement its minimal case violates (``minimal``, RUN-FINDING-1), with a reproduction;
the exact families are declared here as data (``declare_exact``)."""

from __future__ import annotations

import itertools

import numpy as np

from ... import cases
from ...cases.rejection import (
    LAST_IDS,
    TILE_REMAINDER_VOCABS,
    RejectionFamily,
    case_size,
    rejection_cases,
)
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ...oracle import rejection_judge as rj
from ..catalogue import declare
from . import minimal
from .minimal import comparable, has_tie
from .output import describe_case, outside_contract


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


# the check's own requirement a failure of another's blocks: the first of these the failing request exercised
_BLAME_ORDER = (
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
    alone: bool = False,
) -> tuple[str, str, str] | None:
    """Compare one case with the oracle: ``(requirement, mode, evidence)`` of the violation its failure belongs to
    (``oracle.rejection_judge``: the lowest requirement it violates, judged on this case as it is; with ``alone``,
    as a minimal case is judged, a batch failure where each request alone replays), or None; the requests without a
    violation count in ``tally`` (when given) for the requirements they exercise."""
    judged = minimal.judge_alone if alone else minimal.judge
    found = judged(engine, profile, case, True, tie_break)
    if tally is not None:
        _, num, _ = rs.sample_case(case)
        failing = {v.request for v in found}
        for i in range(case.batch_size):
            if i not in failing and -1 not in failing:
                tally.exercised(*(request_requirements(case, i, int(num[i]), tie_break) & set(requirements)))
    owner = rj.owner(found)
    if owner is None:
        return None
    return owner.requirement, owner.mode, f"{owner.evidence} ({describe_case(case)})"


def own_requirement(case: rs.RejectionCase, request: int, requirements: tuple[str, ...], tie_break: str) -> str:
    """The check's requirement a failure of ``request`` (-1: the whole output) keeps from being certified: the first
    it exercises in ``_BLAME_ORDER``, else the check's first."""
    if request < 0:
        return requirements[0]
    _, num, _ = rs.sample_case(case)
    tags = request_requirements(case, request, int(num[request]), tie_break) & set(requirements)
    return next((r for r in (*_BLAME_ORDER, *requirements) if r in tags), requirements[0])


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
        seen: dict[str, tuple[str, rj.Violation]] = {}  # a first violation met before -> (own, owner) it went to
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
            attribute_failure(engine, ctx, case, n, requirements, tally, seen)
        return tally.outcome(
            f"{compared} cases compared with the oracle, {skipped} skipped at a rounding boundary"
            + (f", {outside} outside the engine's contract" if outside else "")
        )

    return run


def attribute_failure(engine, ctx: Context, case, n: int, requirements, tally: Tally, seen: dict) -> None:
    """Record failing case ``n`` under the requirement its minimal case violates (``minimal``): the first case of
    each way of failing (its first violation, judged as it was met) is shrunk and judged alone, and the later ones
    go where it went."""
    tie_break = ctx.profile.tie_break
    first = rj.owner(minimal.judge(engine, ctx.profile, case, True, tie_break))
    if first is None:  # not deterministic: it replayed this time
        return
    if first.fingerprint in seen:
        own, owner = seen[first.fingerprint]
        minimal.record(tally, ctx.profile, requirements, own, owner, "")
        return
    own = own_requirement(case, first.request, requirements, tie_break)

    def usable(candidate: rs.RejectionCase) -> bool:
        return comparable(candidate, tie_break) and not (
            outside_contract(ctx.profile, candidate) or outside_variant(ctx.profile, candidate)
        )

    attributed = minimal.attribute(engine, ctx.profile, case, True, tie_break, usable)
    owner = attributed.owner
    seen[first.fingerprint] = (own, owner)
    evidence = (
        f"case {n}: {owner.evidence} ({describe_case(attributed.minimal)}); minimised from case {n} "
        f"({case_size(case)} rows to {case_size(attributed.minimal)})"
    )
    document = minimal.document(case, attributed, requirements, tie_break)
    minimal.record(tally, ctx.profile, requirements, own, owner, evidence, document)


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
