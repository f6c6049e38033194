"""The G-test of one histogram against its target (STAT-TEST-1, STAT-TEST-2) with a certified bound on the total
variation (STAT-CERT-1), and its judgement against a declared ``Power`` (STAT-POWER-1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from .bounds import tv_slack
from .power import UNREACHABLE, Power, detectable_deviation, trials_needed, trials_to_reach

MIN_EXPECTED = 5.0


@dataclass
class GTestResult:
    statistic: float
    df: int
    p_value: float
    alpha: float
    trials: int
    zero_hits: int  # samples on tokens with probability 0: a hard failure (STAT-TEST-2)
    tv_hat: float
    tv_upper: float  # STAT-CERT-1
    support: int = 0  # cells of positive target probability

    @property
    def passed(self) -> bool:
        return self.zero_hits == 0 and self.p_value >= self.alpha


def g_test(counts: np.ndarray, probs: np.ndarray, alpha: float) -> GTestResult:
    """G-test of ``counts [V]`` against ``probs [V]`` (float64) with cells of expected count < 5 pooled
    (STAT-TEST-1), and an upper confidence bound on the total variation at confidence ``1 − alpha``
    (STAT-CERT-1).

    The bound: let ``p'`` be the engine's distribution and ``S`` the support of ``p``. As ``p`` is 0
    outside ``S``, ``TV(p', p)`` equals the TV over the partition ``{{x} : x ∈ S} ∪ {outside S}``, and so
    does ``tv_hat = ½ Σ_x |p̂(x) − p(x)|`` (computed unpooled over every cell). By the triangle inequality
    ``TV(p', p) ≤ tv_hat + TV(p̂, p')`` over that partition of ``|S| + 1`` cells, and ``tv_slack`` bounds
    the last term: ``TV ≤ tv_hat + tv_slack(|S|, N, alpha)``. Counting the pooled cells instead of
    ``|S| + 1`` while ``tv_hat`` runs over every cell would be anti-conservative."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    n = int(counts.sum())
    zero_hits = int(counts[probs <= 0].sum())
    support = probs > 0
    size = int(support.sum())
    if n == 0:
        return GTestResult(0.0, 0, 1.0, alpha, 0, zero_hits, 0.0, 1.0, size)
    tv_hat = 0.5 * float(np.abs(counts / n - probs).sum())
    expected = probs[support] * n
    observed = counts[support]
    small = expected < MIN_EXPECTED
    cells_obs = list(observed[~small])
    cells_exp = list(expected[~small])
    if small.any() and expected[small].sum() >= MIN_EXPECTED:
        cells_obs.append(observed[small].sum())
        cells_exp.append(expected[small].sum())
    elif small.any() and cells_exp:  # too little mass to stand alone: merge into the smallest cell
        i = int(np.argmin(cells_exp))
        cells_obs[i] += observed[small].sum()
        cells_exp[i] += expected[small].sum()
    obs = np.array(cells_obs)
    exp = np.array(cells_exp)
    df = len(obs) - 1
    if df <= 0:
        statistic, p_value = 0.0, 1.0
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(obs > 0, obs * np.log(obs / exp), 0.0)
        statistic = float(2.0 * terms.sum())
        p_value = float(sps.chi2.sf(statistic, df))
    tv_upper = min(1.0, tv_hat + tv_slack(max(size, 1), n, alpha))
    return GTestResult(statistic, df, p_value, alpha, n, zero_hits, tv_hat, tv_upper, size)


@dataclass
class Judgement:
    """One test judged against a declared ``Power``. It fails when the test fails; it counts as a case
    only when it passes, reached ``needed`` trials (so it detects ``deviation`` with the declared power)
    and certifies ``tv_upper ≤ deviation``; otherwise it is not counted (NOT_RUN) for ``reason``."""

    result: GTestResult
    needed: int
    detects: float  # the TV its reached trials detect with the declared power
    counted: bool
    reason: str

    @property
    def failed(self) -> bool:
        return not self.result.passed

    def line(self, label: str) -> str:
        r = self.result
        if self.failed:
            return (
                f"{label}: p = {r.p_value:.3g} < α_test {r.alpha:.2g}, {r.zero_hits} samples on p = 0 tokens, "
                f"TV ≤ {r.tv_upper:.4f} ({r.trials} trials)"
            )
        if self.counted:
            return f"{label}: TV ≤ {r.tv_upper:.4f} certified, detects TV ≥ {self.detects:.4f} ({r.trials} trials)"
        return f"{label}: not counted, {self.reason}"

    def to_json(self) -> dict:
        r = self.result
        return {
            "p_value": r.p_value,
            "tv_upper": r.tv_upper,
            "trials": r.trials,
            "needed": self.needed,
            "detects": self.detects,
            "counted": self.counted,
        }


def judge(result: GTestResult, probs: np.ndarray, target: Power, reach: float = 1.0) -> Judgement:
    """``result``, a test of ``probs [V]`` whose trials reach it with probability ``reach``, judged against
    ``target`` (see ``Judgement``). A test short of its trials names the ``--trials`` (trials per case) at
    which a conforming engine reaches them."""
    needed = trials_needed(probs, target, result.alpha)
    detects = detectable_deviation(result.trials, max(result.support, 2), result.alpha, target.power)
    if not result.passed:
        return Judgement(result, needed, detects, False, "failed")
    if result.trials < needed:
        reason = (
            f"{result.trials} trials reached it, {needed} needed for TV {target.deviation} "
            f"(they detect TV ≥ {detects:.4f} and certify TV ≤ {result.tv_upper:.4f})"
        )
        if reach > UNREACHABLE:
            reason += f"; --trials {trials_to_reach(needed, reach)} would certify it"
        return Judgement(result, needed, detects, False, reason)
    if result.tv_upper > target.deviation:
        reason = f"TV ≤ {result.tv_upper:.4f} does not certify {target.deviation} ({result.trials} trials)"
        return Judgement(result, needed, detects, False, reason)
    return Judgement(result, needed, detects, True, "")
