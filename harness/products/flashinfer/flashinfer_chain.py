"""Kernel-level adapter for FlashInfer's chain speculative sampling
(``specconform.harness.adapters.flashinfer_chain:make``).

Judged as ``flashinfer-0.7.2``: ``flashinfer.sampling.chain_speculative_sampling`` (the CUDA kernel
``ChainSpeculativeSampling`` of ``include/flashinfer/sampling.cuh``, JIT-compiled on first use), driven
as its callers drive it:

- target probabilities from FlashInfer's own ``flashinfer.sampling.softmax`` with one temperature per
  logits row; draft probabilities ``[b, K, V]`` as given, or one-hot at the draft tokens when the case
  has none (deterministic drafts, such as n-gram drafts, have probability 1 at the proposed token);
- FlashInfer takes one draft length for the whole batch, so a case's requests are verified in groups of
  equal ``K`` (in request order within a group), as an engine batches the requests it speculates for
  with one ``num_speculative_tokens``; ``K = 0`` requests are one call with no draft rows;
- seeded requests pass their seed and their first row's position as FlashInfer's per-row ``seed`` and
  ``offset`` tensors (its reproducible draws); unseeded cases leave both out, and FlashInfer takes them
  from torch's CUDA generator (``get_seed_and_offset``). FlashInfer's own callers advance the offset by the
  draws they consumed, so the offset is this adapter's choice: the profile declares ``draw_offsets``
  derived, and the check that rests on it (``rejection/counter-based-draws``) reads NOT_APPLICABLE;
- the emitted tokens are FlashInfer's ``output_token_ids`` (``-1``-padded) and each request's emitted
  count is FlashInfer's ``output_emitted_draft_token_num`` plus its one sampled token.

FlashInfer has no greedy mode and no forced rows (the budget writes logits before the sampler): a case
with a temperature of 0 or a forced row is refused with a ``ValueError`` naming the field; the profile
claims neither. Nothing of FlashInfer's code is copied here; it needs a CUDA GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specconform.specs.interface import RejectionCase

from .. import products


def make():
    return FlashInferChainEngine()


@dataclass
class DraftGroup:
    """The requests of a case that share one draft length ``K``, laid out as FlashInfer takes them.

    ``requests [b]`` int64 (indices into the case); ``target_logits [b * (K + 1), V]`` float32;
    ``row_temperature [b * (K + 1)]`` float32; ``draft_probs [b, K, V]`` float32; ``draft_token_ids
    [b, K]`` int32; ``seeds`` and ``offsets`` ``[b]`` int64, or None when the case is unseeded."""

    num_draft_tokens: int
    requests: np.ndarray
    target_logits: np.ndarray
    row_temperature: np.ndarray
    draft_probs: np.ndarray
    draft_token_ids: np.ndarray
    seeds: np.ndarray | None
    offsets: np.ndarray | None


def draft_groups(case: RejectionCase) -> list[DraftGroup]:
    """Split a canonical case into FlashInfer calls, one per distinct ``K`` (ascending)."""
    greedy = np.flatnonzero(case.temperature <= 0)
    if len(greedy):
        i = int(greedy[0])
        raise ValueError(
            f"temperature[{i}] is {case.temperature[i]}: FlashInfer's chain_speculative_sampling has no greedy mode"
        )
    if case.forced_token_ids is not None and (case.forced_token_ids != -1).any():
        row = int(np.flatnonzero(case.forced_token_ids != -1)[0])
        raise ValueError(
            f"forced_token_ids[{row}] is {int(case.forced_token_ids[row])}: FlashInfer's sampler has no forced rows"
        )
    V = case.vocab_size
    rows, drafts = case.row_offsets(), case.draft_offsets()
    groups = []
    for K in sorted({int(k) for k in case.num_draft_tokens}):
        requests = np.flatnonzero(case.num_draft_tokens == K)
        target = np.concatenate([case.target_logits[rows[i] : rows[i + 1]] for i in requests])
        draft_ids = np.stack([case.draft_token_ids[drafts[i] : drafts[i + 1]] for i in requests])
        if case.draft_probs is None:
            q = np.zeros((len(requests), K, V), dtype=np.float32)
            np.put_along_axis(q, draft_ids[:, :, None], 1.0, axis=2)
        else:
            q = np.stack([case.draft_probs[drafts[i] : drafts[i + 1]] for i in requests]).reshape(len(requests), K, V)
        groups.append(
            DraftGroup(
                num_draft_tokens=K,
                requests=requests,
                target_logits=target.astype(np.float32),
                row_temperature=np.repeat(case.temperature[requests], K + 1).astype(np.float32),
                draft_probs=q.astype(np.float32),
                draft_token_ids=draft_ids.astype(np.int32),
                seeds=None if case.seeds is None else case.seeds[requests],
                offsets=None if case.seeds is None else _positions(case)[requests],
            )
        )
    return groups


def _positions(case: RejectionCase) -> np.ndarray:
    return np.zeros(case.batch_size, dtype=np.int64) if case.positions is None else case.positions


def gather_outputs(
    case: RejectionCase, groups: list[DraftGroup], outputs: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """Put each group's ``(output_token_ids [b, K + 1], output_emitted_draft_token_num [b])`` back in
    request order: ``(token_ids [B, max K + 1] int64, -1-padded; num_emitted [B] int64)``."""
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    tokens = np.full((case.batch_size, width), -1, dtype=np.int64)
    num = np.zeros(case.batch_size, dtype=np.int64)
    for group, (group_tokens, emitted_drafts) in zip(groups, outputs):
        tokens[group.requests, : group.num_draft_tokens + 1] = group_tokens
        num[group.requests] = np.asarray(emitted_drafts, dtype=np.int64) + 1
    return tokens, num


class FlashInferChainEngine:
    name = "flashinfer-0.7.2"

    def __init__(self):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("FlashInfer's sampling kernels need a CUDA GPU")
        from flashinfer import _build_meta, sampling

        self.torch = torch
        self.sampling = sampling
        self.device = torch.device("cuda")
        self.version = (
            f"flashinfer-{_build_meta.__version__} ({_build_meta.__git_commit__[:9]}) "
            f"torch-{torch.__version__} {torch.cuda.get_device_name()}"
        )
        self.profile = products.profile_of("flashinfer")  # with its reasons: harness/products/flashinfer/profile.yaml

    def rejection_sample(self, case: RejectionCase):
        torch = self.torch
        if case.marks_unseeded:  # the profile declares no mixed-seeding: its checks never hand it such a batch
            raise ValueError(
                f"seeded is {case.seeded.tolist()}: FlashInfer takes a seed for every row of a call or for none"
            )
        groups = draft_groups(case)
        outputs = []
        for group in groups:
            b, K, V = len(group.requests), group.num_draft_tokens, case.vocab_size
            logits = torch.tensor(group.target_logits, device=self.device)
            temperature = torch.tensor(group.row_temperature, device=self.device)
            target_probs = self.sampling.softmax(logits, temperature=temperature).view(b, K + 1, V)
            seeding = {}
            if group.seeds is not None:
                seeding = {
                    "seed": torch.tensor(group.seeds, dtype=torch.int64, device=self.device),
                    "offset": torch.tensor(group.offsets, dtype=torch.int64, device=self.device),
                }
            tokens, _, emitted = self.sampling.chain_speculative_sampling(
                torch.tensor(group.draft_probs, device=self.device),
                torch.tensor(group.draft_token_ids, device=self.device),
                target_probs,
                **seeding,
            )
            outputs.append((tokens.cpu().numpy(), emitted.cpu().numpy()))
        return gather_outputs(case, groups, outputs)
