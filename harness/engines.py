"""Kernel-level engine adapters: the oracle and the reference implementation.

An adapter translates the canonical case format to an engine and back:

* ``budget_state(start, end, max_num_reqs, scope, max_spec_len)`` returns a handle with
  ``sync_batch(update)``, ``forced_tokens(num_draft_tokens, draft_token_ids) -> list[int]`` and
  ``update_state(rows)``; ``update`` is duck-typed like ``harness.vectors.Update``.
* ``rejection_sample(case) -> (token_ids [B, W], num_emitted [B])`` for a ``RejectionCase``
  whose requests carry seeds (or are greedy).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

import numpy as np

from .oracle import budget as tb
from .oracle import rejection as rs


@dataclass
class OracleEngine:
    name: str = "oracle"
    version: str = "spec-0.1"
    device: str = f"cpu ({platform.machine()})"

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return _OracleBudget(tb.BudgetBatch(start, end, max_num_reqs, scope))

    def rejection_sample(self, case: rs.RejectionCase):
        tokens, num, _ = rs.sample_case(case)
        return tokens, num


class _OracleBudget:
    def __init__(self, batch: tb.BudgetBatch):
        self.batch = batch

    def sync_batch(self, update):
        self.batch.apply(update)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return self.batch.forced_rows(num_draft_tokens, draft_token_ids)

    def update_state(self, rows):
        self.batch.commit([list(r) for r in rows])


class ReferenceEngine:
    """``impl`` on a torch device (``cpu`` or ``cuda``) with a backend (``auto``, ``torch``, ``triton``)."""

    name = "reference"

    def __init__(self, device: str = "cpu", backend: str = "auto"):
        import torch

        import impl

        self.torch = torch
        self.impl = impl
        self.device = torch.device(device)
        self.backend = backend
        self.version = f"impl-{impl.__version__} torch-{torch.__version__} backend-{backend}"

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return _ReferenceBudget(self, start, end, max_num_reqs, scope, max_spec_len)

    def rejection_sample(self, case: rs.RejectionCase):
        torch = self.torch
        dev = self.device
        out = self.impl.rejection_sample(
            torch.tensor(case.target_logits, dtype=torch.float32, device=dev),
            torch.tensor(case.draft_token_ids, dtype=torch.int64, device=dev),
            torch.tensor(case.num_draft_tokens, dtype=torch.int64, device=dev),
            draft_probs=None
            if case.draft_probs is None
            else torch.tensor(case.draft_probs, dtype=torch.float32, device=dev),
            temperature=torch.tensor(case.temperature, dtype=torch.float32, device=dev),
            seeds=None if case.seeds is None else torch.tensor(case.seeds, dtype=torch.int64, device=dev),
            positions=None if case.positions is None else torch.tensor(case.positions, dtype=torch.int64, device=dev),
            forced_token_ids=None
            if case.forced_token_ids is None
            else torch.tensor(case.forced_token_ids, dtype=torch.int64, device=dev),
            backend=self.backend,
        )
        return out.token_ids.cpu().numpy(), out.num_emitted.cpu().numpy()


class _ReferenceBudget:
    def __init__(self, engine, start, end, max_num_reqs, scope, max_spec_len):
        self.engine = engine
        self.state = engine.impl.ThinkingBudgetState(
            start,
            end,
            max_num_reqs,
            max_spec_len=max_spec_len,
            scope=scope,
            device=engine.device,
            backend=engine.backend,
        )

    def sync_batch(self, update):
        impl = self.engine.impl
        if update is None:
            self.state.sync_batch(None)
            return
        self.state.sync_batch(
            impl.BatchUpdate(
                batch_size=update.batch_size,
                removed=tuple(update.removed),
                added=tuple(impl.AddedRequest(a.index, a.budget, list(a.prompt_token_ids)) for a in update.added),
                moved=tuple((s, d, impl.Move[getattr(k, "name", k)]) for s, d, k in update.moved),
            )
        )

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        dev = self.engine.device
        if num_draft_tokens is None:
            return self.state.forced_tokens().cpu().tolist()
        return (
            self.state.forced_tokens(
                torch.tensor(num_draft_tokens, dtype=torch.int64, device=dev),
                torch.tensor(draft_token_ids, dtype=torch.int64, device=dev),
            )
            .cpu()
            .tolist()
        )

    def update_state(self, rows):
        torch = self.engine.torch
        width = max((len(r) for r in rows), default=1)
        padded = np.full((len(rows), width), -1, dtype=np.int64)
        for i, r in enumerate(rows):
            padded[i, : len(r)] = r
        self.state.update_state(torch.tensor(padded, device=self.engine.device))


def make_engine(spec: str):
    """``oracle``, ``reference[:device[:backend]]`` or ``module:factory`` (an engine team's own)."""
    if spec == "oracle":
        return OracleEngine()
    if spec == "reference" or spec.startswith("reference:"):
        parts = spec.split(":")[1:]
        return ReferenceEngine(*parts) if parts else ReferenceEngine()
    if ":" in spec:
        import importlib

        module, _, factory = spec.partition(":")
        return getattr(importlib.import_module(module), factory)()
    raise ValueError(f"engine must be oracle, reference[:device[:backend]] or module:factory; got {spec!r}")
