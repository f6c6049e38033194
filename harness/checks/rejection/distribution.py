"""Calibrated distribution checks (specs/statistics.md): G-tests of every position and of the accepted length,
sized by the declared power, judged (``judge_report``) and minimised into statistical reproductions."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ... import shrink, stats, vectors
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ...stats.distribution import draw_drafts
from ..catalogue import declare
from . import minimal
from .output import sample_output


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


# trials of a statistical case judged exactly before its statistics (``minimal.gate``)
GATE_TRIALS = 16


def trial_case(case: stats.DistributionCase, trials: int, seed: int) -> rs.RejectionCase:
    """``trials`` trials of ``case`` as one batch, drawn as ``stats.distribution_check`` draws them."""
    rng = np.random.default_rng(seed)
    K, V = case.K, case.target_logits.shape[1]
    drafts = draw_drafts(rng, case.q, trials)
    return rs.RejectionCase(
        np.broadcast_to(case.target_logits, (trials, K + 1, V)).reshape(trials * (K + 1), V),
        drafts.reshape(-1),
        np.full(trials, K),
        np.full(trials, case.temperature),
        np.broadcast_to(case.q, (trials, K, V)).reshape(trials * K, V) if case.pass_q else None,
        seeds=rng.integers(0, 2**62, size=trials),
        positions=np.zeros(trials, dtype=np.int64),
    )


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
        seen: minimal.Gated = {}
        for i, case in enumerate(cases):
            n = stats.planned_trials(case, target, alpha_test, ctx.trials)
            small = trial_case(case, GATE_TRIALS, ctx.seed + i)
            if minimal.gate(engine, ctx.profile, small, tally, requirements[0], seen, case.name):
                lines.append(f"{case.name}: not tested, its rows fail before the statistics")
                continue
            trials.append(n)
            report = run_distribution(engine, ctx, case, n, alpha_test, ctx.seed + i)
            more = trial_case(case, minimal.SECOND_LOOK_TRIALS, ctx.seed + i)
            if report.violations() and minimal.second_look(
                engine, ctx.profile, more, tally, requirements[0], seen, case.name
            ):
                lines.append(f"{case.name}: failed; its trials part from the oracle exactly")
                continue
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
            f"{len(cases)} cases, {min(trials, default=0)}..{max(trials, default=0)} trials each (sized for TV "
            f"{target.deviation} at "
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


def judge_report(
    report: stats.DistributionReport, requirements: tuple[str, ...], tally: Tally, reproduction=None
) -> None:
    """Count ``report``'s judged tests into ``tally`` for ``requirements``: failures violate RS-PROB-5,
    RS-PROB-6 or RS-INPUT-1; a counted position exercises RS-PROB-5 and the position-level requirements
    the check names; the harness's STAT-* requirements count once for a case whose every reachable test
    was counted (STAT-POWER-1 can then not be PASS at trials that cannot reach the declared deviation).
    ``reproduction(requirement, mode)``, when given, makes the document a failure leaves.

    Which tests of one case deviate tells its failures apart. The accepted length (RS-PROB-6) and the positions
    (RS-PROB-5) are read off the same trials, and both build on the acceptance rule (RS-PROB-1), not on each other.
    A position's marginal mixes the drafts a row accepted there with the token emitted at its first rejection, in
    the proportions the accepted length gives, so an engine whose acceptance is off moves both; one whose positions
    all hold ``p`` while the length deviates emits the right tokens at the wrong rate (one-hot verification of
    sampled drafts, RS-ONEHOT-1, is that). So where a case's positions deviate, its length's deviation is the same
    defect, the finding of RS-PROB-5, the emitted distribution the theorem is about (RS-PROB-6 still reads FAIL,
    with its evidence, under that finding); where only the length deviates, the finding is RS-PROB-6's. Rows that
    hold an id outside ``[0, V)`` or a hole are RS-INPUT-1's, shown exactly rather than certified; they are no sample
    of any distribution over the vocabulary, so the deviations of the case they fall in are counted under that
    finding (each requirement still reads FAIL with its own evidence)."""

    def violated(rid: str, mode: str, evidence: str, finding: str = "") -> None:
        document = reproduction(rid, mode) if reproduction and rid not in tally.failures else None
        tally.violated(rid, mode, evidence, reproduction=document, finding=finding)

    if report.out_of_range:
        violated("RS-INPUT-1", "id-outside-vocabulary-or-broken-row", f"{report.case}: {report.out_of_range} bad rows")
    elif "RS-INPUT-1" in requirements:
        tally.exercised("RS-INPUT-1")
    per_position = ["RS-PROB-5"] if "RS-PROB-5" in requirements else []
    bad_rows = "RS-INPUT-1" if report.out_of_range else ""  # the finding of every deviation beside them (see above)
    complete = True
    for j, judgement in enumerate(report.positions):
        if judgement.failed:
            kind = "zero-probability-token" if judgement.result.zero_hits else "position-distribution"
            violated("RS-PROB-5", kind, judgement.line(f"{report.case} position {j}"), bad_rows)
        elif judgement.counted:
            tally.exercised(*per_position)
        elif report.reach[j] > stats.UNREACHABLE:
            complete = False
    length = report.accepted_length
    if length.failed:  # beside a deviating position, the same defect (see above)
        tokens_off = any(j.failed for j in report.positions) and "RS-PROB-5" in requirements
        finding = bad_rows or ("RS-PROB-5" if tokens_off else "")
        violated("RS-PROB-6", "accepted-length-law", length.line(f"{report.case} accepted length"), finding)
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
    V = p.shape[1]
    used = (p > 0).any(axis=0) | (q > 0).any(axis=0)  # [V]
    drops = [~used] if (~used).any() else []
    if V <= 16:
        drops += [np.arange(V) == v for v in range(V)]
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
