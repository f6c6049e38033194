"""The statistical cases (STAT-CASE-2): a case's target rows and draft distributions with the laws a conforming
engine follows, the standard set and its one-hot variants, the family-wise level split over their tests
(STAT-TEST-3) and the trials a case needs (STAT-POWER-1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..oracle import rejection as rs
from .power import UNREACHABLE, Power, sidak, trials_needed, trials_to_reach


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


def tests_per_case(K: int) -> int:
    """Position tests (K + 1) plus the accepted-length test."""
    return K + 2


def family_alpha_test(alpha: float, cases: Sequence[DistributionCase]) -> float:
    """Šidák split of the family-wise ``alpha`` over every test of ``cases`` (STAT-TEST-3)."""
    return sidak(alpha, sum(tests_per_case(c.K) for c in cases))


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
