"""SGLang 0.5.23's idiom for budget A: its ``ThinkingBudgetLogitProcessor`` called as its sampler calls it.

The driver is ``harness/products/sglang/sglang_budget.py``'s ``SglangBudget`` inlined, with plain dicts for the batch
updates: one processor subclass carrying the case's marker ids (its newline id set to the end marker's, so it forces the
end marker alone), called each step on one zero logits row per slot with ``custom_param_list[i] = {"thinking_budget":
budget, "__req__": req}``, ``req`` holding the prompt (``origin_input_ids``) and the committed tokens (``output_ids``);
a row left ``-inf`` but for one ``0`` is forced to that id. SGLang's package root is stood in for (a ``sys.modules``
entry whose ``__path__`` is the installed folder), as the adapter does, so ``sglang/__init__.py`` and its server imports
never run: the processor's module needs torch alone (``pip install --no-deps sglang==0.5.23 dill orjson``)."""

NAME = "sglang-0.5.23"
ENGINES = ("sglang-0.5.23", "specconform.harness.adapters.sglang:make", "harness.adapters.sglang:make")
LABEL = "SGLang 0.5.23 budget A (srt/sampling/custom_logit_processor.py, ThinkingBudgetLogitProcessor)"
RUN = "pytest FILE, where sglang==0.5.23 is installed (pip install --no-deps sglang==0.5.23 dill orjson suffices)"
MULTI_TOKEN_MARKERS = False  # the processor holds one id per marker
DRAFTS = False  # SGLang applies the processor outside verification only

# The stand-in for SGLang's package root (and its kernel namespaces), shared with the strict-thinking idiom.
STAND_IN = '''
import importlib  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402
import types  # noqa: E402


def import_sglang(name):
    """SGLang's module ``name``, its package root stood in for so that ``sglang/__init__.py`` never runs."""
    if "sglang" not in sys.modules:
        spec = importlib.util.find_spec("sglang")
        root = list(spec.submodule_search_locations)[0]
        for package in ("sglang", "sglang.kernels", "sglang.kernels.ops", "sglang.kernels.ops.speculative"):
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(root, *package.split(".")[1:])]
            module.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
            module.__spec__.submodule_search_locations = module.__path__
            sys.modules[package] = module
    return importlib.import_module(name)
'''

BUDGET_IMPORTS = (
    """\
import os

import torch
"""
    + STAND_IN
    + """

ThinkingBudgetLogitProcessor = import_sglang("sglang.srt.sampling.custom_logit_processor").ThinkingBudgetLogitProcessor
"""
)

BUDGET_DRIVER = '''
class EngineBudget:
    """Budget A over ``max_num_reqs`` slots: SGLang's ``ThinkingBudgetLogitProcessor`` called once per step on one
    logits row ``[V]`` per slot. It budgets from the last start marker it finds (``scope`` is not its to choose)."""

    def __init__(self, start_token_ids, end_token_ids, max_num_reqs, scope, max_spec_len):
        (start,), (end,) = start_token_ids, end_token_ids
        self.processor = type(
            "CaseThinkingBudgetLogitProcessor",
            (ThinkingBudgetLogitProcessor,),
            {"THINKING_START_TOKEN_ID": start, "THINKING_END_TOKEN_ID": end, "NEW_LINE_TOKEN_ID": end},
        )()
        self.vocab = max(start, end) + 1
        self.slots = {}  # slot -> (req, thinking_budget)
        self.batch_size = 0

    def sync_batch(self, update):
        if update is None:
            return
        for index in update["removed"]:
            self.slots.pop(index, None)
        for added in update["added"]:
            req = types.SimpleNamespace(origin_input_ids=list(added["prompt_token_ids"]), output_ids=[])
            self.slots[added["index"]] = (req, added["budget"])
        for src, dst, kind in update["moved"]:
            if kind == "SWAP":
                self.slots[src], self.slots[dst] = self.slots.get(dst), self.slots.get(src)
            else:
                self.slots[dst] = self.slots.pop(src, None)
        self.batch_size = update["batch_size"]

    def forced_tokens(self, num_draft_tokens, draft_token_ids):
        """The processor on zero logits ``[B, V]``, as ``srt/layers/sampler.py`` applies it (no drafts: SGLang
        never calls it in verification)."""
        params = []
        for slot in range(self.batch_size):
            held = self.slots.get(slot)
            params.append(None if held is None else {"thinking_budget": held[1], "__req__": held[0]})
        out = self.processor(torch.zeros(self.batch_size, self.vocab), params)
        finite = torch.isfinite(out)
        forced = (finite.sum(dim=1) == 1) & (out.max(dim=1).values == 0)
        return torch.where(forced, finite.to(torch.int64).argmax(dim=1), -1).tolist()

    def update_state(self, rows):
        """Append each slot's committed tokens to its request's ``output_ids``."""
        for slot, row in enumerate(rows):
            if self.slots.get(slot) is not None:
                self.slots[slot][0].output_ids.extend(int(t) for t in row if t != -1)
'''
