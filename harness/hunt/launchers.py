"""How a hunt calls each engine's rejection sampler on a batch kept on its device: one launcher per kind of entry
point, each taking the batch once and then ``launch(index, one_hot)`` with fresh draws.

- ``TensorLauncher``: an engine with ``rejection_sample_tensors`` on ``tensor_device`` (the reference, on a GPU
  its Triton kernels, on a CPU its PyTorch path; the zoo's mutants built on it). Launch ``index`` gives request
  ``i`` the seed ``seed_base[i] + index``, so any one request is replayed alone from its seed and position
  (RS-RNG-1).
- ``Mrv2Launcher``: vLLM Model Runner V2's ``rejection_sample``, fed as ``specconform.harness.adapters.vllm_mrv2``
  feeds it (temperature by vLLM's own ``SamplingStates``, draft logits ``T · log q``, forced cells at 1e9); its
  per-request seeds are the reference's, ``seed_base[i] + index``.
- ``LegacyLauncher``: vLLM's legacy ``RejectionSampler`` through ``specconform.harness.adapters.vllm``. Its requests
  draw from torch's generator (a request seeded by the user gets a generator of its own in Python, too slow for a
  million rows), seeded with ``seed_base[0] + index`` before each launch: a violation replays with its whole launch.
"""

from __future__ import annotations

from ..adapters.vllm import FORCED_LOGIT, VllmEngine
from ..adapters.vllm_mrv2 import VllmMrv2Engine
from ..core import UsageError
from .rows import HuntRows


def _seed_base(torch, rows: HuntRows, seed: int):
    """``[B]`` int64 seeds of launch 0, drawn from ``seed``."""
    generator = torch.Generator(device=rows.target_logits.device).manual_seed(seed)
    return torch.randint(0, 2**62, (rows.batch_size,), generator=generator, device=rows.target_logits.device)


def _forced_into_logits(torch, rows: HuntRows):
    """``target_logits`` with vLLM's 1e9 in each forced cell, as its thinking-budget state writes it."""
    logits = rows.target_logits.clone()
    forced = rows.forced_token_ids
    where = (forced >= 0).nonzero()[:, 0]
    logits[where, forced[where]] = FORCED_LOGIT
    return logits


class TensorLauncher:
    """``engine.rejection_sample_tensors`` at a fixed width, without its value validation where the engine offers
    both (``tensor_modes``): the rows are valid by construction, and validation reads them back to the host."""

    replays_one_request = True

    def __init__(self, engine, rows: HuntRows, seed: int):
        import torch

        self.engine, self.rows = engine, rows
        self.seed_base = _seed_base(torch, rows, seed)
        modes = getattr(engine, "tensor_modes", ())
        self.options = {}
        if "fixed-width" in modes:
            self.options["max_spec_len"] = rows.max_drafts
        if "unvalidated" in modes:
            self.options["validate"] = False

    def request_seeds(self, index: int):
        return self.seed_base + index

    def launch(self, index: int, one_hot: bool):
        r = self.rows
        return self.engine.rejection_sample_tensors(
            r.target_logits,
            r.draft_token_ids,
            r.num_draft_tokens,
            None if one_hot else r.draft_probs,
            r.temperature,
            self.request_seeds(index),
            r.positions,
            r.forced_token_ids,
            **self.options,
        )


class Mrv2Launcher:
    """vLLM Model Runner V2's ``rejection_sample`` in the engine's verification mode (``engine.verification``)."""

    replays_one_request = True

    def __init__(self, engine: VllmMrv2Engine, rows: HuntRows, seed: int):
        import numpy as np
        import torch

        self.engine, self.rows = engine, rows
        vllm, device = engine.vllm, rows.target_logits.device
        batch, vocab = rows.batch_size, rows.vocab_size
        self.seed_base = _seed_base(torch, rows, seed)
        row_start = torch.cumsum(rows.num_draft_tokens + 1, 0) - (rows.num_draft_tokens + 1)
        self.cu_num_logits = torch.cat([row_start, row_start.new_tensor([rows.num_rows])]).to(torch.int32)
        self.idx_mapping = torch.arange(batch, device=device)
        self.max_k = int(rows.num_draft_tokens.max())
        self.expanded_idx_mapping, self.expanded_local_pos = vllm.expand_idx_mapping(
            self.idx_mapping, rows.num_rows, self.cu_num_logits, self.max_k + 1
        )
        states = vllm.SamplingStates(batch, vocab)  # vLLM's temperature, as SamplingStates.add_request stores it
        states.temperature.np[:] = rows.temperature.cpu().numpy()
        states.apply_staged_writes()
        self.temperature = states.temperature.gpu
        self.logits = _forced_into_logits(torch, rows)
        states.apply_temperature(self.logits, self.expanded_idx_mapping, np.arange(batch))
        self.pos = rows.positions[rows.row_request] + rows.row_local
        # row j + 1 of a request holds its draft j; row 0 its last committed token (never read as a draft)
        draft_sampled = torch.zeros(rows.num_rows, dtype=torch.int32, device=device)
        later = rows.row_local > 0
        row_ids = torch.arange(rows.num_rows, device=device)
        draft_sampled[later] = rows.draft_token_ids[(row_ids - rows.row_request - 1)[later]].to(torch.int32)
        self.draft_sampled = draft_sampled
        # [B, max K, V]: q after temperature enters as T · log q, as vLLM divides draft logits by T
        draft_logits = torch.zeros((batch, self.max_k, vocab), dtype=torch.float32, device=device)
        drafted = rows.row_local < rows.num_draft_tokens[rows.row_request]
        temperature = rows.temperature[rows.row_request[drafted]].double()[:, None]
        scaled = (torch.log(rows.draft_probs.double()) * temperature).float()  # in float64, as the adapter
        draft_logits[rows.row_request[drafted], rows.row_local[drafted]] = scaled
        self.draft_logits = draft_logits

    def request_seeds(self, index: int):
        return self.seed_base + index

    def launch(self, index: int, one_hot: bool):
        arguments = dict(
            target_logits=self.logits,
            draft_logits=None if one_hot else self.draft_logits,
            draft_sampled=self.draft_sampled,
            cu_num_logits=self.cu_num_logits,
            pos=self.pos,
            idx_mapping=self.idx_mapping,
            expanded_idx_mapping=self.expanded_idx_mapping,
            expanded_local_pos=self.expanded_local_pos,
            temperature=self.temperature,
            seed=self.request_seeds(index),
            num_speculative_steps=self.max_k,
            **self.engine.verification,
        )
        return self.engine.release.call("rejection_sample", self.engine.vllm.rejection_sample, arguments)


class LegacyLauncher:
    """vLLM's legacy ``RejectionSampler`` with the legacy model runner's metadata, built once."""

    replays_one_request = False

    def __init__(self, engine: VllmEngine, rows: HuntRows, seed: int):
        import torch

        self.engine, self.rows, self.torch = engine, rows, torch
        self.seed = seed
        self.logits = _forced_into_logits(torch, rows)
        self.metadata = engine.sampling_metadata(rows.temperature.cpu().numpy(), None)
        self.spec = engine.spec_decode_metadata(rows.num_draft_tokens.cpu().numpy(), rows.draft_token_ids.cpu().numpy())

    def request_seeds(self, index: int):
        return None

    def launch(self, index: int, one_hot: bool):
        torch = self.torch
        torch.manual_seed(self.seed + index)  # torch's generator on every device: the launch's draws
        q = None if one_hot else self.rows.draft_probs
        out = self.engine.rejection_sampler(self.spec, q, self.logits, self.metadata).sampled_token_ids
        num = (out != -1).to(torch.int64).cumprod(dim=1).sum(dim=1)  # -1 ends a row (vLLM's placeholder)
        return out, num


def launcher_for(engine, rows: HuntRows, seed: int):
    """The launcher of ``engine``'s rejection sampler on ``rows``; a ``UsageError`` for an engine without an entry
    point that takes a batch of tensors on its device."""
    if isinstance(engine, VllmMrv2Engine):
        return Mrv2Launcher(engine, rows, seed)
    if isinstance(engine, VllmEngine):
        return LegacyLauncher(engine, rows, seed)
    if getattr(engine, "tensor_device", None) is not None and hasattr(engine, "rejection_sample_tensors"):
        return TensorLauncher(engine, rows, seed)
    raise UsageError(
        f"engine {engine.name!r} takes no batch of tensors on its device (rejection_sample_tensors, or vLLM's "
        "samplers through their adapters): a hunt of a billion draws cannot go through the canonical case"
    )


def hunt_device(engine) -> str:
    """The torch device the hunt builds its rows on for ``engine``."""
    if isinstance(engine, (VllmMrv2Engine, VllmEngine)):
        return str(engine.device)
    device = getattr(engine, "tensor_device", None)
    if device is None:
        raise UsageError(f"engine {engine.name!r} names no device for its tensors (tensor_device)")
    return str(device)
