"""Rejection-sampling kernels (specs/rejection-sampling.md, specs/accepted-tokens.md).

Three kernels; the two that read the vocabulary are parallel over it, so that one request (B = 1)
and many (B = 1024) both keep the memory system busy:

1. ``setup_kernel`` (one program): every request's first logits row from one prefix sum over the draft
   counts (``O(B)``), the counters zeroed, no rejection known yet.
2. ``row_pass_kernel`` (one program per row split; rows in order of their draft index ``j``, the
   level) reads every row once: for a draft row of a sampled request the split's max and sum of
   ``exp(l / T - max)``; for a greedy row the split's max and argmax; for the bonus row of a sampled
   request the split's winner of the exponential race ``argmax(l / T - log e)`` (it needs no
   normaliser). The last split of a row to finish (an atomic counter per row) reduces the splits and
   judges the row: its draft accepted or not (one load of ``l[d]`` and ``q[d]``), its token if it is
   the last one emitted (argmax, race winner or forced id); a rejection lowers the request's first
   known rejection (``atomic_min``). A program whose row lies after a known rejection does nothing:
   programs run in level order, so most rows after a rejected first draft are skipped. (One launch per
   level would skip every row after a rejection, but measured slower on an H100 at most of the bench's
   shapes: each launch pays its tail, and the skipped programs their setup.) Forced rows are not read.
3. ``verify_kernel`` (one program per request split): the first rejection is the least rejected row;
   split 0 writes the accepted drafts, the final token where the row pass knows it, the padding and
   ``num_emitted``. For a sampled request with a rejected draft each split runs the race
   ``argmax(max(p - q, 0) / e)`` over its part of the rejected row and of its ``q`` row; the last split
   to finish reduces the splits and writes the token (where the residual has no mass, it runs the race
   ``argmax(p / e)`` over the whole row).

Bytes read: the rows up to each request's first rejection, or to its bonus row, and those rows after
a rejection that started before it was known; for a sampled rejection that row and its ``q`` row once
more. Inner loops keep per-lane running maxima, sums and
arguments and reduce across lanes once per program, so that no barrier sits inside a loop over the
vocabulary. Which rows are skipped may depend on timing; what is emitted does not.
"""

import triton
import triton.language as tl

from .layout import store_first_rows
from .rng import hardware_exp, hardware_log2, hardware_reciprocal, race_noise, stream_key, uniform

NO_ARG = tl.constexpr(2147483647)  # the argument of a lane that has seen only -inf
NO_REJECTION = tl.constexpr(2147483647)  # a request's first known rejection before any is known
LOG2_E = tl.constexpr(1.4426950408889634)
# positions in the tuple of ``_scratch``
STAT_MAX = tl.constexpr(0)
STAT_SUM = tl.constexpr(1)
ROW_MAX = tl.constexpr(2)
ROW_SUM = tl.constexpr(3)
RACE = tl.constexpr(4)
OUT = tl.constexpr(5)
NUM_EMITTED = tl.constexpr(6)
FIRST_ROW = tl.constexpr(7)
REJECTED_AT = tl.constexpr(8)
RACE_COUNTER = tl.constexpr(9)
ROW_COUNTER = tl.constexpr(10)
ROW_TOKEN = tl.constexpr(11)
STAT_ARG = tl.constexpr(12)
RACE_ARG = tl.constexpr(13)


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
def _scratch(floats_ptr, ints_ptr, batch, width, stat_splits):
    """Pointers into the scratch (sized by ``specconform.impl.rejection._plan``; ``W = width``, ``S = B * W *
    stat_splits``): float32 ``stat_max [S]``, ``stat_sum [S]``, ``row_max [B * W]``, ``row_sum [B * W]``, ``race [B,
    race splits]``; int32 ``out [B, W]``, ``num_emitted [B]``, ``first_row [B]``, ``rejected_at [B]``, ``race_counter
    [B]``, ``row_counter [B * W]``, ``row_token [B * W]``, ``stat_arg [S]``, ``race_arg [B, race splits]``."""
    rows = batch * width
    stats = rows * stat_splits
    stat_max = floats_ptr
    stat_sum = stat_max + stats
    row_max = stat_sum + stats
    row_sum = row_max + rows
    race = row_sum + rows
    out = ints_ptr
    num_emitted = out + rows
    first_row = num_emitted + batch
    rejected_at = first_row + batch
    race_counter = rejected_at + batch
    row_counter = race_counter + batch
    row_token = row_counter + rows
    stat_arg = row_token + rows
    race_arg = stat_arg + stats
    return (
        stat_max,
        stat_sum,
        row_max,
        row_sum,
        race,
        out,
        num_emitted,
        first_row,
        rejected_at,
        race_counter,
        row_counter,
        row_token,
        stat_arg,
        race_arg,
    )


@triton.jit
def setup_kernel(num_draft_ptr, floats_ptr, ints_ptr, batch, width, stat_splits, BLOCK: tl.constexpr):
    """One program: ``first_row``, ``rejected_at = NO_REJECTION`` and zeroed counters (``_scratch``)."""
    scratch = _scratch(floats_ptr, ints_ptr, batch, width, stat_splits)
    first_row = scratch[FIRST_ROW]
    rejected_at = scratch[REJECTED_AT]
    race_counter = scratch[RACE_COUNTER]
    row_counter = scratch[ROW_COUNTER]
    store_first_rows(num_draft_ptr, batch, first_row, BLOCK)
    for start in range(0, batch, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        tl.store(rejected_at + offsets, tl.full([BLOCK], NO_REJECTION, tl.int32), mask=offsets < batch)
        tl.store(race_counter + offsets, tl.zeros([BLOCK], tl.int32), mask=offsets < batch)
    for start in range(0, batch * width, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        tl.store(row_counter + offsets, tl.zeros([BLOCK], tl.int32), mask=offsets < batch * width)


@triton.jit
def _combine_stats(stat_max_ptr, stat_sum_ptr, stat_arg_ptr, base, num_splits, SPLITS_POW2: tl.constexpr):
    """Row max, row sum of exp(x - max), and the row argument (lowest id) from the split statistics,
    read from L2 (other programs wrote them in this launch)."""
    splits = tl.arange(0, SPLITS_POW2)
    inside = splits < num_splits
    maxes = tl.load(stat_max_ptr + base + splits, mask=inside, other=float("-inf"), cache_modifier=".cg")
    sums = tl.load(stat_sum_ptr + base + splits, mask=inside, other=0.0, cache_modifier=".cg")
    args = tl.load(stat_arg_ptr + base + splits, mask=inside, other=0, cache_modifier=".cg")
    row_max = tl.max(maxes, axis=0)
    scaled = tl.where(maxes == float("-inf"), 0.0, sums * hardware_exp(maxes - row_max))
    arg = tl.min(tl.where(maxes == row_max, args, NO_ARG), axis=0)  # splits are in id order
    return row_max, tl.sum(scaled, axis=0), arg


@triton.jit
def _split_statistics(row_ptr, lo, hi, greedy, bonus, inv_temperature, seed_ptr, position_ptr, j, BLOCK: tl.constexpr):
    """One split's statistics, ids ``[lo, hi)`` of the logits row at ``row_ptr``: ``(max score, sum of exp(score -
    max), lowest id attaining the max)`` (float32, float32, int32; the id is ``NO_ARG`` where every score is -inf).
    The score is the logit for a ``greedy`` row; for the ``bonus`` row of a sampled request, the exponential
    race's ``l / T - log e`` in units of ln 2 (``seed_ptr`` and ``position_ptr`` point at the request's seed and
    position, ``j`` is the row's draft index); for a draft row of a sampled request, ``l / T``. Only the last
    sums (0 for the others)."""
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    lanes = tl.zeros([BLOCK], dtype=tl.float32)  # per-lane sums of exp(x - best)
    if greedy:  # max and argmax (ties to the lowest id)
        for start in range(lo, hi, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
            best, best_arg = _lane_argmax_update(x, offsets, best, best_arg)
    elif bonus:  # the bonus row: the exponential race for p, decided without a normaliser
        # argmax(l / T - log e) in units of ln 2, so that the noise's logarithm is one hardware log2;
        # an id outside the split or with l = -inf scores -inf, which never wins
        key = stream_key(tl.load(seed_ptr), tl.load(position_ptr) + j, 2)
        scale = inv_temperature * LOG2_E
        for start in range(lo, hi, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32) * scale
            score = x - hardware_log2(race_noise(key, offsets))
            best, best_arg = _lane_argmax_update(score, offsets, best, best_arg)
    else:  # online max and sum of exp(x - max) per lane, one exponential per element
        for start in range(lo, hi, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            x = tl.load(row_ptr + offsets, mask=offsets < hi, other=float("-inf")).to(tl.float32)
            x = x * inv_temperature
            # exp(-|x - best|) rescales the sum to a new maximum or is the new term; both -inf
            # gives NaN, never used: such an x is no new maximum and adds nothing
            scale_sum = hardware_exp(-tl.abs(x - best))
            bigger = x > best
            lanes = tl.where(bigger, lanes * scale_sum + 1.0, lanes + tl.where(x == float("-inf"), 0.0, scale_sum))
            best = tl.where(bigger, x, best)
    split_max, split_arg = _reduce_argmax(best, best_arg)
    scaled = tl.where(best == float("-inf"), 0.0, lanes * hardware_exp(best - split_max))
    return split_max, tl.sum(scaled, axis=0), split_arg


@triton.jit
def row_pass_kernel(
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
    batch,
    width,
    num_splits,
    HAS_Q: tl.constexpr,
    HAS_FORCED: tl.constexpr,
    SPLITS_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Program ``((j * B) + request) * num_splits + split``: the statistics of split ``split`` of row
    ``j`` of ``request``; the last split of the row judges it (``row_token``, ``row_max``, ``row_sum``,
    ``rejected_at``). ``floats`` and ``ints``: the scratch of ``_scratch``, set up by ``setup_kernel``."""
    program = tl.program_id(0)
    split = program % num_splits
    request = (program // num_splits) % batch
    j = program // (num_splits * batch)
    scratch = _scratch(floats_ptr, ints_ptr, batch, width, num_splits)
    stat_max_ptr = scratch[STAT_MAX]
    stat_sum_ptr = scratch[STAT_SUM]
    row_max_ptr = scratch[ROW_MAX]
    row_sum_ptr = scratch[ROW_SUM]
    first_row_ptr = scratch[FIRST_ROW]
    rejected_at_ptr = scratch[REJECTED_AT]
    row_counter_ptr = scratch[ROW_COUNTER]
    row_token_ptr = scratch[ROW_TOKEN]
    stat_arg_ptr = scratch[STAT_ARG]
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    # A row after a rejection already known is moot: neither read nor judged (a stale value only reads
    # more). A row some of whose splits skipped it never completes its counter, so it is never judged.
    known = tl.load(rejected_at_ptr + request, cache_modifier=".cg")
    if (j <= k) & (known >= j):
        row0 = tl.load(first_row_ptr + request).to(tl.int64)
        row = row0 + j
        temperature = tl.load(temperature_ptr + request).to(tl.float32)
        greedy = temperature == 0.0
        inv_temperature = 1.0 / tl.where(greedy, 1.0, temperature)
        forced = -1
        if HAS_FORCED:
            forced = tl.load(forced_ptr + row).to(tl.int32)
        stats_base = (request * width + j) * num_splits
        if forced < 0:
            lo = split * split_size
            hi = tl.minimum(lo + split_size, vocab_size)
            split_max, split_sum, split_arg = _split_statistics(
                logits_ptr + row * vocab_size,
                lo,
                hi,
                greedy,
                j == k,
                inv_temperature,
                seed_ptr + request,
                position_ptr + request,
                j,
                BLOCK,
            )
            tl.store(stat_max_ptr + stats_base + split, split_max)
            tl.store(stat_sum_ptr + stats_base + split, split_sum)
            tl.store(stat_arg_ptr + stats_base + split, tl.where(split_arg == NO_ARG, lo, split_arg))
        tl.debug_barrier()  # every lane's stores before the release below
        if tl.atomic_add(row_counter_ptr + request * width + j, 1, sem="acq_rel") == num_splits - 1:
            # the last split judges the row from every split's statistics
            row_max, row_sum, arg = _combine_stats(
                stat_max_ptr, stat_sum_ptr, stat_arg_ptr, stats_base, num_splits, SPLITS_POW2
            )
            if j < k:
                draft0 = row0 - request
                draft = tl.load(draft_ids_ptr + draft0 + j)
                in_vocab = (draft >= 0) & (draft < vocab_size)  # false only without validation: never accepted
                draft = tl.where(in_vocab, draft, -1).to(tl.int32)  # checked before narrowing: 2**32 would become 0
                safe_draft = tl.where(in_vocab, draft, 0)
                q_draft = 1.0
                if HAS_Q:
                    q_draft = tl.load(q_ptr + (draft0 + j) * vocab_size + safe_draft).to(tl.float32)
                if forced >= 0:
                    accept = (draft == forced) & (greedy | (q_draft > 0.0))
                elif greedy:
                    accept = arg == draft
                else:
                    x_draft = tl.load(logits_ptr + row * vocab_size + safe_draft).to(tl.float32) * inv_temperature
                    x_draft = tl.where(in_vocab, x_draft, float("-inf"))
                    p_draft = tl.where(x_draft == float("-inf"), 0.0, hardware_exp(x_draft - row_max) / row_sum)
                    draw = uniform(tl.load(seed_ptr + request), tl.load(position_ptr + request) + j)
                    accept = (q_draft > 0.0) & (draw * q_draft < p_draft)
                tl.atomic_min(rejected_at_ptr + request, tl.where(accept, NO_REJECTION, j))
            # the token where this row's is the last one emitted: forced, argmax or bonus race winner (a
            # sampled rejection's comes from the verify kernel's race)
            tl.store(row_token_ptr + request * width + j, tl.where(forced >= 0, forced, arg))
            tl.store(row_max_ptr + request * width + j, row_max)
            tl.store(row_sum_ptr + request * width + j, row_sum)


@triton.jit
def _residual_race(
    row_ptr,
    q_row_ptr,
    draft,
    key,
    inv_temperature,
    row_max,
    inv_sum,
    lo,
    hi,
    RESIDUAL: tl.constexpr,
    HAS_Q: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """(best score, lowest id attaining it) of the race over ids ``[lo, hi)`` of a rejected row: scores
    ``max(p - q, 0) / e`` with ``RESIDUAL``, else ``p / e`` (``p = exp(l / T - row_max) * inv_sum``; ``q``
    the row at ``q_row_ptr`` with ``HAS_Q``, else one-hot at ``draft``; ``e`` the noise of stream
    ``key`` times log2(e), which changes no winner: the best score is log2(e) times the race's). The id
    is ``lo`` where every score is -1 (no id in range)."""
    best = tl.full([BLOCK], -1.0, tl.float32)
    best_arg = tl.full([BLOCK], NO_ARG, tl.int32)
    for start in range(lo, hi, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        inside = offsets < hi
        x = tl.load(row_ptr + offsets, mask=inside, other=float("-inf")).to(tl.float32) * inv_temperature
        p = tl.where(x == float("-inf"), 0.0, hardware_exp(x - row_max) * inv_sum)
        if RESIDUAL:
            if HAS_Q:
                q = tl.load(q_row_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
            else:
                q = tl.where(offsets == draft, 1.0, 0.0)
            p = tl.maximum(p - q, 0.0)
        score = tl.where(inside, p * hardware_reciprocal(race_noise(key, offsets)), -1.0)
        best, best_arg = _lane_argmax_update(score, offsets, best, best_arg)
    top, top_arg = _reduce_argmax(best, best_arg)
    return top, tl.where(top_arg == NO_ARG, lo, top_arg)


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
    batch,
    width,
    stat_splits,
    num_splits,
    HAS_Q: tl.constexpr,
    HAS_FORCED: tl.constexpr,
    WIDTH_POW2: tl.constexpr,
    SPLITS_POW2: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """Program ``request * num_splits + split``: write the output row of ``request``; race over its
    rejected row where it is sampled. ``floats`` and ``ints``: the scratch of ``_scratch`` (with
    ``stat_splits`` splits per row in the row pass), judged by ``row_pass_kernel``; the output ``[B,
    width]`` and ``num_emitted [B]`` lead ``ints``."""
    program = tl.program_id(0)
    split = program % num_splits
    request = program // num_splits
    scratch = _scratch(floats_ptr, ints_ptr, batch, width, stat_splits)
    row_max_ptr = scratch[ROW_MAX]
    row_sum_ptr = scratch[ROW_SUM]
    race_ptr = scratch[RACE]
    out_ptr = scratch[OUT]
    num_emitted_ptr = scratch[NUM_EMITTED]
    first_row_ptr = scratch[FIRST_ROW]
    rejected_at_ptr = scratch[REJECTED_AT]
    counter_ptr = scratch[RACE_COUNTER]
    row_token_ptr = scratch[ROW_TOKEN]
    race_arg_ptr = scratch[RACE_ARG]
    k = tl.load(num_draft_ptr + request).to(tl.int32)
    row0 = tl.load(first_row_ptr + request).to(tl.int64)
    draft0 = row0 - request
    j = tl.minimum(tl.load(rejected_at_ptr + request), k)  # accepted drafts: those before the first rejection
    temperature = tl.load(temperature_ptr + request).to(tl.float32)
    free = True
    if HAS_FORCED:
        free = tl.load(forced_ptr + row0 + j) < 0
    pending = (j < k) & (temperature > 0.0) & free  # a sampled rejection: its token is drawn from the residual
    out_row = out_ptr + request.to(tl.int64) * width
    if split == 0:
        columns = tl.arange(0, WIDTH_POW2)
        drafts = tl.load(draft_ids_ptr + draft0 + columns, mask=columns < j, other=-1).to(tl.int32)
        token = tl.load(row_token_ptr + request * width + j)
        values = tl.where(columns < j, drafts, tl.where(columns == j, token, -1))
        race_column = tl.where(pending, j, -1)  # written by the race's last split
        tl.store(out_row + columns, values, mask=(columns < width) & (columns != race_column))
        tl.store(num_emitted_ptr + request, j + 1)

    if pending:
        inv_temperature = 1.0 / temperature
        row_max = tl.load(row_max_ptr + request * width + j)
        inv_sum = 1.0 / tl.load(row_sum_ptr + request * width + j)
        row_ptr = logits_ptr + (row0 + j) * vocab_size
        q_row_ptr = q_ptr + (draft0 + j) * vocab_size
        draft = tl.load(draft_ids_ptr + draft0 + j)
        draft = tl.where((draft >= 0) & (draft < vocab_size), draft, -1).to(tl.int32)  # out of vocabulary: no q
        key = stream_key(tl.load(seed_ptr + request), tl.load(position_ptr + request) + j, 2)
        lo = split * split_size
        hi = tl.minimum(lo + split_size, vocab_size)
        top, winner = _residual_race(
            row_ptr, q_row_ptr, draft, key, inv_temperature, row_max, inv_sum, lo, hi, True, HAS_Q, BLOCK
        )
        slot = request * num_splits + split
        tl.store(race_ptr + slot, top)
        tl.store(race_arg_ptr + slot, winner)
        tl.debug_barrier()  # every lane's stores before the release below
        if tl.atomic_add(counter_ptr + request, 1, sem="acq_rel") == num_splits - 1:  # the last split
            splits = tl.arange(0, SPLITS_POW2)
            inside = splits < num_splits
            base = request * num_splits
            scores = tl.load(race_ptr + base + splits, mask=inside, other=float("-inf"), cache_modifier=".cg")
            winners = tl.load(race_arg_ptr + base + splits, mask=inside, other=0, cache_modifier=".cg")
            top, token = _reduce_argmax(scores, winners)
            if top <= 0.0:  # a residual without mass (every score 0) samples p instead (RS-PROB-4): rare, one program
                top, token = _residual_race(
                    row_ptr,
                    q_row_ptr,
                    draft,
                    key,
                    inv_temperature,
                    row_max,
                    inv_sum,
                    0,
                    vocab_size,
                    False,
                    HAS_Q,
                    BLOCK,
                )
            tl.store(out_row + j, token)
