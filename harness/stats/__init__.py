"""Calibrated distribution checks (specs/statistics.md), by concern: bounds on the total variation
(``bounds``), sizing tests (``power``), the G-test and its judgement (``gtest``), the statistical cases
(``cases``) and the checks that run a sampler on them (``distribution``). This face re-exports what callers use.
"""

from .bounds import tv_slack, two_sample_tv_bounds
from .cases import DistributionCase, family_alpha_test, one_hot_cases, planned_trials, standard_cases, tests_per_case
from .distribution import DeviceSampler, DistributionReport, Sampler, distribution_check, distribution_check_on_device
from .gtest import GTestResult, g_test, judge
from .power import (
    DEFAULT_MAX_TRIALS,
    DEFAULT_POWER,
    THOROUGH_MAX_TRIALS,
    THOROUGH_POWER,
    UNREACHABLE,
    Power,
    detectable_deviation,
    sidak,
    trials_for_power,
    trials_needed,
    trials_to_certify,
    trials_to_reach,
)

__all__ = [
    "DEFAULT_MAX_TRIALS",
    "DEFAULT_POWER",
    "THOROUGH_MAX_TRIALS",
    "THOROUGH_POWER",
    "UNREACHABLE",
    "DeviceSampler",
    "DistributionCase",
    "DistributionReport",
    "GTestResult",
    "Power",
    "Sampler",
    "detectable_deviation",
    "distribution_check",
    "distribution_check_on_device",
    "family_alpha_test",
    "g_test",
    "judge",
    "one_hot_cases",
    "planned_trials",
    "sidak",
    "standard_cases",
    "tests_per_case",
    "trials_for_power",
    "trials_needed",
    "trials_to_certify",
    "trials_to_reach",
    "tv_slack",
    "two_sample_tv_bounds",
]
