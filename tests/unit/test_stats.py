"""The statistical machinery: calibration, power, pooling, certificates (specs/statistics.md)."""

import numpy as np
import pytest

from harness import stats
from harness.oracle import rejection as rs


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
    n = stats.trials_for_power(0.01, 32, 1e-6)
    assert 200_000 < n < 300_000  # about 25 / eps^2 for 32 cells
    assert stats.detectable_deviation(n, 32, 1e-6) == pytest.approx(0.01, rel=1e-3)
    # Simulate the deviation: half the mass of one cell moved to another, TV = 0.05, at the N for 0.05.
    p = np.full(8, 1 / 8)
    shifted = p.copy()
    shifted[0] += 0.05
    shifted[1] -= 0.05
    n = stats.trials_for_power(0.05, 8, 1e-3, power=0.99)
    rng = np.random.default_rng(2)
    caught = sum(not stats.g_test(rng.multinomial(n, shifted), p, 1e-3).passed for _ in range(200))
    assert caught >= 190


@pytest.mark.req("STAT-CERT-1")
def test_tv_upper_bound_covers_the_true_distance():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(10))
    misses = 0
    for _ in range(300):
        result = stats.g_test(rng.multinomial(2000, p), p, 0.01)
        misses += result.tv_upper < 0.0
    assert misses == 0
    shifted = np.roll(p, 1)
    true_tv = 0.5 * np.abs(shifted - p).sum()
    for _ in range(50):
        assert stats.g_test(rng.multinomial(2000, shifted), p, 0.01).tv_upper >= true_tv


@pytest.mark.req("STAT-CASE-1", "STAT-CASE-2", "STAT-TEST-4", "RS-PROB-5", "RS-PROB-6")
def test_the_oracle_passes_every_standard_case():
    cases = stats.standard_cases(large_vocab=300)
    alpha = stats.family_alpha_test(1e-4, cases)
    for case in cases:
        report = stats.distribution_check(rs.sample_arrays, case, trials=3000, alpha_test=alpha, seed=11)
        assert report.passed, (
            case.name,
            [(r.statistic, r.p_value, r.zero_hits) for r in report.positions],
            report.accepted_length,
        )
