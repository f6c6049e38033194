"""The oracle's ``vllm-mrv2`` draw scheme (specconform.harness.oracle.draws.vllm_mrv2) held against vLLM 0.33's own
Triton functions: bit-exact acceptance uniforms and Gumbel uniforms, and the same sampled token from vLLM's
``gumbel_sample``. On a CPU through Triton's interpreter (``TRITON_INTERPRET=1``, ``CUDA_VISIBLE_DEVICES=``), on CUDA
in the tests marked gpu. Skipped without vLLM 0.33 (``tox -e vllm-mrv2`` installs it)."""

import os

import numpy as np
import pytest

from specconform.harness.oracle.draws import vllm_mrv2 as scheme

vllm = pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1" and os.environ.get("CUDA_VISIBLE_DEVICES") == ""
if not torch.cuda.is_available() and not INTERPRETED:
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)

from vllm.triton_utils import tl, triton  # noqa: E402
from vllm.v1.worker.gpu.sample.gumbel import (  # noqa: E402
    gumbel_sample,
    murmur3_hash32,
    murmur3_uniform32,
    spec_step_seed,
    tl_rand32,
)

DEVICES = [
    pytest.param("cpu", marks=pytest.mark.skipif(not INTERPRETED, reason="the CPU runs Triton only interpreted")),
    pytest.param("cuda", marks=pytest.mark.gpu),
]
# int64 seeds over the whole range vLLM draws them from (SamplingStates.add_request: np.random.randint over int64),
# with the edges; positions past 2^32 reach Philox's high counter word
EDGE_SEEDS = [0, 1, -1, 2**31, 2**32 - 1, 2**63 - 1, -(2**63)]
EDGE_POSITIONS = [0, 1, 2**31 - 1, 2**32, 2**32 + 5, 2**40 + 3]


@triton.jit
def _uniforms_kernel(seed_ptr, pos_ptr, u_ptr, ub_ptr, num_pos, NUM_STEPS: tl.constexpr, BLOCK: tl.constexpr):
    """Row ``r``: vLLM's acceptance uniform at every position, plain and under each block-verification step."""
    r = tl.program_id(0)
    seed = tl.load(seed_ptr + r)
    offs = tl.arange(0, BLOCK)
    mask = offs < num_pos
    pos = tl.load(pos_ptr + offs, mask=mask, other=0)
    tl.store(u_ptr + r * num_pos + offs, tl_rand32(seed, pos, includes_zero=False), mask=mask)
    for step in tl.static_range(NUM_STEPS):
        u = tl_rand32(spec_step_seed(seed, step), pos, includes_zero=False)
        tl.store(ub_ptr + (r * NUM_STEPS + step) * num_pos + offs, u, mask=mask)


@triton.jit
def _gumbel_kernel(seed_ptr, pos_ptr, h_ptr, u_ptr, vocab, BLOCK: tl.constexpr):
    """Row ``r``: vLLM's murmur3 hash and Gumbel uniform of every token id at (seed r, position r)."""
    r = tl.program_id(0)
    seed = tl.load(seed_ptr + r)
    pos = tl.load(pos_ptr + r)
    tokens = tl.arange(0, BLOCK)
    mask = tokens < vocab
    h = murmur3_hash32(seed, pos, tokens)
    tl.store(h_ptr + r * vocab + tokens, h.to(tl.int32, bitcast=True), mask=mask)
    tl.store(u_ptr + r * vocab + tokens, murmur3_uniform32(seed, pos, tokens), mask=mask)


def _seeds(n: int, rng) -> np.ndarray:
    return np.concatenate([EDGE_SEEDS, rng.integers(-(2**63), 2**63 - 1, n - len(EDGE_SEEDS), dtype=np.int64)])


@pytest.mark.req("RS-RNG-1")
@pytest.mark.parametrize("device", DEVICES)
def test_acceptance_uniforms_are_bit_exact(device):
    rng = np.random.default_rng(1)
    seeds = _seeds(64, rng)
    positions = np.concatenate([EDGE_POSITIONS, rng.integers(0, 2**20, 256 - len(EDGE_POSITIONS))])
    num_steps = 4
    u = torch.empty(len(seeds), len(positions), dtype=torch.float32, device=device)
    ub = torch.empty(len(seeds), num_steps, len(positions), dtype=torch.float32, device=device)
    _uniforms_kernel[(len(seeds),)](
        torch.from_numpy(seeds).to(device),
        torch.from_numpy(positions).to(device),
        u,
        ub,
        len(positions),
        NUM_STEPS=num_steps,
        BLOCK=triton.next_power_of_2(len(positions)),
    )
    want = scheme.acceptance_uniform(seeds[:, None], positions[None, :])
    want_block = scheme.acceptance_uniform(
        seeds[:, None, None], positions[None, None, :], np.arange(num_steps)[:, None]
    )
    got, got_block = u.cpu().numpy(), ub.cpu().numpy()
    # bit-exact: the same float32 bits, 64 seeds x 256 positions x (1 + 4 steps) = 81,920 uniforms
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(got_block.view(np.uint32), want_block.view(np.uint32))
    assert got.min() > 0 and got.max() < 1


@pytest.mark.req("RS-RNG-1")
@pytest.mark.parametrize("device", DEVICES)
def test_gumbel_uniforms_are_bit_exact(device):
    rng = np.random.default_rng(2)
    rows, vocab = 96, 1000
    seeds = _seeds(rows, rng)
    positions = np.concatenate([EDGE_POSITIONS, rng.integers(0, 2**20, rows - len(EDGE_POSITIONS))])
    h = torch.empty(rows, vocab, dtype=torch.int32, device=device)
    u = torch.empty(rows, vocab, dtype=torch.float32, device=device)
    _gumbel_kernel[(rows,)](
        torch.from_numpy(seeds).to(device), torch.from_numpy(positions).to(device), h, u, vocab, BLOCK=1024
    )
    tokens = np.arange(vocab)[None, :]
    # bit-exact: 96 rows x 1,000 token ids = 96,000 hashes and as many float32 uniforms
    np.testing.assert_array_equal(
        h.cpu().numpy().view(np.uint32), scheme.gumbel_hash(seeds[:, None], positions[:, None], tokens)
    )
    want = scheme.gumbel_uniform(seeds[:, None], positions[:, None], tokens)
    np.testing.assert_array_equal(u.cpu().numpy().view(np.uint32), want.view(np.uint32))


@pytest.mark.req("RS-RNG-1")
@pytest.mark.parametrize("device", DEVICES)
def test_gumbel_sample_picks_the_oracle_token(device):
    """vLLM's own ``gumbel_sample`` (its plain sampler's entry point, blocks of 1,024 ids then a block argmax) picks
    the oracle's token on every row whose best score leads the runner-up by more than the tolerance."""
    rng = np.random.default_rng(3)
    rows, vocab = 128, 3000  # three blocks and a partial one
    seeds = _seeds(rows, rng)
    positions = rng.integers(0, 2**20, rows)
    temperature = rng.choice([0.5, 1.0, 1.7], rows).astype(np.float32)
    # a few strong candidates over a flat tail: races decided among several ids, near the noise's scale
    logits = rng.normal(0.0, 1.0, (rows, vocab)).astype(np.float32)
    logits[:, :8] += 3.0
    sampled = (
        gumbel_sample(
            torch.from_numpy(logits).to(device),
            torch.arange(rows, dtype=torch.int32, device=device),
            torch.from_numpy(temperature).to(device),
            torch.from_numpy(seeds).to(device),
            torch.from_numpy(positions).to(device),
            apply_temperature=True,
            is_drafting=False,
        )
        .cpu()
        .numpy()
    )
    judged = 0
    for r in range(rows):
        z = logits[r].astype(np.float64) / np.float64(temperature[r])
        token, gap = scheme.gumbel_argmax(z, int(seeds[r]), int(positions[r]))
        if gap < 1e-5:
            continue
        judged += 1
        assert sampled[r] == token, f"row {r}: vLLM sampled {sampled[r]}, the oracle {token} (gap {gap:.2e})"
    assert judged >= rows - 2, f"only {judged} of {rows} rows were judged"
