"""Executable oracle for speculative-decoding rejection sampling (specs/rejection-sampling.md).

Three views of one semantics, all in float64 NumPy, one request at a time:

* ``sample_case``: the sampler itself, consuming given random draws (``Draws``), so that an
  implementation fed the same draws must emit the same tokens (RS-RNG-*).
* ``output_distribution``: the exact distribution of a request's emitted row for fixed drafts.
* ``distribution_with_sampled_drafts``: the same with drafts drawn from ``q`` (small V and K),
  whose per-position marginals are the target distributions (the theorem, RS-PROB-5).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from specconform.specs.interface import PLACEHOLDER, InvalidCase, RejectionCase

from . import rng


def target_probs(logits_row: np.ndarray, temperature: float, forced: int = -1) -> np.ndarray:
    """``p`` of one row: one-hot if forced (RS-FORCE-1), else softmax(logits / T) for T > 0."""
    V = logits_row.shape[0]
    if forced != -1:
        p = np.zeros(V)
        p[forced] = 1.0
        return p
    z = np.asarray(logits_row, dtype=np.float64) / temperature
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def greedy_token(logits_row: np.ndarray, forced: int = -1) -> int:
    """The target argmax, ties to the lowest id (RS-GREEDY-3); the forced token if forced."""
    if forced != -1:
        return int(forced)
    return int(np.argmax(np.asarray(logits_row, dtype=np.float64)))


def exponential_race(weights: np.ndarray, noise: np.ndarray) -> int:
    """``argmax(w / e)``, ties to the lowest id: a sample of ``w / sum(w)`` (RS-RNG-3)."""
    return int(np.argmax(weights / noise))


@dataclass
class Draws:
    """Random draws of one request: an acceptance uniform and a noise vector per row index."""

    uniform: Callable[[int], float]
    noise: Callable[[int], np.ndarray]


def counter_draws(seed: int, position: int, vocab_size: int, noise_purpose: int = rng.PURPOSE_SAMPLE) -> Draws:
    """The spec's counter-based draws for a request whose first new token is at ``position``; with
    ``noise_purpose=rng.PURPOSE_ACCEPT`` the token is sampled from the acceptance stream (an RS-RNG-2
    violation, which checks use to name it)."""
    return Draws(
        uniform=lambda j: rng.uniform(seed, position + j),
        noise=lambda j: rng.exponentials(seed, position + j, vocab_size, noise_purpose),
    )


# Where an unseeded request of a mixed batch draws fresh randomness (section 6): one generator for the process, as an
# engine's shared generator, never keyed by the case; seeded as torch's default generator is, so a run replays.
_FRESH = np.random.default_rng(0)


def fresh_draws(vocab_size: int) -> Draws:
    """Draws of a request without a seed (section 6, mixed batches): the counter-based draws under a fresh seed."""
    return counter_draws(int(_FRESH.integers(0, 2**62)), 0, vocab_size)


@dataclass
class RequestTrace:
    """What the oracle decided for one request, with margins to floating-point boundaries."""

    emitted: list[int]
    accept_margins: list[float] = field(default_factory=list)  # |u * q(d) - p(d)| per tested draft (q(d) > 0)
    sample_margin: float = np.inf  # relative gap between the best and second-best race score


def _race_margin(scores: np.ndarray) -> float:
    top = np.sort(scores)[-2:]
    if len(top) < 2 or top[1] <= 0:
        return np.inf
    return float((top[1] - top[0]) / top[1])


# distributions one per row: a [rows, V] array, or a sequence of [V] arrays
Rows = np.ndarray | Sequence[np.ndarray]


def verify_request(
    logits_rows: np.ndarray,
    drafts: Sequence[int],
    q_rows: np.ndarray | None,
    temperature: float,
    forced: Sequence[int],
    draws: Draws | None,
) -> RequestTrace:
    """Verify one request's drafts; ``logits_rows`` is ``[K + 1, V]`` (drafts then bonus)."""
    K = len(drafts)
    trace = RequestTrace(emitted=[])
    if temperature == 0:
        for j in range(K + 1):
            best = greedy_token(logits_rows[j], forced[j])
            trace.emitted.append(best)
            if j == K or drafts[j] != best:
                return trace
            # accepted: the emitted token equals the draft
    if draws is None:
        raise ValueError(f"a sampled request (temperature {temperature}) needs its draws; got None")
    for j in range(K + 1):
        p = target_probs(logits_rows[j], temperature, forced[j])
        if j == K:
            noise = draws.noise(j)
            scores = p / noise
            trace.emitted.append(exponential_race(p, noise))
            trace.sample_margin = _race_margin(scores)
            return trace
        d = int(drafts[j])
        q_d = 1.0 if q_rows is None else float(q_rows[j][d])
        u = draws.uniform(j)
        accepted = q_d > 0 and u * q_d < p[d]
        # a draft with q(d) = 0 is rejected by rule (RS-PROB-3), by no comparison that rounding could turn
        trace.accept_margins.append(abs(u * q_d - p[d]) if q_d > 0 else np.inf)
        if accepted:
            trace.emitted.append(d)
            continue
        q = np.zeros_like(p)
        if q_rows is None:
            q[d] = 1.0
        else:
            q = np.asarray(q_rows[j], dtype=np.float64)
        residual = np.maximum(p - q, 0.0)
        if residual.sum() <= 0:
            residual = p  # RS-PROB-4: a residual without mass samples p
        noise = draws.noise(j)
        trace.emitted.append(exponential_race(residual, noise))
        trace.sample_margin = _race_margin(residual / noise)
        return trace
    raise AssertionError("unreachable")


def request_slices(case: RejectionCase, i: int):
    rows = case.row_offsets()
    drafts = case.draft_offsets()
    row_slice = slice(rows[i], rows[i + 1])
    draft_slice = slice(drafts[i], drafts[i + 1])
    return row_slice, draft_slice


def sample_case(
    case: RejectionCase,
    draws: Sequence[Draws | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, list[RequestTrace]]:
    """Run the canonical sampler on a case.

    ``draws[i]`` gives request ``i``'s draws; by default the counter-based draws keyed by
    ``case.seeds[i]`` and ``case.positions[i]``, and for a request that ``case.seeded`` marks unseeded fresh
    draws (mixed batches, spec section 6). Returns ``token_ids [B, max K_i + 1]`` (-1 padded),
    ``num_emitted [B]`` and one ``RequestTrace`` per request.
    """
    case.validate()
    B, V = case.batch_size, case.vocab_size
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    out = np.full((B, width), PLACEHOLDER, dtype=np.int64)
    num = np.zeros(B, dtype=np.int64)
    forced_all = (
        case.forced_token_ids if case.forced_token_ids is not None else np.full(case.target_logits.shape[0], -1)
    )
    traces = []
    for i in range(B):
        rs, ds = request_slices(case, i)
        if draws is not None:
            request_draws = draws[i]
        elif (seed := case.seed_of(i)) is not None:
            position = 0 if case.positions is None else int(case.positions[i])
            request_draws = counter_draws(seed, position, V)
        elif case.seeded is not None:  # a request without a seed beside seeded ones draws fresh (section 6)
            request_draws = fresh_draws(V)
        else:
            request_draws = None
        if case.temperature[i] > 0 and request_draws is None:
            raise InvalidCase(f"request {i} samples (temperature > 0) but no draws or seed were given")
        trace = verify_request(
            case.target_logits[rs],
            case.draft_token_ids[ds],
            None if case.draft_probs is None else case.draft_probs[ds],
            float(case.temperature[i]),
            forced_all[rs],
            request_draws,
        )
        out[i, : len(trace.emitted)] = trace.emitted
        num[i] = len(trace.emitted)
        traces.append(trace)
    return out, num, traces


def sample_arrays(target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, positions):
    """``sample_case`` on plain arrays, returning ``token_ids``: the oracle as a ``stats.Sampler``."""
    case = RejectionCase(
        target_logits,
        draft_token_ids,
        num_draft_tokens,
        temperature,
        draft_probs,
        seeds=seeds,
        positions=positions,
    )
    return sample_case(case)[0]


def output_distribution(
    p_rows: Rows,
    q_rows: Rows | None,
    drafts: Sequence[int],
    greedy: bool = False,
) -> dict[tuple[int, ...], float]:
    """Exact distribution of one request's emitted row for fixed drafts.

    ``p_rows`` are the ``K + 1`` target distributions (after temperature and forcing; for greedy
    rows one-hot at the argmax). Returns ``{emitted tuple: probability}``.
    """
    K = len(drafts)
    dist: dict[tuple[int, ...], float] = {}
    reach = 1.0
    for j in range(K + 1):
        p = np.asarray(p_rows[j], dtype=np.float64)
        prefix = tuple(int(d) for d in drafts[:j])
        if j == K:
            for x in np.flatnonzero(p > 0):
                dist[prefix + (int(x),)] = dist.get(prefix + (int(x),), 0.0) + reach * p[x]
            break
        d = int(drafts[j])
        if greedy:
            best = int(np.argmax(p))
            if best != d:
                dist[prefix + (best,)] = reach
                return dist
            continue
        q = np.zeros_like(p)
        if q_rows is None:
            q[d] = 1.0
        else:
            q = np.asarray(q_rows[j], dtype=np.float64)
        accept = 0.0 if q[d] <= 0 else (1.0 if p[d] >= q[d] else p[d] / q[d])
        residual = np.maximum(p - q, 0.0)
        if residual.sum() <= 0:
            residual = p
        residual = residual / residual.sum()
        reject = reach * (1.0 - accept)
        if reject > 0:
            for x in np.flatnonzero(residual > 0):
                key = prefix + (int(x),)
                dist[key] = dist.get(key, 0.0) + reject * residual[x]
        reach *= accept
        if reach == 0:
            break
    return dist


def distribution_with_sampled_drafts(
    p_rows: Rows,
    q_rows: Rows,
    one_hot: bool = False,
) -> dict[tuple[int, ...], float]:
    """Exact distribution of the emitted row when each draft ``d_j`` is drawn from ``q_j``.

    ``one_hot`` verifies without passing ``q`` (the engine treats drafts as one-hot). Enumerates
    all draft sequences: keep ``V ** K`` small.
    """
    K = len(q_rows)
    V = len(p_rows[0])
    dist: dict[tuple[int, ...], float] = {}
    for drafts in itertools.product(range(V), repeat=K):
        weight = float(np.prod([q_rows[j][d] for j, d in enumerate(drafts)]))
        if weight == 0:
            continue
        for key, prob in output_distribution(p_rows, None if one_hot else q_rows, drafts).items():
            dist[key] = dist.get(key, 0.0) + weight * prob
    return dist


def position_marginals(dist: dict[tuple[int, ...], float], position: int, V: int) -> tuple[np.ndarray, float]:
    """Distribution of the token at ``position`` among rows that reach it, and the reach mass."""
    counts = np.zeros(V)
    for key, prob in dist.items():
        if len(key) > position:
            counts[key[position]] += prob
    reach = counts.sum()
    return (counts / reach if reach > 0 else counts), reach


def overlap(p: np.ndarray, q: np.ndarray) -> float:
    """``beta = sum_x min(p(x), q(x))``, the acceptance probability of one draft (RS-PROB-6)."""
    return float(np.minimum(p, q).sum())


def accepted_length_distribution(betas: Sequence[float]) -> np.ndarray:
    """``P(A = a)`` for ``a = 0..K`` from ``P(A >= j) = prod_{i<j} beta_i`` (RS-PROB-6)."""
    K = len(betas)
    at_least = np.ones(K + 2)
    for j in range(1, K + 1):
        at_least[j] = at_least[j - 1] * betas[j - 1]
    at_least[K + 1] = 0.0
    return at_least[:-1] - at_least[1:]
