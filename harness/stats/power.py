"""Sizing statistical tests (STAT-POWER-1, STAT-CERT-1): the declared ``Power``, the Šidák split, the trials a
test needs to detect a deviation and to certify its absence, and the trials after which a position reached only
sometimes has reached them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from .bounds import tv_slack


@dataclass(frozen=True)
class Power:
    """What a statistical test must achieve at every position it counts (STAT-POWER-1): detect a
    total-variation ``deviation`` with probability ``power`` at its level and, for a conforming engine,
    certify ``TV ≤ deviation`` (STAT-CERT-1) with probability ``power``."""

    deviation: float
    power: float = 0.9

    def __post_init__(self):
        if not 0 < self.deviation < 1:
            raise ValueError(f"deviation must be in (0, 1), got {self.deviation}")
        if not 0 < self.power < 1:
            raise ValueError(f"power must be in (0, 1), got {self.power}")


# The default run certifies TV 0.03 at every reachable position of the standard cases (about 0.5 M trials for
# the check with draft probabilities and 0.9 M for the one-hot check, every position reached by at least 0.24
# of the trials: ``standard_cases``); ``--thorough`` (a GPU) sizes for 0.003. The caps are trials per case.
DEFAULT_POWER = Power(0.03, 0.9)
DEFAULT_MAX_TRIALS = 1_000_000
THOROUGH_POWER = Power(0.003, 0.9)
THOROUGH_MAX_TRIALS = 40_000_000


def sidak(alpha: float, tests: int) -> float:
    """Per-test level so that ``tests`` independent tests have family-wise level ``alpha``."""
    return -math.expm1(math.log1p(-alpha) / tests)


def trials_for_power(epsilon: float, cells: int, alpha: float, power: float) -> int:
    """Smallest N detecting a TV deviation ``epsilon`` with ``power`` at level ``alpha`` (STAT-POWER-1).

    Uses the non-central χ² with ``cells - 1`` degrees of freedom and non-centrality ``4 N ε²``, a lower
    bound on ``N · χ²(p'‖p)`` for any ``p'`` at total variation ``ε`` (Cauchy–Schwarz; reached when
    ``p'/p`` is ``1 ± 2ε`` on two halves of the mass)."""
    df = max(cells - 1, 1)
    critical = sps.chi2.isf(alpha, df)
    lo, hi = 1, 1
    while sps.ncx2.sf(critical, df, 4 * hi * epsilon**2) < power:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if sps.ncx2.sf(critical, df, 4 * mid * epsilon**2) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def detectable_deviation(trials: int, cells: int, alpha: float, power: float) -> float:
    """The TV deviation ``ε`` that ``trials`` detect with ``power`` at ``alpha`` (``trials_for_power`` inverted)."""
    if trials <= 0:
        return 1.0
    df = max(cells - 1, 1)
    critical = sps.chi2.isf(alpha, df)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sps.ncx2.sf(critical, df, 4 * trials * mid**2) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def trials_to_certify(probs: np.ndarray, epsilon: float, delta: float, power: float) -> int:
    """Smallest N at which a sampler of exactly ``probs [V]`` gets ``tv_upper ≤ epsilon`` (at confidence
    ``1 − delta``) with probability at least ``power``.

    Under the null ``E tv_hat ≤ ½ Σ_x √(p(x)(1 − p(x)) / N)`` (Jensen, cell by cell); ``tv_hat`` moves by
    at most ``1/N`` per sample, so by McDiarmid it exceeds that mean by ``√(ln(1/(1 − power)) / (2N))``
    with probability at most ``1 − power``. Every term scales as ``1/√N``, so N has a closed form."""
    probs = np.asarray(probs, dtype=np.float64)
    support = max(int((probs > 0).sum()), 1)
    spread = 0.5 * float(np.sqrt(probs * (1 - probs)).sum())
    fluctuation = math.sqrt(math.log(1 / (1 - power)) / 2)
    return math.ceil(((spread + fluctuation + tv_slack(support, 1, delta)) / epsilon) ** 2)


def trials_needed(probs: np.ndarray, target: Power, alpha: float) -> int:
    """Trials a test of ``probs [V]`` at level ``alpha`` must reach to count (STAT-POWER-1, STAT-CERT-1).

    The power calculation takes the target's support as the cells: pooling only lowers the degrees of
    freedom, so this is conservative for the test that runs."""
    probs = np.asarray(probs, dtype=np.float64)
    cells = max(int((probs > 0).sum()), 2)
    return max(
        trials_for_power(target.deviation, cells, alpha, target.power),
        trials_to_certify(probs, target.deviation, alpha, target.power),
    )


def trials_to_reach(needed: int, reach: float, miss: float = 1e-6) -> int:
    """Trials after which a position reached with probability ``reach`` has been reached ``needed`` times
    except with probability about ``miss`` (normal approximation of the binomial's lower tail)."""
    if reach >= 1:
        return needed
    z = float(sps.norm.isf(miss))
    spread = z * math.sqrt(reach * (1 - reach))
    root = (spread + math.sqrt(spread**2 + 4 * reach * needed)) / (2 * reach)
    return max(math.ceil(root**2), needed)


# Positions a conforming engine reaches less often than this are not positions of the case.
UNREACHABLE = 1e-12
