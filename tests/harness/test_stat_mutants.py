"""Every STAT requirement can fail on its own: the STAT requirements bind the harness's statistics
(harness/stats/, and the judging in harness/checks/rejection/distribution.py), so each has a property stated from the
formulas of specs/statistics.md (computed here with scipy, never with harness/stats/) that the real code
holds, and at least one mutant of the statistics (a function monkeypatched) under which that property
fails and every other holds.

The kernel and budget requirements have engine mutants instead (tests/harness/test_requirement_mutants.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from specconform.harness import spec, stats
from specconform.harness.checks import rejection
from specconform.harness.checks.rejection import STATISTICAL
from specconform.harness.core import PASS, Context, Tally
from specconform.harness.oracle import rejection as rs
from specconform.harness.profiles import canonical

# The declared power the properties hold the statistics to (specs/statistics.md, "Declared power").
DECLARED = stats.Power(0.03, 0.9)


def _target(case: stats.DistributionCase) -> np.ndarray:
    """``p [K + 1, V]`` (float64): softmax of each target row at the case's temperature (RS-PROB-5's target)."""
    return special.softmax(np.asarray(case.target_logits, dtype=np.float64) / case.temperature, axis=1)


def _length_law(case: stats.DistributionCase) -> np.ndarray:
    """``P(A = a)``, ``a = 0..K`` ``[K + 1]``, in closed form (RS-PROB-6): ``β_j = Σ_x min(p_j, q_j)`` with
    draft probabilities, ``Σ_x q_j(x) p_j(x)`` one-hot; ``P(A = a) = β_0 ⋯ β_{a−1} (1 − β_a)``, ``β_K = 0``."""
    p = _target(case)
    q = case.q / case.q.sum(axis=1, keepdims=True)
    betas = [float(np.minimum(p[j], q[j]).sum() if case.pass_q else q[j] @ p[j]) for j in range(case.K)] + [0.0]
    return np.array([math.prod(betas[:a]) * (1 - betas[a]) for a in range(case.K + 1)])


def _sidak(alpha: float, tests: int) -> float:
    """STAT-TEST-3's split, written as the specification writes it."""
    return 1 - (1 - alpha) ** (1 / tests)


def _detects(trials: float, support: int, alpha: float, target: stats.Power) -> bool:
    """STAT-POWER-1: ``trials`` detect ``target.deviation`` when the non-central χ² with ``support − 1``
    degrees of freedom and non-centrality ``4 N ε²`` exceeds the critical value at ``alpha`` with
    probability at least ``target.power``."""
    df = max(support - 1, 1)
    return sps.ncx2.sf(sps.chi2.isf(alpha, df), df, 4 * trials * target.deviation**2) >= target.power


def _exact_counts(p: np.ndarray, trials: int) -> np.ndarray:
    """Counts ``[V]`` as close to ``trials · p`` as integers get: a sample a conforming engine could give."""
    counts = np.floor(p * trials)
    counts[np.argmax(p)] += trials - counts.sum()
    return counts


# ---------------------------------------------------------------------------------------------
# One property per requirement: a function that raises AssertionError when the statistics break it.


def drafts_are_drawn_from_q():
    """STAT-CASE-1: the drafts the sampler is handed follow ``q`` row by row (a χ² goodness of fit)."""
    case = stats.standard_cases()[0]  # reverse-ranked: q far from uniform and from p
    handed = []

    def accept_every_draft(logits, drafts, num, q, temperature, seeds, positions):
        rows = np.asarray(drafts).reshape(len(num), -1)
        handed.append(rows)
        return np.concatenate([rows, np.zeros((len(num), 1), dtype=np.int64)], axis=1)

    stats.distribution_check(accept_every_draft, case, trials=20_000, alpha_test=1e-6, seed=1)
    drafts = np.concatenate(handed)
    for j, row in enumerate(case.q):
        q = row / row.sum()
        observed = np.bincount(drafts[:, j], minlength=len(q))
        assert observed[q == 0].sum() == 0, (j, observed)
        fit = sps.chisquare(observed[q > 0], q[q > 0] * len(drafts))
        assert fit.pvalue > 1e-6, (j, observed.tolist(), q.tolist())


def case_set_has_every_kind():
    """STAT-CASE-2: every kind of case the requirement lists, recognised by its content, not its name."""
    p0 = {c.name: _target(c)[0] for c in stats.standard_cases()}
    q0 = {c.name: c.q[0] / c.q[0].sum() for c in stats.standard_cases()}
    kinds = {
        "narrow vocabulary, q ranked in reverse to p": [
            n for n in p0 if len(p0[n]) <= 16 and sps.spearmanr(p0[n], q0[n]).statistic == pytest.approx(-1)
        ],
        "disjoint supports": [n for n in p0 if not ((p0[n] > 0) & (q0[n] > 0)).any()],
        "p = q": [n for n in p0 if np.allclose(p0[n], q0[n])],
        "one-hot target": [n for n in p0 if (p0[n] > 0).sum() == 1],
        "small support inside a large vocabulary": [
            n for n in p0 if len(p0[n]) >= 500 and (p0[n] > 0).sum() <= 0.05 * len(p0[n])
        ],
        "vocabulary that is no multiple of a block size": [n for n in p0 if len(p0[n]) > 16 and len(p0[n]) % 16],
    }
    assert all(kinds.values()), kinds


def g_test_pools_small_cells():
    """STAT-TEST-1: the statistic is the G-test of the cells with expected count ≥ 5 and one cell pooling the
    rest (its expected count ≥ 5), with cells − 1 degrees of freedom."""
    p = np.array([0.5, 0.3, 0.15] + [0.05 / 25] * 25)  # 25 cells expecting 2 each at 1,000 trials: pooled (50)
    counts = np.random.default_rng(3).multinomial(1000, p)
    expected = p * 1000
    small = expected < 5
    observed_cells = np.append(counts[~small], counts[small].sum())
    expected_cells = np.append(expected[~small], expected[small].sum())
    g, p_value = sps.power_divergence(observed_cells, expected_cells, lambda_="log-likelihood")
    result = stats.g_test(counts, p, 0.01)
    assert result.df == len(observed_cells) - 1, result
    assert result.statistic == pytest.approx(g, rel=1e-9) and result.p_value == pytest.approx(p_value, rel=1e-9)


def zero_probability_sample_fails():
    """STAT-TEST-2: one sample on a token of probability 0 fails the test, however well the rest fits."""
    p = np.array([0.5, 0.5, 0.0])
    result = stats.g_test(np.array([50_000, 49_999, 1]), p, 1e-6)
    assert not result.passed, result
    assert stats.judge(result, p, DECLARED).failed


def family_rate_split_by_sidak():
    """STAT-TEST-3: α_test = 1 − (1 − α)^(1/m), m counting every test: K + 1 positions and one accepted-length
    histogram per case; CI's family-wise α is 1e-6."""
    for cases in (stats.standard_cases(), stats.one_hot_cases(stats.standard_cases())):
        tests = sum(len(case.target_logits) + 1 for case in cases)
        assert stats.family_alpha_test(0.05, cases) == pytest.approx(_sidak(0.05, tests), rel=1e-9)
    assert Context(canonical()).alpha == 1e-6


def accepted_length_tested_against_closed_form():
    """STAT-TEST-4: each case's accepted-length histogram is tested against RS-PROB-6's closed form."""
    for case in stats.standard_cases() + stats.one_hot_cases(stats.standard_cases()):
        np.testing.assert_allclose(case.length_law(), _length_law(case), atol=1e-12, err_msg=case.name)
    case = stats.standard_cases()[0]
    report = stats.distribution_check(rs.sample_arrays, case, trials=300, alpha_test=1e-6, seed=2)
    np.testing.assert_allclose(report.expected_lengths, _length_law(case), atol=1e-12)
    assert report.accepted_length.result.trials == 300


def trials_detect_the_declared_deviation():
    """STAT-POWER-1: the planned trials reach every reachable position (on average, at the reach of a conforming
    engine) often enough to detect the declared TV at the declared power, and so does the accepted-length test;
    a passing test short of those trials counts for nothing, so its requirements stay NOT_RUN."""
    for cases in (stats.standard_cases(), stats.one_hot_cases(stats.standard_cases())):
        alpha = _sidak(1e-6, sum(len(case.target_logits) + 1 for case in cases))
        for case in cases:
            trials = stats.planned_trials(case, DECLARED, alpha, 10**12)
            law = _length_law(case)
            reach = law[::-1].cumsum()[::-1]  # P(A ≥ j)
            p = _target(case)
            for j in range(case.K + 1):
                if reach[j] > 1e-12:
                    assert _detects(trials * reach[j], int((p[j] > 0).sum()), alpha, DECLARED), (case.name, j, trials)
            assert _detects(trials, int((law > 0).sum()), alpha, DECLARED), (case.name, "accepted length", trials)
    short_p = np.array([0.3, 0.2, 0.2, 0.15, 0.1, 0.05])
    short = 200
    assert not _detects(short, len(short_p), 1e-6, DECLARED)
    judgement = stats.judge(stats.g_test(_exact_counts(short_p, short), short_p, 1e-6), short_p, DECLARED)
    assert not judgement.failed and not judgement.counted, judgement
    case = stats.standard_cases()[0]
    report = stats.distribution_check(rs.sample_arrays, case, trials=300, alpha_test=1e-6, seed=3, target=DECLARED)
    tally = Tally(STATISTICAL)
    rejection.judge_report(report, STATISTICAL, tally)
    results = tally.outcome("").requirements
    assert results["STAT-POWER-1"].status != PASS and results["RS-PROB-5"].status != PASS, results


def certificate_counts_every_cell():
    """STAT-CERT-1: ``tv_upper = TV(p̂, p) + ½ √(2 (ln(2^a − 2) + ln(1/δ)) / N)`` over every cell, ``a = |supp p| + 1``,
    ``δ = α_test``; small cells that the G-test pools count one by one."""
    rng = np.random.default_rng(4)
    for cells, trials in ((6, 300), (300, 1000), (300, 20_000)):
        p = np.zeros(cells + 2)
        p[:cells] = rng.dirichlet(np.ones(cells))
        engine = np.full(cells + 2, 0.025)
        engine[:cells] = 0.85 * p[:cells] + 0.1 * rng.dirichlet(np.ones(cells))
        counts = rng.multinomial(trials, engine)
        delta = 1e-4
        tv_hat = 0.5 * np.abs(counts / trials - p).sum()
        bound = tv_hat + 0.5 * math.sqrt(2 * (math.log(2 ** (cells + 1) - 2) + math.log(1 / delta)) / trials)
        assert bound < 1, (cells, trials, bound)
        assert stats.g_test(counts, p, delta).tv_upper == pytest.approx(bound, rel=1e-9), (cells, trials)


def runs_are_seeded():
    """STAT-SEED-1: a run is a function of its seed (the same seed replays it, another seed differs), and the
    seed of every check is fixed by default."""

    def run(seed):
        report = stats.distribution_check(rs.sample_arrays, stats.standard_cases()[0], 300, 1e-6, seed)
        return np.asarray(report.empirical), np.asarray(report.lengths)

    first, again, other = run(5), run(5), run(6)
    assert all(np.array_equal(a, b) for a, b in zip(first, again)), "the same seed did not replay the run"
    assert not all(np.array_equal(a, b) for a, b in zip(first, other)), "the seed is not used"
    assert Context(canonical()).seed == Context(canonical()).seed


PROPERTIES: dict[str, Callable[[], None]] = {
    "STAT-CASE-1": drafts_are_drawn_from_q,
    "STAT-CASE-2": case_set_has_every_kind,
    "STAT-TEST-1": g_test_pools_small_cells,
    "STAT-TEST-2": zero_probability_sample_fails,
    "STAT-TEST-3": family_rate_split_by_sidak,
    "STAT-TEST-4": accepted_length_tested_against_closed_form,
    "STAT-POWER-1": trials_detect_the_declared_deviation,
    "STAT-CERT-1": certificate_counts_every_cell,
    "STAT-SEED-1": runs_are_seeded,
}


# ---------------------------------------------------------------------------------------------
# Mutants of the statistics: each patches one function of the real code the way a plausible bug would.


STATS_MODULES = (stats, stats.bounds, stats.power, stats.gtest, stats.cases, stats.distribution)


def _patch(mp: pytest.MonkeyPatch, name: str, value) -> None:
    """Patch ``name`` wherever the statistics bind it: the package's face and each of its modules that defines or
    imports it, so a call from inside the package sees the mutant as a caller of the face does."""
    bound = [module for module in STATS_MODULES if hasattr(module, name)]
    assert bound, name
    for module in bound:
        mp.setattr(module, name, value)


@dataclass(frozen=True)
class StatMutant:
    name: str
    breaks: str
    description: str
    apply: Callable[[pytest.MonkeyPatch], None]


def _uniform_drafts(mp):
    _patch(mp, "draw_drafts", lambda rng, q, count: rng.integers(0, q.shape[1], size=(count, len(q))))


def _no_disjoint_case(mp):
    real = stats.standard_cases
    _patch(mp, "standard_cases", lambda *a, **k: [c for c in real(*a, **k) if c.name != "disjoint-supports"])


def _one_hot_law_everywhere(mp):
    def law(case):
        p = case.p
        return rs.accepted_length_distribution([float(case.q[j] / case.q[j].sum() @ p[j]) for j in range(case.K)])

    mp.setattr(stats.DistributionCase, "length_law", law)


def _bonferroni(mp):
    _patch(mp, "family_alpha_test", lambda alpha, cases: alpha / sum(stats.tests_per_case(c.K) for c in cases))


def _zero_hits_ignored(mp):
    mp.setattr(stats.GTestResult, "passed", property(lambda self: self.p_value >= self.alpha))


def _fixed_trials(mp):
    _patch(mp, "trials_needed", lambda probs, target, alpha: 2_000)


def _reach_ignored(mp):
    _patch(mp, "trials_to_reach", lambda needed, reach, miss=1e-6: needed)


def _short_tests_counted(mp):
    real = stats.judge

    def judge(result, probs, target, reach=1.0):
        judgement = real(result, probs, target, reach)
        return replace(judgement, counted=not judgement.failed, reason="")

    _patch(mp, "judge", judge)


def _pooled_cells_certificate(mp):
    real = stats.g_test

    def g_test(counts, probs, alpha):
        result = real(counts, probs, alpha)
        return replace(
            result, tv_upper=min(1.0, result.tv_hat + stats.tv_slack(max(result.df, 1), result.trials, alpha))
        )

    _patch(mp, "g_test", g_test)


def _drifting_seed(mp):
    real, runs = stats.distribution_check, itertools.count()

    def distribution_check(sampler, case, trials, alpha_test, seed, *rest, **named):
        return real(sampler, case, trials, alpha_test, seed + next(runs), *rest, **named)

    _patch(mp, "distribution_check", distribution_check)


MUTANTS = (
    StatMutant(
        "uniform-drafts", "STAT-CASE-1", "drafts drawn uniformly over the vocabulary, not from q", _uniform_drafts
    ),
    StatMutant("no-disjoint-case", "STAT-CASE-2", "the standard cases leave out disjoint supports", _no_disjoint_case),
    StatMutant(
        "no-pooling",
        "STAT-TEST-1",
        "cells of expected count below 5 are kept",
        lambda mp: _patch(mp, "MIN_EXPECTED", 0.0),
    ),
    StatMutant(
        "zero-hits-ignored",
        "STAT-TEST-2",
        "a sample on a p = 0 token fails only through the statistic",
        _zero_hits_ignored,
    ),
    StatMutant("bonferroni", "STAT-TEST-3", "α split by Bonferroni (α / m), not Šidák", _bonferroni),
    StatMutant(
        "one-hot-length-law",
        "STAT-TEST-4",
        "the accepted length tested against the one-hot law",
        _one_hot_law_everywhere,
    ),
    StatMutant("fixed-trials", "STAT-POWER-1", "2,000 trials per test, whatever the declared deviation", _fixed_trials),
    StatMutant(
        "reach-ignored", "STAT-POWER-1", "trials sized as if every position were always reached", _reach_ignored
    ),
    StatMutant(
        "short-tests-counted",
        "STAT-POWER-1",
        "a passing test counts whatever its trials (NOT_RUN read as PASS)",
        _short_tests_counted,
    ),
    StatMutant(
        "pooled-cells-certificate",
        "STAT-CERT-1",
        "the TV bound counts the G-test's pooled cells",
        _pooled_cells_certificate,
    ),
    StatMutant("drifting-seed", "STAT-SEED-1", "each run draws from its seed plus a run counter", _drifting_seed),
)


def test_every_stat_requirement_has_a_property_and_a_mutant():
    requirements = {rid for rid in spec.load_registry() if rid.startswith("STAT-")}
    assert set(PROPERTIES) == requirements
    assert {mutant.breaks for mutant in MUTANTS} == requirements


@pytest.mark.parametrize("rid", sorted(PROPERTIES))
def test_the_statistics_hold_the_property(rid):
    PROPERTIES[rid]()


def _broken_properties() -> list[str]:
    broken = []
    for rid, holds in PROPERTIES.items():
        try:
            holds()
        except AssertionError:
            broken.append(rid)
    return broken


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: f"{m.breaks}:{m.name}")
def test_the_mutant_breaks_its_requirement_alone(mutant, monkeypatch):
    mutant.apply(monkeypatch)
    assert _broken_properties() == [mutant.breaks]
