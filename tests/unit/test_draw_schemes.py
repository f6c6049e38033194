"""The oracle's draw schemes (specconform.harness.oracle.draws) against published known answers: Philox4x32-10's
vectors from the Random123 distribution (kat_vectors), MurmurHash3_x86_32's values from SMHasher's users, and the
conversions each peer documents. These always run; the engines' own kernels hold the schemes in
tests/harness/test_vllm_draws.py and test_sglang_draws.py."""

import numpy as np
import pytest

from specconform.harness.oracle import draws
from specconform.harness.oracle.draws import flashinfer_philox, murmur3, philox, sglang_seeded, vllm_mrv2

# Random123 kat_vectors, philox4x32 10 rounds: counter (4 words), key (2 words) -> output (4 words)
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]
# MurmurHash3_x86_32(message, seed) for messages of whole little-endian words (SMHasher's published values)
MURMUR_KAT = [
    (b"", 0, 0x00000000),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"test", 0, 0xBA6BD213),
    (b"test", 0x9747B28C, 0x704B81DC),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    (bytes.fromhex("00112233"), 0, 0xB4471BF8),
]


@pytest.mark.parametrize("counter,key,want", PHILOX_KAT)
def test_philox4x32_10_matches_the_random123_known_answers(counter, key, want):
    assert tuple(int(w) for w in philox.philox4x32(counter, key)) == want


def test_philox4x32_broadcasts_one_kat_over_arrays():
    counter, key, want = PHILOX_KAT[2]
    out = philox.philox4x32(tuple(np.full(3, c) for c in counter), key)
    assert all(o.dtype == np.uint32 and (o == w).all() for o, w in zip(out, want))


@pytest.mark.parametrize("message,seed,want", MURMUR_KAT)
def test_murmur3_32_matches_the_published_values(message, seed, want):
    words = [int.from_bytes(message[i : i + 4], "little") for i in range(0, len(message), 4)]
    assert int(murmur3.murmur3_32(words, seed)) == want


def test_triton_rand_reads_philox_word_0_of_counter_offset_and_key_seed():
    """``tl.rand(0, 0)`` is word 0 of the all-zero Philox block (0x6627E8D5, positive as int32) times Triton's
    float32 scale; a word with the top bit set is complemented first (``uint_to_uniform_float``)."""
    scale = np.float32(4.6566127342e-10)
    assert vllm_mrv2.tl_rand(0, 0) == np.float32(0x6627E8D5) * scale
    # the seed is the key (low, high) and the offset the counter's first two words (low, high)
    seed = np.int64(np.uint64(0xA4093822_299F31D0).view(np.int64))
    word = int(philox.philox4x32((0x85A308D3, 0x243F6A88, 0, 0), (0x299F31D0, 0xA4093822))[0])
    x = np.uint32(word).view(np.int32)
    x = ~x if x < 0 else x
    assert vllm_mrv2.tl_rand(seed, 0x243F6A88_85A308D3) == np.float32(x) * scale


def test_vllm_uniforms_stay_in_their_documented_ranges():
    rng = np.random.default_rng(0)
    seeds = rng.integers(-(2**63), 2**63 - 1, 4096, dtype=np.int64)
    u = vllm_mrv2.acceptance_uniform(seeds, np.arange(4096))
    assert u.dtype == np.float32 and u.min() >= vllm_mrv2.TL_RAND_MIN and u.max() < 1
    g = vllm_mrv2.gumbel_uniform(seeds[:8, None], 5, np.arange(512)[None, :])
    assert g.dtype == np.float32 and g.min() > 0 and g.max() <= 1
    # block verification changes the stream per step; step 0 keeps the seed
    assert (vllm_mrv2.acceptance_uniform(seeds, 7, step=0) == vllm_mrv2.acceptance_uniform(seeds, 7)).all()
    assert (vllm_mrv2.acceptance_uniform(seeds, 7, step=1) != vllm_mrv2.acceptance_uniform(seeds, 7)).mean() > 0.99


def test_vllm_gumbel_hash_is_murmur3_of_seed_position_and_token():
    """``murmur3_hash32(seed, pos, t)`` hashes (seed low, seed high, pos low, t) under the initial hash 0; a drafting
    model's position carries the salt 2^30."""
    seed, pos, token = 0x0123456789ABCDEF, 2**32 + 17, 33
    want = murmur3.murmur3_32([0x89ABCDEF, 0x01234567, 17, token], 0)
    assert vllm_mrv2.gumbel_hash(seed, pos, token) == want
    assert vllm_mrv2.gumbel_hash(seed, pos, token, drafting=True) == murmur3.murmur3_32(
        [0x89ABCDEF, 0x01234567, 17 + 2**30, token], 0
    )


def test_vllm_gumbel_argmax_takes_the_best_noised_score_and_says_its_lead():
    log_w = np.log(np.array([0.5, 0.25, 0.25]))
    token, gap = vllm_mrv2.gumbel_argmax(log_w, 3, 4)
    scores = log_w + vllm_mrv2.gumbel_noise(3, 4, np.arange(3))
    assert token == int(np.argmax(scores)) and gap > 0
    # an excluded id never wins, whatever its noise
    assert vllm_mrv2.gumbel_argmax(np.array([-np.inf, 0.0]), 3, 4)[0] == 1
    assert vllm_mrv2.gumbel_argmax(np.array([-np.inf, 0.0]), 3, 4)[1] == np.inf


def test_sglang_coins_divide_the_hash_by_uint32_max_and_stay_below_one():
    seeds, lengths = np.array([5, -7, 2**62]), np.array([10, 11, 2**33 + 3])
    coins, final = sglang_seeded.verify_coins(seeds, lengths, 3)
    assert coins.shape == (3, 3) and final.shape == (3,) and coins.dtype == np.float32
    h = sglang_seeded.coin_hash(seeds[:, None], lengths[:, None], np.arange(4)[None, :])
    assert (coins == (h[:, :3] / 4294967295.0).astype(np.float32)).all()
    # the sequence length enters as its low 32 bits, as murmur_hash32_kernel loads it
    assert sglang_seeded.coin_hash(2**62, 2**33 + 3, 1) == sglang_seeded.coin_hash(2**62, 3, 1)


def test_curand_stream_follows_skipahead_and_the_philox_kat():
    """``curand_init(0, 0, 0)`` draws the all-zero block's words in order; an offset skips that many draws (curand's
    ``skipahead``), and the subsequence is counter words 2-3 (``skipahead_sequence``)."""
    words = flashinfer_philox.curand_uint32(0, 0, 0, np.arange(4))
    assert [int(w) for w in words] == list(PHILOX_KAT[0][2])
    assert (
        flashinfer_philox.curand_uint32(9, 3, np.arange(12), 0)
        == flashinfer_philox.curand_uint32(9, 3, 0, np.arange(12))
    ).all()
    assert flashinfer_philox.curand_uint32(9, 3, 5, 2) == flashinfer_philox.curand_uint32(9, 3, 0, 7)
    assert flashinfer_philox.curand_uint32(0, 2**32 + 5, 6, 0) == philox.philox4x32((1, 0, 5, 1), (0, 0))[2]
    # _curand_uniform: x * 2^-32 + 2^-33 in float32, 1.0 for the largest words
    u = flashinfer_philox.curand_uniform(0, 0, 0, 0)
    assert u == np.float32(np.float32(0x6627E8D5) * np.float32(2.0**-32) + np.float32(2.0**-33))
    uniforms = flashinfer_philox.chain_uniforms([1, 2], [0, 1], [0, 4], 3)
    assert uniforms.shape == (2, 5) and uniforms[1, 0] == flashinfer_philox.curand_uniform(2, 1, 4, 0)


def test_the_registry_names_every_scheme_and_refuses_an_unknown_one():
    assert draws.names() == ("reference", "vllm-mrv2", "sglang-seeded", "flashinfer-philox")
    assert draws.scheme("vllm-mrv2") is vllm_mrv2
    assert all(draws.scheme(name).FOLLOWS for name in draws.names())
    with pytest.raises(ValueError, match="profile x: draws must be one of reference, .*flashinfer-philox; got 'mrv2'"):
        draws.validate("mrv2", "profile x")


def test_the_reference_scheme_is_the_oracles_counter_draws():
    from specconform.harness.oracle import rejection as rs
    from specconform.harness.oracle.draws import reference

    draws_at = rs.counter_draws(12345, 40, 9)
    assert reference.acceptance_uniform(12345, 42) == draws_at.uniform(2)
    assert (reference.exponentials(12345, 42, 9) == draws_at.noise(2)).all()
