"""Budget A of SGLang's kernel-level adapter (``specconform.harness.adapters.sglang``): ``srt/sampling/
custom_logit_processor.py`` ``ThinkingBudgetLogitProcessor`` called per step, as ``srt/layers/sampler.py`` calls it
(the adapter's module docstring says how, and why a step with drafts never reaches it)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from ..contract import OutsideContract

if TYPE_CHECKING:
    from .sglang import SglangEngine


class SglangBudget:
    """Budget A over ``max_num_reqs`` slots: SGLang's ``ThinkingBudgetLogitProcessor`` called per step."""

    def __init__(self, engine: SglangEngine, start, end, max_num_reqs):
        for field, marker in (("start_token_ids", start), ("end_token_ids", end)):
            if len(marker) != 1:
                raise OutsideContract(
                    f"{field} is {marker}: SGLang's ThinkingBudgetLogitProcessor holds one token id per marker "
                    "(THINKING_START_TOKEN_ID, THINKING_END_TOKEN_ID), so no longer marker ever reaches it"
                )
        base = engine.sglang.ThinkingBudgetLogitProcessor
        self.processor = type(
            "CaseThinkingBudgetLogitProcessor",
            (base,),
            {"THINKING_START_TOKEN_ID": start[0], "THINKING_END_TOKEN_ID": end[0], "NEW_LINE_TOKEN_ID": end[0]},
        )()
        self.engine = engine
        self.vocab = max(start + end) + 1
        self.slots: dict[int, tuple[types.SimpleNamespace, object]] = {}  # slot -> (req, thinking_budget)
        self.batch_size = 0

    def sync_batch(self, update):
        if update is None:
            return
        for index in update.removed:
            self.slots.pop(index, None)
        for added in update.added:
            req = types.SimpleNamespace(origin_input_ids=list(added.prompt_token_ids), output_ids=[])
            self.slots[added.index] = (req, added.budget)
        for src, dst, kind in update.moved:
            if getattr(kind, "name", kind) == "SWAP":
                self.slots[src], self.slots[dst] = self.slots.get(dst), self.slots.get(src)
            else:
                self.slots[dst] = self.slots.pop(src, None)
        self.batch_size = update.batch_size

    def _apply(self, logits):
        """The processor on ``logits [batch_size, V]`` (one row per slot), as ``Sampler`` applies it."""
        params = []
        for slot in range(len(logits)):
            held = self.slots.get(slot)
            params.append(None if held is None else {"thinking_budget": held[1], "__req__": held[0]})
        return self.processor(logits, params)

    def _check_no_drafts(self, num_draft_tokens):
        if num_draft_tokens is not None and any(int(k) for k in num_draft_tokens):
            raise OutsideContract(
                f"num_draft_tokens is {list(num_draft_tokens)}: SGLang applies budget A outside verification only "
                "(EAGLE and n-gram verification, srt/speculative/eagle_utils.py, never call the custom logit processor)"
            )

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        torch = self.engine.torch
        self._check_no_drafts(num_draft_tokens)
        out = self._apply(torch.zeros(self.batch_size, self.vocab))
        finite = torch.isfinite(out)
        forced = (finite.sum(dim=1) == 1) & (out.max(dim=1).values == 0)
        return torch.where(forced, finite.to(torch.int64).argmax(dim=1), -1).tolist()

    def update_state(self, rows):
        for slot, row in enumerate(rows):
            if slot in self.slots and self.slots[slot] is not None:
                for token in row:
                    if token == -1:
                        break
                    self.slots[slot][0].output_ids.append(int(token))

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        self._check_no_drafts(num_draft_tokens)
        tensor = self.engine.torch.tensor(np.asarray(logits), dtype=self.engine.torch.float32)
        return self._apply(tensor).numpy()
