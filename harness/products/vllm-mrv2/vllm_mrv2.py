"""Kernel-level adapter for vLLM's Model Runner V2 (``--engine specconform.harness.adapters.vllm_mrv2:make``).

Model Runner V2 is vLLM 0.33's default model runner wherever Triton is available
(``VLLM_USE_V2_MODEL_RUNNER=0`` selects the legacy one, judged by ``specconform.harness.adapters.vllm``). This
adapter drives its code as ``vllm/v1/worker/gpu/model_runner.py`` (``GPUModelRunner``) does, translated
from the canonical case format, in each release ``harness/products/vllm-mrv2/releases.yaml`` teaches it: where
the release keeps each piece, the parameters its ``ThinkingBudgetState.apply`` and ``rejection_sample`` take, the
verification modes it has and the name it is judged as (``vllm-0.32-mrv2``) are that file's data, checked against
the release's code when the engine is built; any other release is refused, naming those taught
(``specconform.harness.products.releases``):

- the budget: ``vllm.v1.worker.gpu.sample.thinking_budget.ThinkingBudgetState`` over a real
  ``RequestState`` (``vllm.v1.worker.gpu.states``). A request added to a harness slot gets a
  request-state index from ``RequestState.add_request`` (prompt as its prefill tokens) and its budget
  from ``ThinkingBudgetState.add_request``; every step builds the batch as ``prepare_inputs`` does
  (``idx_mapping`` in slot order, ``cu_num_logits``, vLLM's ``expand_idx_mapping``, ``input_ids`` per
  logits row: the last committed token, then the drafts) and calls ``ThinkingBudgetState.apply`` on
  the logits, whose forced cells hold ``1e9``; committed tokens are appended by vLLM's
  ``post_update`` kernel. Harness moves only reorder the batch (``idx_mapping``): Model Runner V2 has
  no persistent-batch ``BatchUpdate`` (``VllmMrv2Budget.sync_batch`` says how updates are translated).
- rejection sampling: ``vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils.rejection_sample``
  after ``SamplingStates.apply_temperature``, as ``RejectionSampler._verify`` calls it: draft logits
  ``[B, max K, V]`` (pre-temperature, so the canonical draft probabilities ``q`` enter as
  ``T · log q``), ``draft_sampled`` per logits row (row j + 1 holds draft j), positions
  ``positions[i] + j``, the per-request seeds of ``SamplingStates``. Its output and ``num_sampled``
  are vLLM's; the bonus and recovered tokens are its seeded Gumbel draws. A step where no request has
  drafts goes through the plain sampler's ``gumbel_sample``, as ``GPUModelRunner.sample`` does.
  Forced rows of a case get ``1e9`` in the forced cell before temperature, where
  ``ThinkingBudgetState.apply`` writes it.
- verification modes (``SpeculativeConfig.rejection_sample_method``): ``make`` judges ``standard``;
  ``make_block``, ``make_synthetic`` and ``make_fly`` the others, each resolved by vLLM's own
  ``RejectionSampler.__init__`` (``spec_decode/rejection_sampler.py``, lines 162-182) into the arguments it
  hands ``rejection_sample``. Their profiles declare the mode (``verification``, RUN-PROFILE-3).
  ``draft_sample_method="greedy"`` (vLLM's default) hands the verifier no draft logits: a case without
  ``draft_probs`` is verified as vLLM verifies it then, ``q`` one-hot at the draft.

On a CPU it needs ``TRITON_INTERPRET=1`` and ``CUDA_VISIBLE_DEVICES=`` (set but empty) before Python
starts. Nothing of vLLM's code is copied here; vLLM is a dependency of ``tox -e vllm-mrv2`` only.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from specconform.specs.interface import RejectionCase

from ..core import UsageError
from ..products import registry, releases
from .vllm import FORCED_LOGIT, import_vllm, reasoning_config, validate_budget, vllm_commit

MAX_MODEL_LEN = 4096
PRODUCT = "vllm-mrv2"  # whose releases.yaml says what differs between the releases this adapter drives
# The speculative configuration each verification mode is judged under: (factory, product, SpeculativeConfig fields).
# ``num_speculative_tokens`` bounds the drafts of a case; synthetic's rates are what vLLM resolves from
# ``synthetic_acceptance_length=2.5`` (``SpeculativeConfig._acceptance_length_to_rates``: the first draft
# always accepted, the second half the time); fly's window is the smallest vLLM allows, its entropy gate
# vLLM's defaults.
NUM_SPECULATIVE_TOKENS = 16
VERIFICATION_MODES = {
    "standard": ("make", "vllm-mrv2", {}),
    "block": ("make_block", "vllm-mrv2-block", {}),
    "synthetic": (
        "make_synthetic",
        "vllm-mrv2-synthetic",
        {"synthetic_acceptance_rates": [1.0, 0.5] + [0.0] * (NUM_SPECULATIVE_TOKENS - 2)},
    ),
    "fly": ("make_fly", "vllm-mrv2-fly", {"fly_window_size": 1}),
}


def make():
    return VllmMrv2Engine()


def make_block():
    return VllmMrv2Engine("block")


def make_synthetic():
    return VllmMrv2Engine("synthetic")


def make_fly():
    return VllmMrv2Engine("fly")


def _uva_views_available(torch, buffer_utils) -> bool:
    """Whether vLLM can map pinned host memory into the GPU here (its ``UvaBuffer``)."""
    if not torch.cuda.is_available():
        return False
    try:
        buffer_utils.UvaBuffer(1, torch.int32)
    except (AttributeError, RuntimeError):
        return False
    return True


# the arguments of rejection_sample that RejectionSampler.__init__ resolves from the verification mode
MODE_ARGUMENTS = (
    "synthetic_conditional_rates",
    "use_block_verification",
    "fly_window_size",
    "fly_entropy_threshold",
    "fly_entropy_top_k",
)


def _verification_arguments(sampler_class, method: str, fields: dict, device, names) -> dict:
    """The mode's arguments of ``rejection_sample`` among ``names`` (the release's signature), as vLLM's
    ``RejectionSampler.__init__`` sets them from a speculative configuration with ``rejection_sample_method=method``
    and ``fields``."""
    config = SimpleNamespace(
        num_speculative_tokens=NUM_SPECULATIVE_TOKENS,
        enable_adaptive_verification=False,
        rejection_sample_method=method,
        fly_window_size=None,
        fly_entropy_threshold=0.3,
        fly_entropy_top_k=3,
        synthetic_acceptance_rates=None,
    )
    for name, value in fields.items():
        setattr(config, name, value)
    sampler = sampler_class(None, config, device)
    return {name: getattr(sampler, name) for name in MODE_ARGUMENTS if name in names}


def release_of(version: str, factory: str) -> tuple[releases.Release, str]:
    """vLLM ``version`` as ``harness/products/vllm-mrv2/releases.yaml`` teaches it, and the name ``factory`` is judged
    as there; a ``UsageError`` names the releases taught when it is not one of them, or lacks the factory's mode."""
    try:
        release = releases.release(PRODUCT, version)
        return release, release.name_of(factory)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None


def _load(release: releases.Release) -> SimpleNamespace:
    """What the adapter drives, by role, where the release keeps it (releases.yaml's imports); a ``UsageError``
    unless each is there and the functions the adapter calls by name take what the release's range declares."""
    try:
        vllm = SimpleNamespace(**{role: release.load(role) for role in release.imports})
        release.check_signature("ThinkingBudgetState.apply", vllm.ThinkingBudgetState.apply)
        release.check_signature("rejection_sample", vllm.rejection_sample)
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    return vllm


class VllmMrv2Engine:
    def __init__(self, rejection_sample_method: str = "standard"):
        torch, vllm = import_vllm()
        factory, product, fields = VERIFICATION_MODES[rejection_sample_method]
        self.release, name = release_of(vllm.__version__, factory)
        self.vllm = _load(self.release)
        buffer_utils = self.vllm.buffer_utils
        if not _uva_views_available(torch, buffer_utils):
            # Request and sampling state live in pinned host memory seen by the GPU through vLLM's
            # compiled extension (vllm._C), which is not staged here (a CPU, or a GPU machine given
            # vLLM's Python only): vLLM's own fallback for platforms without it (NonUvaBuffer) keeps
            # them in device memory with explicit copies, the same values.
            from vllm.platforms import current_platform

            buffer_utils.is_uva_available = lambda: False
            if not torch.cuda.is_available():
                current_platform.device_type = "cpu"  # the kernels run under Triton's interpreter
        self.torch = torch
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu (Triton interpreter)"
        self.version = f"vllm-{vllm.__version__} ({vllm_commit()}) model-runner-v2 torch-{torch.__version__} {gpu}"
        # with its reasons: harness/products/<product>/profile.yaml, named for this release
        default_profile = registry.product(product).profile_path
        if default_profile is None:
            raise UsageError(f"product {product!r} names no profile")
        self.profile = self.release.profile(factory, default_profile)
        self.name = name
        self.verification = _verification_arguments(
            self.vllm.RejectionSampler,
            rejection_sample_method,
            fields,
            self.device,
            self.release.signatures["rejection_sample"],
        )

    # -- rejection sampling --------------------------------------------------------------------

    def _sampling_states(self, case: RejectionCase):
        """vLLM's ``SamplingStates`` with request ``i`` at state index ``i``."""
        B, V = case.batch_size, case.vocab_size
        sampling = self.vllm.SamplingStates(B, V)
        for i in range(B):
            # a request without a seed gets a fresh one from SamplingStates.add_request itself (a mixed batch)
            seed = case.seed_of(i)
            sampling.add_request(i, self.vllm.SamplingParams(temperature=float(case.temperature[i]), seed=seed))
        sampling.apply_staged_writes()
        return sampling

    def rejection_sample(self, case: RejectionCase):
        torch = self.torch
        B, V = case.batch_size, case.vocab_size
        K = case.num_draft_tokens.astype(np.int64)
        rows = case.row_offsets()
        device = self.device
        sampling = self._sampling_states(case)
        logits = torch.tensor(case.target_logits, dtype=torch.float32, device=device)
        if case.forced_token_ids is not None:
            for row, token in enumerate(case.forced_token_ids.tolist()):
                if token != -1:
                    logits[row, token] = FORCED_LOGIT
        idx_mapping_np = np.arange(B, dtype=np.int64)
        idx_mapping = torch.tensor(idx_mapping_np, device=device)
        cu_num_logits = torch.tensor(rows, dtype=torch.int32, device=device)
        max_k = int(K.max(initial=0))
        expanded_idx_mapping, expanded_local_pos = self.vllm.expand_idx_mapping(
            idx_mapping, int(rows[-1]), cu_num_logits, max_k + 1
        )
        base = np.zeros(B, dtype=np.int64) if case.positions is None else case.positions
        pos = torch.tensor(
            np.concatenate([base[i] + np.arange(K[i] + 1) for i in range(B)]), dtype=torch.int64, device=device
        )
        sampling.apply_temperature(logits, expanded_idx_mapping, idx_mapping_np)
        if max_k == 0:  # GPUModelRunner.sample: no drafts scheduled, the plain sampler
            sampled = self.vllm.gumbel_sample(
                logits,
                expanded_idx_mapping,
                sampling.temperature.gpu,
                sampling.seeds.gpu,
                pos,
                apply_temperature=False,
                is_drafting=False,
            )
            tokens = sampled.view(-1, 1).cpu().numpy().astype(np.int64)
            return tokens, np.ones(B, dtype=np.int64)
        draft_sampled = np.zeros(int(rows[-1]), dtype=np.int64)  # row 0 of a request: its last token
        offsets = case.draft_offsets()
        for i in range(B):
            draft_sampled[rows[i] + 1 : rows[i] + 1 + K[i]] = case.draft_token_ids[offsets[i] : offsets[i + 1]]
        draft_logits = None
        if case.draft_probs is not None:
            draft = np.zeros((B, max_k, V), dtype=np.float64)
            with np.errstate(divide="ignore"):
                for i in range(B):
                    # vLLM divides draft logits by the request's temperature; q is post-temperature
                    scale = float(case.temperature[i]) or 1.0
                    draft[i, : K[i]] = np.log(case.draft_probs[offsets[i] : offsets[i + 1]]) * scale
            draft_logits = torch.tensor(draft, dtype=torch.float32, device=device)
        arguments = dict(
            target_logits=logits,
            draft_logits=draft_logits,
            draft_sampled=torch.tensor(draft_sampled, dtype=torch.int32, device=device),  # from int32 input_ids
            cu_num_logits=cu_num_logits,
            pos=pos,
            idx_mapping=idx_mapping,
            expanded_idx_mapping=expanded_idx_mapping,
            expanded_local_pos=expanded_local_pos,
            temperature=sampling.temperature.gpu,
            seed=sampling.seeds.gpu,
            num_speculative_steps=max_k,
            **self.verification,
        )
        sampled, num_sampled = self.release.call("rejection_sample", self.vllm.rejection_sample, arguments)
        num = num_sampled.cpu().numpy().astype(np.int64)
        tokens = sampled.cpu().numpy().astype(np.int64)
        tokens[np.arange(max_k + 1)[None, :] >= num[:, None]] = -1  # vLLM leaves these cells unwritten
        return tokens, num

    # -- the budget ----------------------------------------------------------------------------

    def budget_state(self, start, end, max_num_reqs, scope="section", max_spec_len=0):
        return VllmMrv2Budget(self, list(start), list(end), max_num_reqs, max_spec_len)


class VllmMrv2Budget:
    """``ThinkingBudgetState`` over a ``RequestState``; harness slots are batch positions."""

    def __init__(self, engine: VllmMrv2Engine, start, end, max_num_reqs, max_spec_len):
        self.engine = engine
        config = reasoning_config(start, end)  # vLLM's own check of the markers (TB-API-3)
        self.vocab = max(start + end) + 1
        self.req_states = engine.vllm.RequestState(
            max_num_reqs, MAX_MODEL_LEN, MAX_MODEL_LEN, max_spec_len, self.vocab, engine.device
        )
        self.budget = engine.vllm.ThinkingBudgetState(self.req_states, config)
        self.slots: dict[int, str] = {}  # batch position -> request id
        self.last_held: dict[int, str] = {}  # batch position -> the last request id placed there
        self.batch_size = 0
        self.next_id = 0

    def sync_batch(self, update):
        """Translate a harness update to what ``GPUModelRunner`` does with the scheduler's output.

        Model Runner V2 has no persistent-batch ``BatchUpdate``: the scheduler names requests by id
        and orders the batch itself. A removal becomes ``RequestState.remove_request`` of the id the
        slot holds, or last held (``finish_requests``, model_runner.py lines 1188-1200); vLLM ignores
        an id it does not hold (states.py lines 127-131), so removing or moving from an emptied slot
        is accepted, as it is in vLLM. A new request gets a state index from
        ``RequestState.add_request`` whatever its harness slot; batch positions and the batch size are
        the scheduler's (capped at ``max_num_seqs``) and the runner checks neither (TB-BATCH-4)."""
        if update is None:
            return
        vllm = self.engine.vllm
        budgets = [validate_budget(a.budget) for a in update.added]  # all or nothing
        slots = dict(self.slots)
        for index in update.removed:
            self.req_states.remove_request(slots.pop(index, self.last_held.get(index, f"never-held-{index}")))
        for a, budget in zip(update.added, budgets):
            if a.index in slots:  # an added request replaces the one in its slot
                self.req_states.remove_request(slots[a.index])
            req_id = f"req-{self.next_id}"
            self.next_id += 1
            prompt = [int(t) for t in a.prompt_token_ids]
            self.req_states.add_request(req_id, len(prompt), prompt, 0, MAX_MODEL_LEN - len(prompt))
            req_idx = self.req_states.req_id_to_index[req_id]
            self.budget.add_request(req_idx, vllm.SamplingParams(thinking_token_budget=budget))
            slots[a.index] = self.last_held[a.index] = req_id
        for s, d, kind in update.moved:
            held_s, held_d = slots.pop(s, None), slots.pop(d, None)
            if getattr(kind, "name", kind) == "SWAP" and held_d is not None:
                slots[s] = held_d
            elif held_d is not None and held_d != held_s:  # the moved request replaces the one there
                self.req_states.remove_request(held_d)
            if held_s is not None:
                slots[d] = held_s
        self.slots = slots
        self.batch_size = update.batch_size
        self.req_states.apply_staged_writes()
        self.budget.apply_staged_writes()

    def _batch(self, num_draft_tokens, draft_token_ids):
        """What ``prepare_inputs`` builds for this step, by the names ``ThinkingBudgetState.apply`` may take them:
        ``idx_mapping [B]`` (int64) and its host copy, the expanded mapping and local positions ``[R]``,
        ``input_ids [R]`` (int32) per logits row, and ``ctx``, the ``LogitsContext`` holding them, where the release
        has one; with the number of rows ``R`` and the vocabulary the rows need."""
        torch = self.engine.torch
        device = self.engine.device
        B = self.batch_size
        num = np.zeros(B, dtype=np.int64) if num_draft_tokens is None else np.asarray(num_draft_tokens, np.int64)
        drafts = [] if draft_token_ids is None else [int(t) for t in draft_token_ids]
        idx_mapping_np = np.array([self.req_states.req_id_to_index[self.slots[i]] for i in range(B)], dtype=np.int64)
        total_len = self.req_states.total_len.gpu.cpu().numpy()
        all_tokens = self.req_states.all_token_ids.gpu
        cu = np.concatenate([[0], np.cumsum(num + 1)])
        input_ids = np.zeros(int(cu[-1]), dtype=np.int64)
        offset = 0
        for i, req_idx in enumerate(idx_mapping_np):
            length = int(total_len[req_idx])
            input_ids[cu[i]] = int(all_tokens[req_idx, length - 1]) if length else 0
            input_ids[cu[i] + 1 : cu[i + 1]] = drafts[offset : offset + num[i]]
            offset += num[i]
        idx_mapping = torch.tensor(idx_mapping_np, device=device)
        cu_num_logits = torch.tensor(cu, dtype=torch.int32, device=device)
        expanded_idx_mapping, expanded_local_pos = self.engine.vllm.expand_idx_mapping(
            idx_mapping, int(cu[-1]), cu_num_logits, int(num.max(initial=0)) + 1
        )
        batch = dict(
            expanded_idx_mapping=expanded_idx_mapping,
            idx_mapping=idx_mapping,
            idx_mapping_np=idx_mapping_np,
            expanded_local_pos=expanded_local_pos,
            input_ids=torch.tensor(input_ids, dtype=torch.int32, device=device),  # vLLM's input_ids are int32
            pos=torch.zeros(int(cu[-1]), dtype=torch.int64, device=device),  # not read by the budget
            seq_lens_upper_bound_np=np.zeros(B, dtype=np.int32),  # not read by the budget
        )
        if "LogitsContext" in self.engine.release.imports:  # the batch as one object (0.31 on)
            batch["ctx"] = self.engine.vllm.LogitsContext(**batch)
        vocab = max([self.vocab] + [t + 1 for t in drafts])
        return batch, int(cu[-1]), vocab

    def _apply(self, logits, batch) -> None:
        """``ThinkingBudgetState.apply`` on ``logits [R, V]`` (float32), in place, with the parameters the
        release's signature names."""
        self.engine.release.call("ThinkingBudgetState.apply", self.budget.apply, {"logits": logits, **batch})

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        batch, rows, vocab = self._batch(num_draft_tokens, draft_token_ids)
        tensor = torch.tensor(np.asarray(logits), dtype=torch.float32, device=self.engine.device)
        self._apply(tensor, batch)
        return tensor.cpu().numpy()

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        batch, rows, vocab = self._batch(num_draft_tokens, draft_token_ids)
        logits = torch.zeros(rows, vocab, dtype=torch.float32, device=self.engine.device)
        self._apply(logits, batch)
        best, token = logits.max(dim=1)
        return torch.where(best >= FORCED_LOGIT / 2, token, -1).cpu().tolist()

    def update_state(self, rows):
        """Commit each slot's accepted tokens (``-1``-padded rows) with vLLM's ``post_update``."""
        torch = self.engine.torch
        device = self.engine.device
        B = self.batch_size
        width = max((len(r) for r in rows), default=1)
        sampled = np.full((B, width), -1, dtype=np.int64)
        num_sampled = np.zeros(B, dtype=np.int32)
        for i, row in enumerate(rows[:B]):
            row = [int(t) for t in row]
            n = row.index(-1) if -1 in row else len(row)
            sampled[i, :n] = row[:n]
            num_sampled[i] = n
        idx_mapping = [self.req_states.req_id_to_index[self.slots[i]] for i in range(B)]
        self.engine.vllm.post_update(
            torch.tensor(idx_mapping, dtype=torch.int64, device=device),
            self.req_states.num_computed_tokens.gpu,
            self.req_states.last_sampled_tokens,
            None,
            torch.tensor(sampled, device=device),
            torch.tensor(num_sampled, device=device),
            torch.zeros(B, dtype=torch.int32, device=device),
            None,
            self.req_states.all_token_ids.gpu,
            self.req_states.total_len.gpu,
        )
