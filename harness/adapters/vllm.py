"""Kernel-level adapter for vLLM (``--engine harness.adapters.vllm:make``).

Drives vLLM's own code, translated from the canonical case format:

- rejection sampling: ``vllm.v1.sample.rejection_sampler.rejection_sample`` on the draft rows only
  (flattened drafts with ``cu_num_draft_tokens``), after vLLM's ``apply_sampling_constraints``
  (temperature); the bonus token is sampled beforehand, as vLLM's ordinary ``Sampler`` would (argmax
  for greedy requests, a seeded categorical draw otherwise); forced rows get vLLM's ``1e9`` logit;
- the budget: ``vllm.v1.sample.thinking_budget_state.ThinkingBudgetStateHolder`` with a hand-built
  ``ReasoningConfig``, fed live output lists as vLLM's input batch does; each step calls
  ``update_state`` and then ``apply_to_logits`` twice, for the bonus rows and for the draft rows, and
  reads the forced rows back as the cells it set to 1e9; budgets are validated by vLLM's
  ``validate_thinking_token_budget``;
- counting: ``RejectionSampler.parse_output`` (tokens per row) and ``SpecDecodingStats`` (metrics),
  with ``num_accepted = len(generated) - 1`` as vLLM's scheduler computes it.

On a CPU it needs ``TRITON_INTERPRET=1`` and ``CUDA_VISIBLE_DEVICES=`` (set but empty) in the
environment before Python starts, and it sets ``vllm.utils.torch_utils.PIN_MEMORY = False``.
Nothing of vLLM's code is copied here; vLLM is a dependency of the ``tox -e vllm`` session only.
"""

from __future__ import annotations

import os
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from .. import profiles
from ..oracle import rejection as rs

FORCED_LOGIT = 1e9


def make():
    return VllmEngine()


class VllmEngine:
    name = "vllm"

    def __init__(self):
        import torch

        if not torch.cuda.is_available() and (
            os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
        ):
            raise RuntimeError(
                "vLLM's Triton kernels run on a CPU only with TRITON_INTERPRET=1 and "
                "CUDA_VISIBLE_DEVICES= (empty) set before Python starts"
            )
        import vllm
        import vllm.utils.torch_utils as torch_utils

        torch_utils.PIN_MEMORY = False
        from vllm.config.reasoning import ReasoningConfig
        from vllm.sampling_params import validate_thinking_token_budget
        from vllm.v1.sample import rejection_sampler
        from vllm.v1.sample.logits_processor import LogitsProcessors
        from vllm.v1.sample.logits_processor.interface import BatchUpdate, MoveDirectionality
        from vllm.v1.sample.metadata import SamplingMetadata
        from vllm.v1.sample.thinking_budget_state import ThinkingBudgetStateHolder
        from vllm.v1.spec_decode.metrics import SpecDecodingStats

        self.torch = torch
        self.vllm = SimpleNamespace(
            ReasoningConfig=ReasoningConfig,
            validate_budget=validate_thinking_token_budget,
            rejection=rejection_sampler,
            LogitsProcessors=LogitsProcessors,
            BatchUpdate=BatchUpdate,
            Move=MoveDirectionality,
            SamplingMetadata=SamplingMetadata,
            Holder=ThinkingBudgetStateHolder,
            SpecDecodingStats=SpecDecodingStats,
        )
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.version = f"vllm-{vllm.__version__} torch-{torch.__version__}"
        # vLLM's profile: its holder re-arms a section closed naturally (per-section after a natural
        # end) but closes a re-opened one after a forced end; the canonical class is still claimed so
        # that the deviation shows as a failure. It validates no sampler input (RS-INPUT-6 variant)
        # and draws from per-request torch generators, not the reference draws.
        canonical = profiles.canonical()
        self.profile = replace(
            canonical, name="vllm-0.33", capabilities=canonical.capabilities - {"reference-draws", "input-validation"}
        )

    # -- rejection sampling --------------------------------------------------------------------

    def sampling_metadata(self, temperature, seeds):
        """vLLM's ``SamplingMetadata`` for ``temperature [B]`` (0 = greedy); one seeded generator per
        random request when ``seeds`` is given, else vLLM's shared generator."""
        torch = self.torch
        B = len(temperature)
        greedy = temperature == 0
        generators = {}
        for i in range(B):
            if seeds is not None and not greedy[i]:
                generators[i] = torch.Generator(device=self.device).manual_seed(int(seeds[i]))
        return self.vllm.SamplingMetadata(
            temperature=torch.tensor(temperature, dtype=torch.float32, device=self.device),
            all_greedy=bool(greedy.all()),
            all_random=bool((~greedy).all()),
            top_p=None,
            top_k=None,
            generators=generators,
            max_num_logprobs=None,
            no_penalties=True,
            prompt_token_ids=None,
            frequency_penalties=torch.zeros(B, device=self.device),
            presence_penalties=torch.zeros(B, device=self.device),
            repetition_penalties=torch.ones(B, device=self.device),
            output_token_ids=[[] for _ in range(B)],
            allowed_token_ids_mask=None,
            bad_words_token_ids={},
            logitsprocs=self.vllm.LogitsProcessors(),
        )

    def rejection_sample(self, case: rs.RejectionCase):
        torch = self.torch
        B = case.batch_size
        K = case.num_draft_tokens.tolist()
        rows = case.row_offsets()
        logits = torch.tensor(case.target_logits, dtype=torch.float32, device=self.device)
        if case.forced_token_ids is not None:  # vLLM's holder bumps the forced cell to 1e9
            for row, token in enumerate(case.forced_token_ids.tolist()):
                if token != -1:
                    logits[row, token] = FORCED_LOGIT
        draft_rows = [int(rows[i] + j) for i in range(B) for j in range(K[i])]
        bonus_rows = [int(rows[i] + K[i]) for i in range(B)]
        temperature = np.asarray(case.temperature, dtype=np.float32)
        metadata = self.sampling_metadata(temperature, case.seeds)
        bonus = torch.empty((B, 1), dtype=torch.int32, device=self.device)
        for i, row in enumerate(bonus_rows):  # what vLLM's Sampler does for the bonus position
            if temperature[i] == 0:
                bonus[i, 0] = int(torch.argmax(logits[row]))
            else:
                probs = torch.softmax(logits[row] / float(temperature[i]), dim=0)
                generator = torch.Generator(device=self.device).manual_seed(int(case.seeds[i]) ^ 0x5EED)
                bonus[i, 0] = int(torch.multinomial(probs, 1, generator=generator))
        if sum(K) == 0:
            out = bonus.clone()
        else:
            cu = torch.tensor(np.cumsum(K), dtype=torch.int32, device=self.device)
            target = self.vllm.rejection.apply_sampling_constraints(logits[draft_rows].contiguous(), cu, metadata)
            q = (
                None
                if case.draft_probs is None
                else torch.tensor(case.draft_probs, dtype=torch.float32, device=self.device)
            )
            out = self.vllm.rejection.rejection_sample(
                torch.tensor(case.draft_token_ids, dtype=torch.int32, device=self.device),
                K,
                max(K),
                cu,
                q,
                target.contiguous(),
                bonus,
                metadata,
            )
        tokens = out.cpu().numpy().astype(np.int64)
        return tokens, (tokens != -1).sum(axis=1)

    # -- counting ------------------------------------------------------------------------------

    def count_emitted(self, token_ids, vocab_size):
        tokens = np.asarray(token_ids)
        parsed, _ = self.vllm.rejection.RejectionSampler.parse_output(
            self.torch.tensor(tokens, dtype=self.torch.int32), vocab_size
        )
        counts = [len(row) for row in parsed]
        return counts, [False] * len(counts), [False] * len(counts)  # vLLM reports no malformed rows

    def acceptance_metrics(self, steps, eos_token_ids):
        stats = self.vllm.SpecDecodingStats.new(max((k for k, _ in steps), default=1))
        for k, row in steps:
            if k == 0:
                continue
            generated = [t for t in row if t != -1]
            stats.observe_draft(num_draft_tokens=k, num_accepted_tokens=max(len(generated) - 1, 0))
        drafts = stats.num_drafts
        return {
            "acceptance_rate": stats.num_accepted_tokens / stats.num_draft_tokens
            if stats.num_draft_tokens
            else float("nan"),
            "mean_acceptance_length": 1 + stats.num_accepted_tokens / drafts if drafts else float("nan"),
            "accepted_per_position": list(stats.num_accepted_tokens_per_pos),
        }

    # -- the budget ----------------------------------------------------------------------------

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        # vLLM's ReasoningConfig rejects markers that encode to nothing; the adapter names the field.
        for field_name, marker in (("start_token_ids", start), ("end_token_ids", end)):
            if not marker:
                raise ValueError(f"{field_name} must hold at least one token id; got {marker!r}")
        return VllmBudget(self, list(start), list(end), max_num_reqs, max_spec_len)


class VllmBudget:
    def __init__(self, engine: VllmEngine, start, end, max_num_reqs, max_spec_len):
        self.engine = engine
        config = engine.vllm.ReasoningConfig(reasoning_start_str="<think>", reasoning_end_str="</think>")
        config._reasoning_start_token_ids = start
        config._reasoning_end_token_ids = end
        config._natural_reasoning_end_token_ids = end
        config._enabled = True
        self.holder = engine.vllm.Holder(
            config, max_num_seqs=max_num_reqs, num_spec_tokens=max_spec_len, device=engine.device, is_pin_memory=False
        )
        self.spec_mode = max_spec_len > 0
        self.outputs: dict[int, list[int]] = {}  # slot -> the request's live output list
        self.batch_size = 0
        self.vocab = max(start + end) + 1

    def sync_batch(self, update):
        if update is None:
            return
        vllm = self.engine.vllm
        added = []
        for a in update.added:
            try:  # vLLM's own validation; its error type is not a ValueError, so it is translated
                budget = vllm.validate_budget(a.budget)
            except Exception as exc:
                raise ValueError(str(exc)) from exc
            if budget == -1:
                budget = None
            output: list[int] = []
            added.append((a.index, SimpleNamespace(thinking_token_budget=budget), list(a.prompt_token_ids), output))
        moved = [(s, d, vllm.Move[getattr(k, "name", k)]) for s, d, k in update.moved]
        for index in update.removed:
            self.outputs.pop(index, None)
        for index, _, _, output in added:
            self.outputs[index] = output
        for s, d, kind in moved:
            if kind == vllm.Move.SWAP:
                self.outputs[s], self.outputs[d] = self.outputs.get(d, []), self.outputs.get(s, [])
            else:
                self.outputs[d] = self.outputs.pop(s, [])
        self.batch_size = update.batch_size
        self.holder.sync_batch(
            vllm.BatchUpdate(batch_size=update.batch_size, removed=list(update.removed), added=added, moved=moved)
        )

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        B = self.batch_size
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * B
        drafts = list(draft_token_ids or [])
        spec, offset = [], 0
        for k in num:
            spec.append(drafts[offset : offset + k])
            offset += k
        vocab = max([self.vocab] + [t + 1 for t in drafts])
        outputs = [self.outputs.get(i, []) for i in range(B)]
        self.holder.update_state(outputs, spec if self.spec_mode else None)
        if self.spec_mode:  # vLLM's two passes: bonus rows first, then the draft rows
            bonus = self.holder.apply_to_logits(torch.zeros(B, vocab), True, spec)
            target = self.holder.apply_to_logits(torch.zeros(sum(num), vocab), False, spec)
        else:
            bonus = self.holder.apply_to_logits(torch.zeros(B, vocab), False, None)
            target = torch.zeros(0, vocab)

        def read(row):
            return int(torch.argmax(row)) if float(row.max()) >= FORCED_LOGIT / 2 else -1

        rows, offset = [], 0
        for i, k in enumerate(num):
            rows += [read(target[offset + j]) for j in range(k)] + [read(bonus[i])]
            offset += k
        return rows

    def update_state(self, rows):
        for slot, row in enumerate(rows):
            if slot in self.outputs:
                for token in row:
                    if token == -1:
                        break
                    self.outputs[slot].append(int(token))

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        for row, token in enumerate(self.forced_tokens(num_draft_tokens, draft_token_ids)):
            if token != -1:
                logits[row, token] = FORCED_LOGIT  # vLLM's variant: the rest of the row is untouched
        return logits
