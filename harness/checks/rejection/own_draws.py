"""The sampled path judged exactly under the engine's own draws: for an engine whose profile declares a draw scheme
the oracle computes (``draws:``, ``specconform.harness.oracle.draws_exact.SCHEMES``), every acceptance decision and
every emitted token of its seeded, sampled requests is compared with the one the rule and those draws decide, on
random cases and on cases whose acceptance uniform a hunt put on a decision boundary
(``specconform.harness.oracle.boundaries``)."""

from __future__ import annotations

import numpy as np

from ...core import Context, Outcome, Tally
from ...oracle import boundaries
from ...oracle import draws_exact as exact
from ...oracle import rejection as rs
from ..catalogue import check
from .output import describe_case, outside_contract, sample_output
from .seeded import attributed

RANDOM_CASES = 6
BATCH, VOCAB = 16, 40
BOUNDARY_VOCAB = 8


def random_case(rng: np.random.Generator, one_hot: bool) -> rs.RejectionCase:
    """``BATCH`` seeded, sampled requests (``VOCAB`` ids, 1..4 drafts drawn from their q, a point mass for
    ``one_hot``) whose targets lean on the drafts' logits, so that drafts are accepted and rejected alike. Every
    request has a draft: a step without drafts is no verification, and SGLang samples it outside its verify path."""
    K = rng.integers(1, 5, BATCH)
    rows, n = int((K + 1).sum()), int(K.sum())
    draft_logits = rng.normal(0.0, 3.0, (n, VOCAB))
    q = np.exp(draft_logits - draft_logits.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    drafts = np.array([rng.choice(VOCAB, p=row) for row in q], dtype=np.int64)
    target = rng.normal(0.0, 2.0, (rows, VOCAB))
    temperature = rng.choice([0.6, 1.0, 1.5], BATCH)
    for i, (start, dstart) in enumerate(zip(np.cumsum(np.r_[0, K + 1])[:-1], np.cumsum(np.r_[0, K])[:-1])):
        target[start : start + K[i]] += 2 * draft_logits[dstart : dstart + K[i]] * temperature[i]
    return rs.RejectionCase(
        target,
        drafts,
        K,
        temperature,
        None if one_hot else q,
        seeds=rng.integers(-(2**63), 2**63 - 1, BATCH, dtype=np.int64),
        positions=rng.integers(0, 2**20, BATCH),
    )


def _draft_row(rng: np.random.Generator, p_draft: float, draft: int) -> np.ndarray:
    """Logits ``[BOUNDARY_VOCAB]`` of a draft row whose ``p(draft)`` is exactly ``p_draft``: 0 (a ``-inf`` logit),
    1/2 (two equal logits, the rest ``-inf``) or 1 (the only finite logit)."""
    row = rng.normal(size=BOUNDARY_VOCAB)
    if p_draft == 0:
        row[draft] = -np.inf
        return row
    kept = [draft] if p_draft == 1 else [draft, (draft + 1) % BOUNDARY_VOCAB]
    row[[i for i in range(BOUNDARY_VOCAB) if i not in kept]] = -np.inf
    row[kept] = 0.0
    return row


def boundary_cases(scheme: str, seed: int, rng: np.random.Generator, one_hot: bool) -> tuple[list, str]:
    """One case per boundary the hunt found for ``scheme`` under ``seed``: three requests at the boundary's position,
    one draft each, whose ``p(d)`` is 0, 1/2 and 1 (one-hot, or with draft probabilities where ``q(d) > 0``); and a
    line saying what the hunt found."""
    found, searched = boundaries.hunt(scheme, seed)
    cases = []
    for position in found.values():
        drafts = rng.integers(0, BOUNDARY_VOCAB, 3)
        rows = [
            [_draft_row(rng, p_draft, d), rng.normal(size=BOUNDARY_VOCAB)] for p_draft, d in zip((0, 0.5, 1), drafts)
        ]
        q = None if one_hot else rng.dirichlet(np.ones(BOUNDARY_VOCAB), size=3)  # q(d) > 0: a draft drawn from it
        case = rs.RejectionCase(
            np.concatenate(rows),
            drafts,
            np.ones(3, dtype=np.int64),
            np.ones(3),
            q,
            seeds=np.full(3, seed, dtype=np.int64),
            positions=np.full(3, position, dtype=np.int64),
        )
        cases.append(case)
    how = "by inverting its hash" if not searched else f"in {searched} positions of seed {seed}"
    missing = sorted(set(boundaries.targets(scheme)) - set(found))
    line = f"boundaries of {scheme} found {how}: " + ", ".join(f"{b} at position {p}" for b, p in found.items())
    return cases, line + (f"; not found: {', '.join(missing)}" if missing else "")


def _exercised(case: rs.RejectionCase, i: int, want: exact.Expected) -> set[str]:
    """The requirements request ``i``'s exact comparison exercised."""
    one_hot = case.draft_probs is None
    tags = {"RS-ONEHOT-1" if one_hot else "RS-PROB-1"} if want.decisions else set()
    if "recovered" in want.kinds or "bonus" in want.kinds:
        tags.add("RS-ONEHOT-1" if one_hot and "recovered" in want.kinds else "RS-PROB-2")
    if want.zero_probability:
        tags.add("RS-PROB-3")
    return tags


def _record(engine, ctx: Context, tally: Tally, case: rs.RejectionCase, n: int, where: str, judged) -> None:
    """Record the mismatches of ``case`` (number ``n``, a ``where`` case): on an engine that claims the reference
    draws, under the requirement its minimal case violates, as the exact checks blame it (``seeded.attributed``),
    so that one bug is one finding; else (or where the case cannot be shrunk as those compare it) each under the
    requirement of its first divergence."""
    if attributed(engine, ctx, tally, judged.mismatches[0].requirement, [case], n):
        return
    for m in judged.mismatches:
        tally.violated(m.requirement, m.mode, f"{where} case {n}: {m.evidence} ({describe_case(case)})")


@check(
    "rejection/own-draws",
    cls="rs.probabilistic",
    covers=("RS-PROB-1", "RS-PROB-2", "RS-PROB-3"),
    needs=("rejection", "seeded"),
    description="with draft probabilities: every acceptance decision and emitted token of seeded, sampled requests "
    "compared with the engine's own declared draws, on random cases and on seeds hunted onto decision boundaries",
    one_hot=False,
)
@check(
    "rejection/own-draws-one-hot",
    cls="rs.one-hot",
    covers=("RS-ONEHOT-1", "RS-PROB-2", "RS-PROB-3"),
    needs=("rejection", "seeded"),
    description="without draft probabilities: every acceptance decision and emitted token of seeded, sampled "
    "requests compared with the engine's own declared draws, on random cases and on seeds hunted onto decision "
    "boundaries",
    one_hot=True,
)
def own_draws(engine, ctx: Context, requirements: tuple[str, ...], one_hot: bool) -> Outcome:
    """The sampled path exactly, under the draw scheme the engine's profile declares (``draws:``), with draft
    probabilities (RS-PROB-1..3) or without (``one_hot``: RS-ONEHOT-1, RS-PROB-2, RS-PROB-3): ``RANDOM_CASES``
    random cases of ``BATCH`` seeded requests, then one case per decision boundary a hunt put an acceptance uniform
    on (``boundaries.hunt``: ``u`` at its smallest, at 1/2 and at its largest), each with drafts whose ``p(d)`` is 0,
    1/2 and 1. Each request is judged up to its first decision within 1e-5 (relative) of a floating-point boundary
    (RS-RNG-3 skips those), and the skipped count is reported; a mismatch is blamed on the requirement of its first
    divergence (``draws_exact.judge_case``) or its minimal case's (``_record``); the first failing case is the
    evidence, the others are counted."""
    tally = Tally(requirements)
    scheme = ctx.profile.draws
    if scheme not in exact.SCHEMES:
        known = ", ".join(exact.SCHEMES)
        why = f"the profile declares draws {scheme or 'none'}; the oracle judges exactly under {known}"
        tally.not_applicable(why, *requirements)
        return tally.outcome("not judged: no draw scheme the oracle computes")
    rng = np.random.default_rng(ctx.seed)
    cases = [random_case(rng, one_hot) for _ in range(RANDOM_CASES)]
    hunted, hunt_line = boundary_cases(scheme, int(rng.integers(0, 2**62)), rng, one_hot)
    total, outside, failed_cases = exact.Judgment(scheme), 0, 0
    for n, case in enumerate(cases + hunted):
        if outside_contract(ctx.profile, case):
            outside += 1
            continue
        tokens, num = sample_output(engine, ctx.profile, case)
        judged = exact.judge_case(scheme, case, tokens, num)
        total.add(judged)
        failing = {m.request for m in judged.mismatches}
        failed_cases += bool(failing)
        if failing and failed_cases == 1:  # the first failing case is the evidence; the others are counted
            _record(engine, ctx, tally, case, n, "boundary" if n >= len(cases) else "random", judged)
        for i in range(case.batch_size):
            want = exact.expected_request(scheme, case, i)
            if want is not None and i not in failing:
                tally.exercised(*(_exercised(case, i, want) & set(requirements)))
    return tally.outcome(
        f"{total.summary}; {len(cases)} random cases and {len(hunted)} boundary cases"
        f"{f' ({outside} outside the contract)' if outside else ''}, {failed_cases} of them failing; {hunt_line}"
    )
