"""Deliberately broken samplers: each reproduces a bug class seen in a real engine.

``mutant_sampler(None)`` is a correct, vectorised NumPy rejection sampler (one K for the whole
batch, as in distribution checks). Its draws are keyed by each request's ``(seed, position, purpose)`` (RS-RNG-1,
``uniforms``, ``sample_rows``): one generator for the whole batch, seeded by its first request, would make a seeded
request's tokens depend on the others in its batch, a second defect in every mutant built on it. Every other name
breaks exactly one rule:

- ``always-accept``: accepts every draft (a probabilistic kernel that always accepted);
- ``ignore-draft-probs``: treats sampled drafts as one-hot although ``q`` was passed;
- ``recover-from-p``: samples the recovered token from ``p`` instead of the residual;
- ``reuse-acceptance-draw``: samples the recovered token with the uniform that rejected the draft;
- ``recovered-id-equals-v``: emits ``V`` where the residual's sample is the last id (a padded tile);
- ``temperature-ignored``: verifies against ``p`` at temperature 1 whatever the request's temperature;
- ``next-row-logits``: verifies draft row ``j`` against the target row ``j + 1`` (a slice one row late).
"""

from __future__ import annotations

import numpy as np

from ...oracle import rng as counter

REJECTION_MUTANTS = (
    "always-accept",
    "ignore-draft-probs",
    "recover-from-p",
    "reuse-acceptance-draw",
    "recovered-id-equals-v",
    "temperature-ignored",
    "next-row-logits",
)
# The requirement each mutant violates, as the statistical check reports it.
MUTANT_REQUIREMENTS = {
    "always-accept": "RS-PROB-5",
    "ignore-draft-probs": "RS-PROB-6",
    "recover-from-p": "RS-PROB-5",
    "reuse-acceptance-draw": "RS-PROB-5",
    "recovered-id-equals-v": "RS-INPUT-1",
    "temperature-ignored": "RS-PROB-5",
    "next-row-logits": "RS-PROB-5",
}


def _softmax(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        z = x - x.max(axis=-1, keepdims=True)
        e = np.where(np.isneginf(x), 0.0, np.exp(z))
        return e / e.sum(axis=-1, keepdims=True)


def stream_keys(seeds, positions, purpose: int) -> np.ndarray:
    """``counter.stream_key`` for every request at once: ``seeds``, ``positions`` ``[N]`` int64 -> keys ``[N]``
    uint64 (values below 2^32)."""
    seed, position = (np.asarray(x).astype(np.int64).view(np.uint64) for x in (seeds, positions))
    low, high = np.uint64(counter.MASK32), np.uint64(32)
    h = counter.mix32((seed & low) ^ np.uint64(0x9E3779B9))
    for word in (seed >> high, position & low, position >> high, np.uint64(purpose)):
        h = counter.mix32(h ^ word)
    return h


def uniforms(seeds, positions, K: int) -> np.ndarray:
    """The acceptance uniforms ``[N, K]`` float64 of the drafts at ``positions + j`` (``counter.uniform``)."""
    columns = [stream_keys(seeds, positions + j, counter.PURPOSE_ACCEPT) for j in range(K)]
    h = counter.mix32(np.stack(columns, axis=1) if columns else np.zeros((len(seeds), 0), dtype=np.uint64))
    return (h >> np.uint64(8)).astype(np.float64) * 2.0**-24


def sample_rows(weights, seeds, positions):
    """One sample per row of ``weights [N, V]`` (unnormalised) by the exponential race, with the noise of the token
    at ``positions [N]`` of requests ``seeds [N]`` (``counter.exponentials``)."""
    keys = stream_keys(seeds, positions, counter.PURPOSE_SAMPLE)
    h = counter.mix32(keys[:, None] ^ np.arange(weights.shape[1], dtype=np.uint64)[None, :])
    x = ((h & np.uint64(0x7FFFFFFF)).astype(np.float64) + 0.5) * 2.0**-32
    noise = np.where((h >> np.uint64(31)) == 1, -np.log1p(-x), -np.log(x))
    return np.argmax(weights / noise, axis=1)


def _inverse_cdf(weights, uniforms):
    cdf = np.cumsum(weights, axis=1)
    cdf = cdf / cdf[:, -1:]
    return np.minimum((cdf < uniforms[:, None]).sum(axis=1), weights.shape[1] - 1)


def mutant_sampler(mutation: str | None):
    """A ``stats.Sampler`` with one deliberate bug (or none)."""
    if mutation is not None and mutation not in REJECTION_MUTANTS:
        raise ValueError(f"mutation must be one of {REJECTION_MUTANTS} or None; got {mutation!r}")

    def sample(target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, positions):
        B = len(num_draft_tokens)
        K = int(num_draft_tokens[0])
        V = target_logits.shape[1]
        seeds = np.asarray(seeds, dtype=np.int64).reshape(B)
        positions = np.zeros(B, dtype=np.int64) if positions is None else np.asarray(positions, dtype=np.int64)
        scale = 1.0 if mutation == "temperature-ignored" else float(temperature[0])
        p = _softmax(target_logits.reshape(B, K + 1, V) / scale)
        if mutation == "next-row-logits":  # row j read from row j + 1, the bonus row from itself
            p = np.concatenate([p[:, 1:], p[:, -1:]], axis=1)
        d = np.asarray(draft_token_ids).reshape(B, K)
        one_hot = np.zeros((B, K, V))
        np.put_along_axis(one_hot, d[:, :, None], 1.0, axis=2)
        if draft_probs is None or mutation == "ignore-draft-probs":
            q = one_hot
        else:
            q = np.asarray(draft_probs).reshape(B, K, V)
        u = uniforms(seeds, positions, K)
        p_d = np.take_along_axis(p[:, :K], d[:, :, None], axis=2)[:, :, 0]
        q_d = np.take_along_axis(q, d[:, :, None], axis=2)[:, :, 0]
        accept = (q_d > 0) & (u * q_d < p_d)
        if mutation == "always-accept":
            accept[:] = True
        accepted = np.where(accept.all(axis=1), K, np.argmin(accept, axis=1) if K else 0)  # K = 0: the bonus row
        rows = np.arange(B)
        out = np.full((B, K + 1), -1, dtype=np.int64)
        for j in range(K):
            out[accepted > j, j] = d[accepted > j, j]
        rejected = accepted < K
        final = np.empty(B, dtype=np.int64)
        bonus_rows = rows[~rejected]
        final[bonus_rows] = sample_rows(p[bonus_rows, K], seeds[bonus_rows], positions[bonus_rows] + K)
        rej = rows[rejected]
        if len(rej):
            a = accepted[rej]
            p_row, q_row = p[rej, a], q[rej, a]
            residual = p_row if mutation == "recover-from-p" else np.maximum(p_row - q_row, 0.0)
            empty = residual.sum(axis=1) <= 0
            residual[empty] = p_row[empty]
            if mutation == "reuse-acceptance-draw":
                final[rej] = _inverse_cdf(residual, u[rej, a])
            else:
                final[rej] = sample_rows(residual, seeds[rej], positions[rej] + a)
            if mutation == "recovered-id-equals-v":
                final[rej] = np.where(final[rej] == V - 1, V, final[rej])
        out[rows, accepted] = final
        return out

    return sample
