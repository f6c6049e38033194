"""Deliberately broken samplers: each reproduces a bug class seen in a real engine.

``mutant_sampler(None)`` is a correct, vectorised NumPy rejection sampler (one K for the whole
batch, as in distribution checks); every other name breaks exactly one rule:

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


def _sample_rows(weights, rng):
    """One sample per row of ``weights [N, V]`` (unnormalised) by the exponential race."""
    noise = rng.exponential(size=weights.shape)
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
        rng = np.random.default_rng(int(seeds[0]) % (2**63))
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
        u = rng.random((B, K))
        p_d = np.take_along_axis(p[:, :K], d[:, :, None], axis=2)[:, :, 0]
        q_d = np.take_along_axis(q, d[:, :, None], axis=2)[:, :, 0]
        accept = (q_d > 0) & (u * q_d < p_d)
        if mutation == "always-accept":
            accept[:] = True
        accepted = np.where(accept.all(axis=1), K, np.argmin(accept, axis=1))
        rows = np.arange(B)
        out = np.full((B, K + 1), -1, dtype=np.int64)
        for j in range(K):
            out[accepted > j, j] = d[accepted > j, j]
        rejected = accepted < K
        final = np.empty(B, dtype=np.int64)
        bonus_rows = rows[~rejected]
        final[bonus_rows] = _sample_rows(p[bonus_rows, K], rng)
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
                final[rej] = _sample_rows(residual, rng)
            if mutation == "recovered-id-equals-v":
                final[rej] = np.where(final[rej] == V - 1, V, final[rej])
        out[rows, accepted] = final
        return out

    return sample
