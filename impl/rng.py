"""The counter-based draws of specs/rejection-sampling.md (RS-RNG-3) in PyTorch.

Bit-identical to ``harness/oracle/rng.py`` for the hash; the floating-point transforms run in
float32 here, as in the Triton kernels.
"""

from __future__ import annotations

import torch

MASK32 = 0xFFFFFFFF
PURPOSE_ACCEPT = 1
PURPOSE_SAMPLE = 2


def mix32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on int64 tensors holding values in ``[0, 2^32)``."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & MASK32
    return x ^ (x >> 16)


def stream_key(seeds: torch.Tensor, positions: torch.Tensor, purpose: int) -> torch.Tensor:
    """``[N]`` int64 keys of the streams ``(seed, position, purpose)``; inputs ``[N]`` int64."""
    h = mix32((seeds & MASK32) ^ 0x9E3779B9)
    h = mix32(h ^ ((seeds >> 32) & MASK32))
    h = mix32(h ^ (positions & MASK32))
    h = mix32(h ^ ((positions >> 32) & MASK32))
    return mix32(h ^ purpose)


def uniforms(seeds: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Acceptance uniforms ``[N]`` float32 in ``[0, 1)``."""
    h = mix32(stream_key(seeds, positions, PURPOSE_ACCEPT))
    return (h >> 8).to(torch.float32) * 2.0**-24


def exponentials(seeds: torch.Tensor, positions: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Exp(1) sampling noise ``[N, vocab_size]`` float32."""
    key = stream_key(seeds, positions, PURPOSE_SAMPLE)
    index = torch.arange(vocab_size, device=seeds.device, dtype=torch.int64)
    h = mix32(key[:, None] ^ index[None, :])
    x = ((h & 0x7FFFFFFF).to(torch.float32) + 0.5) * 2.0**-32
    return torch.where((h >> 31) == 1, -torch.log1p(-x), -torch.log(x))
