"""Calibrated distribution checks (specs/statistics.md).

``distribution_check`` draws drafts from ``q``, runs a sampler on many independent trials, and
tests every position and the accepted-length histogram with a G-test whose family-wise α is split
by Šidák. Each test reports a TV upper bound as a certificate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sps

from .oracle import rejection as rs

MIN_EXPECTED = 5.0


def sidak(alpha: float, tests: int) -> float:
    """Per-test level so that ``tests`` independent tests have family-wise level ``alpha``."""
    return -math.expm1(math.log1p(-alpha) / tests)


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

    @property
    def passed(self) -> bool:
        return self.zero_hits == 0 and self.p_value >= self.alpha


def g_test(counts: np.ndarray, probs: np.ndarray, alpha: float) -> GTestResult:
    """G-test of ``counts`` against ``probs`` with cells of expected count < 5 pooled (STAT-TEST-1)."""
    counts = np.asarray(counts, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    n = int(counts.sum())
    zero_hits = int(counts[probs <= 0].sum())
    support = probs > 0
    if n == 0:
        return GTestResult(0.0, 0, 1.0, alpha, 0, zero_hits, 0.0, 1.0)
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
    k = max(len(obs), 1)
    tv_upper = min(1.0, tv_hat + 0.5 * math.sqrt((k - 1) / n) + math.sqrt(math.log(1 / alpha) / (2 * n)))
    return GTestResult(statistic, df, p_value, alpha, n, zero_hits, tv_hat, tv_upper)


def trials_for_power(epsilon: float, cells: int, alpha: float, power: float = 0.99) -> int:
    """Smallest N detecting a TV deviation ``epsilon`` with ``power`` at level ``alpha`` (STAT-POWER-1).

    Uses the non-central χ² with ``cells - 1`` degrees of freedom and non-centrality ``4 N ε²``
    (a lower bound on ``N · χ²(p'‖p)`` for any ``p'`` at total variation ``ε``).
    """
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


def detectable_deviation(trials: int, cells: int, alpha: float, power: float = 0.99) -> float:
    """The TV deviation ``ε`` that ``trials`` detect with ``power`` at ``alpha``."""
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


# A sampler under test: (target_logits [R, V], draft_token_ids [ΣK], num_draft_tokens [B],
# draft_probs [ΣK, V] | None, temperature [B], seeds [B], positions [B]) -> token_ids [B, K+1].
Sampler = Callable[..., np.ndarray]


@dataclass
class DistributionCase:
    """One statistical case: ``K + 1`` target rows ``p`` (as logits at temperature ``T``) and
    ``K`` draft distributions ``q``. ``pass_q = False`` verifies without draft probabilities."""

    name: str
    target_logits: np.ndarray  # [K + 1, V]
    q: np.ndarray  # [K, V]
    temperature: float = 1.0
    pass_q: bool = True

    @property
    def p(self) -> np.ndarray:
        return np.array([rs.target_probs(row, self.temperature) for row in self.target_logits])

    @property
    def K(self) -> int:
        return len(self.q)


@dataclass
class DistributionReport:
    case: str
    trials: int
    alpha_test: float
    positions: list[GTestResult] = field(default_factory=list)
    accepted_length: GTestResult | None = None
    detectable_tv: float = float("nan")
    out_of_range: int = 0  # emitted ids outside [0, V) or rows breaking the prefix invariant
    empirical: list = field(default_factory=list)  # [K + 1][V] observed frequencies per position
    lengths: list = field(default_factory=list)  # observed accepted-length frequencies
    expected_lengths: list = field(default_factory=list)  # their closed form (RS-PROB-6)

    def violations(self) -> set[str]:
        """Requirement ids this report shows broken (empty when the check passes)."""
        found = set()
        if self.out_of_range:
            found.add("RS-INPUT-1")
        if any(not r.passed for r in self.positions):
            found.add("RS-PROB-5")
        if self.accepted_length is not None and not self.accepted_length.passed:
            found.add("RS-PROB-6")
        return found

    @property
    def passed(self) -> bool:
        return not self.violations()


def tests_per_case(K: int) -> int:
    """Position tests (K + 1) plus the accepted-length test."""
    return K + 2


def distribution_check(
    sampler: Sampler,
    case: DistributionCase,
    trials: int,
    alpha_test: float,
    seed: int,
    batch: int = 4096,
) -> DistributionReport:
    """Run ``trials`` independent trials of ``case`` and test them (STAT-CASE-1, STAT-TEST-1..4).

    Each trial is one batch row with its own drafts drawn from ``q`` and its own seed.
    """
    rng = np.random.default_rng(seed)
    V = case.target_logits.shape[1]
    K = case.K
    p = case.p
    counts = np.zeros((K + 1, V))
    lengths = np.zeros(K + 1)
    out_of_range = 0
    done = 0
    while done < trials:
        b = min(batch, trials - done)
        drafts = np.stack([rng.choice(V, size=b, p=case.q[j] / case.q[j].sum()) for j in range(K)], axis=1)
        logits = np.broadcast_to(case.target_logits, (b, K + 1, V)).reshape(b * (K + 1), V)
        q = None
        if case.pass_q:
            q = np.broadcast_to(case.q, (b, K, V)).reshape(b * K, V)
        tokens = sampler(
            np.ascontiguousarray(logits),
            drafts.reshape(-1),
            np.full(b, K),
            q,
            np.full(b, case.temperature),
            rng.integers(0, 2**62, size=b),
            np.zeros(b, dtype=np.int64),
        )
        tokens = np.asarray(tokens)
        real = tokens != -1
        emitted = real.sum(axis=1)
        prefix = np.arange(K + 1)[None, :] < emitted[:, None]
        bad = (real & ((tokens < 0) | (tokens >= V))).any(axis=1) | (real != prefix).any(axis=1) | (emitted == 0)
        out_of_range += int(bad.sum())
        tokens, emitted = tokens[~bad], emitted[~bad]
        np.add.at(lengths, emitted - 1, 1)
        for j in range(K + 1):
            column = tokens[:, j]
            np.add.at(counts[j], column[column != -1], 1)
        done += b
    report = DistributionReport(case.name, trials, alpha_test, out_of_range=out_of_range)
    for j in range(K + 1):
        report.positions.append(g_test(counts[j], p[j], alpha_test))
    if case.pass_q:
        betas = [rs.overlap(p[j], case.q[j]) for j in range(K)]
    else:  # one-hot verification of drafts drawn from q accepts with probability sum_x q(x) p(x)
        betas = [float(np.dot(case.q[j] / case.q[j].sum(), p[j])) for j in range(K)]
    closed_form = rs.accepted_length_distribution(betas)
    report.accepted_length = g_test(lengths, closed_form, alpha_test)
    reached = counts.sum(axis=1, keepdims=True)
    report.empirical = np.divide(counts, reached, out=np.zeros_like(counts), where=reached > 0).tolist()
    report.lengths = (lengths / max(lengths.sum(), 1)).tolist()
    report.expected_lengths = closed_form.tolist()
    report.detectable_tv = detectable_deviation(trials, min(V, 32), alpha_test)
    return report


def standard_cases(large_vocab: int = 1000) -> list[DistributionCase]:
    """The case set of STAT-CASE-2: adversarial, disjoint, equal, one-hot, small support in a large
    vocabulary, a vocabulary that is not a multiple of a block size, and a temperature sweep."""
    cases = []
    ranked = np.log(np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04]))
    reverse = np.exp(ranked[::-1]) / np.exp(ranked).sum()
    cases.append(DistributionCase("reverse-ranked", np.stack([ranked] * 3), np.stack([reverse] * 2)))
    cases.append(
        DistributionCase("reverse-ranked-one-hot", np.stack([ranked] * 3), np.stack([reverse] * 2), pass_q=False)
    )
    neg = -np.inf
    disjoint_p = np.array([[0.0, 0.0, 0.0, neg, neg, neg]] * 3)
    disjoint_q = np.array([[0, 0, 0, 1 / 3, 1 / 3, 1 / 3]] * 2)
    cases.append(DistributionCase("disjoint-supports", disjoint_p, disjoint_q))
    same = np.log(np.array([0.3, 0.3, 0.2, 0.1, 0.1]))
    cases.append(DistributionCase("p-equals-q", np.stack([same] * 3), np.stack([np.exp(same)] * 2)))
    one_hot = np.array([[neg, 0.0, neg, neg, neg]] * 3)
    cases.append(DistributionCase("one-hot-target", one_hot, np.stack([np.full(5, 0.2)] * 2)))
    rng = np.random.default_rng(7)
    wide = np.full((3, large_vocab), neg)
    support = rng.choice(large_vocab, size=12, replace=False)
    wide[:, support] = rng.normal(size=(3, 12))
    q_wide = np.zeros((2, large_vocab))
    q_wide[:, support] = rng.dirichlet(np.ones(12), size=2)
    cases.append(DistributionCase("small-support-in-large-vocab", wide, q_wide))
    odd = rng.normal(size=(3, 37))
    cases.append(DistributionCase("vocab-37", odd, rng.dirichlet(np.ones(37), size=2)))
    for t in (0.5, 2.0):
        cases.append(DistributionCase(f"temperature-{t}", np.stack([ranked] * 3) * 2, np.stack([reverse] * 2), t))
    return cases


def family_alpha_test(alpha: float, cases: Sequence[DistributionCase]) -> float:
    """Šidák split of the family-wise ``alpha`` over every test of ``cases`` (STAT-TEST-3)."""
    return sidak(alpha, sum(tests_per_case(c.K) for c in cases))


def two_sample_tv_upper(first: Counter, second: Counter, n: int, delta: float) -> tuple[float, float]:
    """Two-sample TV estimate of two samples of ``n`` each, and an upper bound on the true TV at
    confidence ``1 - delta`` (API-SPEC-2).

    The estimate's sampling bias is bounded cell by cell, ``½ Σ_x √((p1(1−p1) + p2(1−p2))/n)``, with the
    observed frequencies plugged in (a rare cell costs only what it can contribute); the estimate moves
    by at most 1/n per sample point, so McDiarmid over the 2n points adds ``√(ln(1/δ)/n)``."""
    cells = set(first) | set(second)
    p1 = {c: first[c] / n for c in cells}
    p2 = {c: second[c] / n for c in cells}
    tv = 0.5 * sum(abs(p1[c] - p2[c]) for c in cells)
    bias = 0.5 * sum(math.sqrt((p1[c] * (1 - p1[c]) + p2[c] * (1 - p2[c])) / n) for c in cells)
    return tv, tv + bias + math.sqrt(math.log(1 / delta) / n)
