"""Draw scheme ``flashinfer-philox``: the uniforms of FlashInfer 0.7.2's chain speculative sampling, in NumPy.

Written from FlashInfer's source and the curand device API it calls, sharing no code with either:

* ``include/flashinfer/sampling.cuh``, ``ChainSpeculativeSampling``: the CUDA block of batch row ``row`` calls
  ``curand_init(seed, row, offset, &state)`` (``seed``, ``offset``: the row's entries of the caller's tensors, or the
  call's scalars), then draws with ``curand_uniform`` in this order. Draft ``j`` takes draw ``j`` until the first
  rejection, at draft ``pos``; the second loop then tests drafts ``pos .. K - 1`` again, each with a fresh draw
  (draft ``i`` with draw ``i + 1``), only to count ``output_accepted_token_num``; the final sample takes the next draw:
  ``K + 1`` after a rejection, ``K`` when every draft was accepted. A draft is accepted when
  ``u * draft_prob < target_prob`` (float32).
* curand's ``curandStatePhilox4_32_10_t`` (CUDA's ``curand_kernel.h``, ``curand_philox4x32_x.h``,
  ``curand_uniform.h``): ``curand_init`` sets the key to (seed low, seed high) and the counter to 0, adds the
  subsequence to counter words 2-3 (``skipahead_sequence``) and ``offset / 4`` blocks to words 0-1 with ``offset % 4``
  the word to start at (``skipahead``); ``curand`` returns the block's words in order and moves to the next block
  after word 3. The block is Philox4x32-10 of the counter. ``_curand_uniform(x)`` is ``x * 2^-32 + 2^-33`` in float32
  (``x`` rounded to float32 first): values in (0, 1], 1.0 for the largest words.

The final sample is an inverse-CDF scan over the residual in blocks (``DeviceSamplingFromProb``), which this scheme
does not model: it gives the uniforms, and the acceptance decisions follow from them exactly.
"""

from __future__ import annotations

import numpy as np

from . import philox

NAME = "flashinfer-philox"
FOLLOWS = (
    "include/flashinfer/sampling.cuh (FlashInfer 0.7.2): ChainSpeculativeSampling (curand_init, curand_uniform order)",
    "CUDA curand_kernel.h / curand_philox4x32_x.h / curand_uniform.h: curand_init, skipahead_sequence, skipahead, "
    "Philox_State_Incr(_hi), curand, curand_Philox4x32_10, _curand_uniform",
)
TWO_POW_32_INV = np.float32(2.0**-32)  # CURAND_2POW32_INV
HALF_STEP = np.float32(2.0**-33)  # CURAND_2POW32_INV / 2.0f


def curand_uint32(seed, subsequence, offset, n) -> np.ndarray:
    """Word ``n`` (0-based) that ``curand`` returns after ``curand_init(seed, subsequence, offset)``: uint32, broadcast
    over the inputs (``seed`` and ``offset`` uint64 values, ``subsequence`` below 2^32, ``n`` small)."""
    seed = np.asarray(seed, dtype=np.uint64)
    offset = np.asarray(offset, dtype=np.uint64)
    sub = np.asarray(subsequence, dtype=np.uint64)
    within = (offset & np.uint64(3)) + np.asarray(n, dtype=np.uint64)  # skipahead's STATE, then n more words
    block = (offset >> np.uint64(2)) + (within >> np.uint64(2))
    lo32 = np.uint64(0xFFFFFFFF)
    words = philox.philox4x32(
        (block & lo32, block >> np.uint64(32), sub & lo32, sub >> np.uint64(32)),
        (seed & lo32, seed >> np.uint64(32)),
    )
    word = np.broadcast_to(within & np.uint64(3), words[0].shape)
    return np.choose(word.astype(np.int64), words)


def curand_uniform(seed, subsequence, offset, n) -> np.ndarray:
    """``curand_uniform``'s draw ``n`` of that stream: float32 in (0, 1]."""
    x = curand_uint32(seed, subsequence, offset, n).astype(np.float32)
    return x * TWO_POW_32_INV + HALF_STEP


def chain_uniforms(seed, row, offset, num_speculative_tokens: int) -> np.ndarray:
    """Every draw ``[..., K + 2]`` float32 that batch row ``row`` of ``ChainSpeculativeSampling`` may take, in stream
    order (the module's docstring says which draw each test and the final sample take). ``seed``, ``row`` and
    ``offset`` broadcast (uint64 values)."""
    seed, row, offset = (np.asarray(x, dtype=np.uint64)[..., None] for x in (seed, row, offset))
    return curand_uniform(seed, row, offset, np.arange(num_speculative_tokens + 2))
