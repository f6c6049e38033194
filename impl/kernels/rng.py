"""The counter-based draws (RS-RNG-3) as Triton device functions; see impl/rng.py."""

import os

import triton
import triton.language as tl

LOG2_E = tl.constexpr(1.4426950408889634)
TWO_LOG2_E = tl.constexpr(2.8853900817779268)
HARDWARE_MATH = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") != "1")  # the interpreter runs no PTX


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
    """float32 log2 of a positive normal ``x`` (the draws' values are at least 2**-33): on a GPU the
    hardware approximation with subnormals flushed, one instruction (absolute error at most 2**-22 in
    [0.5, 2], 2 ulp elsewhere; libdevice's costs some 25 instructions per element, and the approximation
    without the flush four more for subnormal inputs), in the interpreter numpy's."""
    if HARDWARE_MATH:
        return tl.inline_asm_elementwise(
            "lg2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1
        )
    return tl.log2(x)


@triton.jit
def hardware_reciprocal(x):
    """float32 ``1 / x`` of a positive normal ``x``: on a GPU the hardware approximation with subnormals
    flushed, one instruction (at most 1 ulp), where a division costs a range check besides; in the
    interpreter numpy's."""
    if HARDWARE_MATH:
        return tl.inline_asm_elementwise(
            "rcp.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1
        )
    return 1.0 / x


@triton.jit
def hardware_exp(x):
    """float32 ``exp(x)`` as ``2**(x log2 e)``: on a GPU the hardware approximation with subnormal results
    flushed to 0 (2 ulp; a flushed term is below 2**-126 of the largest), two instructions, where the
    approximation without the flush costs a range check besides; in the interpreter numpy's."""
    if HARDWARE_MATH:
        return tl.inline_asm_elementwise(
            "ex2.approx.ftz.f32 $0, $1;", "=f,f", [x * LOG2_E], dtype=tl.float32, is_pure=True, pack=1
        )
    return tl.exp(x)


@triton.jit
def race_noise(key, offsets):
    """The Exp(1) noise ``e`` of vocabulary ``offsets`` of the sampling stream ``key`` times ``log2(e)``
    (``specconform.impl.rng.exponentials`` within 1e-6, relative, times that constant), in some 30 instructions per
    element: a race's winner, ``argmax(w / e)`` or ``argmax(log w - log e)``, is the same for the noise
    times any one positive constant, and this one spares a multiply. With ``x`` uniform in ``(0, 1/2)``,
    the bottom-bit half is ``-log2(x)`` (one hardware log2) and the top-bit half ``-log1p(-x) * log2(e) =
    2 atanh(s) * log2(e)``, ``s = x / (2 - x)`` in ``(0, 1/3)``, by its series to ``s**13`` (truncation
    below 2e-9, relative)."""
    h = mix32(key ^ offsets.to(tl.uint32))
    x = ((h & 0x7FFFFFFF).to(tl.float32) + 0.5) * 2.3283064365386963e-10
    s = x * hardware_reciprocal(2.0 - x)
    s2 = s * s
    # the series of 2 atanh(s) / (s ln 2): coefficients 2 log2(e) / (2n + 1)
    series = TWO_LOG2_E / 13.0
    series = series * s2 + TWO_LOG2_E / 11.0
    series = series * s2 + TWO_LOG2_E / 9.0
    series = series * s2 + TWO_LOG2_E / 7.0
    series = series * s2 + TWO_LOG2_E / 5.0
    series = series * s2 + TWO_LOG2_E / 3.0
    series = series * s2 + TWO_LOG2_E
    return tl.where((h >> 31) == 1, s * series, -hardware_log2(x))
