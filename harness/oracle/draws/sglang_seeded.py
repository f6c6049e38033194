"""Draw scheme ``sglang-seeded``: SGLang 0.5.23's seeded verification coins, in NumPy.

Written from SGLang's own source, sharing no code with it: ``sglang/srt/speculative/eagle_utils.py``,
``_seeded_verify_coins`` hashes ``murmur_hash32(seed, seq_len, column)`` for columns ``0 .. K`` (column ``j < K`` the
coin of draft ``j``, column ``K`` the coin of the final sampling), divides the uint32 hash by ``2^32 - 1`` in float64,
rounds it to float32 and clamps it to ``1 - 2^-24``. ``murmur_hash32`` is ``murmur_hash32_kernel`` of
``sglang/kernels/ops/sampling/murmur_hash.py``: MurmurHash3_x86_32 of the words (seed low, seed high, seq_len as
uint32, column) under the initial hash 0. Coins lie in [0, 1 - 2^-24]: a coin is 0 exactly when the hash is 0.
"""

from __future__ import annotations

import numpy as np

from . import murmur3

NAME = "sglang-seeded"
FOLLOWS = (
    "sglang/srt/speculative/eagle_utils.py: _seeded_verify_coins",
    "sglang/kernels/ops/sampling/murmur_hash.py: murmur_hash32_kernel, murmur3_mix, rotl32, fmix32",
)
MAX_COIN = np.float32(1.0 - 2.0**-24)


def coin_hash(seed, seq_len, column) -> np.ndarray:
    """``murmur_hash32_kernel`` of (seed, seq_len, column), broadcast over int64 inputs: uint32."""
    s = np.asarray(seed, dtype=np.int64).astype(np.uint64)
    p = np.asarray(seq_len, dtype=np.int64).astype(np.uint64)
    return murmur3.murmur3_32((s, s >> np.uint64(32), p, np.asarray(column, dtype=np.uint64)), seed=0)


def verify_coins(seed, seq_len, draft_token_num: int) -> tuple[np.ndarray, np.ndarray]:
    """``_seeded_verify_coins`` for requests with int64 ``seed [B]`` and ``seq_len [B]``: the draft coins
    ``[B, draft_token_num]`` and the final-sampling coins ``[B]``, float32."""
    seed = np.asarray(seed, dtype=np.int64).reshape(-1, 1)
    seq_len = np.asarray(seq_len, dtype=np.int64).reshape(-1, 1)
    hashed = coin_hash(seed, seq_len, np.arange(draft_token_num + 1)[None, :]).astype(np.float64)
    coins = np.minimum((hashed / 4294967295.0).astype(np.float32), MAX_COIN)
    return coins[:, :draft_token_num], coins[:, draft_token_num]


def inverse_cdf(weights: np.ndarray, coin: float) -> tuple[int, float]:
    """SGLang's final sampling (``reject_sampling.py``, ``speculative_sampling_classic_kernel``, pass 2) of the
    unnormalised ``weights [V]`` (float64, >= 0) with ``coin``: the first id whose running sum exceeds
    ``coin * sum(weights)``, and that threshold's distance to the nearest running sum of a weighted id (the last
    excepted: the threshold never reaches the total), relative to the total (inf where nothing is near). A kernel
    summing in float32 may part from this only where that distance is within its rounding."""
    weights = np.asarray(weights, dtype=np.float64)
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    threshold = float(coin) * total
    token = int(np.argmax(cumulative > threshold))
    inner = cumulative[weights > 0][:-1]
    distance = np.abs(inner - threshold).min(initial=np.inf) / total
    return token, float(distance)
