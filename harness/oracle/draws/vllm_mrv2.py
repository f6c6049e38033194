"""Draw scheme ``vllm-mrv2``: the draws of vLLM 0.33's Model Runner V2 sampler and rejection sampler, in NumPy.

Written from vLLM 0.33.0's own source, sharing no code with it:

* acceptance uniforms: ``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``, ``_rejection_kernel`` draws
  ``u = tl_rand32(step_seed, pos, includes_zero=False)`` for draft ``i`` of a request, where ``pos`` is the position
  of the draft's logits row and ``step_seed = spec_step_seed(seed, i)`` under block verification, else the request's
  seed. ``tl_rand32`` and ``spec_step_seed`` are in ``vllm/v1/worker/gpu/sample/gumbel.py``; ``tl.rand`` is Triton's
  (``triton/language/random.py``: ``rand`` -> ``randint`` -> ``randint4x`` -> ``philox``, then
  ``uint_to_uniform_float``): Philox4x32-10 with counter ``(pos low, pos high, 0, 0)`` and key
  ``(seed low, seed high)``, word 0 read as int32, negatives complemented, times ``4.6566127342e-10`` in float32.
* sampled tokens: ``gumbel.py``, ``gumbel_noised_argmax`` (its default float32 path): the argmax over token ids
  ``t`` of ``logits / temp + g``, ``g = -log(-log1p(-u))`` with ``u = murmur3_uniform32(seed, pos, t)``
  (``_log1p_neg_stable`` is its log1p), ``murmur3_uniform32`` being MurmurHash3_x86_32 of the words (seed low,
  seed high, pos low, t) under the initial hash ``domain`` = 0 (``murmur3_hash32``), split into 16-bit halves and
  summed in float32 as ``(h + 0.5) * 2^-32`` rounded once. A drafting model adds ``_DRAFT_NOISE_SALT = 2^30`` to
  ``pos``. The rejection sampler's recovered and bonus tokens (``_resample_kernel`` -> ``_seeded_resample_argmax``)
  take this noise at the position of the resampled row, with the request's seed, over the residual's logits.

The uniforms are bit-exact (float32 values the kernels compute with integer and exactly rounded float operations).
The Gumbel noise is computed in float64 here: the kernel's float32 logarithms are not correctly rounded, so a sampled
token is judged exactly only where the best score leads the second by more than a tolerance (``argmax_with_gap``).
"""

from __future__ import annotations

import numpy as np

from . import murmur3, philox

NAME = "vllm-mrv2"
FOLLOWS = (
    "vllm/v1/worker/gpu/sample/gumbel.py: tl_rand32, spec_step_seed, murmur3_hash32, murmur3_uniform32, "
    "_log1p_neg_stable, gumbel_noised_argmax (float32 path)",
    "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py: _rejection_kernel (u, accept test), "
    "_resample_kernel (residual logits, seeded Gumbel argmax)",
    "triton/language/random.py (Triton 3.9): rand, randint, randint4x, philox, philox_impl, uint_to_uniform_float",
)
TL_RAND_SCALE = np.float32(4.6566127342e-10)  # uint_to_uniform_float's 32-bit scale, rounded to float32
TL_RAND_MIN = np.float32(4.6566127342e-10)  # gumbel.py: _TL_RAND_MIN, tl_rand32's floor without zero
DRAFT_NOISE_SALT = 1 << 30  # gumbel.py: _DRAFT_NOISE_SALT
MASK64 = (1 << 64) - 1


def _u64(x) -> np.ndarray:
    """int64 values (seeds, positions) as their two's-complement uint64 bits."""
    return np.asarray(x, dtype=np.int64).astype(np.uint64)


def spec_step_seed(seed, step) -> np.ndarray:
    """``seed ^ (step << 32)`` in int64 (block verification's per-step seed); int64 array."""
    return (_u64(seed) ^ (_u64(step) << np.uint64(32))).astype(np.int64)


def tl_rand(seed, offset) -> np.ndarray:
    """Triton's ``tl.rand(seed, offset)`` for int64 ``seed`` and ``offset`` (broadcast): float32 in [0, 1)."""
    s, o = _u64(seed), _u64(offset)
    lo32 = np.uint64(0xFFFFFFFF)
    word0 = philox.philox4x32((o & lo32, o >> np.uint64(32), 0, 0), (s & lo32, s >> np.uint64(32)))[0]
    x = word0.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * TL_RAND_SCALE


def acceptance_uniform(seed, pos, step=None) -> np.ndarray:
    """The acceptance uniform ``u`` of ``_rejection_kernel`` (``tl_rand32(.., includes_zero=False)``): float32 in
    ``[TL_RAND_MIN, 1)``. ``seed``: the request's int64 seed; ``pos``: the int64 position of the draft's logits row;
    ``step``: the draft's index under block verification (``spec_step_seed``), None otherwise. Broadcast shapes."""
    if step is not None:
        seed = spec_step_seed(seed, step)
    return np.maximum(tl_rand(seed, pos), TL_RAND_MIN)


def gumbel_hash(seed, pos, token_ids, drafting: bool = False) -> np.ndarray:
    """``murmur3_hash32(seed, pos, token_ids)`` with domain 0: uint32, broadcast over the int64 inputs."""
    s = _u64(seed)
    p = _u64(pos) + np.uint64(DRAFT_NOISE_SALT if drafting else 0)
    t = _u64(token_ids)
    return murmur3.murmur3_32((s, s >> np.uint64(32), p, t), seed=0)


def gumbel_uniform(seed, pos, token_ids, drafting: bool = False) -> np.ndarray:
    """``murmur3_uniform32``: float32 ``(h + 0.5) * 2^-32`` rounded once, in (0, 1]."""
    h = gumbel_hash(seed, pos, token_ids, drafting).astype(np.float64)
    return ((h + 0.5) * 2.0**-32).astype(np.float32)


def gumbel_noise(seed, pos, token_ids, drafting: bool = False) -> np.ndarray:
    """The Gumbel noise ``-log(-log1p(-u))`` of ``gumbel_noised_argmax``'s float32 path, in float64."""
    u = gumbel_uniform(seed, pos, token_ids, drafting).astype(np.float64)
    with np.errstate(divide="ignore"):
        return -np.log(-np.log1p(-u))


def argmax_with_gap(scores: np.ndarray) -> tuple[int, float]:
    """The winner of ``scores [V]`` (float64 log-domain, -inf excluded; ties to the lowest id, as ``tl.max`` and the
    block argmax take the first) and its lead over the runner-up relative to ``max(1, |best|)`` (inf when alone)."""
    scores = np.asarray(scores, dtype=np.float64)
    best = int(np.argmax(scores))
    finite = np.sort(scores[np.isfinite(scores)])
    if len(finite) < 2:
        return best, np.inf
    return best, float((finite[-1] - finite[-2]) / max(1.0, abs(finite[-1])))


def gumbel_argmax(log_weights: np.ndarray, seed: int, pos: int, drafting: bool = False) -> tuple[int, float]:
    """The token ``gumbel_noised_argmax`` samples from ``log_weights [V]`` (float64; logits after temperature, or a
    residual's log-probabilities, -inf for excluded ids) at ``(seed, pos)``, and its gap (``argmax_with_gap``)."""
    log_weights = np.asarray(log_weights, dtype=np.float64)
    noise = gumbel_noise(seed, pos, np.arange(log_weights.shape[-1]), drafting)
    return argmax_with_gap(np.where(np.isneginf(log_weights), -np.inf, log_weights + noise))
