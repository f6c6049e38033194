"""Boundary hunting: seeds and positions whose acceptance uniform lands on a decision boundary of the rule
``accept iff u * q(d) < p(d)``, found under a named draw scheme, so that an exact check can judge the rare draws a
statistical check never sees (issue 38).

The boundaries (``targets``): ``zero``, the smallest ``u`` the scheme draws (0, where a draft with ``p(d) = 0``
must still be rejected: ``0 < 0`` is false, ``0 <= 0`` true); ``half``, ``u = 1/2``, equal to the representable
``p(d) / q(d)`` of two equal logits; ``top``, the largest ``u`` it draws, 1 - 2^-24 in all three (below 1, where a draft
with ``p(d) = 1`` must still be accepted). Model Runner V2's uniform is ``float32(x) * float32(4.6566127342e-10)`` and
that scale is 2^-31 rounded down, so its largest is 1 - 2^-24 too, never 1; its smallest, the floor ``TL_RAND_MIN``
(4 words in 2^32), is no target: the search below would need some 10^9 positions.

The schemes are counter-based, so a search is a vector computation: ``search`` computes the uniforms of draft 0 at
positions ``start, start + 1, ...`` of one seed in chunks and keeps the first position of each boundary. That finds
each boundary of the reference draws (a 2^-24 event each) and Model Runner V2's ``top`` and ``half`` (2^-25 and
about 2^-24.5) in some 10^7 positions. SGLang's coin is 0 only for the hash 0, a 2^-32 event, but MurmurHash3 is a
bijection in each word of its message, so ``sglang_position`` solves for the position word that gives a coin its
hash, and every SGLang boundary is found at once.
"""

from __future__ import annotations

import functools

import numpy as np

from . import rng
from .draws import murmur3, sglang_seeded, vllm_mrv2

MASK32 = 0xFFFFFFFF
# the value of each boundary's uniform, per scheme
TARGETS = {
    "reference": {"zero": 0.0, "half": 0.5, "top": 1.0 - 2.0**-24},
    "vllm-mrv2": {"half": 0.5, "top": 1.0 - 2.0**-24},
    "sglang-seeded": {"zero": 0.0, "half": 0.5, "top": float(sglang_seeded.MAX_COIN)},
}
# the hash of SGLang's coin on each boundary: 0 -> 0, 2^31 / (2^32 - 1) rounds to 0.5, 1 clamps to 1 - 2^-24
SGLANG_HASHES = {"zero": 0, "half": 1 << 31, "top": MASK32}
CHUNK = 1 << 14  # positions per vector step: the working set stays in cache
BUDGET = 1 << 27  # positions searched at most per seed


def targets(scheme: str) -> dict[str, float]:
    """The boundaries ``scheme``'s acceptance uniforms can land on, by name; a ValueError names an unknown scheme."""
    if scheme not in TARGETS:
        raise ValueError(f"boundaries: scheme must be one of {', '.join(TARGETS)}; got {scheme!r}")
    return TARGETS[scheme]


def reference_uniforms(seed: int, positions: np.ndarray) -> np.ndarray:
    """``rng.uniform(seed, position)`` for int64 ``positions [n]`` at once: float64 ``[n]``."""
    seed &= (1 << 64) - 1
    h = rng.mix32(np.uint64((seed & MASK32) ^ 0x9E3779B9))
    h = rng.mix32(h ^ np.uint64(seed >> 32))
    p = np.asarray(positions, dtype=np.int64).astype(np.uint64)
    h = rng.mix32(h ^ (p & np.uint64(MASK32)))
    h = rng.mix32(h ^ (p >> np.uint64(32)))
    h = rng.mix32(rng.mix32(h ^ np.uint64(rng.PURPOSE_ACCEPT)) ^ np.uint64(0))
    return (h >> np.uint64(8)).astype(np.float64) * 2.0**-24


def uniforms(scheme: str, seed: int, positions: np.ndarray) -> np.ndarray:
    """The acceptance uniforms of draft 0 of requests at int64 ``positions [n]`` with ``seed``: float64 ``[n]``."""
    if scheme == "reference":
        return reference_uniforms(seed, positions)
    if scheme == "vllm-mrv2":
        return vllm_mrv2.acceptance_uniform(seed, positions).astype(np.float64)
    if scheme == "sglang-seeded":
        return sglang_seeded.verify_coins(np.full(len(positions), seed), positions, 1)[0][:, 0].astype(np.float64)
    raise ValueError(f"boundaries: scheme must be one of {', '.join(TARGETS)}; got {scheme!r}")


def search(scheme: str, seed: int, start: int = 0, budget: int = BUDGET) -> tuple[dict[str, int], int]:
    """The first position from ``start`` at which draft 0's uniform lands on each boundary of ``scheme`` with
    ``seed``, searched over at most ``budget`` positions in vector chunks: ``({boundary: position}, positions
    searched)``; a boundary not found in the budget is absent."""
    wanted = dict(targets(scheme))
    found: dict[str, int] = {}
    searched = 0
    while wanted and searched < budget:
        positions = np.arange(start + searched, start + searched + min(CHUNK, budget - searched), dtype=np.int64)
        u = uniforms(scheme, seed, positions)
        for name, value in list(wanted.items()):
            hits = np.flatnonzero(u == value)
            if len(hits):
                found[name] = int(positions[hits[0]])
                del wanted[name]
        searched += len(positions)
    return found, searched


def _inverse_fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * pow(0xC2B2AE35, -1, 1 << 32)) & MASK32
    h ^= (h >> 13) ^ (h >> 26)
    h = (h * pow(0x85EBCA6B, -1, 1 << 32)) & MASK32
    return h ^ (h >> 16)


def _rotr(x: int, r: int) -> int:
    return ((x >> r) | (x << (32 - r))) & MASK32


def _unmix(h_after: int, h_before: int) -> int:
    """The message word that ``murmur3.mix`` takes from ``h_before`` to ``h_after``."""
    k = _rotr(((h_after - 0xE6546B64) * pow(5, -1, 1 << 32)) & MASK32, 13) ^ h_before
    k = _rotr((k * pow(int(murmur3.C2), -1, 1 << 32)) & MASK32, 15)
    return (k * pow(int(murmur3.C1), -1, 1 << 32)) & MASK32


def _mix(h: int, word: int) -> int:
    return int(murmur3.mix(np.asarray(h, dtype=np.uint64), np.asarray(word, dtype=np.uint64)))


def sglang_position(seed: int, column: int, coin_hash: int) -> int:
    """The position (SGLang's ``seq_lens``, below 2^32) at which ``murmur_hash32(seed, seq_lens, column)`` is
    ``coin_hash``: the hash inverted through its finaliser, its last word and the position's word."""
    seed &= (1 << 64) - 1
    h2 = _mix(_mix(0, seed & MASK32), seed >> 32)
    h4 = _inverse_fmix32(coin_hash) ^ 16  # a message of four words
    h3 = _mix_back(h4, column)
    return _unmix(h3, h2)


def _mix_back(h_after: int, word: int) -> int:
    """The hash before ``murmur3.mix`` took ``word`` to ``h_after``."""
    k = (word * int(murmur3.C1)) & MASK32
    k = ((k << 15) | (k >> 17)) & MASK32
    k = (k * int(murmur3.C2)) & MASK32
    return _rotr(((h_after - 0xE6546B64) * pow(5, -1, 1 << 32)) & MASK32, 13) ^ k


@functools.lru_cache(maxsize=16)
def hunt(scheme: str, seed: int, column: int = 0) -> tuple[dict[str, int], int]:
    """Each boundary of ``scheme`` as a position where draft ``column``'s uniform lands on it with ``seed``:
    ``({boundary: position of the request}, positions searched)``. SGLang's coin of draft ``column`` is column
    ``column`` of the request's own position; the others' uniform of draft ``j`` is that of position ``+ j``."""
    if scheme == "sglang-seeded":
        return {name: sglang_position(seed, column, h) for name, h in SGLANG_HASHES.items()}, 0
    found, searched = search(scheme, seed)
    return {name: position - column for name, position in found.items() if position >= column}, searched
