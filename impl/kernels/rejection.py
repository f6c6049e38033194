"""Rejection-sampling kernels (specs/rejection-sampling.md, specs/accepted-tokens.md).

Two launches, each parallel over the vocabulary, so that one request (B = 1) and many (B = 1024)
both keep the memory system busy, and an eager call costs two kernel launches:

1. ``row_pass_kernel`` (grid: request × row × vocabulary split) reads every row a request owns once:
   for a draft row of a sampled request the split's max and sum of ``exp(l / T - max)``; for a draft
   row of a greedy request the split's max and argmax; for the bonus row of a sampled request the
   split's winner of the exponential race ``argmax(l / T - log e)`` (it needs no normaliser). Forced
   rows, greedy bonus rows and rows past ``K_i`` are not read.
2. ``verify_kernel`` (grid: request × vocabulary split): every program of a request verifies its
   drafts in order from the statistics (one load of ``l[d]`` and ``q[d]`` per draft) and stops at the
   first rejection; split 0 writes the accepted drafts, the final token when it is already known
   (greedy, forced, a sampled request's bonus token), the padding and ``num_emitted``. Two cases read
   one row more: for a sampled request with a rejected draft each split runs the race
   ``argmax(max(p - q, 0) / e)`` (``p / e`` as fallback) over its part of the rejected row and of its
   ``q`` row; for a greedy request that accepted every draft, the argmax of its bonus row. The last
   split to finish (an atomic counter per request) reduces the splits and writes the token.

Bytes read: every draft row and every sampled bonus row once; a greedy bonus row only where reached;
for a sampled rejection that row and its ``q`` row once more. Inner
loops keep per-lane running maxima, sums and arguments and reduce across lanes once per program, so
that no barrier sits inside a loop over the vocabulary.
"""

import triton
import triton.language as tl

from .layout import first_row
from .rng import exponentials, stream_key, uniform

NO_ARG = tl.constexpr(2147483647)  # the argument of a lane that has seen only -inf
RACE_NONE = tl.constexpr(0)  # the final token is known after the walk
RACE_RESIDUAL = tl.constexpr(1)  # a sampled request's rejected row: norm(max(p - q, 0))
RACE_GREEDY_BONUS = tl.constexpr(2)  # a greedy request's bonus row: its argmax


@triton.jit
def _lane_argmax_update(score, offsets, best, best_arg):
    """Per-lane running max and its first (lowest) id: vocabulary offsets grow along a lane."""
    better = score > best
    return tl.where(better, score, best), tl.where(better, offsets, best_arg)


@triton.jit
def _reduce_argmax(best, best_arg):
    """(max, lowest id attaining it) over lanes."""
    top = tl.max(best, axis=0)
    return top, tl.min(tl.where(best == top, best_arg, NO_ARG), axis=0)


@triton.jit
def row_pass_kernel(
    logits_ptr,
    num_draft_ptr,
    temperature_ptr,
    seed_ptr,
    position_ptr,
    forced_ptr,
    floats_ptr,
    ints_ptr,
    vocab_size,
    split_size,
    width,
    num_splits,
    HAS_FORCED: tl.constexpr,
    BLOCK: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
):
    """Statistics ``[B, width, num_splits]`` (float32 max and sum, int32 argument) of every row;
    zeroes the counters for ``verify_kernel``, which runs after it on the stream. ``floats`` and
    ``ints``: the scratch of ``scratch_layout``."""
    request = tl.program_id(0)
    j = tl.program_id(1)
    split = tl.program_id(2)
    batch = tl.num_programs(0)
    stat_size = batch * width * num_splits
    stat_max_ptr = floats_ptr
    stat_sum_ptr = floats_ptr + stat_size
    counter_ptr = ints_ptr + batch * width + batch
    stat_arg_ptr = counter_ptr + batch
    if (j == 0) & (split == 0):
        tl.store(counter_ptr + request, 0)
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    row = first_row(num_draft_ptr, request, LAYOUT_BLOCK) + j
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    greedy = temperature == 0.0
    needed = (j < k) | ((j == k) & ~greedy)  # a greedy bonus row is read only where reached
    if HAS_FORCED:
        needed = needed & (tl.load(forced_ptr + row, mask=j <= k, other=-1) < 0)
    if needed:
        inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
        row_ptr = logits_ptr + row * vocab_size
        lo = split * split_size
        hi = tl.minimum(lo + split_size, vocab_size)
        best = tl.full([BLOCK], float("-inf"), tl.float32)
        best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
        lanes = tl.zeros([BLOCK], dtype=tl.float32)  # per-lane sums of exp(x - best)
        if greedy:  # max and argmax (ties to the lowest id)
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                best, best_arg = _lane_argmax_update(x, offsets, best, best_arg)
        elif j == k:  # the bonus row: the exponential race for p, decided without a normaliser
            key = stream_key(tl.load(seed_ptr + request), tl.load(position_ptr + request) + j, 2)
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                inside = offsets < hi
                x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
                score = tl.where(inside & (x != float("-inf")), x - tl.log(exponentials(key, offsets)), float("-inf"))
                best, best_arg = _lane_argmax_update(score, offsets, best, best_arg)
        else:  # online max and sum of exp(x - max) per lane, one exponential per element
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                x = x * inv_temperature
                # exp(-|x - best|) rescales the sum to a new maximum or is the new term; both -inf
                # gives NaN, never used: such an x is no new maximum and adds nothing
                scale = tl.exp(-tl.abs(x - best))
                bigger = x > best
                lanes = tl.where(bigger, lanes * scale + 1.0, lanes + tl.where(x == float("-inf"), 0.0, scale))
                best = tl.where(bigger, x, best)
        split_max, split_arg = _reduce_argmax(best, best_arg)
        scaled = tl.where(best == float("-inf"), 0.0, lanes * tl.exp(best - split_max))
        slot = (request * width + j) * num_splits + split
        tl.store(stat_max_ptr + slot, split_max)
        tl.store(stat_sum_ptr + slot, tl.sum(scaled, axis=0))
        tl.store(stat_arg_ptr + slot, tl.where(split_arg == NO_ARG, lo, split_arg))


@triton.jit
def _combine_stats(stat_max_ptr, stat_sum_ptr, stat_arg_ptr, base, num_splits, SPLITS_POW2: tl.constexpr):
    """Row max, row sum of exp(x - max), and the row argument (lowest id) from the split statistics."""
    splits = tl.arange(0, SPLITS_POW2)
    inside = splits < num_splits
    maxes = tl.load(stat_max_ptr + base + splits, mask=inside, other=float("-inf"))
    sums = tl.load(stat_sum_ptr + base + splits, mask=inside, other=0.0)
    args = tl.load(stat_arg_ptr + base + splits, mask=inside, other=0)
    row_max = tl.max(maxes, axis=0)
    scaled = tl.where(maxes == float("-inf"), 0.0, sums * tl.exp(maxes - row_max))
    arg = tl.min(tl.where(maxes == row_max, args, NO_ARG), axis=0)  # splits are in id order
    return row_max, tl.sum(scaled, axis=0), arg


@triton.jit
def verify_kernel(
    logits_ptr,
    draft_ids_ptr,
    q_ptr,
    num_draft_ptr,
    temperature_ptr,
    seed_ptr,
    position_ptr,
    forced_ptr,
    floats_ptr,
    ints_ptr,
    vocab_size,
    split_size,
    width,
    stat_splits,
    num_splits,
    HAS_Q: tl.constexpr,
    HAS_FORCED: tl.constexpr,
    WIDTH_POW2: tl.constexpr,
    STAT_SPLITS_POW2: tl.constexpr,
    SPLITS_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
):
    """Walk the drafts, write the output row; race over the rejected row of a sampled request.

    ``floats`` and ``ints``: the scratch of ``scratch_layout``, statistics written by ``row_pass_kernel``
    (with ``stat_splits`` splits per row), counters zeroed by it; the output ``[B, width]`` and
    ``num_emitted [B]`` lead ``ints``."""
    request = tl.program_id(0)
    split = tl.program_id(1)
    batch = tl.num_programs(0)
    stat_size = batch * width * stat_splits
    stat_max_ptr = floats_ptr
    stat_sum_ptr = floats_ptr + stat_size
    race_ptr = floats_ptr + 2 * stat_size  # [2, B, num_splits]: best and fallback of each split
    out_ptr = ints_ptr
    num_emitted_ptr = ints_ptr + batch * width
    counter_ptr = num_emitted_ptr + batch
    stat_arg_ptr = counter_ptr + batch
    race_arg_ptr = stat_arg_ptr + stat_size
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    row0 = first_row(num_draft_ptr, request, LAYOUT_BLOCK)
    draft0 = row0 - request
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    greedy = temperature == 0.0
    inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
    seed = tl.load(seed_ptr + request)
    position = tl.load(position_ptr + request)
    out_row = out_ptr + request.to(tl.int64) * width
    stats_row = request * width * stat_splits

    j = 0
    rejected = 0
    pending = RACE_NONE  # which race below draws the final token, if any
    final = 0
    row_max = 0.0
    row_sum = 1.0
    while (j < k) & (rejected == 0):
        draft = tl.load(draft_ids_ptr + draft0 + j)
        in_vocab = (draft >= 0) & (draft < vocab_size)  # false only without validation: never accepted
        draft = tl.where(in_vocab, draft, -1).to(tl.int32)  # checked before narrowing: 2**32 would become 0
        safe_draft = tl.where(in_vocab, draft, 0)
        q_draft = 1.0
        if HAS_Q:
            q_draft = tl.load(q_ptr + (draft0 + j) * vocab_size + safe_draft).to(tl.float32)
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row0 + j).to(tl.int32)
        stat_max, stat_sum, arg = _combine_stats(
            stat_max_ptr, stat_sum_ptr, stat_arg_ptr, stats_row + j * stat_splits, stat_splits, STAT_SPLITS_POW2
        )
        if forced >= 0:
            accept = (draft == forced) & (greedy | (q_draft > 0.0))
            final = forced
        elif greedy:
            accept = arg == draft
            final = arg
        else:
            x_draft = tl.load(logits_ptr + (row0 + j) * vocab_size + safe_draft).to(tl.float32) * inv_temperature
            p_draft = tl.where((x_draft == float("-inf")) | ~in_vocab, 0.0, tl.exp(x_draft - stat_max) / stat_sum)
            accept = (q_draft > 0.0) & (uniform(seed, position + j) * q_draft < p_draft)
            pending = tl.where(accept, RACE_NONE, RACE_RESIDUAL)
            row_max = stat_max
            row_sum = stat_sum
        tl.store(out_row + j, draft, mask=accept & (split == 0))
        rejected = tl.where(accept, 0, 1)
        j += 1 - rejected

    if rejected == 0:  # every draft accepted: the bonus row's token
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row0 + k).to(tl.int32)
        if greedy:  # its argmax, in the race below unless forced
            pending = tl.where(forced >= 0, RACE_NONE, RACE_GREEDY_BONUS)
            final = forced
        else:  # the first pass raced it
            _, _, final = _combine_stats(
                stat_max_ptr, stat_sum_ptr, stat_arg_ptr, stats_row + k * stat_splits, stat_splits, STAT_SPLITS_POW2
            )
            final = tl.where(forced >= 0, forced, final)
    if split == 0:
        if pending == RACE_NONE:
            tl.store(out_row + j, final)
        emitted = j + 1
        columns = tl.arange(0, WIDTH_POW2)
        tl.store(out_row + columns, tl.full([WIDTH_POW2], -1, tl.int32), mask=(columns >= emitted) & (columns < width))
        tl.store(num_emitted_ptr + request, emitted)

    if pending != RACE_NONE:
        row_ptr = logits_ptr + (row0 + j) * vocab_size
        best = tl.full([BLOCK], float("-inf"), tl.float32)
        best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
        fallback = tl.full([BLOCK], float("-inf"), tl.float32)
        fallback_arg = tl.full([BLOCK], NO_ARG, tl.int32)
        lo = split * split_size
        hi = tl.minimum(lo + split_size, vocab_size)
        if pending == RACE_RESIDUAL:
            draft = tl.load(draft_ids_ptr + draft0 + j)
            draft = tl.where((draft >= 0) & (draft < vocab_size), draft, -1).to(tl.int32)  # out of vocabulary: no q
            key = stream_key(seed, position + j, 2)
            inv_sum = 1.0 / row_sum
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                inside = offsets < vocab_size
                x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
                inv_noise = 1.0 / exponentials(key, offsets)
                p = tl.where(x == float("-inf"), 0.0, tl.exp(x - row_max) * inv_sum)
                if HAS_Q:
                    q = tl.load(q_ptr + (draft0 + j) * vocab_size + offsets, mask=inside, other=0.0).to(tl.float32)
                else:
                    q = tl.where(offsets == draft, 1.0, 0.0)
                score = tl.where(inside, tl.maximum(p - q, 0.0) * inv_noise, -1.0)
                best, best_arg = _lane_argmax_update(score, offsets, best, best_arg)
                score = tl.where(inside, p * inv_noise, -1.0)
                fallback, fallback_arg = _lane_argmax_update(score, offsets, fallback, fallback_arg)
        else:  # a greedy request's bonus row: argmax, ties to the lowest id
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                best, best_arg = _lane_argmax_update(x, offsets, best, best_arg)
        slot = request * num_splits + split
        fallback_slot = slot + num_splits * batch
        top, top_arg = _reduce_argmax(best, best_arg)
        tl.store(race_ptr + slot, top)
        tl.store(race_arg_ptr + slot, tl.where(top_arg == NO_ARG, lo, top_arg))
        top, top_arg = _reduce_argmax(fallback, fallback_arg)
        tl.store(race_ptr + fallback_slot, top)
        tl.store(race_arg_ptr + fallback_slot, tl.where(top_arg == NO_ARG, lo, top_arg))
        tl.debug_barrier()  # every lane's stores before the release below
        if tl.atomic_add(counter_ptr + request, 1, sem="acq_rel") == num_splits - 1:  # the last split
            splits = tl.arange(0, SPLITS_POW2)
            inside = splits < num_splits
            base = request * num_splits
            fallback_base = base + num_splits * batch
            race = tl.load(race_ptr + base + splits, mask=inside, other=float("-inf"), cache_modifier=".cg")
            race_arg = tl.load(race_arg_ptr + base + splits, mask=inside, other=0, cache_modifier=".cg")
            top, token = _reduce_argmax(race, race_arg)
            race = tl.load(race_ptr + fallback_base + splits, mask=inside, other=float("-inf"), cache_modifier=".cg")
            race_arg = tl.load(race_arg_ptr + fallback_base + splits, mask=inside, other=0, cache_modifier=".cg")
            _, fallback_token = _reduce_argmax(race, race_arg)
            # A residual without mass (every score 0) samples p instead (RS-PROB-4).
            tl.store(out_row + j, tl.where((pending == RACE_RESIDUAL) & (top <= 0.0), fallback_token, token))
