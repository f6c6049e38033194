"""Bounds on the total variation between distributions known only through samples: how far the empirical
distribution of one sample strays from its law (``tv_slack``, STAT-CERT-1), and the two-sample estimate with its
confidence bounds (``two_sample_tv_bounds``, API-SPEC-2)."""

from __future__ import annotations

import math
from collections import Counter


def tv_slack(support: int, trials: int, delta: float) -> float:
    """Half the L1 deviation that the empirical distribution of ``trials`` samples exceeds with probability
    at most ``delta``, over ``support + 1`` cells (the target's support and one cell for everything else).

    Weissman et al. (2003), "Inequalities for the L1 deviation of the empirical distribution": for ``a``
    cells, ``P(‖p̂ − p‖₁ ≥ ε) ≤ (2^a − 2) e^{−N ε² / 2}``, at every ``N`` and whatever ``p``."""
    cells = support + 1
    log_sets = cells * math.log(2) + math.log1p(-(2.0 ** (1 - cells)))  # ln(2^a − 2), a ≥ 2
    return 0.5 * math.sqrt(2 * (log_sets + math.log(1 / delta)) / trials)


def two_sample_tv_bounds(first: Counter, second: Counter, n: int, delta: float) -> tuple[float, float, float]:
    """``(estimate, lower, upper)``: the two-sample TV estimate of two samples of ``n`` each and bounds on
    the true TV, each at confidence ``1 - delta`` (API-SPEC-2).

    The estimate's sampling bias is bounded cell by cell, ``½ Σ_x √((p1(1−p1) + p2(1−p2))/n)``, with the
    observed frequencies plugged in (a rare cell costs only what it can contribute); the estimate moves
    by at most 1/n per sample point, so McDiarmid over the 2n points adds ``√(ln(1/δ)/n)`` on either side.
    The plug-in estimate is biased upward (Jensen), so the lower bound subtracts the bias bound as well."""
    cells = set(first) | set(second)
    p1 = {c: first[c] / n for c in cells}
    p2 = {c: second[c] / n for c in cells}
    tv = 0.5 * sum(abs(p1[c] - p2[c]) for c in cells)
    bias = 0.5 * sum(math.sqrt((p1[c] * (1 - p1[c]) + p2[c] * (1 - p2[c])) / n) for c in cells)
    spread = math.sqrt(math.log(1 / delta) / n)
    return tv, max(0.0, tv - bias - spread), tv + bias + spread
