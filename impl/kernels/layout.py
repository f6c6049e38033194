"""The canonical ragged layout on the device (RS-LAYOUT-1, TB-BATCH-5)."""

import triton
import triton.language as tl


@triton.jit
def first_row(num_draft_ptr, request, BLOCK: tl.constexpr):
    """First logits row of ``request``: ``request + sum_{s < request} K_s``, as int64.

    Summed in-kernel so that no prefix-sum launch precedes the kernels that need it."""
    total = request.to(tl.int64)
    for start in range(0, request, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(num_draft_ptr + offsets, mask=offsets < request, other=0).to(tl.int64), axis=0)
    return total
