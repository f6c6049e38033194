"""The candidate draw functions of the sampled bonus race (issue 38, item 5) as Triton kernels of one skeleton, so that
scripts/profile-draws.py can time them like against like. An experiment, kept out of ``impl/``.

Every kernel races the rows of ``logits [N, V]`` (float32 or bfloat16): one program per (row, split of ``split`` ids),
a per-lane running best over blocks of ``BLOCK`` ids, reduced across lanes once per program; it writes the split's best
score and the lowest id attaining it (``best [N, S]`` float32, ``arg [N, S]`` int32, ``S = cdiv(V, split)``). The
read-once floor (``specconform.harness.read_floor``) also writes one partial per split, so time over floor is what the
draws cost per element; ``winners`` reduces the splits outside the timed kernel. Only the per-element score differs:

- ``reference-0.2``: ``l log2(e) - log2(e_x)`` with the spec 0.2 noise (``impl/kernels/rng.py``: ``race_noise``,
  imported, not copied): one lowbias32 of ``key ^ x``, a reciprocal, a series, a log2 and a select, then the race's
  own log2;
- ``vllm-mrv2``: ``l + g_x``, MRV2's Gumbel noise written from vLLM 0.33's ``vllm/v1/worker/gpu/sample/gumbel.py``
  (``murmur3_hash32``, ``murmur3_uniform32``, ``_log1p_neg_stable``, ``gumbel_noised_argmax``'s float32 path):
  MurmurHash3 of (seed low, seed high, position low, x), its request-wide prefix mixed once per program as vLLM keeps
  it scalar, the uniform from two 16-bit halves, ``-log(-log1p(-u))`` with ``tl.log`` (Triton's, as vLLM calls it);
  the logits times ``1 / T`` as in every candidate, where vLLM divides by ``T``;
- ``philox4``: Philox4x32-10 (``tl.philox``) keyed by the seed, counter ``(c, PURPOSE_SAMPLE, position low,
  position high)``; id ``x = 4Gb + kG + i`` (``G = PHILOX_GROUP``, ``0 <= k < 4``, ``0 <= i < G``) takes word ``k`` of
  counter ``c = Gb + i``: one call gives four ids' bits, all in the thread that made them;
  ``u = ((bits >> 9) + 1/2) 2^-23``, the noise ``-log2(u)``, then the race's log2;
- ``cross-multiply``: the spec 0.2 noise ``e_x`` kept beside ``w_x = exp(l - m)`` (``m`` the row's largest logit,
  an input: a race run after the row pass knows it), compared by ``w_i e_b > w_b e_i`` (``tl.reduce`` with a combine
  function) instead of a logarithm of ``e``; ``w`` costs an exponential per element here, which a residual race
  (``w = max(p - q, 0)``) has paid already;
- ``lean-hash``: the spec 0.2 hash (one lowbias32 of ``key ^ x``) with ``u`` as for ``philox4`` and the noise
  ``-lg2.approx(u)`` alone, then the race's log2: the cheapest plausible draw, the lower bound;
- ``no-noise``: the argmax of the logits (greedy), the skeleton's own cost.

Scores of ``vllm-mrv2`` and ``cross-multiply`` are in natural units (``scale = 1 / T``), the others in units of
ln 2 (``scale = log2(e) / T``); a race's winner is the same in either. scripts/draw_definitions.py defines each
candidate's winner in NumPy; tests/unit/test_profile_draws.py holds the kernels to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from specconform.impl.kernels.rng import hardware_exp, hardware_log2, mix32, race_noise, stream_key

NO_ARG = tl.constexpr(2147483647)  # the id of a lane that has seen only -inf
PURPOSE_SAMPLE = tl.constexpr(2)  # the sampling stream's purpose word (RS-RNG-3), also philox4's counter word 1
# 2^-23: u = ((bits >> 9) + 1/2) 2^-23 is exact in float32 and lies in (0, 1); with one more bit the largest value
# would round to 1, whose noise 0 wins every race
UNIFORM_23_SCALE = tl.constexpr(1.1920928955078125e-07)
PHILOX_WORDS = tl.constexpr(4)  # the words of one Philox4x32 block: the ids of one counter
PHILOX_GROUP = tl.constexpr(256)  # philox4: ids 4Gb + kG + i take word k of counter Gb + i (G this, 0 <= i < G)
MURMUR3_C1 = tl.constexpr(0xCC9E2D51)
MURMUR3_C2 = tl.constexpr(0x1B873593)
MURMUR3_MESSAGE_BYTES = tl.constexpr(16)  # four 32-bit words: seed low, seed high, position low, token id
HALF16_SCALE = tl.constexpr(1.52587890625e-05)  # 2^-16: murmur3_uniform32's high half
LOW16_SCALE = tl.constexpr(2.3283064365386963e-10)  # 2^-32: its low half
LOG1P_SERIES_BELOW = tl.constexpr(0.25)  # _log1p_neg_stable: the series below this u, log(1 - u) above
LOG1P_FLOOR = tl.constexpr(5.960464477539063e-08)  # _log1p_neg_stable: 1 - u clamped to at least this


@triton.jit
def split_bounds(vocab, split):
    """(row as int64, first id, end id) of this program's split."""
    row = tl.program_id(0).to(tl.int64)
    lo = tl.program_id(1) * split
    return row, lo, tl.minimum(lo + split, vocab)


@triton.jit
def lane_update(score, offsets, best, best_arg):
    """Per-lane running max and its first id (ids grow along a lane); any shape."""
    better = score > best
    return tl.where(better, score, best), tl.where(better, offsets, best_arg)


@triton.jit
def store_split(best, best_arg, best_ptr, arg_ptr):
    """Store the lanes' ``[BLOCK]`` max and lowest id attaining it at this program's entry of ``best [N, S]`` float32
    and ``arg [N, S]`` int32."""
    top = tl.max(best, axis=0)
    arg = tl.min(tl.where(best == top, best_arg, NO_ARG), axis=0)
    entry = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    tl.store(best_ptr + entry, top)
    tl.store(arg_ptr + entry, arg)


@triton.jit
def uniform23(bits):
    """uint32 ``bits`` -> float32 ``((bits >> 9) + 1/2) 2^-23`` in (0, 1), exact."""
    return ((bits >> 9).to(tl.float32) + 0.5) * UNIFORM_23_SCALE


@triton.jit
def reference_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``reference-0.2``. logits [N, V] float32/bfloat16; seeds, positions [N] int64; shift [N] float32 (unused);
    best [N, S] float32; arg [N, S] int32."""
    row, lo, hi = split_bounds(vocab, split)
    key = stream_key(tl.load(seeds_ptr + row), tl.load(positions_ptr + row), PURPOSE_SAMPLE)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
        score = x * scale - hardware_log2(race_noise(key, offsets))
        best, best_arg = lane_update(score, offsets, best, best_arg)
    store_split(best, best_arg, best_ptr, arg_ptr)


@triton.jit
def murmur3_rotl32(value, shift: tl.constexpr):
    """uint32 rotate left (gumbel.py: ``_murmur3_rotl32``)."""
    return (value << shift) | (value >> (32 - shift))


@triton.jit
def murmur3_mix(h, key):
    """One MurmurHash3 block: uint32 word ``key`` into hash ``h`` (gumbel.py: ``_murmur3_mix``)."""
    key *= MURMUR3_C1
    key = murmur3_rotl32(key, 15)
    key *= MURMUR3_C2
    h ^= key
    h = murmur3_rotl32(h, 13)
    return h * 5 + 0xE6546B64


@triton.jit
def murmur3_fmix32(h):
    """MurmurHash3's finaliser on uint32 (gumbel.py: ``_murmur3_fmix32``)."""
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    return h ^ (h >> 16)


@triton.jit
def murmur3_prefix(seed, position):
    """The request-wide uint32 prefix of ``murmur3_hash32`` (domain 0): seed low, seed high, position low mixed
    (int64 scalars)."""
    h = (seed ^ seed).to(tl.uint32)
    h = murmur3_mix(h, (seed & 0xFFFFFFFF).to(tl.uint32))
    h = murmur3_mix(h, ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32))
    return murmur3_mix(h, (position & 0xFFFFFFFF).to(tl.uint32))


@triton.jit
def gumbel_noise(prefix, offsets):
    """MRV2's float32 Gumbel noise of token ids ``offsets`` (gumbel.py: ``murmur3_uniform32``, then
    ``-log(-_log1p_neg_stable(u))``), float32 of ``offsets``' shape."""
    h = murmur3_fmix32(murmur3_mix(prefix, offsets.to(tl.uint32)) ^ MURMUR3_MESSAGE_BYTES)
    hi16 = (h >> 16).to(tl.int32)
    lo16 = (h & 0xFFFF).to(tl.int32)
    u = hi16.to(tl.float32) * HALF16_SCALE + (lo16.to(tl.float32) + 0.5) * LOW16_SCALE
    polynomial = 1.0 / 8.0
    polynomial = 1.0 / 7.0 + u * polynomial
    polynomial = 1.0 / 6.0 + u * polynomial
    polynomial = 1.0 / 5.0 + u * polynomial
    polynomial = 1.0 / 4.0 + u * polynomial
    polynomial = 1.0 / 3.0 + u * polynomial
    polynomial = 1.0 / 2.0 + u * polynomial
    polynomial = 1.0 + u * polynomial
    direct = tl.log(tl.maximum(1.0 - u, LOG1P_FLOOR))
    log1p_neg = tl.where(u < LOG1P_SERIES_BELOW, -u * polynomial, direct)
    return -tl.log(-log1p_neg)


@triton.jit
def vllm_mrv2_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``vllm-mrv2``. logits [N, V] float32/bfloat16; seeds, positions [N] int64; shift [N] float32 (unused);
    best [N, S] float32; arg [N, S] int32."""
    row, lo, hi = split_bounds(vocab, split)
    prefix = murmur3_prefix(tl.load(seeds_ptr + row), tl.load(positions_ptr + row))
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
        score = x * scale + gumbel_noise(prefix, offsets)
        best, best_arg = lane_update(score, offsets, best, best_arg)
    store_split(best, best_arg, best_ptr, arg_ptr)


@triton.jit
def philox4_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``philox4``: one Philox call per ``PHILOX_GROUP`` lanes gives the bits of four sub-blocks of ``PHILOX_GROUP``
    ids, each loaded in the counters' own layout, so that no word moves between threads. logits [N, V]
    float32/bfloat16; seeds, positions [N] int64; shift [N] float32 (unused); best [N, S] float32; arg [N, S]
    int32. ``BLOCK`` is a multiple of ``PHILOX_WORDS * PHILOX_GROUP``."""
    row, lo, hi = split_bounds(vocab, split)
    seed = tl.load(seeds_ptr + row)
    position = tl.load(positions_ptr + row)
    lanes = tl.arange(0, PHILOX_GROUP)  # [PHILOX_GROUP]
    zeros = lanes.to(tl.uint32) * 0
    purpose = zeros + PURPOSE_SAMPLE
    position_lo = zeros + (position & 0xFFFFFFFF).to(tl.uint32)
    position_hi = zeros + ((position >> 32) & 0xFFFFFFFF).to(tl.uint32)
    best = tl.full([PHILOX_GROUP], float("-inf"), tl.float32)
    best_arg = tl.full([PHILOX_GROUP], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        for group in tl.static_range(BLOCK // (PHILOX_WORDS * PHILOX_GROUP)):
            first = start + group * PHILOX_WORDS * PHILOX_GROUP
            counters = (lanes + first // PHILOX_WORDS).to(tl.uint32)
            words = tl.philox(seed, counters, purpose, position_lo, position_hi)
            for word in tl.static_range(PHILOX_WORDS):
                offsets = first + word * PHILOX_GROUP + lanes
                x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                score = x * scale - hardware_log2(-hardware_log2(uniform23(words[word])))
                best, best_arg = lane_update(score, offsets, best, best_arg)
    store_split(best, best_arg, best_ptr, arg_ptr)


@triton.jit
def cross_combine(w1, e1, arg1, w2, e2, arg2):
    """The better of two (weight, noise, id) entries: ``w2 / e2 > w1 / e1`` as ``w2 e1 > w1 e2``, ties to the lower
    id."""
    lhs = w2 * e1
    rhs = w1 * e2
    take = (lhs > rhs) | ((lhs == rhs) & (arg2 < arg1))
    return tl.where(take, w2, w1), tl.where(take, e2, e1), tl.where(take, arg2, arg1)


@triton.jit
def cross_multiply_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``cross-multiply``. logits [N, V] float32/bfloat16; seeds, positions [N] int64; shift [N] float32 (each
    row's largest ``l * scale``); best [N, S] float32 (the split's ``log2(w / e)``, for reducing the splits);
    arg [N, S] int32."""
    row, lo, hi = split_bounds(vocab, split)
    key = stream_key(tl.load(seeds_ptr + row), tl.load(positions_ptr + row), PURPOSE_SAMPLE)
    shift = tl.load(shift_ptr + row)
    best_w = tl.zeros([BLOCK], dtype=tl.float32)  # weight 0: never better than anything
    best_e = tl.full([BLOCK], 1.0, tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
        w = hardware_exp(x * scale - shift)
        e = race_noise(key, offsets)
        better = w * best_e > best_w * e
        best_w = tl.where(better, w, best_w)
        best_e = tl.where(better, e, best_e)
        best_arg = tl.where(better, offsets, best_arg)
    w, e, arg = tl.reduce((best_w, best_e, best_arg), 0, cross_combine)
    entry = tl.program_id(0) * tl.num_programs(1) + tl.program_id(1)
    tl.store(best_ptr + entry, tl.log2(w) - tl.log2(e))
    tl.store(arg_ptr + entry, arg)


@triton.jit
def lean_hash_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``lean-hash``. logits [N, V] float32/bfloat16; seeds, positions [N] int64; shift [N] float32 (unused);
    best [N, S] float32; arg [N, S] int32."""
    row, lo, hi = split_bounds(vocab, split)
    key = stream_key(tl.load(seeds_ptr + row), tl.load(positions_ptr + row), PURPOSE_SAMPLE)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
        u = uniform23(mix32(key ^ offsets.to(tl.uint32)))
        score = x * scale - hardware_log2(-hardware_log2(u))
        best, best_arg = lane_update(score, offsets, best, best_arg)
    store_split(best, best_arg, best_ptr, arg_ptr)


@triton.jit
def no_noise_kernel(
    logits_ptr, seeds_ptr, positions_ptr, shift_ptr, best_ptr, arg_ptr, vocab, split, scale, BLOCK: tl.constexpr
):
    """``no-noise``: the argmax of the logits. logits [N, V] float32/bfloat16; seeds, positions, shift unused;
    best [N, S] float32; arg [N, S] int32."""
    row, lo, hi = split_bounds(vocab, split)
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(logits_ptr + row * vocab + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
        best, best_arg = lane_update(x, offsets, best, best_arg)
    store_split(best, best_arg, best_ptr, arg_ptr)


@dataclass(frozen=True)
class Candidate:
    kernel: object
    natural_units: bool  # scores in units of 1 (scale 1 / T), else of ln 2 (scale log2(e) / T)
    needs_shift: bool  # reads each row's largest scaled logit
    block_multiple: int = 1  # its BLOCK must be a multiple of this


CANDIDATES = {
    "reference-0.2": Candidate(reference_kernel, natural_units=False, needs_shift=False),
    "vllm-mrv2": Candidate(vllm_mrv2_kernel, natural_units=True, needs_shift=False),
    "philox4": Candidate(
        philox4_kernel, natural_units=False, needs_shift=False, block_multiple=PHILOX_WORDS.value * PHILOX_GROUP.value
    ),
    "cross-multiply": Candidate(cross_multiply_kernel, natural_units=True, needs_shift=True),
    "lean-hash": Candidate(lean_hash_kernel, natural_units=False, needs_shift=False),
    "no-noise": Candidate(no_noise_kernel, natural_units=False, needs_shift=False),
}


@dataclass(frozen=True)
class Launch:
    """One launch shape: ids per program (a multiple of ``block``), ids per loop step, warps."""

    split: int
    block: int
    warps: int


def candidate(name: str) -> Candidate:
    if name not in CANDIDATES:
        raise ValueError(f"candidate must be one of {', '.join(CANDIDATES)}; got {name!r}")
    return CANDIDATES[name]


def race_launcher(name: str, logits: torch.Tensor, seeds: torch.Tensor, positions: torch.Tensor, launch: Launch):
    """(a function launching candidate ``name``'s kernel once, its outputs ``best [N, S]`` float32 and ``arg [N, S]``
    int32) for ``logits [N, V]`` (float32 or bfloat16, contiguous) and ``seeds``, ``positions [N]`` int64, at
    temperature 1. The row shift ``cross-multiply`` reads is computed here, outside the launch."""
    chosen = candidate(name)
    if launch.block % chosen.block_multiple:
        raise ValueError(f"launch.block of {name} must be a multiple of {chosen.block_multiple}; got {launch.block}")
    if launch.split % launch.block:
        raise ValueError(f"launch.split must be a multiple of launch.block ({launch.block}); got {launch.split}")
    rows, vocab = logits.shape
    scale = 1.0 if chosen.natural_units else 1.0 / math.log(2.0)
    shift = (logits.float().amax(dim=1) * scale).contiguous() if chosen.needs_shift else seeds.new_zeros(1).float()
    num_splits = triton.cdiv(vocab, launch.split)
    best = torch.empty(rows, num_splits, dtype=torch.float32, device=logits.device)
    arg = torch.empty(rows, num_splits, dtype=torch.int32, device=logits.device)

    def run():
        chosen.kernel[(rows, num_splits)](
            logits, seeds, positions, shift, best, arg, vocab, launch.split, scale,
            BLOCK=launch.block, num_warps=launch.warps,
        )  # fmt: skip

    return run, best, arg


def winners(best: torch.Tensor, arg: torch.Tensor) -> torch.Tensor:
    """``[N]`` int64 winners from the splits' ``best [N, S]`` and ``arg [N, S]`` (the first split of the best score:
    splits are in id order)."""
    split = torch.argmax(best, dim=1, keepdim=True)
    return arg.gather(1, split).squeeze(1).to(torch.int64)


def race(name: str, logits: torch.Tensor, seeds: torch.Tensor, positions: torch.Tensor, launch: Launch) -> torch.Tensor:
    """Candidate ``name``'s ``[N]`` int64 winners of ``logits [N, V]`` (``race_launcher``'s inputs)."""
    run, best, arg = race_launcher(name, logits, seeds, positions, launch)
    run()
    return winners(best, arg)
