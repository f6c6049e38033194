"""Kernel-level adapter for SGLang 0.5.23's budget B, strict thinking
(``specconform.harness.adapters.sglang_strict:make``), judged as ``sglang-0.5.23-strict``: the one release
``harness/products/sglang-strict/releases.yaml`` teaches it (an earlier one is refused, naming it).

SGLang has two thinking budgets. Budget A, the custom logit processor, is ``specconform.harness.adapters.sglang``.
Budget B is the strict-thinking grammar: a server started with ``--enable-strict-thinking`` wraps every request in a
``ReasonerGrammarObject`` (``srt/constrained/reasoner_grammar_backend.py``), and a request's
``max_thinking_tokens`` reaches it as ``custom_params.thinking_budget`` (``srt/managers/tokenizer_manager.py``
lines 1560-1564, refused without strict thinking at lines 905-913). Its pieces are driven as SGLang's scheduler
drives them:

- **Setup**, as the scheduler sets it up: SGLang's ``ReasonerGrammarBackend`` over its ``XGrammarGrammarBackend``,
  with SGLang's ``qwen3`` reasoning parser, the most used one that filters (its ``think_excluded_tokens``,
  ``<tool_call>``, ``</tool_call>``, ``<|im_end|>`` and ``<|endoftext|>``; a parser without any leaves the budget
  unapplied: see the lead in the report). The tokenizer is a stand-in: it encodes ``</think>`` to the case's end
  marker and each excluded token to an id of its own past the case's ids (``EXCLUDED_IDS``), and gives xgrammar
  a byte vocabulary of ``VOCAB_SIZE`` ids. ``SGLANG_MAX_THINK_TOKENS`` keeps its default, ``-1``.
- **A request** is handed to SGLang's ``GrammarManager.process_req_with_grammar`` as the scheduler hands it
  (``srt/constrained/grammar_manager.py`` lines 148-209): no grammar of its own, ``require_reasoning`` on (the chat
  request's thinking mode, on by default for Qwen3), its budget in ``custom_params.thinking_budget`` when it has one.
  So the manager builds the strict object (``init_strict_reasoning_grammar``) and sets its ``max_think_tokens``.
  Budget B has no start marker: a thinking request thinks from its first generated token to its first end marker.
- **Each step without drafts**, ``SamplingBatchInfo.update_regex_vocab_mask`` (``srt/sampling/sampling_batch_info.py``
  lines 382-407) fills the batch's vocab bitmask row by row from the objects, as the sampler then applies it
  (``-inf`` for every id whose bit is 0). **Each step with drafts**, ``generate_token_bitmask`` and
  ``traverse_tree`` (``srt/speculative/spec_utils.py`` lines 584-699) fill one row per verify position over the chain
  of drafts: ``accept_token`` each draft its parent's row allows, ``fill_vocab_mask``, then ``rollback(1)``; EAGLE and
  n-gram verification apply that mask to the target's logits (``srt/speculative/eagle_utils.py`` lines 586-588).
  SGLang verifies one draft length per batch, so the requests of a step are traversed in groups of equal ``K``.
- **A forced row** is a row of that bitmask which allows exactly one id: the sampler leaves that id's logit as it was
  and writes ``-inf`` everywhere else. That is neither of the spec's forms (TB-FORCE-5's one-hot ``0``, TB-FORCE-6's
  large constant), so the profile claims no ``budget-logits`` capability and forced rows are read from the bitmask.
- **Committed tokens** are accepted one by one (``accept_token``), as ``batch_result_processor._accept_grammar_tokens``
  does after each step, sampled or verified.

Where a moved request's object goes is this adapter's bookkeeping (the scheduler keeps it on the request). The
modules are imported with the package root stood in for (``specconform.harness.adapters.sglang.import_sglang``); the two
functions of ``spec_utils`` are compiled from the installed file alone, because the module imports SGLang's whole
model-config zoo, which needs a torchvision built for this torch. Nothing of SGLang's code is copied here.
"""

from __future__ import annotations

import ast
import importlib
import logging
import time
import types
from collections.abc import Sequence

import numpy as np

from ..core import UsageError
from ..products import registry, releases
from .sglang import import_sglang

QWEN3_EXCLUDED = ("<tool_call>", "</tool_call>", "<|im_end|>", "<|endoftext|>")
MARKER_IDS = 1024  # case ids stay below this; the excluded tokens' ids follow it
EXCLUDED_IDS = {text: MARKER_IDS + n for n, text in enumerate(QWEN3_EXCLUDED)}
VOCAB_SIZE = MARKER_IDS + len(QWEN3_EXCLUDED)
_TREE_FUNCTIONS = ("traverse_tree", "generate_token_bitmask")


def _tree_functions(path: str) -> types.SimpleNamespace:
    """``traverse_tree`` and ``generate_token_bitmask`` compiled from SGLang's installed ``spec_utils.py`` alone
    (its own lines and file name, so tracebacks and patches point at the installed file)."""
    with open(path, encoding="utf-8") as file:
        module = ast.parse(file.read(), filename=path)
    kept = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name in _TREE_FUNCTIONS]
    names = {n.name for n in kept}
    if names != set(_TREE_FUNCTIONS):
        raise RuntimeError(f"{path} lacks {sorted(set(_TREE_FUNCTIONS) - names)}: not SGLang 0.5.23's spec_utils")
    namespace = {
        "__name__": "sglang.srt.speculative.spec_utils",
        "logger": logging.getLogger("sglang.srt.speculative.spec_utils"),
        "time": time,
    }
    threshold = next(
        n
        for n in module.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "TREE_TRAVERSE_TIME_THRESHOLD"
    )
    future = [n for n in module.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    code = compile(ast.Module(body=[*future, threshold, *kept], type_ignores=[]), path, "exec")
    exec(code, namespace)  # noqa: S102 (SGLang's own functions, from the installed file)
    return types.SimpleNamespace(**{name: namespace[name] for name in _TREE_FUNCTIONS})


PRODUCT = "sglang-strict"  # whose releases.yaml names the releases this adapter is taught


def import_strict() -> tuple[releases.Release, types.SimpleNamespace]:
    """The installed SGLang as ``harness/products/sglang-strict/releases.yaml`` teaches it (a ``UsageError`` names the
    releases taught when it is not one of them, or the parameter that moved), and its strict-thinking grammar, its
    grammar manager, the xgrammar backend, the batch mask fill and the speculative tree traversal, imported with the
    package root stood in for."""
    try:
        release = releases.release(PRODUCT, import_sglang())
        release.check_signature(
            "GrammarManager.process_req_with_grammar", release.load("GrammarManager").process_req_with_grammar
        )
    except releases.UntaughtRelease as exc:
        raise UsageError(str(exc)) from None
    spec_utils = importlib.util.find_spec("sglang.srt.speculative.spec_utils")
    return release, types.SimpleNamespace(
        reasoner=importlib.import_module("sglang.srt.constrained.reasoner_grammar_backend"),
        manager=importlib.import_module("sglang.srt.constrained.grammar_manager"),
        xgrammar=importlib.import_module("sglang.srt.constrained.xgrammar_backend"),
        parser=importlib.import_module("sglang.srt.parser.reasoning_parser"),
        batch_info=importlib.import_module("sglang.srt.sampling.sampling_batch_info"),
        tree=_tree_functions(spec_utils.origin),
    )


class StandInTokenizer:
    """The tokenizer SGLang's backends are handed: ``<think>`` and ``</think>`` encode to the case's markers (SGLang
    reads only the end marker's ids), each of Qwen3's excluded tokens to its id in ``EXCLUDED_IDS``; xgrammar gets a
    byte vocabulary of ``VOCAB_SIZE`` ids."""

    def __init__(self, start: Sequence[int], end: Sequence[int], xgrammar):
        self.ids = {"<think>": list(start), "</think>": list(end), **{t: [i] for t, i in EXCLUDED_IDS.items()}}
        self.xgrammar = xgrammar

    def encode(self, text, add_special_tokens=False):
        if text not in self.ids:
            raise ValueError(f"the stand-in tokenizer encodes Qwen3's markers and excluded tokens only, not {text!r}")
        return list(self.ids[text])

    def decode(self, token_ids, **kwargs):
        return " ".join(str(t) for t in token_ids)

    def init_xgrammar(self):
        """The ``init_xgrammar`` hook ``XGrammarGrammarBackend`` calls on special tokenizers."""
        vocabulary = [f"<{i}>".encode() for i in range(VOCAB_SIZE)]
        return self.xgrammar.TokenizerInfo(vocabulary, self.xgrammar.VocabType.RAW, vocab_size=VOCAB_SIZE), None


def make():
    return SglangStrictEngine()


class SglangStrictEngine:
    def __init__(self):
        import torch

        self.torch = torch
        self.release, self.sglang = import_strict()
        self.name = self.release.name_of("make")
        from importlib.metadata import version

        self.device = "cpu"  # the scheduler fills the bitmask on the host (pinned), then moves it
        self.version = f"sglang-{version('sglang')} xgrammar-{version('xgrammar')} torch-{torch.__version__} cpu"
        # with its reasons: harness/products/sglang-strict/profile.yaml, named for this release
        self.profile = self.release.profile("make", registry.product(PRODUCT).profile_path)

    def budget_state(self, start, end, max_num_reqs, scope="section", max_spec_len=0):
        return StrictBudget(self, list(start), list(end), max_num_reqs)


class StrictBudget:
    """Budget B over ``max_num_reqs`` slots: one ``ReasonerGrammarObject`` per request, made by SGLang's grammar
    manager, its bitmask filled as SGLang's sampler and speculative verification fill it. ``model_type`` names the
    reasoning parser (``--reasoning-parser``), as ``create_grammar_backend`` builds it."""

    def __init__(self, engine: SglangStrictEngine, start, end, max_num_reqs, model_type: str = "qwen3"):
        for field, marker in (("start_token_ids", start), ("end_token_ids", end)):
            if not marker:
                raise ValueError(f"{field} is {marker}: a marker holds at least one token id")
            if any(not 0 <= int(t) < MARKER_IDS for t in marker):
                raise ValueError(f"{field} is {marker}: this adapter's ids lie in [0, {MARKER_IDS})")
        sg = engine.sglang
        self.engine = engine
        self.end = end
        tokenizer = StandInTokenizer(start, end, importlib.import_module("xgrammar"))
        backend = sg.reasoner.ReasonerGrammarBackend(
            sg.xgrammar.XGrammarGrammarBackend(tokenizer, vocab_size=VOCAB_SIZE),
            sg.parser.ReasoningParser(model_type=model_type, stream_reasoning=False, tokenizer=tokenizer),
            tokenizer,
            enable_strict_thinking=True,
        )
        manager = object.__new__(sg.manager.GrammarManager)  # the scheduler-bound parts are not used
        manager.grammar_backend = backend
        manager._enable_strict_thinking = backend.enable_strict_thinking
        manager.scheduler = types.SimpleNamespace(model_config=types.SimpleNamespace())
        manager.grammar_queue = []
        self.manager = manager
        self.slots: dict[int, types.SimpleNamespace] = {}  # slot -> the scheduler's Req, as far as these read it
        self.batch_size = 0

    # -- the batch ------------------------------------------------------------------------------

    def _request(self, added) -> types.SimpleNamespace:
        """A request as the scheduler hands it to ``process_req_with_grammar``: no grammar of its own, thinking
        required, the budget where ``tokenizer_manager`` copies ``max_thinking_tokens``."""
        custom_params = None if added.budget is None else {"thinking_budget": added.budget}
        sampling_params = types.SimpleNamespace(
            json_schema=None, regex=None, ebnf=None, structural_tag=None, custom_params=custom_params
        )
        req = types.SimpleNamespace(
            rid=f"slot-{added.index}",
            origin_input_ids=list(added.prompt_token_ids),
            require_reasoning=True,
            sampling_params=sampling_params,
            grammar=None,
            output_ids=[],
        )
        if self.manager.process_req_with_grammar(req):
            raise RuntimeError("SGLang queued a strict-thinking grammar for compilation; it builds them at once")
        return req

    def sync_batch(self, update):
        if update is None:
            return
        for index in update.removed:
            self.slots.pop(index, None)
        for added in update.added:
            self.slots[added.index] = self._request(added)
        for src, dst, kind in update.moved:
            if getattr(kind, "name", kind) == "SWAP":
                self.slots[src], self.slots[dst] = self.slots.get(dst), self.slots.get(src)
            else:
                self.slots[dst] = self.slots.pop(src, None)
        self.slots = {slot: req for slot, req in self.slots.items() if req is not None}
        self.batch_size = update.batch_size

    # -- the masks ------------------------------------------------------------------------------

    def _decode_rows(self, bitmask) -> list[int]:
        """The forced id of each row of SGLang's ``bitmask`` int32 ``[rows, ceil(VOCAB_SIZE / 32)]``: the one id it
        allows, or ``-1`` where it allows more (bit ``t % 32`` of word ``t // 32`` allows id ``t``)."""
        words = bitmask.cpu().numpy().astype(np.uint32)
        allowed = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")[:, :VOCAB_SIZE]
        single = allowed.sum(axis=1) == 1
        return np.where(single, allowed.argmax(axis=1), -1).tolist()

    def _sequential_rows(self) -> list[int]:
        """One row per slot, filled as ``SamplingBatchInfo.update_regex_vocab_mask`` fills it."""
        grammars = [getattr(self.slots.get(slot), "grammar", None) for slot in range(self.batch_size)]
        if not any(grammars):
            return [-1] * self.batch_size
        info = types.SimpleNamespace(
            grammars=grammars,
            vocab_size=VOCAB_SIZE,
            temperatures=[1.0] * self.batch_size,
            device=self.engine.device,
            grammar_mask=None,
        )
        self.engine.sglang.batch_info.SamplingBatchInfo.update_regex_vocab_mask(info)
        return self._decode_rows(info.grammar_mask.vocab_mask)

    def _verify_rows(self, num_draft_tokens, draft_token_ids) -> list[int]:
        """``K_i + 1`` rows per slot, filled by ``generate_token_bitmask`` over each slot's chain of drafts, the
        slots of one draft length together (row 0 of a chain is the committed state)."""
        torch = self.engine.torch
        counts = [int(k) for k in num_draft_tokens]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        rows: list[list[int]] = [[-1] * (k + 1) for k in counts]
        for K in sorted(set(counts)):
            slots = [s for s, k in enumerate(counts) if k == K and getattr(self.slots.get(s), "grammar", None)]
            if not slots:
                continue
            chain = torch.zeros((len(slots), K + 1), dtype=torch.int64)
            for row, slot in enumerate(slots):
                chain[row, 1:] = torch.tensor([int(t) for t in draft_token_ids[offsets[slot] : offsets[slot + 1]]])
            next_token = torch.full((len(slots), K + 1), -1, dtype=torch.int64)
            next_token[:, :-1] = torch.arange(1, K + 1)
            next_sibling = torch.full((len(slots), K + 1), -1, dtype=torch.int64)
            bitmask, _ = self.engine.sglang.tree.generate_token_bitmask(
                [self.slots[s] for s in slots], next_token, next_sibling, chain, VOCAB_SIZE
            )
            decoded = self._decode_rows(bitmask)
            for row, slot in enumerate(slots):
                rows[slot] = decoded[row * (K + 1) : (row + 1) * (K + 1)]
        return [token for chain_rows in rows for token in chain_rows]

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        if num_draft_tokens is None or not any(int(k) for k in num_draft_tokens):
            return self._sequential_rows()
        if len(num_draft_tokens) != self.batch_size:
            raise ValueError(f"num_draft_tokens has {len(num_draft_tokens)} entries for batch size {self.batch_size}")
        return self._verify_rows(num_draft_tokens, list(draft_token_ids))

    def update_state(self, rows):
        for slot, row in enumerate(rows):
            req = self.slots.get(slot)
            if req is None:
                continue
            for token in row:
                if token == -1:
                    break
                req.grammar.accept_token(int(token))
                req.output_ids.append(int(token))
                if req.grammar.is_terminated():
                    break
