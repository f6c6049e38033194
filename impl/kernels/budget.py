"""Triton kernels of the thinking-budget state (specs/thinking-budget.md).

State layout: ``state [NUM_FIELDS, max_num_reqs]`` int32 with the fields of
``specconform.impl.thinking_budget`` (TRACKED, BUDGET, IN_SECTION, START_M, END_M, COUNT, SPENT).
One program (of one warp: the work is scalar) per slot for ``budget_step_kernel``, which advances the
state by the committed tokens, writes the forced rows and makes the forced logits rows one-hot, in one
launch. Markers and their KMP failure
functions are held in registers (``_load_markers``), so a KMP step costs no memory access.
No kernel reads anything back to the host.
"""

import triton
import triton.language as tl

from .layout import first_row


@triton.jit
def _matchable(token):
    """A token id of any integer dtype as the int32 the matching reads; an id outside [0, 2**31 - 1], which no
    marker holds, becomes -2 (no marker id, nor the -1 padding) instead of wrapping (``thinking_budget.NO_MARKER``)."""
    return tl.where((token < 0) | (token > 2147483647), -2, token).to(tl.int32)


@triton.jit
def _load_state(state_ptr, state_stride, slot):
    """One slot's fields: TRACKED, BUDGET, IN_SECTION, START_M, END_M, COUNT, SPENT."""
    fields = state_ptr + slot
    tracked = tl.load(fields)
    budget = tl.load(fields + state_stride)
    in_section = tl.load(fields + 2 * state_stride)
    start_m = tl.load(fields + 3 * state_stride)
    end_m = tl.load(fields + 4 * state_stride)
    count = tl.load(fields + 5 * state_stride)
    spent = tl.load(fields + 6 * state_stride)
    return tracked, budget, in_section, start_m, end_m, count, spent


@triton.jit
def _load_markers(
    start_ptr, start_fail_ptr, end_ptr, end_fail_ptr, START_LEN: tl.constexpr, END_LEN: tl.constexpr, PAD: tl.constexpr
):
    """Both markers and their failure functions as register vectors of ``PAD`` entries."""
    index = tl.arange(0, PAD)
    start = tl.load(start_ptr + index, mask=index < START_LEN, other=-1)
    start_fail = tl.load(start_fail_ptr + index, mask=index < START_LEN, other=0)
    end = tl.load(end_ptr + index, mask=index < END_LEN, other=-1)
    end_fail = tl.load(end_fail_ptr + index, mask=index < END_LEN, other=0)
    return start, start_fail, end, end_fail


@triton.jit
def _at(vector, position, PAD: tl.constexpr):
    """``vector[position]`` of a register vector, for a scalar ``position``."""
    return tl.sum(tl.where(tl.arange(0, PAD) == position, vector, 0), axis=0)


@triton.jit
def _kmp_step(matched, token, marker, failure, LENGTH: tl.constexpr, PAD: tl.constexpr):
    """One KMP step: the new partial-match length after ``token`` (``matched < LENGTH``)."""
    for _ in tl.static_range(LENGTH):
        mismatch = (matched > 0) & (_at(marker, matched, PAD) != token)
        matched = tl.where(mismatch, _at(failure, matched - 1, PAD), matched)
    return tl.where(_at(marker, matched, PAD) == token, matched + 1, matched)


@triton.jit
def _feed(
    in_section,
    start_m,
    end_m,
    count,
    spent,
    token,
    active,
    start,
    start_fail,
    end,
    end_fail,
    START_LEN: tl.constexpr,
    END_LEN: tl.constexpr,
    PAD: tl.constexpr,
):
    """Feed one committed or drafted token to one slot's automaton where ``active``."""
    new_end = _kmp_step(end_m, token, end, end_fail, END_LEN, PAD)
    new_start = _kmp_step(start_m, token, start, start_fail, START_LEN, PAD)
    inside = active & (in_section != 0)
    outside = active & (in_section == 0)
    closes = inside & (new_end == END_LEN)
    opens = outside & (new_start == START_LEN)
    spent = tl.where(closes, spent + count + 1 - END_LEN, spent)
    count = tl.where(inside, tl.where(closes, 0, count + 1), tl.where(opens, 0, count))
    end_m = tl.where(inside, tl.where(closes, 0, new_end), tl.where(opens, 0, end_m))
    start_m = tl.where(outside, tl.where(opens, 0, new_start), tl.where(closes, 0, start_m))
    in_section = tl.where(closes, 0, tl.where(opens, 1, in_section))
    return in_section, start_m, end_m, count, spent


@triton.jit
def _forced(tracked, budget, in_section, end_m, count, spent, end, SECTION_SCOPE: tl.constexpr, PAD: tl.constexpr):
    """The forced token of one position (TB-FORCE-1), -1 where free."""
    budget_left = budget if SECTION_SCOPE else budget - spent
    forced = (tracked != 0) & (in_section != 0) & (count >= budget_left)
    return tl.where(forced, _at(end, end_m, PAD), -1)


@triton.jit
def _write_one_hot(row_ptr, token, vocab_size, BLOCK: tl.constexpr):
    """``row [vocab_size]`` := 0 at ``token``, -inf elsewhere."""
    for start in range(0, vocab_size, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        values = tl.where(offsets == token, 0.0, float("-inf"))
        tl.store(row_ptr + offsets, values.to(row_ptr.dtype.element_ty), mask=offsets < vocab_size)


@triton.jit
def budget_step_kernel(
    state_ptr,
    state_stride,
    tokens_ptr,
    tokens_width,
    num_draft_ptr,
    draft_ids_ptr,
    out_ptr,
    logits_ptr,
    logits_stride,
    vocab_size,
    start_ptr,
    start_fail_ptr,
    end_ptr,
    end_fail_ptr,
    START_LEN: tl.constexpr,
    END_LEN: tl.constexpr,
    PAD: tl.constexpr,
    MAX_DRAFTS: tl.constexpr,
    SECTION_SCOPE: tl.constexpr,
    HAS_COMMITTED: tl.constexpr,
    HAS_ROWS: tl.constexpr,
    HAS_DRAFTS: tl.constexpr,
    HAS_LOGITS: tl.constexpr,
    LAYOUT_BLOCK: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One step of slot ``program_id(0)``, in one launch: with ``HAS_COMMITTED`` feed it its committed
    tokens (the prefix before the first -1 of row ``slot`` of ``tokens [B, tokens_width]``) and store
    the state; with ``HAS_ROWS`` then write ``out[row]``, the forced token of each of its logits rows
    (-1 = free), row ``j`` judged on the state after its first ``j`` drafts; with ``HAS_LOGITS`` also
    make each forced row of ``logits [rows, vocab_size]`` one-hot (a free row costs nothing, so the
    step does not grow with the vocabulary when nothing is forced)."""
    slot = tl.program_id(0)
    start, start_fail, end, end_fail = _load_markers(
        start_ptr, start_fail_ptr, end_ptr, end_fail_ptr, START_LEN, END_LEN, PAD
    )
    tracked, budget, in_section, start_m, end_m, count, spent = _load_state(state_ptr, state_stride, slot)
    if HAS_COMMITTED:
        live = tracked != 0
        for c in range(tokens_width):
            raw = tl.load(tokens_ptr + slot * tokens_width + c)
            live = live & (raw != -1)
            in_section, start_m, end_m, count, spent = _feed(
                in_section,
                start_m,
                end_m,
                count,
                spent,
                _matchable(raw),
                live,
                start,
                start_fail,
                end,
                end_fail,
                START_LEN,
                END_LEN,
                PAD,
            )
        tl.store(state_ptr + 2 * state_stride + slot, in_section)
        tl.store(state_ptr + 3 * state_stride + slot, start_m)
        tl.store(state_ptr + 4 * state_stride + slot, end_m)
        tl.store(state_ptr + 5 * state_stride + slot, count)
        tl.store(state_ptr + 6 * state_stride + slot, spent)
    if HAS_ROWS:
        if HAS_DRAFTS:
            k = tl.load(num_draft_ptr + slot).to(tl.int32)
            row0 = first_row(num_draft_ptr, slot, LAYOUT_BLOCK)
            draft0 = row0 - slot
            for j in tl.static_range(MAX_DRAFTS):
                live = j < k
                forced = _forced(tracked, budget, in_section, end_m, count, spent, end, SECTION_SCOPE, PAD)
                tl.store(out_ptr + row0 + j, forced, mask=live)
                if HAS_LOGITS:  # noqa: SIM102 - a static branch: the body compiles only with logits
                    if live & (forced >= 0):
                        _write_one_hot(logits_ptr + (row0 + j).to(tl.int64) * logits_stride, forced, vocab_size, BLOCK)
                token = _matchable(tl.load(draft_ids_ptr + draft0 + j, mask=live, other=0))
                in_section, start_m, end_m, count, spent = _feed(
                    in_section,
                    start_m,
                    end_m,
                    count,
                    spent,
                    token,
                    live & (tracked != 0),
                    start,
                    start_fail,
                    end,
                    end_fail,
                    START_LEN,
                    END_LEN,
                    PAD,
                )
        else:
            k = 0
            row0 = slot
        forced = _forced(tracked, budget, in_section, end_m, count, spent, end, SECTION_SCOPE, PAD)
        tl.store(out_ptr + row0 + k, forced)
        if HAS_LOGITS:  # noqa: SIM102 - a static branch: the body compiles only with logits
            if forced >= 0:
                _write_one_hot(logits_ptr + (row0 + k).to(tl.int64) * logits_stride, forced, vocab_size, BLOCK)
