"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), in NumPy.

The counter-based generator behind Triton's ``tl.rand`` (``triton/language/random.py``: ``philox_impl``) and
curand's ``curand_Philox4x32_10``. Ten rounds; each round multiplies counter words 0 and 2 by ``0xD2511F53`` and
``0xCD9E8D57`` into 64-bit products and mixes their halves with words 1 and 3 and the key, and the key is bumped by the
Weyl constants ``0x9E3779B9`` and ``0xBB67AE85`` between rounds. The Random123 distribution's known-answer vectors
hold it (tests/unit/test_draw_schemes.py).
"""

from __future__ import annotations

import numpy as np

MASK32 = np.uint64(0xFFFFFFFF)
ROUND_A = np.uint64(0xD2511F53)
ROUND_B = np.uint64(0xCD9E8D57)
KEY_A = np.uint64(0x9E3779B9)
KEY_B = np.uint64(0xBB67AE85)
ROUNDS = 10


def _words(x) -> np.ndarray:
    """A 32-bit word array as uint64 (room for the 64-bit products)."""
    return np.asarray(x, dtype=np.uint64) & MASK32


def philox4x32(counter, key, rounds: int = ROUNDS) -> tuple[np.ndarray, ...]:
    """Philox4x32 of ``counter = (c0, c1, c2, c3)`` under ``key = (k0, k1)``: four uint32 arrays.

    Each word may be an int or an array (broadcast together); the result arrays have the broadcast shape, dtype
    uint32.
    """
    c0, c1, c2, c3 = np.broadcast_arrays(*(_words(c) for c in counter), _words(key[0]), _words(key[1]))[:4]
    k0, k1 = (np.broadcast_to(_words(k), c0.shape) for k in key)
    for r in range(rounds):
        if r:
            k0 = (k0 + KEY_A) & MASK32
            k1 = (k1 + KEY_B) & MASK32
        p0 = ROUND_A * c0  # < 2^64: both factors are below 2^32
        p2 = ROUND_B * c2
        c0, c1, c2, c3 = (p2 >> np.uint64(32)) ^ c1 ^ k0, p2 & MASK32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK32
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))
