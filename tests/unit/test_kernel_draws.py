"""The kernels' draws (impl/kernels/rng.py) against specconform.impl.rng, which is bit-identical to the oracle's hash.

``race_noise`` promises the Exp(1) noise times log2(e) within 1e-6 (relative), and ``uniform`` the
acceptance uniform exactly; on a GPU they run on the hardware approximations, in the interpreter on
numpy's. Offsets cover a full vocabulary, both halves of the hash (the two formulas) and the
smallest and largest values the hash can give.
"""

import math

import pytest
import torch

import specconform.impl.rng
from specconform.impl.kernels import HAS_TRITON

if HAS_TRITON:
    import triton
    import triton.language as tl

    from specconform.impl.kernels.rng import race_noise, stream_key, uniform

    @triton.jit
    def _draws_kernel(seed_ptr, position_ptr, noise_ptr, uniform_ptr, vocab, BLOCK: tl.constexpr):
        """``noise [N, vocab]`` float32 from ``race_noise`` and ``uniform [N]`` float32 from ``uniform``
        for the streams of ``seed [N]`` and ``position [N]`` (int64); one program per stream and block."""
        stream = tl.program_id(0)
        offsets = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        seed = tl.load(seed_ptr + stream)
        position = tl.load(position_ptr + stream)
        key = stream_key(seed, position, 2)
        tl.store(noise_ptr + stream * vocab + offsets, race_noise(key, offsets), mask=offsets < vocab)
        if tl.program_id(1) == 0:
            tl.store(uniform_ptr + stream, uniform(seed, position))


def _device(target) -> str:
    device, backend = target
    if backend != "triton":
        pytest.skip("the kernels' draws are Triton's")
    return device


@pytest.mark.req("RS-RNG-3")
def test_the_kernels_draws_match_the_reference_draws(target):
    device = _device(target)
    vocab = 151_936 if device == "cuda" else 4_099  # the interpreter is slow: a ragged small vocabulary
    seeds = torch.tensor([0, 1, 2**62 + 12345, 2**63 - 1], dtype=torch.int64, device=device)
    positions = torch.tensor([0, 7, 2**40 + 3, 2**63 - 1], dtype=torch.int64, device=device)
    noise = torch.empty(len(seeds), vocab, dtype=torch.float32, device=device)
    uniforms = torch.empty(len(seeds), dtype=torch.float32, device=device)
    block = 1024
    _draws_kernel[(len(seeds), triton.cdiv(vocab, block))](seeds, positions, noise, uniforms, vocab, BLOCK=block)

    expected = specconform.impl.rng.exponentials(seeds.cpu(), positions.cpu(), vocab).double() * (1 / math.log(2))
    relative = (noise.cpu().double() - expected).abs() / expected
    worst = int(relative.argmax())
    assert float(relative.max()) <= 1e-6, (
        f"noise of stream {worst // vocab}, id {worst % vocab}: {float(noise.flatten()[worst])} against "
        f"{float(expected.flatten()[worst])} (relative {float(relative.max()):.2e})"
    )
    assert torch.equal(uniforms.cpu(), specconform.impl.rng.uniforms(seeds.cpu(), positions.cpu()))
    # both formulas were exercised: ids whose hash has the top bit set and ids whose hash has not
    assert float(expected.min()) < 0.5 / math.log(2) < float(expected.max())
