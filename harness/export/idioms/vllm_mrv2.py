"""vLLM Model Runner V2's idiom: its thinking-budget Triton kernel driven as ``GPUModelRunner`` drives it.

The driver is ``harness/products/vllm-mrv2/vllm_mrv2.py``'s ``VllmMrv2Budget`` with its helpers from
``harness/products/vllm-v1/vllm.py`` inlined (``import_vllm``'s interpreter set-up, ``reasoning_config``'s stand-in
tokenizer, ``validate_budget``) and plain dicts for the batch updates: a ``ThinkingBudgetState`` over a real
``RequestState``, each step's batch built as ``prepare_inputs`` builds it (``expand_idx_mapping``, ``input_ids`` per
logits row) and handed to ``ThinkingBudgetState.apply``, whose forced cells hold ``1e9``; committed tokens appended by
vLLM's ``post_update`` kernel. On a CPU, Triton's interpreter runs the kernels (``TRITON_INTERPRET=1``,
``CUDA_VISIBLE_DEVICES=`` empty, set by the file itself before vLLM is imported when no GPU is visible)."""

NAME = "vllm-0.33-mrv2"
ENGINES = ("vllm-0.33-mrv2", "specconform.harness.adapters.vllm_mrv2:make", "harness.adapters.vllm_mrv2:make")
LABEL = "vLLM 0.33 Model Runner V2 (vllm/v1/worker/gpu/sample/thinking_budget.py)"
RUN = "pytest FILE, where vllm==0.33.0 is installed (on a CPU it runs the Triton kernels under the interpreter)"
MULTI_TOKEN_MARKERS = True
DRAFTS = True

BUDGET_IMPORTS = """\
import os
from types import SimpleNamespace
from unittest import mock

import numpy as np
import torch

if not torch.cuda.is_available():  # vLLM's Triton kernels run on a CPU under Triton's interpreter only
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

import vllm.utils.torch_utils as torch_utils  # noqa: E402

if not torch.cuda.is_available():  # no pinned host memory without a GPU
    torch_utils.PIN_MEMORY = False

import vllm.config.reasoning as reasoning  # noqa: E402
from vllm.platforms import current_platform  # noqa: E402
from vllm.sampling_params import SamplingParams, validate_thinking_token_budget  # noqa: E402
from vllm.v1.worker.gpu import buffer_utils  # noqa: E402
from vllm.v1.worker.gpu.input_batch import expand_idx_mapping, post_update  # noqa: E402
from vllm.v1.worker.gpu.sample.logits_processor.interface import LogitsContext  # noqa: E402
from vllm.v1.worker.gpu.sample.thinking_budget import ThinkingBudgetState  # noqa: E402
from vllm.v1.worker.gpu.states import RequestState  # noqa: E402
"""

BUDGET_DRIVER = '''
FORCED_LOGIT = 1e9  # what ThinkingBudgetState writes into a forced cell
MAX_MODEL_LEN = 4096
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _uva_views_available():
    """Whether vLLM can map pinned host memory into the GPU here (its ``UvaBuffer``)."""
    if not torch.cuda.is_available():
        return False
    try:
        buffer_utils.UvaBuffer(1, torch.int32)
    except (AttributeError, RuntimeError):
        return False
    return True


if not _uva_views_available():  # vLLM's own fallback without its compiled extension: device buffers, same values
    buffer_utils.is_uva_available = lambda: False
    if not torch.cuda.is_available():
        current_platform.device_type = "cpu"  # the kernels run under Triton's interpreter


def reasoning_config(start_token_ids, end_token_ids):
    """vLLM's ``ReasoningConfig`` whose markers encode to the case's ids (a stand-in for the model's tokenizer)."""
    ids = {"<think>": list(start_token_ids), "</think>": list(end_token_ids)}
    tokenizer = SimpleNamespace(encode=lambda text, add_special_tokens=False: list(ids[text]))
    config = reasoning.ReasoningConfig(reasoning_start_str="<think>", reasoning_end_str="</think>")
    with mock.patch.object(reasoning, "cached_tokenizer_from_config", lambda model_config: tokenizer):
        config.initialize_token_ids(None)
    return config


class EngineBudget:
    """``ThinkingBudgetState`` over a ``RequestState``; the case's slots are batch positions. Model Runner V2 budgets
    per section by design (``scope`` is not its to choose)."""

    def __init__(self, start_token_ids, end_token_ids, max_num_reqs, scope, max_spec_len):
        self.vocab = max(list(start_token_ids) + list(end_token_ids)) + 1
        self.req_states = RequestState(max_num_reqs, MAX_MODEL_LEN, MAX_MODEL_LEN, max_spec_len, self.vocab, DEVICE)
        self.budget = ThinkingBudgetState(self.req_states, reasoning_config(start_token_ids, end_token_ids))
        self.slots = {}  # batch position -> request id
        self.last_held = {}  # batch position -> the last request id placed there
        self.batch_size = 0
        self.next_id = 0

    def sync_batch(self, update):
        """What ``GPUModelRunner`` does with the scheduler's output: removals by request id, new requests through
        ``RequestState.add_request`` and ``ThinkingBudgetState.add_request``, moves only reorder the batch."""
        if update is None:
            return
        budgets = [validate_thinking_token_budget(a["budget"]) for a in update["added"]]
        slots = dict(self.slots)
        for index in update["removed"]:
            self.req_states.remove_request(slots.pop(index, self.last_held.get(index, f"never-held-{index}")))
        for added, budget in zip(update["added"], budgets):
            if added["index"] in slots:  # an added request replaces the one in its slot
                self.req_states.remove_request(slots[added["index"]])
            req_id = f"req-{self.next_id}"
            self.next_id += 1
            prompt = [int(t) for t in added["prompt_token_ids"]]
            self.req_states.add_request(req_id, len(prompt), prompt, 0, MAX_MODEL_LEN - len(prompt))
            req_idx = self.req_states.req_id_to_index[req_id]
            self.budget.add_request(req_idx, SamplingParams(thinking_token_budget=budget))
            slots[added["index"]] = self.last_held[added["index"]] = req_id
        for src, dst, kind in update["moved"]:
            held_src, held_dst = slots.pop(src, None), slots.pop(dst, None)
            if kind == "SWAP" and held_dst is not None:
                slots[src] = held_dst
            elif held_dst is not None and held_dst != held_src:  # the moved request replaces the one there
                self.req_states.remove_request(held_dst)
            if held_src is not None:
                slots[dst] = held_src
        self.slots = slots
        self.batch_size = update["batch_size"]
        self.req_states.apply_staged_writes()
        self.budget.apply_staged_writes()

    def _context(self, num_draft_tokens, draft_token_ids):
        """What ``prepare_inputs`` builds: ``idx_mapping [B]``, ``cu_num_logits [B + 1]``, the expanded mapping and
        local positions ``[R]``, ``input_ids [R]`` int32 (each slot's last committed token, then its drafts)."""
        num = np.asarray(num_draft_tokens, dtype=np.int64)
        drafts = [int(t) for t in draft_token_ids]
        idx_mapping_np = np.array(
            [self.req_states.req_id_to_index[self.slots[i]] for i in range(self.batch_size)], dtype=np.int64
        )
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
        idx_mapping = torch.tensor(idx_mapping_np, device=DEVICE)
        cu_num_logits = torch.tensor(cu, dtype=torch.int32, device=DEVICE)
        expanded_idx_mapping, expanded_local_pos = expand_idx_mapping(
            idx_mapping, int(cu[-1]), cu_num_logits, int(num.max(initial=0)) + 1
        )
        context = LogitsContext(
            expanded_idx_mapping=expanded_idx_mapping,
            idx_mapping=idx_mapping,
            idx_mapping_np=idx_mapping_np,
            expanded_local_pos=expanded_local_pos,
            input_ids=torch.tensor(input_ids, dtype=torch.int32, device=DEVICE),
            pos=torch.zeros(int(cu[-1]), dtype=torch.int64, device=DEVICE),  # not read by the budget
            seq_lens_upper_bound_np=np.zeros(self.batch_size, dtype=np.int32),  # not read by the budget
        )
        return context, int(cu[-1]), max([self.vocab] + [t + 1 for t in drafts])

    def forced_tokens(self, num_draft_tokens, draft_token_ids):
        """``ThinkingBudgetState.apply`` on zero logits ``[R, V]``: a row holding ``1e9`` is forced to that id."""
        context, rows, vocab = self._context(num_draft_tokens, draft_token_ids)
        logits = torch.zeros(rows, vocab, dtype=torch.float32, device=DEVICE)
        self.budget.apply(logits, context)
        best, token = logits.max(dim=1)
        return torch.where(best >= FORCED_LOGIT / 2, token, -1).cpu().tolist()

    def update_state(self, rows):
        """Commit each slot's tokens (``-1``-padded rows) with vLLM's ``post_update``."""
        width = max((len(row) for row in rows), default=1)
        sampled = np.full((self.batch_size, width), -1, dtype=np.int64)
        num_sampled = np.zeros(self.batch_size, dtype=np.int32)
        for i, row in enumerate(rows[: self.batch_size]):
            row = [int(t) for t in row]
            n = row.index(-1) if -1 in row else len(row)
            sampled[i, :n] = row[:n]
            num_sampled[i] = n
        idx_mapping = [self.req_states.req_id_to_index[self.slots[i]] for i in range(self.batch_size)]
        post_update(
            torch.tensor(idx_mapping, dtype=torch.int64, device=DEVICE),
            self.req_states.num_computed_tokens.gpu,
            self.req_states.last_sampled_tokens,
            None,
            torch.tensor(sampled, device=DEVICE),
            torch.tensor(num_sampled, device=DEVICE),
            torch.zeros(self.batch_size, dtype=torch.int32, device=DEVICE),
            None,
            self.req_states.all_token_ids.gpu,
            self.req_states.total_len.gpu,
        )
'''
