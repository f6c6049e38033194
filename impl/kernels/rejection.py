"""The fused rejection-sampling kernel (specs/rejection-sampling.md, specs/accepted-tokens.md).

One program per request walks its drafts in order and stops at the first rejection (rows after
it are never read). Per row it makes the passes the row needs over the vocabulary:

* forced row: none (the row is one-hot at the forced token);
* greedy row: one pass (argmax, ties to the lowest id);
* probabilistic draft row: one pass (max and sum of exp for ``p(d)``), plus one more over the
  row and its ``q`` row only if the draft is rejected (the residual race);
* probabilistic bonus row: one pass (the race on ``logits / T - log e``).

It writes the request's output row (tokens, then -1 padding) and ``num_emitted`` as it goes.
"""

import triton
import triton.language as tl

from .rng import exponentials, stream_key, uniform


@triton.jit
def _argmax_row(row_ptr, vocab_size, BLOCK: tl.constexpr):
    best_value = float("-inf")
    best_index = 0
    for start in range(0, vocab_size, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        values = tl.load(row_ptr + offsets, mask=offsets < vocab_size, other=float("-inf")).to(tl.float32)
        block_max = tl.max(values, axis=0)
        block_arg = tl.argmax(values, axis=0)
        better = block_max > best_value
        best_index = tl.where(better, start + block_arg, best_index)
        best_value = tl.where(better, block_max, best_value)
    return best_index


@triton.jit
def _max_and_sum(row_ptr, vocab_size, inv_temperature, BLOCK: tl.constexpr):
    """Online max ``m`` and ``Z = sum exp(l / T - m)`` of one row."""
    running_max = float("-inf")
    total = 0.0
    for start in range(0, vocab_size, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + offsets, mask=offsets < vocab_size, other=float("-inf")).to(tl.float32)
        x = x * inv_temperature
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        scale = tl.where(new_max == float("-inf"), 0.0, tl.exp(running_max - new_max))
        terms = tl.where(x == float("-inf"), 0.0, tl.exp(x - new_max))
        total = total * scale + tl.sum(terms, axis=0)
        running_max = new_max
    return running_max, total


@triton.jit
def _residual_race(
    row_ptr,
    q_ptr,
    draft,
    vocab_size,
    inv_temperature,
    row_max,
    row_sum,
    key,
    HAS_Q: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Sample ``norm(max(p - q, 0))`` by ``argmax(w / e)``; fall back to ``p`` if it has no mass."""
    best_residual = 0.0
    residual_index = 0
    best_target = 0.0
    target_index = 0
    for start in range(0, vocab_size, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < vocab_size
        x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
        p = tl.where(x == float("-inf"), 0.0, tl.exp(x - row_max) / row_sum)
        if HAS_Q:
            q = tl.load(q_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
        else:
            q = tl.where(offsets == draft, 1.0, 0.0)
        noise = exponentials(key, offsets)
        residual_score = tl.where(inside, tl.maximum(p - q, 0.0) / noise, -1.0)
        target_score = tl.where(inside, p / noise, -1.0)
        block_best = tl.max(residual_score, axis=0)
        better = block_best > best_residual
        residual_index = tl.where(better, start + tl.argmax(residual_score, axis=0), residual_index)
        best_residual = tl.where(better, block_best, best_residual)
        block_best = tl.max(target_score, axis=0)
        better = block_best > best_target
        target_index = tl.where(better, start + tl.argmax(target_score, axis=0), target_index)
        best_target = tl.where(better, block_best, best_target)
    return tl.where(best_residual > 0.0, residual_index, target_index)


@triton.jit
def _bonus_race(row_ptr, vocab_size, inv_temperature, key, BLOCK: tl.constexpr):
    """Sample ``softmax(l / T)`` by ``argmax(l / T - log e)``."""
    best_score = float("-inf")
    best_index = 0
    for start in range(0, vocab_size, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < vocab_size
        x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
        score = x - tl.log(exponentials(key, offsets))
        score = tl.where(inside & (x != float("-inf")), score, float("-inf"))
        block_best = tl.max(score, axis=0)
        better = block_best > best_score
        best_index = tl.where(better, start + tl.argmax(score, axis=0), best_index)
        best_score = tl.where(better, block_best, best_score)
    return best_index


@triton.jit
def rejection_sample_kernel(
    logits_ptr,
    logits_stride,
    draft_ids_ptr,
    q_ptr,
    q_stride,
    num_draft_ptr,
    row_end_ptr,
    temperature_ptr,
    seed_ptr,
    position_ptr,
    forced_ptr,
    out_ptr,
    out_stride,
    num_emitted_ptr,
    vocab_size,
    out_width,
    HAS_Q: tl.constexpr,
    HAS_FORCED: tl.constexpr,
    WIDTH_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    request = tl.program_id(0)
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    row0 = (tl.load(row_end_ptr + request) - k - 1).to(tl.int64)
    draft0 = row0 - request
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    greedy = temperature == 0.0
    inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
    seed = tl.load(seed_ptr + request)
    position = tl.load(position_ptr + request)
    out_row = out_ptr + request.to(tl.int64) * out_stride

    j = 0
    rejected = 0
    while (j < k) & (rejected == 0):
        row = row0 + j
        row_ptr = logits_ptr + row * logits_stride
        draft = tl.load(draft_ids_ptr + draft0 + j).to(tl.int32)
        q_draft = 1.0
        if HAS_Q:
            q_draft = tl.load(q_ptr + (draft0 + j) * q_stride + draft).to(tl.float32)
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row).to(tl.int32)
        token = draft
        if forced >= 0:
            accept = (draft == forced) & (greedy | (q_draft > 0.0))
            token = forced
        elif greedy:
            token = _argmax_row(row_ptr, vocab_size, BLOCK)
            accept = token == draft
        else:
            row_max, row_sum = _max_and_sum(row_ptr, vocab_size, inv_temperature, BLOCK)
            x_draft = tl.load(row_ptr + draft).to(tl.float32) * inv_temperature
            p_draft = tl.where(x_draft == float("-inf"), 0.0, tl.exp(x_draft - row_max) / row_sum)
            u = uniform(seed, position + j)
            accept = (q_draft > 0.0) & (u * q_draft < p_draft)
            if not accept:
                key = stream_key(seed, position + j, 2)
                token = _residual_race(
                    row_ptr,
                    q_ptr + (draft0 + j) * q_stride,
                    draft,
                    vocab_size,
                    inv_temperature,
                    row_max,
                    row_sum,
                    key,
                    HAS_Q,
                    BLOCK,
                )
        tl.store(out_row + j, tl.where(accept, draft, token))
        rejected = tl.where(accept, 0, 1)
        j += 1 - rejected

    if rejected == 0:  # every draft accepted: the bonus row
        row = row0 + k
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row).to(tl.int32)
        if forced >= 0:
            token = forced
        elif greedy:
            token = _argmax_row(logits_ptr + row * logits_stride, vocab_size, BLOCK)
        else:
            key = stream_key(seed, position + k, 2)
            token = _bonus_race(logits_ptr + row * logits_stride, vocab_size, inv_temperature, key, BLOCK)
        tl.store(out_row + k, token)
    emitted = j + 1
    columns = tl.arange(0, WIDTH_POW2)
    tl.store(
        out_row + columns,
        tl.full([WIDTH_POW2], -1, tl.int32),
        mask=(columns >= emitted) & (columns < out_width),
    )
    tl.store(num_emitted_ptr + request, emitted)
