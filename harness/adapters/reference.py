"""``impl`` as an engine, on a torch device (``cpu`` or ``cuda``) with a backend (``auto``, ``torch``, ``triton``)."""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import RejectionCase

from .. import profiles


class ReferenceEngine:
    """``impl`` on a torch device (``cpu`` or ``cuda``) with a backend (``auto``, ``torch``, ``triton``)."""

    name = "reference"

    def __init__(self, device: str = "cpu", backend: str = "auto"):
        import torch

        from specconform import impl

        self.torch = torch
        self.impl = impl
        self.device = torch.device(device)
        self.backend = backend
        self.version = f"impl-{impl.__version__} torch-{torch.__version__} backend-{backend}"
        self.profile = profiles.with_tensor_api(profiles.canonical())
        self.tensor_api = ReferenceTensorApi(self)

    def _tensor(self, x, dtype):
        return None if x is None else self.torch.tensor(np.asarray(x), dtype=dtype, device=self.device)

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return ReferenceBudget(self, start, end, max_num_reqs, scope, max_spec_len)

    def rejection_sample(self, case: RejectionCase):
        torch = self.torch
        tokens, num_emitted = self.rejection_sample_tensors(
            self._tensor(case.target_logits, torch.float32),
            self._tensor(case.draft_token_ids, torch.int64),
            self._tensor(case.num_draft_tokens, torch.int64),
            self._tensor(case.draft_probs, torch.float32),
            self._tensor(case.temperature, torch.float32),
            self._tensor(case.seeds, torch.int64),
            self._tensor(case.positions, torch.int64),
            self._tensor(case.forced_token_ids, torch.int64),
            # only a batch that marks requests without a seed passes seeded (mixed batches, spec section 6)
            **({} if case.seeded is None else {"seeded": self._tensor(case.seeded, torch.bool)}),
        )
        return tokens.cpu().numpy(), num_emitted.cpu().numpy()

    # the modes ``rejection_sample_tensors`` offers beside the canonical one: ``validate=False``, without input
    # validation (RS-INPUT-6), and ``max_spec_len=``, a fixed output width ``max_spec_len + 1`` (RS-LAYOUT-3)
    tensor_modes = ("unvalidated", "fixed-width")

    @property
    def tensor_device(self) -> str:
        """The device ``rejection_sample_tensors`` takes and returns its tensors on."""
        return str(self.device)

    def rejection_sample_tensors(
        self,
        target_logits,
        draft_token_ids,
        num_draft_tokens,
        draft_probs,
        temperature,
        seeds,
        positions,
        forced_token_ids=None,
        *,
        max_spec_len=None,
        validate=True,
        seeded=None,
    ):
        """``impl.rejection_sample`` on torch tensors already on ``tensor_device`` (the canonical layout's
        fields, ``None`` where absent); ``(token_ids [B, K + 1] int32, num_emitted [B] int32)`` stay there, so
        a statistical check's trials never leave the device. ``rejection_sample`` goes through it too: a
        subclass that changes the sampler overrides this method alone. ``max_spec_len`` (an int): the output is
        ``[B, max_spec_len + 1]`` instead; ``validate=False``: the values are not checked (``tensor_modes``);
        ``seeded [B]`` bool: False where a request has no seed (mixed batches, spec section 6)."""
        out = self.impl.rejection_sample(
            target_logits,
            draft_token_ids,
            num_draft_tokens,
            draft_probs=draft_probs,
            temperature=temperature,
            seeds=seeds,
            positions=positions,
            forced_token_ids=forced_token_ids,
            max_spec_len=max_spec_len,
            validate=validate,
            backend=self.backend,
            seeded=seeded,
        )
        return out.token_ids, out.num_emitted

    def count_emitted(self, token_ids, vocab_size):
        result = self.impl.count_emitted_validated(self._tensor(token_ids, self.torch.int64), vocab_size)
        return result.num_emitted.cpu().numpy(), result.broken_prefix.cpu().numpy(), result.out_of_vocab.cpu().numpy()

    def acceptance_metrics(self, steps, eos_token_ids):
        torch = self.torch
        width = max((len(r) for _, r, _ in steps), default=1)
        stats = self.impl.AcceptanceStats(
            max_positions=max((k for k, _, _ in steps), default=1), eos_token_ids=eos_token_ids
        )
        for k, row, commit_limit in steps:
            stats.observe(
                torch.tensor([k]),
                torch.tensor([list(row) + [-1] * (width - len(row))]),
                None if commit_limit is None else torch.tensor([commit_limit]),
            )
        return {
            "acceptance_rate": stats.acceptance_rate,
            "mean_acceptance_length": stats.mean_acceptance_length,
            "accepted_per_position": stats.accepted_per_position.tolist(),
            "per_position_rates": stats.per_position_rates(),
        }


class ReferenceBudget:
    def __init__(self, engine: ReferenceEngine, start, end, max_num_reqs, scope, max_spec_len):
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
        self.state.sync_batch(update)

    def _drafts(self, num_draft_tokens, draft_token_ids):
        if num_draft_tokens is None:
            return None, None
        torch = self.engine.torch
        return (
            self.engine._tensor(list(num_draft_tokens), torch.int64),
            self.engine._tensor(list(draft_token_ids), torch.int64),
        )

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        return self.state.forced_tokens(*self._drafts(num_draft_tokens, draft_token_ids)).cpu().tolist()

    def update_state(self, rows):
        width = max((len(r) for r in rows), default=1)
        padded = np.full((len(rows), width), -1, dtype=np.int64)
        for i, r in enumerate(rows):
            padded[i, : len(r)] = r
        self.state.update_state(self.engine._tensor(padded, self.engine.torch.int64))

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        tensor = self.engine._tensor(logits, self.engine.torch.float32)
        self.state.apply_to_logits(tensor, *self._drafts(num_draft_tokens, draft_token_ids))
        return tensor.cpu().numpy()


class ReferenceTensorApi:
    """``impl``'s own entry points on the engine's device and backend (capability ``tensor-api``,
    thinking-budget.md section 10): every argument a check gives reaches ``impl`` as given."""

    def __init__(self, engine: ReferenceEngine):
        self.impl = engine.impl
        self.device = str(engine.device)
        self.backend = engine.backend

    def budget_state(self, start_token_ids, end_token_ids, max_num_reqs, **options):
        """``impl.ThinkingBudgetState`` itself (``max_spec_len``, ``scope`` among ``options``)."""
        return self.impl.ThinkingBudgetState(
            start_token_ids, end_token_ids, max_num_reqs, device=self.device, backend=self.backend, **options
        )

    def rejection_sample(self, target_logits, draft_token_ids, num_draft_tokens, **options):
        """``(token_ids [B, W] int32, num_emitted [B] int32)`` of ``impl.rejection_sample``."""
        out = self.impl.rejection_sample(
            target_logits, draft_token_ids, num_draft_tokens, backend=self.backend, **options
        )
        return out.token_ids, out.num_emitted

    def count_emitted_validated(self, token_ids, vocab_size):
        """``(num_emitted [B] int32, broken_prefix [B] bool, out_of_vocab [B] bool)``."""
        result = self.impl.count_emitted_validated(token_ids, vocab_size)
        return result.num_emitted, result.broken_prefix, result.out_of_vocab

    def acceptance_stats(self, max_positions, eos_token_ids=()):
        """``impl.AcceptanceStats`` itself."""
        return self.impl.AcceptanceStats(max_positions, eos_token_ids)
