"""The statistical machinery: calibration, power, pooling, certificates (specs/statistics.md)."""

from collections import Counter

import numpy as np
import pytest

from specconform.harness import stats
from specconform.harness.oracle import rejection as rs


@pytest.mark.req("STAT-TEST-3")
def test_sidak_split_keeps_the_family_wise_rate():
    a = stats.sidak(1e-3, 50)
    assert 1 - (1 - a) ** 50 == pytest.approx(1e-3, rel=1e-9)


@pytest.mark.req("STAT-TEST-1", "STAT-SEED-1")
def test_g_test_is_calibrated_under_the_null():
    # 2000 tests at alpha 0.05 on exact multinomial draws: the rejection rate is within 4 sigma of 5%.
    rng = np.random.default_rng(1)
    p = np.array([0.5, 0.2, 0.15, 0.1, 0.04, 0.01])
    rejections = sum(not stats.g_test(rng.multinomial(400, p), p, 0.05).passed for _ in range(2000))
    assert abs(rejections / 2000 - 0.05) < 4 * np.sqrt(0.05 * 0.95 / 2000)


@pytest.mark.req("STAT-TEST-2")
def test_any_sample_on_a_zero_probability_token_fails():
    result = stats.g_test(np.array([500, 499, 1]), np.array([0.5, 0.5, 0.0]), 1e-6)
    assert result.zero_hits == 1 and not result.passed


@pytest.mark.req("STAT-TEST-1")
def test_small_cells_are_pooled():
    p = np.array([0.9] + [0.001] * 100)
    p = p / p.sum()
    result = stats.g_test(np.round(p * 1000), p, 0.01)
    assert result.df == 1  # one big cell plus the pooled tail


@pytest.mark.req("STAT-POWER-1")
def test_power_calculation_matches_its_inverse_and_detects_the_deviation():
    n = stats.trials_for_power(0.01, 32, 1e-6, power=0.99)
    assert 200_000 < n < 300_000  # about 25 / eps^2 for 32 cells
    assert stats.detectable_deviation(n, 32, 1e-6, power=0.99) == pytest.approx(0.01, rel=1e-3)
    # Simulate the deviation: half the mass of one cell moved to another, TV = 0.05, at the N for 0.05.
    p = np.full(8, 1 / 8)
    shifted = p.copy()
    shifted[0] += 0.05
    shifted[1] -= 0.05
    n = stats.trials_for_power(0.05, 8, 1e-3, power=0.99)
    rng = np.random.default_rng(2)
    caught = sum(not stats.g_test(rng.multinomial(n, shifted), p, 1e-3).passed for _ in range(200))
    assert caught >= 190


# A target whose first two cells hold half the mass, so that the least detectable deviation at TV ε
# (p'/p = 1 ± 2ε on the two halves: it minimises χ²(p'‖p) for its TV) can be planted exactly.
HALVES = np.array([0.3, 0.2, 0.2, 0.15, 0.1, 0.05])


def _least_detectable(p: np.ndarray, epsilon: float) -> np.ndarray:
    shifted = p.copy()
    shifted[:2] *= 1 + 2 * epsilon
    shifted[2:] *= 1 - 2 * epsilon
    return shifted


def _binomial_slack(rate: float, reps: int) -> float:
    return 3 * np.sqrt(rate * (1 - rate) / reps)


@pytest.mark.req("STAT-POWER-1", "STAT-TEST-1")
def test_the_sized_test_keeps_its_level_under_the_null():
    # At the trials sized for TV 0.05 (power 0.9, alpha 0.01), a sampler of exactly p fails at most
    # alpha of the time, within three binomial standard deviations.
    alpha, reps = 0.01, 2000
    n = stats.trials_for_power(0.05, len(HALVES), alpha, 0.9)
    rng = np.random.default_rng(5)
    alarms = sum(not stats.g_test(rng.multinomial(n, HALVES), HALVES, alpha).passed for _ in range(reps))
    assert alarms / reps <= alpha + _binomial_slack(alpha, reps)


@pytest.mark.req("STAT-POWER-1")
def test_the_sized_test_detects_the_least_detectable_deviation_with_its_power():
    target, alpha, reps = stats.Power(0.05, 0.9), 0.01, 1000
    shifted = _least_detectable(HALVES, target.deviation)
    assert 0.5 * np.abs(shifted - HALVES).sum() == pytest.approx(target.deviation)
    n = stats.trials_for_power(target.deviation, len(HALVES), alpha, target.power)
    rng = np.random.default_rng(6)
    caught = sum(not stats.g_test(rng.multinomial(n, shifted), HALVES, alpha).passed for _ in range(reps))
    assert caught / reps >= target.power - _binomial_slack(target.power, reps)


@pytest.mark.req("STAT-POWER-1", "STAT-CERT-1")
def test_a_conforming_sampler_certifies_the_deviation_with_the_declared_power():
    # At trials_to_certify a sampler of exactly p gets tv_upper <= eps at least `power` of the time.
    target, delta, reps = stats.Power(0.05, 0.9), 1e-6, 1000
    n = stats.trials_to_certify(HALVES, target.deviation, delta, target.power)
    rng = np.random.default_rng(7)
    certified = sum(
        stats.g_test(rng.multinomial(n, HALVES), HALVES, delta).tv_upper <= target.deviation for _ in range(reps)
    )
    assert certified / reps >= target.power - _binomial_slack(target.power, reps)


@pytest.mark.req("STAT-CERT-1")
@pytest.mark.parametrize("cells,trials", [(6, 300), (300, 400)])  # few cells; many, most pooled by the G-test
def test_tv_upper_bound_covers_the_true_distance(cells, trials):
    # An engine at TV about 0.1 from p, part of it on two cells where p is 0: the bound at confidence
    # 1 - delta misses the true distance at most delta of the time (within binomial slack).
    rng = np.random.default_rng(3)
    delta, reps = 0.05, 1000
    p = np.zeros(cells + 2)
    p[:cells] = rng.dirichlet(np.ones(cells))
    engine = np.full(cells + 2, 0.025)
    engine[:cells] = 0.85 * p[:cells] + 0.1 * rng.dirichlet(np.ones(cells))
    true_tv = 0.5 * np.abs(engine - p).sum()
    misses = sum(stats.g_test(rng.multinomial(trials, engine), p, delta).tv_upper < true_tv for _ in range(reps))
    assert misses / reps <= delta + _binomial_slack(delta, reps)


@pytest.mark.req("STAT-POWER-1")
def test_a_test_short_of_its_trials_does_not_count():
    target, alpha = stats.Power(0.05, 0.9), 1e-6
    needed = stats.trials_needed(HALVES, target, alpha)
    rng = np.random.default_rng(8)
    short = stats.judge(stats.g_test(rng.multinomial(needed // 4, HALVES), HALVES, alpha), HALVES, target)
    assert not short.failed and not short.counted and "needed" in short.reason
    enough = stats.judge(stats.g_test(rng.multinomial(4 * needed, HALVES), HALVES, alpha), HALVES, target)
    assert enough.counted and enough.result.tv_upper <= target.deviation
    assert enough.detects <= target.deviation


def test_positions_are_sized_by_how_often_they_are_reached():
    case = stats.standard_cases()[0]  # reverse-ranked: positions reached with probability 1, 0.4, 0.316
    target, alpha = stats.Power(0.05, 0.9), 1e-6
    reach = case.reach()
    np.testing.assert_allclose(reach, [1.0, 0.4, 0.316], atol=0.001)
    trials = stats.planned_trials(case, target, alpha, 10**9)
    assert trials * reach[2] >= stats.trials_needed(case.p[2], target, alpha)  # the rarest position reaches it
    assert stats.planned_trials(case, target, alpha, 1000) == 1000  # the cap binds


@pytest.mark.req("STAT-POWER-1")
def test_every_reachable_position_of_the_standard_cases_is_reached_often_and_certifies_at_the_default_power():
    # Reach from the closed form of the accepted length (RS-PROB-6); a rare position would set its case's trials.
    for cases, floor in ((stats.standard_cases(), 0.3), (stats.one_hot_cases(stats.standard_cases()), 0.24)):
        alpha = stats.family_alpha_test(1e-6, cases)
        for case in cases:
            reach = case.reach()
            assert reach[reach > stats.UNREACHABLE].min() >= floor, (case.name, reach)
            # the default cap leaves no test of a standard case short of the default deviation
            planned = stats.planned_trials(case, stats.DEFAULT_POWER, alpha, 10**12)
            assert planned <= stats.DEFAULT_MAX_TRIALS, (case.name, planned)
    # disjoint supports: the later positions are unreachable, in both checks
    assert [
        c.reach()[1:].max() for c in (stats.standard_cases()[1], stats.one_hot_cases(stats.standard_cases())[1])
    ] == [
        0.0,
        0.0,
    ]


def test_the_rows_of_a_standard_case_differ():
    # an engine reading the wrong row's p or q is seen at the positions after the first
    for case in stats.standard_cases():
        p = case.p
        assert all(not np.allclose(p[i], p[j]) for i in range(len(p)) for j in range(i)), case.name


@pytest.mark.req("STAT-CASE-1", "STAT-CASE-2", "STAT-TEST-4", "RS-PROB-5", "RS-PROB-6")
def test_the_oracle_passes_every_standard_case():
    cases = stats.standard_cases(large_vocab=300)
    alpha = stats.family_alpha_test(1e-4, cases)
    for case in cases:
        report = stats.distribution_check(rs.sample_arrays, case, trials=3000, alpha_test=alpha, seed=11)
        assert report.passed, (
            case.name,
            [(r.result.statistic, r.result.p_value, r.result.zero_hits) for r in report.positions],
            report.accepted_length,
        )


@pytest.mark.req("API-SPEC-2")
@pytest.mark.parametrize("cells", [4, 40])
def test_two_sample_tv_bounds_cover_the_true_distance(cells):
    # Two samplers at TV about 0.2 apart: at confidence 1 - delta each bound misses the true distance at
    # most delta of the time (within binomial slack), so a FAIL (lower bound above the tolerance) is evidence.
    rng = np.random.default_rng(11)
    delta, reps, n = 0.05, 400, 500
    first = rng.dirichlet(np.ones(cells))
    second = 0.8 * first + 0.2 * rng.dirichlet(np.ones(cells))
    true_tv = 0.5 * np.abs(first - second).sum()
    low_misses = high_misses = 0
    for _ in range(reps):
        a = Counter(rng.choice(cells, n, p=first).tolist())
        b = Counter(rng.choice(cells, n, p=second).tolist())
        _, lower, upper = stats.two_sample_tv_bounds(a, b, n, delta)
        low_misses += lower > true_tv
        high_misses += upper < true_tv
    assert low_misses / reps <= delta + _binomial_slack(delta, reps)
    assert high_misses / reps <= delta + _binomial_slack(delta, reps)


def test_two_sample_tv_bounds_decide_clear_cases_only():
    n, delta = 1000, 1e-3
    same = Counter({0: 500, 1: 500})
    _, _, upper = stats.two_sample_tv_bounds(same, same, n, delta)
    assert upper < 0.15  # two cells, identical samples: shown equivalent
    _, lower, _ = stats.two_sample_tv_bounds(Counter({0: 1000}), Counter({1: 1000}), n, delta)
    assert lower > 0.15  # disjoint supports: shown different
    broad = Counter({token: 1 for token in range(1000)})
    _, lower, upper = stats.two_sample_tv_bounds(broad, broad, n, delta)
    assert lower < 0.15 < upper  # a thousand cells seen once each: neither
