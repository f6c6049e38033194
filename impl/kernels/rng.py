"""The counter-based draws (RS-RNG-3) as Triton device functions; see impl/rng.py."""

import os

import triton
import triton.language as tl
from triton.language.extra import libdevice

LN_2 = tl.constexpr(0.6931471805599453)
HARDWARE_LOG2 = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") != "1")  # the interpreter has no libdevice


@triton.jit
def mix32(x):
    """lowbias32 on uint32 values (wrapping arithmetic)."""
    x = x ^ (x >> 16)
    x = x * 0x7FEB352D
    x = x ^ (x >> 15)
    x = x * 0x846CA68B
    return x ^ (x >> 16)


@triton.jit
def stream_key(seed, position, purpose: tl.constexpr):
    """uint32 key of the stream (seed: int64, position: int64)."""
    s = seed.to(tl.uint64)
    p = position.to(tl.uint64)
    h = mix32((s & 0xFFFFFFFF).to(tl.uint32) ^ 0x9E3779B9)
    h = mix32(h ^ (s >> 32).to(tl.uint32))
    h = mix32(h ^ (p & 0xFFFFFFFF).to(tl.uint32))
    h = mix32(h ^ (p >> 32).to(tl.uint32))
    return mix32(h ^ purpose)


@triton.jit
def uniform(seed, position):
    """The acceptance uniform in [0, 1), float32."""
    h = mix32(stream_key(seed, position, 1))
    return (h >> 8).to(tl.float32) * 5.9604644775390625e-08


@triton.jit
def hardware_log2(x):
    """float32 log2: on a GPU the hardware approximation (absolute error at most 2**-22 in [0.5, 2], 2 ulp
    elsewhere; libdevice's costs some 25 instructions per element), in the interpreter numpy's."""
    if HARDWARE_LOG2:
        return libdevice.fast_log2f(x)
    return tl.log2(x)


@triton.jit
def exponentials(key, offsets):
    """Exp(1) noise for vocabulary ``offsets`` of the sampling stream ``key``: ``impl.rng.exponentials``
    within 1e-6 (relative), in some 30 instructions per element. With ``x`` uniform in ``(0, 1/2)``,
    the bottom-bit half is ``-log(x)`` (one hardware log2) and the top-bit half ``-log1p(-x) = 2 atanh(s)``,
    ``s = x / (2 - x)`` in ``(0, 1/3)``, by its series to ``s**13`` (truncation below 2e-9, relative)."""
    h = mix32(key ^ offsets.to(tl.uint32))
    x = ((h & 0x7FFFFFFF).to(tl.float32) + 0.5) * 2.3283064365386963e-10
    s = x / (2.0 - x)
    s2 = s * s
    series = 1.0 / 13.0
    series = series * s2 + 1.0 / 11.0
    series = series * s2 + 1.0 / 9.0
    series = series * s2 + 1.0 / 7.0
    series = series * s2 + 1.0 / 5.0
    series = series * s2 + 1.0 / 3.0
    series = series * s2 + 1.0
    return tl.where((h >> 31) == 1, 2.0 * s * series, -hardware_log2(x) * LN_2)
