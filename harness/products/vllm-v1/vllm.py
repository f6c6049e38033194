"""Kernel-level adapter for vLLM's legacy model runner (``--engine specconform.harness.adapters.vllm:make``).

Judged as ``vllm-<major.minor>-v1``: the path ``VLLM_USE_V2_MODEL_RUNNER=0`` selects, in each release
``harness/products/vllm-v1/releases.yaml`` teaches it (0.30.0 to 0.33.0; Model Runner V2, the default wherever
Triton is available, is ``specconform.harness.adapters.vllm_mrv2``). That file names where each release keeps what
the adapter drives and the parameters it calls them with, checked against the installed code before anything is
judged; another release is refused, naming those taught. It drives vLLM's own code, translated from the canonical
case format; every judged value is vLLM's:

- rejection sampling: ``vllm.v1.sample.rejection_sampler.RejectionSampler.forward`` (vLLM's
  ``Sampler`` draws the bonus token, ``apply_sampling_constraints`` applies temperature,
  ``rejection_sample`` verifies) with a ``SpecDecodeMetadata`` laid out as the legacy model runner
  lays it out (each request's draft rows, then its bonus row); a step without drafts goes to
  ``Sampler`` alone, as the model runner does. Emitted counts are the lengths of
  ``RejectionSampler.parse_output``'s rows. Forced rows of a case get vLLM's ``1e9`` logit, which
  the budget holder writes before sampling;
- the budget: ``vllm.v1.sample.thinking_budget_state.ThinkingBudgetStateHolder`` with a
  ``ReasoningConfig`` whose token ids come from its own ``initialize_token_ids`` (a stand-in
  tokenizer maps ``<think>``/``</think>`` to the case's markers, so an empty marker meets vLLM's own
  error), fed live output lists as vLLM's input batch does; each step calls ``update_state`` and then
  ``apply_to_logits`` for the bonus rows and for the draft rows, as ``Sampler`` and
  ``RejectionSampler`` do, and reads the forced rows back as the cells set to 1e9; budgets are
  validated by vLLM's ``validate_thinking_token_budget``;
- counting: ``RejectionSampler.parse_output`` (tokens per row); metrics: the scheduler's
  ``Scheduler.make_spec_decoding_stats`` and ``SpecDecodingStats``, called only for the steps
  ``Scheduler.update_from_output`` passes to it (drafts scheduled and tokens generated,
  ``vllm/v1/core/sched/scheduler.py`` lines 2346-2354 in 0.33.0), with its ``num_accepted``
  (generated tokens less the one sampled token).

On a CPU it needs ``TRITON_INTERPRET=1`` and ``CUDA_VISIBLE_DEVICES=`` (set but empty) in the
environment before Python starts, and it turns off vLLM's pinned host memory (``vllm.utils.torch_utils``).
Nothing of vLLM's code is copied here; vLLM is a dependency of the ``tox -e vllm-v1`` session only.
"""

from __future__ import annotations

import dataclasses
import os
from types import SimpleNamespace

import numpy as np

from specconform.specs.interface import RejectionCase

from ..core import UsageError
from ..products import registry, releases

PRODUCT = "vllm-v1"  # whose releases.yaml says what differs between the releases this adapter drives
FORCED_LOGIT = 1e9  # what vLLM writes into a forced cell (both model runners)
SAMPLED_TOKENS_PER_STEP = 1  # Scheduler.num_sampled_tokens_per_step without multi-token prediction


def import_vllm():
    """``(torch, vllm)``, after checking that vLLM's Triton kernels can run here."""
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

    if not torch.cuda.is_available():
        # no pinned host memory without an accelerator: vLLM 0.30, 0.31 and 0.33 read the flag their import computed,
        # 0.32 asks the function each time (vllm/utils/torch_utils.py, async_tensor_h2d)
        torch_utils.PIN_MEMORY = False
        torch_utils.is_pin_memory_available = lambda: False
    return torch, vllm


def vllm_commit() -> str:
    """The commit vLLM's wheel was built from (``vllm/_version.py``)."""
    try:
        from vllm._version import __commit_id__
    except ImportError:
        return "commit unknown"
    return f"commit {__commit_id__}"


def validate_budget(value):
    """vLLM's ``validate_thinking_token_budget`` (``None`` for unlimited); its error, which is not a
    ``ValueError``, becomes one with vLLM's message."""
    from vllm.sampling_params import validate_thinking_token_budget

    try:
        return validate_thinking_token_budget(value)
    except Exception as exc:
        raise ValueError(f"thinking_token_budget={value!r}: {exc}") from exc


class _MarkerTokenizer:
    """Stands in for the model's tokenizer: encodes the two marker strings to the case's ids."""

    def __init__(self, start, end):
        self.ids = {"<think>": list(start), "</think>": list(end)}

    def encode(self, text, add_special_tokens=False):
        return list(self.ids[text])


def reasoning_config(start, end):
    """vLLM's ``ReasoningConfig`` for markers ``start``/``end`` (token id lists), initialised by its own
    ``initialize_token_ids``, which raises ``ValueError`` for a marker that encodes to nothing."""
    from unittest import mock

    import vllm.config.reasoning as reasoning

    config = reasoning.ReasoningConfig(reasoning_start_str="<think>", reasoning_end_str="</think>")
    with mock.patch.object(
        reasoning, "cached_tokenizer_from_config", lambda model_config: _MarkerTokenizer(start, end)
    ):
        config.initialize_token_ids(None)
    return config


def make():
    return VllmEngine()


def release_of(version: str) -> releases.Release:
    """vLLM ``version`` as ``harness/products/vllm-v1/releases.yaml`` teaches it; a ``UsageError`` names the releases
    taught when it is not one of them."""
    try:
        return releases.release(PRODUCT, version)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None


def load_release(release: releases.Release) -> SimpleNamespace:
    """What the adapter drives, by role, where the release keeps it (releases.yaml's imports); a ``UsageError``
    unless each is there and every function the adapter calls takes what the release's range declares."""
    try:
        vllm = SimpleNamespace(**{role: release.load(role) for role in release.imports})
        for role in release.signatures:
            owner, _, method = role.partition(".")
            release.check_signature(role, getattr(getattr(vllm, owner), method))
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    return vllm


class VllmEngine:
    def __init__(self):
        torch, vllm = import_vllm()
        self.release = release_of(vllm.__version__)
        self.name = self.release.name_of(releases.STANDARD)
        self.torch = torch
        self.vllm = load_release(self.release)
        self.sampler = self.vllm.Sampler()
        self.rejection_sampler = self.vllm.RejectionSampler(self.sampler)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (Triton interpreter)"
        self.version = f"vllm-{vllm.__version__} ({vllm_commit()}) legacy-model-runner torch-{torch.__version__} {gpu}"
        # with its reasons: harness/products/vllm-v1/profile.yaml, named for this release
        self.profile = self.release.profile(releases.STANDARD, registry.product(PRODUCT).profile_path)

    # -- rejection sampling --------------------------------------------------------------------

    def sampling_metadata(self, temperature, seeds, positions=None):
        """vLLM's ``SamplingMetadata`` for ``temperature [B]`` (0 = greedy); ``seeds [B]``: each request's seed,
        None for a request without one, or None for all. A random request with a seed gets its own seeded
        generator, as ``GPUModelRunner`` makes one only where ``SamplingParams.seed`` is set and the input batch
        keeps only those (``generators`` holds seeded requests alone); the others draw from torch's shared
        generator (a batch mixing both is vLLM's normal operation: rejection-sampling.md section 6).
        ``positions [B]`` reach vLLM only where its ``SamplingMetadata`` has a ``positions`` field: vLLM 0.33 has
        none, and the patch that proves RS-RNG-1's cause (proofs/vllm-0.33-v1/counter-based-draws.diff) adds it."""
        torch = self.torch
        takes_positions = "positions" in {f.name for f in dataclasses.fields(self.vllm.SamplingMetadata)}
        extra = {"positions": [int(p) for p in positions]} if takes_positions and positions is not None else {}
        B = len(temperature)
        greedy = temperature == 0
        generators = {}
        for i in range(B):
            if seeds is not None and seeds[i] is not None and not greedy[i]:
                generators[i] = torch.Generator(device=self.device).manual_seed(int(seeds[i]))
        return self.vllm.SamplingMetadata(
            temperature=None if greedy.all() else torch.tensor(temperature, dtype=torch.float32, device=self.device),
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
            **extra,
        )

    def spec_decode_metadata(self, num_draft_tokens, draft_token_ids):
        """``SpecDecodeMetadata`` with the legacy runner's layout: request ``i`` owns ``K_i`` draft rows
        and then its bonus row."""
        torch = self.torch
        device = self.device
        K = [int(k) for k in num_draft_tokens]
        rows = np.concatenate([[0], np.cumsum(np.array(K) + 1)])
        target = [int(rows[i] + j) for i in range(len(K)) for j in range(K[i])]
        bonus = [int(rows[i] + K[i]) for i in range(len(K))]
        return self.vllm.SpecDecodeMetadata(
            draft_token_ids=torch.tensor(list(draft_token_ids), dtype=torch.int32, device=device),
            num_draft_tokens=K,
            cu_num_draft_tokens=torch.tensor(np.cumsum(K), dtype=torch.int32, device=device),
            cu_num_sampled_tokens=torch.tensor(np.cumsum(np.array(K) + 1), dtype=torch.int32, device=device),
            target_logits_indices=torch.tensor(target, dtype=torch.int32, device=device),
            bonus_logits_indices=torch.tensor(bonus, dtype=torch.int32, device=device),
            logits_indices=torch.arange(int(rows[-1]), dtype=torch.int32, device=device),
        )

    def rejection_sample(self, case: RejectionCase):
        torch = self.torch
        logits = torch.tensor(case.target_logits, dtype=torch.float32, device=self.device)
        if case.forced_token_ids is not None:  # what vLLM's budget holder writes before sampling
            for row, token in enumerate(case.forced_token_ids.tolist()):
                if token != -1:
                    logits[row, token] = FORCED_LOGIT
        seeds = None if case.seeds is None else [case.seed_of(i) for i in range(case.batch_size)]
        metadata = self.sampling_metadata(np.asarray(case.temperature, dtype=np.float32), seeds, case.positions)
        if int(case.num_draft_tokens.sum()) == 0:  # no drafts scheduled: the model runner's Sampler
            out = self.sampler(logits, metadata).sampled_token_ids
        else:
            q = (
                None
                if case.draft_probs is None
                else torch.tensor(case.draft_probs, dtype=torch.float32, device=self.device)
            )
            spec = self.spec_decode_metadata(case.num_draft_tokens, case.draft_token_ids)
            out = self.rejection_sampler(spec, q, logits, metadata).sampled_token_ids
        tokens = out.cpu().numpy().astype(np.int64)
        parsed, _ = self.vllm.RejectionSampler.parse_output(out, case.vocab_size)
        return tokens, np.array([len(row) for row in parsed], dtype=np.int64)

    # -- counting ------------------------------------------------------------------------------

    def count_emitted(self, token_ids, vocab_size):
        tokens = np.asarray(token_ids)
        parsed, _ = self.vllm.RejectionSampler.parse_output(
            self.torch.tensor(tokens, dtype=self.torch.int32), vocab_size
        )
        counts = [len(row) for row in parsed]
        return counts, [False] * len(counts), [False] * len(counts)  # vLLM reports no malformed rows

    def acceptance_metrics(self, steps, eos_token_ids):
        """vLLM's counters over the sampler's rows: the scheduler counts them before its stop check
        trims end tokens and commit limits (specs/accepted-tokens.md, AC-STOP-1), so neither enters here."""
        max_positions = max((k for k, _, _ in steps), default=1)
        scheduler = SimpleNamespace(log_stats=True, num_spec_tokens=max_positions)
        stats = None
        for k, row, _ in steps:
            generated, _ = self.vllm.RejectionSampler.parse_output(
                self.torch.tensor([list(row)], dtype=self.torch.int64), 1 << 30
            )
            generated = generated[0]
            if not (k and generated):  # the scheduler's gate: drafts scheduled and tokens generated
                continue
            num_accepted = max(len(generated) - SAMPLED_TOKENS_PER_STEP, 0)
            stats = self.vllm.Scheduler.make_spec_decoding_stats(scheduler, stats, k, num_accepted, None, "req")
        if stats is None:
            stats = self.vllm.SpecDecodingStats.new(max_positions)
        drafts = stats.num_drafts
        return {
            "acceptance_rate": stats.num_accepted_tokens / stats.num_draft_tokens
            if stats.num_draft_tokens
            else float("nan"),
            "mean_acceptance_length": 1 + stats.num_accepted_tokens / drafts if drafts else float("nan"),
            "accepted_per_position": list(stats.num_accepted_tokens_per_pos),
        }

    # -- the budget ----------------------------------------------------------------------------

    def budget_state(self, start, end, max_num_reqs, scope="section", max_spec_len=0):
        return VllmBudget(self, list(start), list(end), max_num_reqs, max_spec_len)


class VllmBudget:
    def __init__(self, engine: VllmEngine, start, end, max_num_reqs, max_spec_len):
        self.engine = engine
        self.holder = engine.vllm.ThinkingBudgetStateHolder(
            reasoning_config(start, end),
            max_num_seqs=max_num_reqs,
            num_spec_tokens=max_spec_len,
            device=engine.device,
            is_pin_memory=False,
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
            budget = validate_budget(a.budget)
            output: list[int] = []
            added.append((a.index, SimpleNamespace(thinking_token_budget=budget), list(a.prompt_token_ids), output))
        moved = [(s, d, vllm.MoveDirectionality[getattr(k, "name", k)]) for s, d, k in update.moved]
        for index in update.removed:
            self.outputs.pop(index, None)
        for index, _, _, output in added:
            self.outputs[index] = output
        for s, d, kind in moved:
            if kind == vllm.MoveDirectionality.SWAP:
                self.outputs[s], self.outputs[d] = self.outputs.get(d, []), self.outputs.get(s, [])
            else:
                self.outputs[d] = self.outputs.pop(s, [])
        self.batch_size = update.batch_size
        self.holder.sync_batch(
            vllm.BatchUpdate(batch_size=update.batch_size, removed=list(update.removed), added=added, moved=moved)
        )

    def _apply(self, logits, num_draft_tokens, draft_token_ids):
        """One step as vLLM runs it: ``update_state`` with the live outputs and this step's drafts,
        then ``apply_to_logits`` on the bonus rows (``Sampler``) and on the draft rows
        (``RejectionSampler``); ``logits [R, V]`` in the canonical layout, returned the same way."""
        B = self.batch_size
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * B
        drafts = [int(t) for t in draft_token_ids or []]
        spec, offset = [], 0
        for k in num:
            spec.append(drafts[offset : offset + k])
            offset += k
        rows = np.concatenate([[0], np.cumsum(np.array(num, dtype=np.int64) + 1)])
        bonus_rows = [int(rows[i] + num[i]) for i in range(B)]
        draft_rows = [int(rows[i] + j) for i in range(B) for j in range(num[i])]
        self.holder.update_state([self.outputs.get(i, []) for i in range(B)], spec if self.spec_mode else None)
        out = logits.clone()
        if self.spec_mode:  # vLLM's two passes: bonus rows first, then the draft rows
            out[bonus_rows] = self.holder.apply_to_logits(logits[bonus_rows].clone(), True, spec)
            out[draft_rows] = self.holder.apply_to_logits(logits[draft_rows].clone(), False, spec)
        else:
            out[bonus_rows] = self.holder.apply_to_logits(logits[bonus_rows].clone(), False, None)
        return out

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * self.batch_size
        vocab = max([self.vocab] + [int(t) + 1 for t in draft_token_ids or []])
        out = self._apply(torch.zeros(sum(num) + len(num), vocab), num_draft_tokens, draft_token_ids)
        best, token = out.max(dim=1)
        return torch.where(best >= FORCED_LOGIT / 2, token, -1).tolist()

    def update_state(self, rows):
        for slot, row in enumerate(rows):
            if slot in self.outputs:
                for token in row:
                    if token == -1:
                        break
                    self.outputs[slot].append(int(token))

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        tensor = self.engine.torch.tensor(np.asarray(logits), dtype=self.engine.torch.float32)
        return self._apply(tensor, num_draft_tokens, draft_token_ids).numpy()
