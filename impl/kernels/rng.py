"""The counter-based draws (RS-RNG-3) as Triton device functions; see impl/rng.py."""

import triton
import triton.language as tl


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
def exponentials(key, offsets):
    """Exp(1) noise for vocabulary ``offsets`` of the sampling stream ``key``."""
    h = mix32(key ^ offsets.to(tl.uint32))
    x = ((h & 0x7FFFFFFF).to(tl.float32) + 0.5) * 2.3283064365386963e-10
    top = (h >> 31) == 1
    upper = 1.0 - x  # for the top-bit half: -log1p(-x), computed as log(1 - x) * x / (1 - (1 - x))
    log_value = tl.log(tl.where(top, upper, x))  # one logarithm per lane, of the half's argument
    log1p_neg = tl.where(upper == 1.0, -x, log_value * x / (1.0 - upper))
    return tl.where(top, -log1p_neg, -log_value)
