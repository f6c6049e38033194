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


def tv_slack(support: int, trials: int, delta: float) -> float:
    """Half the L1 deviation that the empirical distribution of ``trials`` samples exceeds with probability
    at most ``delta``, over ``support + 1`` cells (the target's support and one cell for everything else).

    Weissman et al. (2003), "Inequalities for the L1 deviation of the empirical distribution": for ``a``
    cells, ``P(‖p̂ − p‖₁ ≥ ε) ≤ (2^a − 2) e^{−N ε² / 2}``, at every ``N`` and whatever ``p``."""
    cells = support + 1
    log_sets = cells * math.log(2) + math.log1p(-(2.0 ** (1 - cells)))  # ln(2^a − 2), a ≥ 2
    return 0.5 * math.sqrt(2 * (log_sets + math.log(1 / delta)) / trials)


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


# A sampler under test: (target_logits [R, V], draft_token_ids [ΣK], num_draft_tokens [B],
# draft_probs [ΣK, V] | None, temperature [B], seeds [B], positions [B]) -> token_ids [B, K+1].
Sampler = Callable[..., np.ndarray]


@dataclass
class DistributionCase:
    """One statistical case: ``K + 1`` target rows ``p`` (as logits ``[K + 1, V]`` at temperature ``T``)
    and ``K`` draft distributions ``q [K, V]``. ``pass_q = False`` verifies without draft probabilities.

    The targets are the theorem's (RS-PROB-5, RS-PROB-6) unless a golden vector states them:
    ``expected_positions [K + 1, V]`` and ``expected_lengths [K + 1]`` (float64)."""

    name: str
    target_logits: np.ndarray  # [K + 1, V]
    q: np.ndarray  # [K, V]
    temperature: float = 1.0
    pass_q: bool = True
    expected_positions: np.ndarray | None = None
    expected_lengths: np.ndarray | None = None

    @property
    def p(self) -> np.ndarray:
        if self.expected_positions is not None:
            return np.asarray(self.expected_positions, dtype=np.float64)
        return np.array([rs.target_probs(row, self.temperature) for row in self.target_logits])

    @property
    def K(self) -> int:
        return len(self.q)

    def length_law(self) -> np.ndarray:
        """``P(A = a)``, ``a = 0..K`` ``[K + 1]``: the vector's, or the closed form of RS-PROB-6."""
        if self.expected_lengths is not None:
            return np.asarray(self.expected_lengths, dtype=np.float64)
        p = np.array([rs.target_probs(row, self.temperature) for row in self.target_logits])
        if self.pass_q:
            betas = [rs.overlap(p[j], self.q[j]) for j in range(self.K)]
        else:  # one-hot verification of drafts drawn from q accepts with probability sum_x q(x) p(x)
            betas = [float(np.dot(self.q[j] / self.q[j].sum(), p[j])) for j in range(self.K)]
        return rs.accepted_length_distribution(betas)

    def reach(self) -> np.ndarray:
        """``P(position j is emitted) = P(A ≥ j)``, ``j = 0..K`` ``[K + 1]``."""
        law = self.length_law()
        return np.clip(law[::-1].cumsum()[::-1], 0.0, 1.0)


# Positions a conforming engine reaches less often than this are not positions of the case.
UNREACHABLE = 1e-12


def planned_trials(case: DistributionCase, target: Power, alpha_test: float, max_trials: int) -> int:
    """Trials of ``case`` after which every reachable position, and the accepted-length test, have reached
    the trials ``target`` needs (STAT-POWER-1), except the tests that would need more than ``max_trials``:
    those cannot count at this cap, so no trials are spent on them alone and they stay NOT_RUN."""
    p = case.p
    wanted = [trials_needed(case.length_law(), target, alpha_test)]
    for j, reach in enumerate(case.reach()):
        if reach > UNREACHABLE:
            wanted.append(trials_to_reach(trials_needed(p[j], target, alpha_test), float(reach)))
    affordable = [n for n in wanted if n <= max_trials]
    return max(affordable) if affordable else max_trials


@dataclass
class DistributionReport:
    case: str
    trials: int
    alpha_test: float
    target: Power
    positions: list[Judgement] = field(default_factory=list)
    accepted_length: Judgement | None = None
    reach: list = field(default_factory=list)  # [K + 1] P(position reached) for a conforming engine
    out_of_range: int = 0  # emitted ids outside [0, V) or rows breaking the prefix invariant
    empirical: list = field(default_factory=list)  # [K + 1][V] observed frequencies per position
    lengths: list = field(default_factory=list)  # observed accepted-length frequencies
    expected_lengths: list = field(default_factory=list)  # their law (RS-PROB-6)

    def violations(self) -> set[str]:
        """Requirement ids this report shows broken (empty when the check passes)."""
        found = set()
        if self.out_of_range:
            found.add("RS-INPUT-1")
        if any(j.failed for j in self.positions):
            found.add("RS-PROB-5")
        if self.accepted_length is not None and self.accepted_length.failed:
            found.add("RS-PROB-6")
        return found

    @property
    def passed(self) -> bool:
        return not self.violations()

    def position_lines(self) -> list[str]:
        """One line per position and for the accepted length: what it certified, or why it did not count."""
        lines = []
        for j, judgement in enumerate(self.positions):
            if self.reach[j] <= UNREACHABLE and not judgement.result.trials:
                lines.append(f"{self.case} position {j}: unreachable (P = 0 for a conforming engine)")
            else:
                lines.append(judgement.line(f"{self.case} position {j}"))
        lines.append(self.accepted_length.line(f"{self.case} accepted length"))
        return lines


def tests_per_case(K: int) -> int:
    """Position tests (K + 1) plus the accepted-length test."""
    return K + 2


# Requests per sampler call at most: the reference's Triton kernels find a request's first row by summing the
# draft counts before it (impl/kernels/layout.py), so a launch costs about B² / 2048 loads and a batch of
# millions of requests takes minutes where 65,536 take milliseconds.
MAX_BATCH_ROWS = 65_536


def _batch_rows(K: int, V: int, logits: int = 2**24) -> int:
    """Trials per sampler call: about ``logits`` logits, between 1,024 and ``MAX_BATCH_ROWS`` rows."""
    return int(np.clip(logits // ((K + 1) * V), 1024, MAX_BATCH_ROWS))


def draw_drafts(rng: np.random.Generator, q: np.ndarray, count: int) -> np.ndarray:
    """``count`` trials' drafts ``[count, K]`` (int64): column ``j`` drawn from row ``j`` of ``q [K, V]``,
    renormalised (STAT-CASE-1)."""
    V = q.shape[1]
    return np.stack([rng.choice(V, size=count, p=row / row.sum()) for row in q], axis=1).reshape(count, len(q))


def distribution_check(
    sampler: Sampler,
    case: DistributionCase,
    trials: int,
    alpha_test: float,
    seed: int,
    target: Power = DEFAULT_POWER,
    batch: int | None = None,
) -> DistributionReport:
    """Run ``trials`` independent trials of ``case`` and test them (STAT-CASE-1, STAT-TEST-1..4), each
    test judged against ``target`` (STAT-POWER-1, STAT-CERT-1).

    Each trial is one batch row with its own drafts drawn from ``q`` and its own seed; ``batch`` trials go
    to the sampler at once (default: about 16 M logits).
    """
    rng = np.random.default_rng(seed)
    V = case.target_logits.shape[1]
    K = case.K
    counts = np.zeros((K + 1, V))
    lengths = np.zeros(K + 1)
    out_of_range = 0
    done = 0
    batch = batch or _batch_rows(K, V)
    while done < trials:
        b = min(batch, trials - done)
        drafts = draw_drafts(rng, case.q, b)
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
        lengths += np.bincount(emitted - 1, minlength=K + 1)
        for j in range(K + 1):
            column = tokens[:, j]
            counts[j] += np.bincount(column[column != -1], minlength=V)
        done += b
    return _report(case, counts, lengths, out_of_range, trials, alpha_test, target)


# A sampler on a torch device: the arguments of ``Sampler`` as tensors on that device -> token_ids [B, K+1].
DeviceSampler = Callable[..., "torch.Tensor"]  # noqa: F821 (torch is imported where it is used)


def distribution_check_on_device(
    sampler: DeviceSampler,
    case: DistributionCase,
    trials: int,
    alpha_test: float,
    seed: int,
    target: Power = DEFAULT_POWER,
    device: str = "cpu",
    batch: int | None = None,
) -> DistributionReport:
    """``distribution_check`` for a sampler that takes and returns torch tensors on ``device``: drafts,
    seeds and histograms stay on the device (``torch.multinomial`` from a generator seeded with ``seed``,
    ``torch.bincount``), and the host reads the histograms once, after the last batch.

    ``batch`` trials go to the sampler at once (default: about 128 M logits on a GPU, 16 M elsewhere)."""
    import torch

    device = torch.device(device)
    generator = torch.Generator(device=device).manual_seed(seed)
    V, K = case.target_logits.shape[1], case.K
    logits = torch.tensor(case.target_logits, dtype=torch.float32, device=device)  # [K + 1, V]
    q = torch.tensor(case.q / case.q.sum(axis=1, keepdims=True), dtype=torch.float32, device=device)  # [K, V]
    counts = torch.zeros((K + 1) * V, dtype=torch.int64, device=device)  # position j, token x at j * V + x
    lengths = torch.zeros(K + 1, dtype=torch.int64, device=device)
    out_of_range = torch.zeros((), dtype=torch.int64, device=device)
    columns = torch.arange(K + 1, device=device)
    batch = batch or _batch_rows(K, V, 2**27 if device.type == "cuda" else 2**24)
    done = 0
    while done < trials:
        b = min(batch, trials - done)
        drafts = torch.multinomial(q, b, replacement=True, generator=generator).T if K else None  # [b, K]
        tokens = sampler(
            logits.expand(b, K + 1, V).reshape(b * (K + 1), V),
            drafts.reshape(-1) if K else torch.zeros(0, dtype=torch.int64, device=device),
            torch.full((b,), K, dtype=torch.int64, device=device),
            q.expand(b, K, V).reshape(b * K, V) if case.pass_q else None,
            torch.full((b,), case.temperature, dtype=torch.float32, device=device),
            torch.randint(0, 2**62, (b,), generator=generator, device=device),
            torch.zeros(b, dtype=torch.int64, device=device),
        ).to(torch.int64)[:, : K + 1]
        real = tokens != -1
        emitted = real.sum(dim=1)
        prefix = columns[None, :] < emitted[:, None]
        bad = (real & ((tokens < 0) | (tokens >= V))).any(dim=1) | (real != prefix).any(dim=1) | (emitted == 0)
        out_of_range += bad.sum()
        good = real & ~bad[:, None]
        counts += torch.bincount((columns[None, :] * V + tokens)[good], minlength=(K + 1) * V)
        lengths += torch.bincount((emitted - 1)[~bad], minlength=K + 1)
        done += b
    return _report(
        case,
        counts.view(K + 1, V).cpu().numpy().astype(np.float64),
        lengths.cpu().numpy().astype(np.float64),
        int(out_of_range),
        trials,
        alpha_test,
        target,
    )


def _report(case, counts, lengths, out_of_range, trials, alpha_test, target) -> DistributionReport:
    """The tests of ``case`` on its histograms ``counts [K + 1, V]`` and ``lengths [K + 1]`` (float64), each
    judged against ``target``."""
    K = case.K
    p = case.p
    law = case.length_law()
    reach = case.reach()
    report = DistributionReport(case.name, trials, alpha_test, target, reach=reach.tolist(), out_of_range=out_of_range)
    report.positions = [judge(g_test(counts[j], p[j], alpha_test), p[j], target, float(reach[j])) for j in range(K + 1)]
    report.accepted_length = judge(g_test(lengths, law, alpha_test), law, target)
    reached = counts.sum(axis=1, keepdims=True)
    report.empirical = np.divide(counts, reached, out=np.zeros_like(counts), where=reached > 0).tolist()
    report.lengths = (lengths / max(lengths.sum(), 1)).tolist()
    report.expected_lengths = law.tolist()
    return report


def _probs(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """``softmax(logits / temperature)`` of every row of ``logits [R, V]`` (float64)."""
    return np.array([rs.target_probs(row, temperature) for row in logits])


def standard_cases(large_vocab: int = 1000) -> list[DistributionCase]:
    """The case set of STAT-CASE-2 for drafts verified with their probabilities: ``q`` ranked in reverse to
    ``p``, disjoint supports, ``p = q``, a one-hot target, a small support in a large vocabulary, a vocabulary
    that is no multiple of a block size, and a temperature sweep; ``K = 2`` drafts each.

    Every reachable position is reached by a conforming engine with probability at least 0.3 (specs/
    statistics.md, "Standard cases"): trials are sized by the rarest position, so a position reached by
    1 % of the trials would cost a hundred times its own trials. Each case keeps its adversarial pair on
    draft row 0 (reached always) and a milder pair of the same kind on row 1, so the acceptance of row 0
    does not starve the later rows. The rows of a case differ (permuted or redrawn targets), so a sampler
    that reads the wrong row's ``p`` or ``q`` is seen at the positions after the first."""
    neg = -np.inf
    cases = []
    ranked = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    permuted = np.stack([ranked, np.roll(ranked, 1), np.roll(ranked, 2)])  # [3, 6]
    reverse = permuted[:2, ::-1]  # each draft row's q ranked in reverse to its p
    half_reverse = np.stack([reverse[0], 0.5 * reverse[1] + 0.5 * permuted[1]])  # overlap 0.4, then 0.7
    cases.append(DistributionCase("reverse-ranked", np.log(permuted), half_reverse))
    disjoint_p = np.array(
        [[0.0, 0.0, 0.0, neg, neg, neg], [neg, 0.0, 0.0, 0.0, neg, neg], [0.0, neg, neg, neg, 0.0, 0.0]]
    )
    disjoint_q = np.array([[0, 0, 0, 1, 1, 1], [1, 0, 0, 0, 1, 1]]) / 3  # positions 1 and 2 unreachable
    cases.append(DistributionCase("disjoint-supports", disjoint_p, disjoint_q))
    same = np.array([0.3, 0.3, 0.2, 0.1, 0.1])
    same_rows = np.stack([same, np.roll(same, 2), np.roll(same, 4)])
    cases.append(DistributionCase("p-equals-q", np.log(same_rows), same_rows[:2].copy()))
    one_hot = np.full((3, 5), neg)
    one_hot[[0, 1, 2], [1, 3, 0]] = 0.0
    one_hot_q = np.full((2, 5), 0.1)
    one_hot_q[[0, 1], [1, 3]] = 0.6  # accepted 60 % of the time, else the residual is the one-hot target
    cases.append(DistributionCase("one-hot-target", one_hot, one_hot_q))
    rng = np.random.default_rng(7)
    wide = np.full((3, large_vocab), neg)
    support = rng.choice(large_vocab, size=12, replace=False)
    wide[:, support] = rng.normal(scale=2.0, size=(3, 12))
    q_wide = np.zeros((2, large_vocab))
    q_wide[:, support] = 0.7 * _probs(wide[:2])[:, support] + 0.3 * rng.dirichlet(np.ones(12), size=2)
    cases.append(DistributionCase("small-support-in-large-vocab", wide, q_wide))
    odd = rng.normal(scale=2.0, size=(3, 37))
    cases.append(DistributionCase("vocab-37", odd, 0.6 * _probs(odd[:2]) + 0.4 * rng.dirichlet(np.ones(37), size=2)))
    for t in (0.5, 2.0):  # q is the target at temperature 1: what an engine that ignores the temperature samples
        logits = 2 * np.log(permuted)
        cases.append(DistributionCase(f"temperature-{t}", logits, _probs(logits[:2]), t))
    return cases


def one_hot_cases(cases: Sequence[DistributionCase]) -> list[DistributionCase]:
    """The same kinds verified as one-hot (no draft probabilities): each case's first draft row and its bonus
    row (``K = 1``), drafts drawn from a stated ``q`` (STAT-CASE-1): the case's own with half its mass moved
    to the mode of ``p``, except for disjoint supports (kept disjoint).

    One-hot verification accepts a draft with probability ``Σ_x q(x) p(x) ≤ max p``, so a second draft row
    behind the reverse-ranked pair would be reached by under 1 % of the trials; with one draft row and the
    mode-weighted ``q`` the bonus row is reached by at least 0.24 of them."""
    out = []
    for case in cases:
        p0 = case.p[0]
        q = case.q[0] / case.q[0].sum()
        if np.dot(q, p0) > 0:
            q = 0.5 * q + 0.5 * np.eye(len(p0))[int(np.argmax(p0))]
        out.append(
            DistributionCase(
                case.name + "-one-hot", case.target_logits[[0, -1]], q[None, :], case.temperature, pass_q=False
            )
        )
    return out


def family_alpha_test(alpha: float, cases: Sequence[DistributionCase]) -> float:
    """Šidák split of the family-wise ``alpha`` over every test of ``cases`` (STAT-TEST-3)."""
    return sidak(alpha, sum(tests_per_case(c.K) for c in cases))


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
