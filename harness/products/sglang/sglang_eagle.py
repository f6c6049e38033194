"""SGLang 0.5.23's EAGLE verification helpers (``srt/speculative/eagle_utils.py``) for
``specconform.harness.adapters.sglang``.

Two of its functions decide what the verifier is handed, and the adapter calls them rather than repeating them:

- ``_verify_uses_greedy`` (l.485-500): whether a verify batch commits argmax (``verify_tree_greedy``) instead of
  sampling, called with the judged platform's flags by ``specconform.harness.adapters.sglang_dispatch``.
- ``_seeded_verify_coins`` (l.417-455): a seeded request's coins (``--enable-deterministic-inference``), SGLang's
  ``murmur_hash32(seed, seq_lens, column)`` of ``kernels/ops/sampling/murmur_hash.py`` mapped to ``[0, 1)``: column
  ``j`` is the coin of draft ``j + 1`` and column ``draft_token_num`` the final-sampling coin. On a GPU
  ``murmur_hash32`` runs as it is; on a CPU its CPU branch calls ``sgl_kernel``'s CPU op, which no package ships for
  this torch, so the adapter launches SGLang's Triton ``murmur_hash32_kernel`` with the output and grid
  ``murmur_hash32`` gives it on a GPU (under Triton's interpreter).

``eagle_utils`` imports the scheduler's modules, and through ``srt/configs/__init__.py`` two multimodal config modules
that import ``torchvision`` at their top. The only ``torchvision`` wheel for torch 2.13 is built for CUDA and cannot be
imported on a CPU torch, so where none can be imported these three names are stood in for while ``eagle_utils``
imports (``torchvision``, ``torchvision.transforms``, ``torchvision.transforms.functional``, with the
``InterpolationMode`` names those modules read at import); transformers is imported first, so it records that
``torchvision`` is absent. Nothing of verification calls them. Nothing of SGLang's code is copied here.
"""

from __future__ import annotations

import enum
import importlib
import importlib.machinery
import importlib.util
import sys
import types

_TORCHVISION = ("torchvision", "torchvision.transforms", "torchvision.transforms.functional")


class _InterpolationMode(enum.Enum):
    """The names SGLang's multimodal configs read from ``torchvision.transforms`` at import."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


def _torchvision_importable() -> bool:
    if importlib.util.find_spec("torchvision") is None:
        return False
    try:
        importlib.import_module("torchvision")
    except Exception:  # a CUDA build on a CPU torch fails registering its operators
        return False
    return True


def import_eagle_utils() -> types.ModuleType:
    """``sglang.srt.speculative.eagle_utils`` (the package root already stood in for by ``import_sglang``)."""
    if "sglang.srt.speculative.eagle_utils" in sys.modules:
        return sys.modules["sglang.srt.speculative.eagle_utils"]
    stand_ins = {}
    if not _torchvision_importable():
        importlib.import_module("transformers").AutoProcessor  # noqa: B018 (resolves its torchvision check first)
        for name in _TORCHVISION:
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=name != _TORCHVISION[-1])
            module.InterpolationMode = _InterpolationMode
            stand_ins[name] = module
        stand_ins["torchvision"].transforms = stand_ins["torchvision.transforms"]
        stand_ins["torchvision.transforms"].functional = stand_ins["torchvision.transforms.functional"]
        sys.modules.update(stand_ins)
    try:
        return importlib.import_module("sglang.srt.speculative.eagle_utils")
    finally:
        for name in stand_ins:
            sys.modules.pop(name, None)


class EagleVerifyHelpers:
    """``eagle_utils`` and its seeded coins, on ``device``."""

    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.eagle_utils = import_eagle_utils()
        self.murmur = importlib.import_module("sglang.kernels.ops.sampling.murmur_hash")

    def seeded_coins(self, seeds, seq_lens, draft_token_num: int):
        """SGLang's ``_seeded_verify_coins``: ``(coins [b, draft_token_num] float32, final [b] float32)`` for
        ``seeds [b]`` and ``seq_lens [b]`` (int64)."""
        torch = self.torch
        seed = torch.as_tensor(seeds, dtype=torch.int64, device=self.device)
        lengths = torch.as_tensor(seq_lens, dtype=torch.int64, device=self.device)
        if self.device.type != "cpu":
            return self.eagle_utils._seeded_verify_coins(
                sampling_seed=seed, seq_lens=lengths, draft_token_num=draft_token_num, device=self.device
            )
        on_gpu = self.murmur.murmur_hash32
        self.murmur.murmur_hash32 = self._murmur_hash32_triton
        try:
            return self.eagle_utils._seeded_verify_coins(
                sampling_seed=seed, seq_lens=lengths, draft_token_num=draft_token_num, device=self.device
            )
        finally:
            self.murmur.murmur_hash32 = on_gpu

    def _murmur_hash32_triton(self, seed, positions, col_indices):
        """``murmur_hash32_kernel`` launched as ``murmur_hash32`` launches it off the CPU: ``[n, m]`` uint32 for
        ``seed [n]``, ``positions [n]`` and ``col_indices [m]``."""
        n, m = seed.shape[0], col_indices.shape[0]
        hashed = self.torch.empty((n, m), dtype=self.torch.uint32, device=seed.device)
        block = 1024
        self.murmur.murmur_hash32_kernel[(n, (m + block - 1) // block)](
            seed, positions, col_indices, hashed, n, m, BLOCK_SIZE=block
        )
        return hashed
