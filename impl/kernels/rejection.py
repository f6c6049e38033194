"""Rejection-sampling kernels (specs/rejection-sampling.md, specs/accepted-tokens.md).

Four small kernels, each parallel over the vocabulary, so that one request (B = 1) and many
(B = 1024) both keep the memory system busy:

1. ``row_stats_kernel`` (grid: request × row × vocabulary split): for each draft row of a sampled
   request the split's max and sum of ``exp(l / T - max)``; for each draft row of a greedy request
   the split's max and argmax. Forced rows and bonus rows are not read.
2. ``walk_drafts_kernel`` (grid: request): verifies drafts in order from the statistics (one load
   of ``l[d]`` and ``q[d]`` per draft), stops at the first rejection, writes the accepted drafts,
   the greedy or forced final token, ``num_emitted``, and, when the final token is still to be
   drawn, which row and distribution to draw it from.
3. ``race_kernel`` (grid: request × vocabulary split): over that one row, the exponential race
   ``argmax(w / e)`` for the residual ``max(p - q, 0)`` (with ``p`` as fallback) or the bonus ``p``,
   or the plain argmax of a greedy request's bonus row.
4. ``finish_kernel`` (grid: request): reduces the race across splits and writes the token.

Bytes read: every draft row once, a bonus row only where all drafts were accepted, a rejected sampled
row once more, and one ``q`` row per rejection: at most the inputs once over plus one row per
request. (Draft rows after a rejection are read in step 1 too: that is the price of verifying every
row in parallel, which one program walking its rows in order cannot do at B = 1.)
"""

import triton
import triton.language as tl

from .layout import first_row
from .rng import exponentials, stream_key, uniform

SAMPLE_NONE = tl.constexpr(0)  # the final token is known (greedy, forced) after the walk
SAMPLE_RESIDUAL = tl.constexpr(1)  # sample norm(max(p - q, 0)) at the rejected row
SAMPLE_BONUS = tl.constexpr(2)  # sample p at the bonus row
SAMPLE_GREEDY = tl.constexpr(3)  # argmax of the bonus row of a greedy request


@triton.jit
def row_stats_kernel(
    logits_ptr,
    logits_stride,
    num_draft_ptr,
    temperature_ptr,
    forced_ptr,
    stat_max_ptr,
    stat_sum_ptr,
    stat_arg_ptr,
    vocab_size,
    split_size,
    width,
    num_splits,
    HAS_FORCED: tl.constexpr,
    BLOCK: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
):
    request = tl.program_id(0)
    j = tl.program_id(1)
    split = tl.program_id(2)
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    greedy = temperature == 0.0
    row = first_row(num_draft_ptr, request, LAYOUT_BLOCK) + j
    needed = j < k  # bonus rows are read in the race, and only where reached
    if HAS_FORCED:
        needed = needed & (tl.load(forced_ptr + row, mask=j < k, other=-1) < 0)
    if needed:
        inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
        row_ptr = logits_ptr + row * logits_stride
        lo = split * split_size
        hi = tl.minimum(lo + split_size, vocab_size)
        running_max = float("-inf")
        best_index = 0
        lanes = tl.zeros([BLOCK], dtype=tl.float32)  # per-lane sums of exp(x - running_max)
        if greedy:  # max and argmax (ties to the lowest id)
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                block_max = tl.max(x, axis=0)
                better = block_max > running_max
                best_index = tl.where(better, start + tl.argmax(x, axis=0), best_index)
                running_max = tl.maximum(running_max, block_max)
        else:  # max and sum of exp(x - max), one reduction per block
            for start in range(lo, hi, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
                x = x * inv_temperature
                new_max = tl.maximum(running_max, tl.max(x, axis=0))
                # shift by 0 while everything so far is -inf: exp(-inf - 0) = 0, and no -inf - -inf
                shift = tl.where(new_max == float("-inf"), 0.0, new_max)
                lanes = lanes * tl.exp(running_max - shift) + tl.exp(x - shift)
                running_max = new_max
        total = tl.sum(lanes, axis=0)
        slot = (request * width + j) * num_splits + split
        tl.store(stat_max_ptr + slot, running_max)
        tl.store(stat_sum_ptr + slot, total)
        tl.store(stat_arg_ptr + slot, best_index)


@triton.jit
def _combine_stats(stat_max_ptr, stat_sum_ptr, stat_arg_ptr, base, num_splits, SPLITS_POW2: tl.constexpr):
    """Row max, row sum of exp(x - max), and the row argmax (lowest id) from the split statistics."""
    splits = tl.arange(0, SPLITS_POW2)
    inside = splits < num_splits
    maxes = tl.load(stat_max_ptr + base + splits, mask=inside, other=float("-inf"))
    sums = tl.load(stat_sum_ptr + base + splits, mask=inside, other=0.0)
    args = tl.load(stat_arg_ptr + base + splits, mask=inside, other=0)
    row_max = tl.max(maxes, axis=0)
    scaled = tl.where(maxes == float("-inf"), 0.0, sums * tl.exp(maxes - row_max))
    arg = tl.min(tl.where(maxes == row_max, args, 2147483647), axis=0)  # splits are in id order
    return row_max, tl.sum(scaled, axis=0), arg


@triton.jit
def walk_drafts_kernel(
    logits_ptr,
    logits_stride,
    draft_ids_ptr,
    q_ptr,
    q_stride,
    num_draft_ptr,
    temperature_ptr,
    seed_ptr,
    position_ptr,
    forced_ptr,
    stat_max_ptr,
    stat_sum_ptr,
    stat_arg_ptr,
    out_ptr,
    out_stride,
    num_emitted_ptr,
    job_row_ptr,
    job_mode_ptr,
    job_max_ptr,
    job_sum_ptr,
    width,
    num_splits,
    vocab_size,
    HAS_Q: tl.constexpr,
    HAS_FORCED: tl.constexpr,
    WIDTH_POW2: tl.constexpr,
    SPLITS_POW2: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
):
    request = tl.program_id(0)
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    row0 = first_row(num_draft_ptr, request, LAYOUT_BLOCK)
    draft0 = row0 - request
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    greedy = temperature == 0.0
    inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
    seed = tl.load(seed_ptr + request)
    position = tl.load(position_ptr + request)
    out_row = out_ptr + request.to(tl.int64) * out_stride
    stats_row = request * width * num_splits

    j = 0
    rejected = 0
    mode = SAMPLE_NONE
    job_max = 0.0
    job_sum = 1.0
    while (j < k) & (rejected == 0):
        row = row0 + j
        draft = tl.load(draft_ids_ptr + draft0 + j)
        in_vocab = (draft >= 0) & (draft < vocab_size)  # false only without validation: never accepted
        draft = tl.where(in_vocab, draft, -1).to(tl.int32)  # checked before narrowing: 2**32 would become 0
        safe_draft = tl.where(in_vocab, draft, 0)
        q_draft = 1.0
        if HAS_Q:
            q_draft = tl.load(q_ptr + (draft0 + j) * q_stride + safe_draft).to(tl.float32)
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row).to(tl.int32)
        row_max, row_sum, arg = _combine_stats(
            stat_max_ptr, stat_sum_ptr, stat_arg_ptr, stats_row + j * num_splits, num_splits, SPLITS_POW2
        )
        token = draft
        if forced >= 0:
            accept = (draft == forced) & (greedy | (q_draft > 0.0))
            token = forced
        elif greedy:
            token = arg
            accept = arg == draft
        else:
            x_draft = tl.load(logits_ptr + row * logits_stride + safe_draft).to(tl.float32) * inv_temperature
            p_draft = tl.where((x_draft == float("-inf")) | ~in_vocab, 0.0, tl.exp(x_draft - row_max) / row_sum)
            accept = (q_draft > 0.0) & (uniform(seed, position + j) * q_draft < p_draft)
            mode = tl.where(accept, mode, SAMPLE_RESIDUAL)
            job_max = tl.where(accept, job_max, row_max)
            job_sum = tl.where(accept, job_sum, row_sum)
        tl.store(out_row + j, tl.where(accept, draft, token))
        rejected = tl.where(accept, 0, 1)
        j += 1 - rejected

    if rejected == 0:  # every draft accepted: the bonus row
        row = row0 + k
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row).to(tl.int32)
        if forced >= 0:
            tl.store(out_row + k, forced)
        elif greedy:
            mode = SAMPLE_GREEDY
        else:
            mode = SAMPLE_BONUS
    tl.store(job_row_ptr + request, j)
    tl.store(job_mode_ptr + request, mode)
    tl.store(job_max_ptr + request, job_max)
    tl.store(job_sum_ptr + request, job_sum)
    emitted = j + 1
    columns = tl.arange(0, WIDTH_POW2)
    tl.store(out_row + columns, tl.full([WIDTH_POW2], -1, tl.int32), mask=(columns >= emitted) & (columns < width))
    tl.store(num_emitted_ptr + request, emitted)


@triton.jit
def race_kernel(
    logits_ptr,
    logits_stride,
    draft_ids_ptr,
    q_ptr,
    q_stride,
    num_draft_ptr,
    temperature_ptr,
    seed_ptr,
    position_ptr,
    job_row_ptr,
    job_mode_ptr,
    job_max_ptr,
    job_sum_ptr,
    best_ptr,
    best_arg_ptr,
    fallback_ptr,
    fallback_arg_ptr,
    vocab_size,
    split_size,
    num_splits,
    HAS_Q: tl.constexpr,
    BLOCK: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
):
    request = tl.program_id(0)
    split = tl.program_id(1)
    mode = tl.load(job_mode_ptr + request)
    if mode != SAMPLE_NONE:
        j = tl.load(job_row_ptr + request)
        row0 = first_row(num_draft_ptr, request, LAYOUT_BLOCK)
        draft0 = row0 - request
        row_ptr = logits_ptr + (row0 + j) * logits_stride
        temperature = tl.load(temperature_ptr + request).to(tl.float32)
        inv_temperature = 1.0 / tl.where(temperature == 0.0, 1.0, temperature)
        key = stream_key(tl.load(seed_ptr + request), tl.load(position_ptr + request) + j, 2)
        row_max = tl.load(job_max_ptr + request)
        row_sum = tl.load(job_sum_ptr + request)
        residual = mode == SAMPLE_RESIDUAL
        greedy = mode == SAMPLE_GREEDY
        draft = tl.load(draft_ids_ptr + draft0 + j, mask=residual, other=-1)
        draft = tl.where((draft >= 0) & (draft < vocab_size), draft, -1).to(tl.int32)  # out of vocabulary: no q
        best = float("-inf")
        best_arg = 0
        fallback = float("-inf")
        fallback_arg = 0
        lo = split * split_size
        for start in range(lo, tl.minimum(lo + split_size, vocab_size), BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            inside = offsets < vocab_size
            x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
            if residual:
                noise = exponentials(key, offsets)
                p = tl.where(x == float("-inf"), 0.0, tl.exp(x - row_max) / row_sum)
                if HAS_Q:
                    q = tl.load(q_ptr + (draft0 + j) * q_stride + offsets, mask=inside, other=0.0).to(tl.float32)
                else:
                    q = tl.where(offsets == draft, 1.0, 0.0)
                score = tl.where(inside, tl.maximum(p - q, 0.0) / noise, -1.0)
                backup = tl.where(inside, p / noise, -1.0)
            elif greedy:  # argmax, ties to the lowest id
                score = x
                backup = score
            else:
                score = tl.where(inside & (x != float("-inf")), x - tl.log(exponentials(key, offsets)), float("-inf"))
                backup = score
            block_best = tl.max(score, axis=0)
            better = block_best > best
            best_arg = tl.where(better, start + tl.argmax(score, axis=0), best_arg)
            best = tl.where(better, block_best, best)
            block_best = tl.max(backup, axis=0)
            better = block_best > fallback
            fallback_arg = tl.where(better, start + tl.argmax(backup, axis=0), fallback_arg)
            fallback = tl.where(better, block_best, fallback)
        slot = request * num_splits + split
        tl.store(best_ptr + slot, best)
        tl.store(best_arg_ptr + slot, best_arg)
        tl.store(fallback_ptr + slot, fallback)
        tl.store(fallback_arg_ptr + slot, fallback_arg)


@triton.jit
def finish_kernel(
    job_row_ptr,
    job_mode_ptr,
    best_ptr,
    best_arg_ptr,
    fallback_ptr,
    fallback_arg_ptr,
    out_ptr,
    out_stride,
    num_splits,
    SPLITS_POW2: tl.constexpr,
):
    request = tl.program_id(0)
    mode = tl.load(job_mode_ptr + request)
    if mode != SAMPLE_NONE:
        splits = tl.arange(0, SPLITS_POW2)
        inside = splits < num_splits
        base = request * num_splits
        best = tl.load(best_ptr + base + splits, mask=inside, other=float("-inf"))
        best_arg = tl.load(best_arg_ptr + base + splits, mask=inside, other=0)
        fallback = tl.load(fallback_ptr + base + splits, mask=inside, other=float("-inf"))
        fallback_arg = tl.load(fallback_arg_ptr + base + splits, mask=inside, other=0)
        top = tl.max(best, axis=0)
        token = tl.min(tl.where(best == top, best_arg, 2147483647), axis=0)
        top_fallback = tl.max(fallback, axis=0)
        fallback_token = tl.min(tl.where(fallback == top_fallback, fallback_arg, 2147483647), axis=0)
        # A residual without mass (every score 0) samples p instead (RS-PROB-4).
        no_mass = (mode == SAMPLE_RESIDUAL) & (top <= 0.0)
        token = tl.where(no_mass, fallback_token, token)
        tl.store(out_ptr + request.to(tl.int64) * out_stride + tl.load(job_row_ptr + request), token)
