"""The read-once floor of a rejection-sampling shape, measured: the time a plain reduction kernel takes
to read given rows of ``target_logits`` and ``draft_probs`` once each, at their dtypes, on the GPU
that runs the sampler. ``specconform.harness.bench.shapes`` chooses the rows (which ones a correct sampler cannot skip)
and times this reader the way it times the sampler.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# (elements of a row per program, block, warps): the floor is the fastest of these readers, so that
# few rows get many programs and many rows get wide ones
READERS = ((4096, 1024, 4), (16384, 2048, 8), (65536, 4096, 8))


@triton.jit
def read_rows_kernel(target_ptr, q_ptr, rows_ptr, num_target_rows, vocab_size, sums_ptr, SPLIT, BLOCK: tl.constexpr):
    """``sums [len(rows), num_splits]`` float32: the sum of part ``program_id(1)`` (``SPLIT`` elements) of
    each listed row; ``rows [num_target_rows + num_q_rows]`` int64 holds target row ids, then q row ids."""
    entry = tl.program_id(0)
    split = tl.program_id(1)
    row = tl.load(rows_ptr + entry)
    lo = split * SPLIT
    hi = tl.minimum(lo + SPLIT, vocab_size)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    if entry < num_target_rows:  # the two pointers may differ in dtype: each branch has its own
        for start in range(lo, hi, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            total += tl.load(target_ptr + row * vocab_size + offsets, mask=offsets < hi, other=0.0).to(tl.float32)
    else:
        for start in range(lo, hi, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            total += tl.load(q_ptr + row * vocab_size + offsets, mask=offsets < hi, other=0.0).to(tl.float32)
    tl.store(sums_ptr + entry * tl.num_programs(1) + split, tl.sum(total, axis=0))


def read_floor_ms(target_logits, draft_probs, target_rows, q_rows, time_ms) -> tuple[float, int]:
    """(fastest time of the readers in milliseconds, bytes read) for reading rows ``target_rows``
    (int64 ``[n]``) of ``target_logits [rows, V]`` and ``q_rows`` (int64 ``[m]``) of ``draft_probs
    [drafts, V]`` (None where ``m = 0``) once; ``time_ms(fn)`` times one launch of ``fn``."""
    vocab = target_logits.shape[1]
    rows = torch.cat([target_rows, q_rows]).to(torch.int64).contiguous()
    q = draft_probs if draft_probs is not None else target_logits
    read_bytes = target_rows.numel() * vocab * target_logits.element_size() + q_rows.numel() * vocab * q.element_size()
    best = float("inf")
    for split, block, warps in READERS:
        num_splits = triton.cdiv(vocab, split)
        sums = torch.empty(rows.numel(), num_splits, dtype=torch.float32, device=rows.device)

        def read(split=split, block=block, warps=warps, num_splits=num_splits, sums=sums):
            read_rows_kernel[(rows.numel(), num_splits)](
                target_logits, q, rows, target_rows.numel(), vocab, sums, split, BLOCK=block, num_warps=warps
            )

        best = min(best, time_ms(read))
    return best, read_bytes
