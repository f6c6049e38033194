"""MurmurHash3_x86_32 (Austin Appleby's SMHasher) over whole 32-bit little-endian words, in NumPy.

vLLM's Gumbel noise (``vllm/v1/worker/gpu/sample/gumbel.py``: ``murmur3_hash32``) and SGLang's seeded coins
(``sglang/kernels/ops/sampling/murmur_hash.py``: ``murmur_hash32_kernel``) both hash four words (seed low, seed high,
position, column) as a 16-byte message; only the initial hash differs (vLLM's ``domain``, SGLang's 0). Messages of
whole words need no tail step. SMHasher's published values hold it (tests/unit/test_draw_schemes.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MASK32 = np.uint64(0xFFFFFFFF)
C1 = np.uint64(0xCC9E2D51)
C2 = np.uint64(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & MASK32


def mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    """One block of the body: key word ``k`` into hash ``h`` (uint64 arrays holding 32-bit values)."""
    k = (k * C1) & MASK32
    k = _rotl(k, 15)
    k = (k * C2) & MASK32
    h = _rotl(h ^ k, 13)
    return (h * np.uint64(5) + np.uint64(0xE6546B64)) & MASK32


def fmix32(h: np.ndarray) -> np.ndarray:
    """The finaliser (avalanche) of a 32-bit hash."""
    h = h ^ (h >> np.uint64(16))
    h = (h * np.uint64(0x85EBCA6B)) & MASK32
    h = h ^ (h >> np.uint64(13))
    h = (h * np.uint64(0xC2B2AE35)) & MASK32
    return h ^ (h >> np.uint64(16))


def murmur3_32(words: Sequence, seed=0) -> np.ndarray:
    """MurmurHash3_x86_32 of the message of ``len(words)`` little-endian 32-bit words under ``seed``.

    Each word (and ``seed``) is an int or an array of values below 2^32, broadcast together; the result is uint32 of
    the broadcast shape.
    """
    h = np.asarray(seed, dtype=np.uint64) & MASK32
    for word in words:
        h = mix(h, np.asarray(word, dtype=np.uint64) & MASK32)
    h = h ^ np.uint64(4 * len(words))
    return fmix32(h).astype(np.uint32)
