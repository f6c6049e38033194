"""The candidate draw functions of scripts/draw_candidates.py defined in NumPy (float64), from the oracle's draw
schemes (``specconform.harness.oracle``), sharing no code with the kernels: each candidate's race scores of one row,
whose argmax is the token the candidate samples. The kernels compute in float32 with hardware approximations, so a
kernel's winner is held to this one only where the best score leads the runner-up by more than a tolerance
(``winner``).
"""

from __future__ import annotations

import numpy as np

from specconform.harness.oracle import rng
from specconform.harness.oracle.draws import philox, vllm_mrv2

PHILOX_WORDS = 4  # ids per Philox4x32 counter
PHILOX_GROUP = 256  # counters per group of PHILOX_WORDS sub-blocks
UNIFORM_23_SCALE = 2.0**-23


def uniform23(bits: np.ndarray) -> np.ndarray:
    """``((bits >> 9) + 1/2) 2^-23`` in (0, 1), float64 of uint32 ``bits`` (exact, and exact in float32 too)."""
    return ((np.asarray(bits, dtype=np.uint64) >> np.uint64(9)).astype(np.float64) + 0.5) * UNIFORM_23_SCALE


def philox4_bits(seed: int, position: int, vocab: int) -> np.ndarray:
    """``[vocab]`` uint32: id ``x = 4Gb + kG + i`` (``G = PHILOX_GROUP``, ``0 <= k < 4``, ``0 <= i < G``) takes word
    ``k`` of Philox4x32-10 under key (seed low, seed high) at counter ``(Gb + i, PURPOSE_SAMPLE, position low, position
    high)``."""
    ids = np.arange(vocab, dtype=np.uint64)
    group, within = np.divmod(ids, np.uint64(PHILOX_WORDS * PHILOX_GROUP))
    word, lane = np.divmod(within, np.uint64(PHILOX_GROUP))
    seed_bits = seed & (2**64 - 1)
    position_bits = position & (2**64 - 1)
    words = philox.philox4x32(
        (group * np.uint64(PHILOX_GROUP) + lane, rng.PURPOSE_SAMPLE, position_bits & 0xFFFFFFFF, position_bits >> 32),
        (seed_bits & 0xFFFFFFFF, seed_bits >> 32),
    )
    return np.choose(word.astype(np.int64), words)


def exponential_race(logits: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``l - log(e)``: the exponential race's scores of ``logits [V]`` with Exp(1) noise ``e [V]`` (float64)."""
    return logits - np.log(noise)


def scores(name: str, logits: np.ndarray, seed: int, position: int) -> np.ndarray:
    """Candidate ``name``'s race scores ``[V]`` float64 of one row of ``logits [V]`` (float64, temperature 1) for the
    request ``seed`` at ``position``; -inf logits score -inf."""
    logits = np.asarray(logits, dtype=np.float64)
    vocab = logits.shape[-1]
    if name in ("reference-0.2", "cross-multiply"):  # cross-multiply races the same noise, compared otherwise
        return exponential_race(logits, rng.exponentials(seed, position, vocab))
    if name == "vllm-mrv2":
        noise = vllm_mrv2.gumbel_noise(seed, position, np.arange(vocab))
        return np.where(np.isneginf(logits), -np.inf, logits + noise)
    if name == "philox4":
        return exponential_race(logits, -np.log(uniform23(philox4_bits(seed, position, vocab))))
    if name == "lean-hash":
        bits = rng.counter_hash(seed, position, rng.PURPOSE_SAMPLE, np.arange(vocab))
        return exponential_race(logits, -np.log(uniform23(bits)))
    if name == "no-noise":
        return logits
    raise ValueError(f"candidate must be one of the draw candidates; got {name!r}")


def winner(name: str, logits: np.ndarray, seed: int, position: int) -> tuple[int, float]:
    """(candidate ``name``'s winner of the row, its lead over the runner-up relative to ``max(1, |best|)``)."""
    return vllm_mrv2.argmax_with_gap(scores(name, logits, seed, position))
