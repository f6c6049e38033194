"""The counter-based random draws of specs/rejection-sampling.md (RS-RNG-1..3), in NumPy.

Every draw is a pure function of ``(seed, position, purpose, index)``, so a seeded request draws
the same numbers whatever else is in the batch, and any implementation can reproduce them:

* ``mix32`` is the 32-bit "lowbias32" integer finaliser (xor-shift / multiply, arithmetic mod 2^32).
* ``counter_hash`` folds seed (low then high 32 bits), position (low then high), purpose and index
  into one 32-bit word, one ``mix32`` per word.
* ``uniform`` (acceptance tests): ``(h >> 8) * 2^-24`` in ``[0, 1)``, exact in float32.
* ``exponential`` (sampling noise): with ``x = ((h & 0x7fffffff) + 0.5) * 2^-32`` in ``(0, 1/2)``,
  ``-log(x)`` when the top bit of ``h`` is 0 and ``-log1p(-x)`` when it is 1; the two halves keep
  full relative precision near both ends of the unit interval.
"""

from __future__ import annotations

import numpy as np

MASK32 = 0xFFFFFFFF
PURPOSE_ACCEPT = 1
PURPOSE_SAMPLE = 2


def mix32(x):
    """lowbias32 on uint64 arrays or ints holding values < 2^32."""
    x = np.asarray(x, dtype=np.uint64)
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & np.uint64(MASK32)
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & np.uint64(MASK32)
    x = x ^ (x >> np.uint64(16))
    return x


def stream_key(seed: int, position: int, purpose: int) -> int:
    """The 32-bit key of one (seed, position, purpose) stream."""
    seed &= (1 << 64) - 1
    position &= (1 << 64) - 1
    h = mix32(np.uint64((seed & MASK32) ^ 0x9E3779B9))
    h = mix32(h ^ np.uint64(seed >> 32))
    h = mix32(h ^ np.uint64(position & MASK32))
    h = mix32(h ^ np.uint64(position >> 32))
    h = mix32(h ^ np.uint64(purpose))
    return int(h)


def counter_hash(seed: int, position: int, purpose: int, index) -> np.ndarray:
    key = np.uint64(stream_key(seed, position, purpose))
    return mix32(key ^ np.asarray(index, dtype=np.uint64))


def uniform(seed: int, position: int) -> float:
    """The acceptance uniform of the draft at ``position``, in [0, 1)."""
    h = int(counter_hash(seed, position, PURPOSE_ACCEPT, 0))
    return (h >> 8) * 2.0**-24


def exponentials(seed: int, position: int, vocab_size: int, purpose: int = PURPOSE_SAMPLE) -> np.ndarray:
    """Exp(1) noise ``[vocab_size]`` float64 for sampling the token at ``position``. Another ``purpose``
    than ``PURPOSE_SAMPLE`` gives what an implementation that confuses the streams draws (RS-RNG-2):
    ``PURPOSE_ACCEPT`` reuses the acceptance draw's hash as the noise of token 0."""
    h = counter_hash(seed, position, purpose, np.arange(vocab_size))
    x = ((h & np.uint64(0x7FFFFFFF)).astype(np.float64) + 0.5) * 2.0**-32
    top = (h >> np.uint64(31)) == 1
    return np.where(top, -np.log1p(-x), -np.log(x))
