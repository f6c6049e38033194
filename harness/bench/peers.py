"""The peers timed beside ours, when importable: vLLM's legacy rejection sampler and budget holder, Model Runner
V2's ``rejection_sample`` and ``apply_thinking_budget``, FlashInfer's ``chain_speculative_sampling``; each is
prepared on the same inputs as ours and handed back as a function of no arguments to time. ``draw_schemes`` says
which random draws each column uses."""

from __future__ import annotations

import re
import statistics
import time

import torch

from specconform import impl
from specconform.harness.oracle import draws
from specconform.harness.spec import spec_dir

from . import timing
from .shapes import VOCAB

TORCH_GENERATOR = "torch generator"  # vLLM's legacy sampler draws from it; no counter-based scheme defines it
# the draw scheme (``specconform.harness.oracle.draws``) of each peer column
PEER_DRAWS = {"vllm": TORCH_GENERATOR, "vllm_v2": "vllm-mrv2", "flashinfer": "flashinfer-philox"}


def reference_spec_version() -> str:
    """The version of specs/rejection-sampling.md (its ``Version X`` line), whose RS-RNG-3 defines ours' draws."""
    text = (spec_dir() / "rejection-sampling.md").read_text()
    found = re.search(r"^Version (\S+) ", text, re.MULTILINE)
    if found is None:
        raise ValueError("specs/rejection-sampling.md: no 'Version X' line to name the reference draws by")
    return found.group(1)


def draw_schemes() -> dict[str, str]:
    """Which draws each column of the rejection tables uses, by column: ``ours`` the spec's ``reference`` scheme of
    the version this checkout carries, each peer its own, so that a comparison says whose draws it compares."""
    peers = {
        name: scheme if scheme == TORCH_GENERATOR else draws.validate(scheme, f"PEER_DRAWS[{name!r}]")
        for name, scheme in PEER_DRAWS.items()
    }
    return {"ours": f"{draws.validate('reference', 'ours')} (spec {reference_spec_version()}, RS-RNG-3)", **peers}


def load_peers() -> tuple[dict, dict[str, str]]:
    """(each peer importable here by name, why each other peer is not). A rejection peer is what its
    ``PREPARE_REJECTION`` entry takes: vLLM's engine adapter (the legacy sampler and budget holder),
    Model Runner V2's ``rejection_sample``, FlashInfer's sampling function; ``vllm_v2_budget`` is
    Model Runner V2's ``apply_thinking_budget``."""
    peers, missing = {}, {}
    try:
        from specconform.harness.adapters.vllm import VllmEngine

        peers["vllm"] = VllmEngine()
    except Exception as exc:  # noqa: BLE001 - whatever stops the import is the reason reported
        missing["vllm"] = f"{type(exc).__name__}: {exc}"
    try:
        from vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils import rejection_sample

        peers["vllm_v2"] = rejection_sample
    except Exception as exc:  # noqa: BLE001
        missing["vllm_v2"] = f"{type(exc).__name__}: {exc}"
    try:
        from vllm.v1.worker.gpu.sample.thinking_budget import apply_thinking_budget

        peers["vllm_v2_budget"] = apply_thinking_budget
    except Exception as exc:  # noqa: BLE001
        missing["vllm_v2_budget"] = f"{type(exc).__name__}: {exc}"
    try:
        from flashinfer.sampling import chain_speculative_sampling

        peers["flashinfer"] = chain_speculative_sampling
    except Exception as exc:  # noqa: BLE001
        missing["flashinfer"] = f"{type(exc).__name__}: {exc}"
    return peers, missing


def _vllm_rejection(engine, inputs: dict, K: int):
    """vLLM's ``rejection_sample`` on the draft rows (gathered beforehand) with argmax bonus tokens."""
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    rows = logits.view(B, K + 1, V)
    draft_logits = rows[:, :K].reshape(B * K, V).contiguous()
    bonus = rows[:, K].argmax(dim=-1, keepdim=True).to(torch.int32)
    metadata = engine.sampling_metadata(inputs["temperature"].cpu().numpy(), None)
    cu_num_draft_tokens = (torch.arange(1, B + 1, device=logits.device) * K).to(torch.int32)
    drafts = inputs["draft_token_ids"].to(torch.int32)
    num_draft_tokens = [K] * B
    sample = engine.vllm.rejection.rejection_sample

    def run():
        return sample(
            drafts, num_draft_tokens, K, cu_num_draft_tokens, inputs["draft_probs"], draft_logits, bonus, metadata
        )

    return run


def _vllm_v2_rejection(sample, inputs: dict, K: int, draft_logits):
    """Model Runner V2's ``rejection_sample`` on V2's layout: every row of ``target_logits``, the draft
    logits ``[B, K, V]`` (None for one-hot drafts), the input ids (row ``i``'s draft at ``i + 1``)."""
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    device = logits.device
    requests = torch.arange(B, dtype=torch.int32, device=device)
    input_ids = torch.zeros(B, K + 1, dtype=torch.int64, device=device)
    input_ids[:, 1:] = inputs["draft_token_ids"].view(B, K)
    draft_rows = draft_logits.view(B, K, V) if inputs["draft_probs"] is not None else None
    cu_num_logits = torch.arange(B + 1, dtype=torch.int32, device=device) * (K + 1)
    positions = torch.arange(B * (K + 1), dtype=torch.int64, device=device)
    expanded_idx_mapping = requests.repeat_interleave(K + 1)
    expanded_local_pos = torch.arange(K + 1, dtype=torch.int32, device=device).repeat(B)
    temperature = inputs["temperature"].to(torch.float32)
    seeds = inputs["seeds"].to(torch.int64)
    flat_input_ids = input_ids.view(-1)

    def run():
        return sample(
            logits,
            draft_rows,
            flat_input_ids,
            cu_num_logits,
            positions,
            requests,
            expanded_idx_mapping,
            expanded_local_pos,
            temperature,
            seeds,
            K,
        )

    return run


def _flashinfer_rejection(chain_speculative_sampling, inputs: dict, K: int):
    """FlashInfer's chain speculative sampling after a softmax of the target logits, or why it cannot
    run this shape."""
    if inputs["draft_probs"] is None:
        return "needs draft probabilities"
    if bool((inputs["temperature"] == 0).any()):
        return "has no greedy mode"
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    rows = logits.view(B, K + 1, V)
    draft_probs = inputs["draft_probs"].view(B, K, V)
    drafts = inputs["draft_token_ids"].view(B, K).to(torch.int32)
    accepted = torch.zeros(B, dtype=torch.int32, device=logits.device)
    emitted = torch.zeros(B, dtype=torch.int32, device=logits.device)

    def run():
        target_probs = torch.softmax(rows, dim=-1, dtype=torch.float32)
        return chain_speculative_sampling(draft_probs, drafts, target_probs, accepted, emitted)

    return run


PREPARE_REJECTION = {
    "vllm": lambda engine, inputs, K, draft_logits: _vllm_rejection(engine, inputs, K),
    "vllm_v2": _vllm_v2_rejection,
    "flashinfer": lambda function, inputs, K, draft_logits: _flashinfer_rejection(function, inputs, K),
}
# Timed both eagerly and as a CUDA-graph replay, each against ours the same way.
GRAPHED = ("ours", "vllm_v2")


def vllm_budget_step(engine, B: int, K: int, added, history: int = 10):
    """Host milliseconds per step of vLLM's ``ThinkingBudgetStateHolder``, driven as vLLM's runner
    drives it: the live output lists (``history`` tokens each, one more appended per step, untimed),
    ``update_state``, then ``apply_to_logits`` on the bonus rows and (with drafts) the draft rows."""
    budget = engine.budget_state([151667], [151668], B, max_spec_len=K)
    budget.sync_batch(impl.BatchUpdate(B, added=added))
    outputs = [budget.outputs[i] for i in range(B)]
    for output in outputs:
        output.extend([7] * history)
    spec = [[5] * K for _ in range(B)] if K else None
    bonus_logits = torch.zeros(B, VOCAB, device=timing.DEVICE)
    draft_logits = torch.zeros(B * K, VOCAB, device=timing.DEVICE)
    times = []
    for step in range(23):
        for output in outputs:
            output.append(7)
        torch.cuda.synchronize()
        started = time.perf_counter()
        budget.holder.update_state(outputs, spec)
        budget.holder.apply_to_logits(bonus_logits, K > 0, spec)
        if K:
            budget.holder.apply_to_logits(draft_logits, False, spec)
        torch.cuda.synchronize()
        if step >= 3:  # warm-up
            times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def vllm_v2_budget_step(apply_thinking_budget, B: int, K: int, logits, history: int = 10):
    """Model Runner V2's ``apply_thinking_budget`` on the bonus and draft rows ``logits
    [B * (K + 1), V]``, in the same state as ours: even requests budgeted (2^30, never binding), each
    request's committed tokens ``[1, start] + [7] * (i % 50)`` and ``history`` more, its draft ids
    in ``input_ids``; the committed-marker cache is warm after the first call, as in decoding."""
    device = logits.device
    requests = torch.arange(B, dtype=torch.int32, device=device)
    lengths = 2 + torch.arange(B, device=device) % 50 + history
    all_token_ids = torch.full((B, int(lengths.max())), 7, dtype=torch.int32, device=device)
    all_token_ids[:, 0], all_token_ids[:, 1] = 1, 151667
    budget = torch.where(requests % 2 == 0, 2**30, -1).to(torch.int32)
    input_ids = torch.randint(0, 1000, (B * (K + 1),), dtype=torch.int32, device=device)
    expanded_idx_mapping = requests.repeat_interleave(K + 1)
    expanded_local_pos = torch.arange(K + 1, dtype=torch.int32, device=device).repeat(B)
    cached_last_start = torch.full((B,), -1, dtype=torch.int32, device=device)
    cached_last_end = torch.full((B,), -1, dtype=torch.int32, device=device)
    cached_scan_pos = torch.zeros(B, dtype=torch.int32, device=device)
    start, end = (torch.tensor([t], dtype=torch.int32, device=device) for t in (151667, 151668))
    total_len = lengths.to(torch.int32)

    def step():
        apply_thinking_budget(
            logits,
            requests,
            expanded_idx_mapping,
            budget,
            all_token_ids,
            total_len,
            input_ids,
            expanded_local_pos,
            cached_last_start,
            cached_last_end,
            cached_scan_pos,
            start,
            end,
            end,
        )

    return step
