"""The load benchmark's verdict (scripts/bench-embedded-load.py): the interval for the median paired ratio is the
distribution-free one of the binomial, checked against its definition computed here with exact fractions."""

import importlib.util
import sys
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench-embedded-load.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_embedded_load", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _below(k: int, n: int) -> Fraction:
    """P(Binomial(n, 1/2) <= k - 1): the chance that the median lies below the k-th smallest of n values."""
    return Fraction(sum(comb(n, i) for i in range(k)), 2**n)


@pytest.mark.parametrize("n", range(1, 31))
def test_the_interval_is_the_widest_order_statistics_pair_of_95_percent_coverage(bench, n):
    values = [float(10 * n - 3 * i) for i in range(n)]  # distinct, given in decreasing order
    low, high, coverage = bench.median_interval(values)
    ordered = sorted(values)
    admissible = [k for k in range(1, n // 2 + 1) if _below(k, n) <= Fraction(1, 40)]
    k = max(admissible, default=1)
    assert (low, high) == (ordered[k - 1], ordered[n - k])
    assert coverage == pytest.approx(float(1 - 2 * _below(k, n)), abs=1e-12)
    if admissible:  # a 95 % interval exists from 6 values on, and a narrower one would fall short of 95 %
        assert coverage >= 0.95
        assert k == n // 2 or 1 - 2 * _below(k + 1, n) < Fraction(95, 100)
    else:
        assert n < 6 and coverage < 0.95
