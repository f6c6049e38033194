"""SGLang 0.5.23's idiom for budget B, strict thinking: its ``ReasonerGrammarObject`` made by its grammar manager and
read through the vocab mask its sampler fills.

The driver is ``harness/products/sglang-strict/sglang_strict.py``'s ``StrictBudget`` inlined for steps without drafts,
with plain dicts for the batch updates: SGLang's ``ReasonerGrammarBackend`` over its ``XGrammarGrammarBackend`` with the
``qwen3`` reasoning parser and a stand-in tokenizer (``</think>`` encodes to the case's end marker, Qwen3's excluded
tokens to ids of their own past the case's); each request handed to ``GrammarManager.process_req_with_grammar`` with
``require_reasoning`` on and its budget in ``custom_params.thinking_budget``; each step's mask filled by
``SamplingBatchInfo.update_regex_vocab_mask``; a row allowing exactly one id is forced to it; committed tokens accepted
one by one (``accept_token``). The package root is stood in for as in the budget-A idiom."""

from .sglang import STAND_IN

NAME = "sglang-0.5.23-strict"
ENGINES = (
    "sglang-0.5.23-strict",
    "specconform.harness.adapters.sglang_strict:make",
    "harness.adapters.sglang_strict:make",
)
LABEL = "SGLang 0.5.23 budget B (srt/constrained/reasoner_grammar_backend.py, ReasonerGrammarObject)"
RUN = "pytest FILE, where sglang==0.5.23 and xgrammar are installed (the recipe of tox.ini's sglang environment)"
MULTI_TOKEN_MARKERS = True
DRAFTS = False  # the speculative mask traversal (spec_utils.generate_token_bitmask) is not inlined yet

BUDGET_IMPORTS = (
    """\
import os

import numpy as np
import torch
import xgrammar

if not torch.cuda.is_available():  # SGLang's sampling kernels run on a CPU under Triton's interpreter only
    os.environ["TRITON_INTERPRET"] = "1"
"""
    + STAND_IN
    + """

reasoner = import_sglang("sglang.srt.constrained.reasoner_grammar_backend")
grammar_manager = import_sglang("sglang.srt.constrained.grammar_manager")
xgrammar_backend = import_sglang("sglang.srt.constrained.xgrammar_backend")
reasoning_parser = import_sglang("sglang.srt.parser.reasoning_parser")
sampling_batch_info = import_sglang("sglang.srt.sampling.sampling_batch_info")
"""
)

BUDGET_DRIVER = '''
QWEN3_EXCLUDED = ("<tool_call>", "</tool_call>", "<|im_end|>", "<|endoftext|>")
MARKER_IDS = 1024  # case ids stay below this; the excluded tokens' ids follow it
EXCLUDED_IDS = {text: MARKER_IDS + n for n, text in enumerate(QWEN3_EXCLUDED)}
VOCAB_SIZE = MARKER_IDS + len(QWEN3_EXCLUDED)


class StandInTokenizer:
    """The model's tokenizer as SGLang's backends read it: the markers encode to the case's ids, Qwen3's excluded
    tokens to ``EXCLUDED_IDS``; xgrammar gets a byte vocabulary of ``VOCAB_SIZE`` ids."""

    def __init__(self, start_token_ids, end_token_ids):
        self.ids = {"<think>": list(start_token_ids), "</think>": list(end_token_ids)}
        self.ids.update({text: [i] for text, i in EXCLUDED_IDS.items()})

    def encode(self, text, add_special_tokens=False):
        return list(self.ids[text])

    def decode(self, token_ids, **kwargs):
        return " ".join(str(t) for t in token_ids)

    def init_xgrammar(self):
        vocabulary = [f"<{i}>".encode() for i in range(VOCAB_SIZE)]
        return xgrammar.TokenizerInfo(vocabulary, xgrammar.VocabType.RAW, vocab_size=VOCAB_SIZE), None


class EngineBudget:
    """Budget B over ``max_num_reqs`` slots: one ``ReasonerGrammarObject`` per request. It has no start marker: a
    thinking request thinks from its first generated token (``scope`` is not its to choose)."""

    def __init__(self, start_token_ids, end_token_ids, max_num_reqs, scope, max_spec_len):
        tokenizer = StandInTokenizer(start_token_ids, end_token_ids)
        backend = reasoner.ReasonerGrammarBackend(
            xgrammar_backend.XGrammarGrammarBackend(tokenizer, vocab_size=VOCAB_SIZE),
            reasoning_parser.ReasoningParser(model_type="qwen3", stream_reasoning=False, tokenizer=tokenizer),
            tokenizer,
            enable_strict_thinking=True,
        )
        manager = object.__new__(grammar_manager.GrammarManager)  # the scheduler-bound parts are not used
        manager.grammar_backend = backend
        manager._enable_strict_thinking = backend.enable_strict_thinking
        manager.scheduler = types.SimpleNamespace(model_config=types.SimpleNamespace())
        manager.grammar_queue = []
        self.manager = manager
        self.slots = {}  # slot -> the scheduler's Req, as far as SGLang reads it here
        self.batch_size = 0

    def _request(self, added):
        """A request as the scheduler hands it over: no grammar of its own, thinking required, its budget where
        ``tokenizer_manager`` copies ``max_thinking_tokens``."""
        budget = added["budget"]
        sampling_params = types.SimpleNamespace(
            json_schema=None,
            regex=None,
            ebnf=None,
            structural_tag=None,
            custom_params=None if budget is None else {"thinking_budget": budget},
        )
        req = types.SimpleNamespace(
            rid=f"slot-{added['index']}",
            origin_input_ids=list(added["prompt_token_ids"]),
            require_reasoning=True,
            sampling_params=sampling_params,
            grammar=None,
            output_ids=[],
        )
        assert not self.manager.process_req_with_grammar(req), "SGLang queued the grammar instead of building it"
        return req

    def sync_batch(self, update):
        if update is None:
            return
        for index in update["removed"]:
            self.slots.pop(index, None)
        for added in update["added"]:
            self.slots[added["index"]] = self._request(added)
        for src, dst, kind in update["moved"]:
            if kind == "SWAP":
                self.slots[src], self.slots[dst] = self.slots.get(dst), self.slots.get(src)
            else:
                self.slots[dst] = self.slots.pop(src, None)
        self.slots = {slot: req for slot, req in self.slots.items() if req is not None}
        self.batch_size = update["batch_size"]

    def forced_tokens(self, num_draft_tokens, draft_token_ids):
        """One mask row per slot, filled by ``SamplingBatchInfo.update_regex_vocab_mask``; bit ``t % 32`` of word
        ``t // 32`` of the int32 ``[B, ceil(V / 32)]`` mask allows id ``t``."""
        grammars = [getattr(self.slots.get(slot), "grammar", None) for slot in range(self.batch_size)]
        if not any(grammars):
            return [-1] * self.batch_size
        info = types.SimpleNamespace(
            grammars=grammars,
            vocab_size=VOCAB_SIZE,
            temperatures=[1.0] * self.batch_size,
            device="cpu",
            grammar_mask=None,
        )
        sampling_batch_info.SamplingBatchInfo.update_regex_vocab_mask(info)
        words = info.grammar_mask.vocab_mask.cpu().numpy().astype(np.uint32)
        allowed = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")[:, :VOCAB_SIZE]
        return np.where(allowed.sum(axis=1) == 1, allowed.argmax(axis=1), -1).tolist()

    def update_state(self, rows):
        """Accept each slot's committed tokens one by one, as ``_accept_grammar_tokens`` does after a step."""
        for slot, row in enumerate(rows):
            req = self.slots.get(slot)
            for token in [] if req is None else row:
                if token == -1:
                    break
                req.grammar.accept_token(int(token))
                req.output_ids.append(int(token))
                if req.grammar.is_terminated():
                    break
'''
