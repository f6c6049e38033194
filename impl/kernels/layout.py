"""The canonical ragged layout on the device (RS-LAYOUT-1, TB-BATCH-5)."""

import triton
import triton.language as tl


@triton.jit
def first_row(num_draft_ptr, request, BLOCK: tl.constexpr):
    """First logits row of ``request``: ``request + sum_{s < request} K_s``, as int64, summed by the
    calling program: ``O(request)`` loads per program, ``O(B^2)`` per launch. The budget step uses it: its
    step is one launch, with no earlier launch of its own to run ``store_first_rows``."""
    total = request.to(tl.int64)
    for start in range(0, request, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(num_draft_ptr + offsets, mask=offsets < request, other=0).to(tl.int64), axis=0)
    return total


@triton.jit
def store_first_rows(num_draft_ptr, batch, first_row_ptr, BLOCK: tl.constexpr):
    """``first_row [B]`` int32: every request's first logits row, ``i + sum_{s < i} K_s``, from one
    prefix sum over ``num_draft [B]`` (``O(B)`` loads), in the calling program."""
    carry = 0
    for start in range(0, batch, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        rows = tl.load(num_draft_ptr + offsets, mask=offsets < batch, other=0).to(tl.int32) + 1
        inclusive = tl.cumsum(rows, axis=0)
        tl.store(first_row_ptr + offsets, carry + inclusive - rows, mask=offsets < batch)
        carry += tl.sum(rows, axis=0)
