"""Budget mutants: the oracle's thinking-budget state (``specconform.harness.oracle.budget``) with one rule broken,
per request (``REQUEST_TYPES``), per batch (``BATCH_TYPES``) or in the engine's budget entry points
(``MutantBudget``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specconform.specs.interface import BatchUpdate

from ...oracle import budget as tb
from ..oracle import OracleBudget


class _LateByOne(tb.RequestBudget):
    def forced_token(self):
        if self.budget is not None and self.in_section and self.count == self.budget_left:
            return -1
        return super().forced_token()


class _RestartsEnd(tb.RequestBudget):
    def forced_token(self):
        forced = super().forced_token()
        return self.end.marker[0] if forced != -1 else -1


class _ShortPromptStart(tb.RequestBudget):
    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        if state.in_section:  # counts the open section from S's first token, as one engine did
            state.count -= len(start) - 1
        return state


class _StartInsideSection(tb.RequestBudget):
    """Looks for S inside an open section too: a repeated S restarts the count."""

    def feed(self, token):
        restart = False
        if self.in_section:
            self.start_matched = self.start.step(self.start_matched, token)
            restart = self.start_matched == len(self.start)
        super().feed(token)
        if restart and self.in_section:
            self.count, self.start_matched = 0, 0


class _NaiveEndMatch(tb.RequestBudget):
    """Matches E without a failure function: a mismatch restarts from scratch (or from E[0])."""

    def feed(self, token):
        if not self.in_section:
            return super().feed(token)
        marker = self.end.marker
        matched = self.end_matched
        naive = matched + 1 if marker[matched] == token else int(marker[0] == token)
        super().feed(token)
        if self.in_section:
            self.end_matched = naive


class _CountExcludesPartialEnd(tb.RequestBudget):
    def forced_token(self):
        if self.budget is not None and self.in_section and self.count - self.end_matched < self.budget_left:
            return -1
        return super().forced_token()


class _ZeroBudgetLate(tb.RequestBudget):
    """Budget 0 on a model-opened section lets the token after S through."""

    def forced_token(self):
        if self.budget_left == 0 and self.in_section and self.count == 0 and not self.opened_in_prompt:
            return -1
        return super().forced_token()


class _CompletesStartedEnd(tb.RequestBudget):
    """Once the model starts E, the rest of E is forced, even while budget is left."""

    def forced_token(self):
        if self.budget is not None and self.in_section and self.end_matched:
            return self.end.marker[self.end_matched]
        return super().forced_token()


class _PromptThinkingUncounted(tb.RequestBudget):
    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        state.count = state.end_matched  # the prompt's thinking tokens are not counted
        return state


class _FirstTokenNeverForced(tb.RequestBudget):
    fresh: bool = True

    def forced_token(self):
        return -1 if self.fresh else super().forced_token()

    def feed(self, token):
        super().feed(token)
        self.fresh = False

    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        state.fresh = True
        return state


class _SpentForgotten(tb.RequestBudget):
    @property
    def budget_left(self):
        return self.budget


class _SpentAlwaysKept(tb.RequestBudget):
    @property
    def budget_left(self):
        return None if self.budget is None else self.budget - self.spent


class _PhraseNotForced(tb.RequestBudget):
    """Forces E (continuing a partial E) and never the declared transition phrase."""

    def forced_token(self):
        forced = super().forced_token()
        return -1 if forced == -1 else self.end.marker[self.end_matched]


class _CountsFromRequestStart(tb.RequestBudget):
    """Counts an open section from the request's first token, its prompt included, instead of from S."""

    seen: int = 0  # tokens fed since the request began

    def feed(self, token):
        was_open = self.in_section
        super().feed(token)
        self.seen += 1
        if self.in_section and not was_open:  # S completed at this token
            self.count = self.seen


class _GarbledForcedSequence(tb.RequestBudget):
    """At the threshold forces ``len(F)`` ids that are not ``F`` (S's first token), then stops forcing while the
    section stays open."""

    garbled: int = 0  # forced positions of the open section

    def _due(self) -> int:
        """The token the oracle forces here, or -1 once ``len(F)`` garbled positions were forced."""
        forced = super().forced_token()
        sequence = self.forced if self.forced is not None else self.end
        return -1 if self.garbled >= len(sequence) else forced

    def forced_token(self):
        due = self._due()
        if due == -1:
            return -1
        return next(t for t in (*self.start.marker, due + 1) if t != due)

    def feed(self, token):
        forced = self._due() != -1
        super().feed(token)
        self.garbled = self.garbled + forced if self.in_section else 0

    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        state.garbled = 0  # the prompt's tokens were never forced
        return state


class _ClosesOnlyOnForcedSequence(tb.RequestBudget):
    """Closes an open section only when the whole forced sequence F completes, not when E does: an E the model emits
    alone leaves it open and counting. A section F closes is counted as the spec counts it (its phrase's tokens are
    thinking tokens, TB-END-1): the one defect is which sequence closes a section."""

    def feed(self, token):
        if self.forced is None or not self.in_section:
            return super().feed(token)
        if self.forced.step(self.forced_matched, token) == len(self.forced):
            return super().feed(token)  # F completes, and E with it: the section closes as the spec closes it
        self.count += 1
        self.end_matched = self.end.step(self.end_matched, token)  # a whole E here closes nothing
        self.forced_matched = self.forced.step(self.forced_matched, token)


class _OtherEndMarkersIgnored(tb.BudgetBatch):
    """Closes sections on the first end marker only: the others the parser accepts leave them open."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.others = ()


class _SwapKeepsVacated(tb.BudgetBatch):
    """A SWAP that moves a tracked request out of a slot leaves that slot tracked too."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, update.added, ()))
        for src, dst, kind in update.moved:
            before = list(self.slots)
            super().apply(BatchUpdate(update.batch_size, (), (), ((src, dst, kind),)))
            if tb.move_kind_name(kind) != "SWAP":
                continue
            for x, y in ((src, dst), (dst, src)):
                if self.slots[x] is None and isinstance(before[x], tb.RequestBudget):
                    self.slots[x] = self.slots[y] if self.slots[y] is not None else before[x]


class _MovesBeforeAdditions(tb.BudgetBatch):
    """Applies an update's moves before its additions."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, (), update.moved))
        super().apply(BatchUpdate(update.batch_size, (), update.added, ()))


class _MoveKeepsOccupiedDestination(tb.BudgetBatch):
    """An UNIDIRECTIONAL move onto an occupied slot leaves the destination's request in place."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, update.added, ()))
        for src, dst, kind in update.moved:
            in_range = 0 <= dst < len(self.slots)  # a move out of range is the oracle's error to raise, below
            keep = in_range and self.occupied(dst) and tb.move_kind_name(kind) == "UNIDIRECTIONAL"
            kept = self.slots[dst] if in_range else None
            super().apply(BatchUpdate(update.batch_size, (), (), ((src, dst, kind),)))
            if keep:
                self.slots[dst] = kept


BATCH_TYPES = {
    "swap-leaves-vacated-tracked": _SwapKeepsVacated,
    "moves-before-additions": _MovesBeforeAdditions,
    "move-keeps-occupied-destination": _MoveKeepsOccupiedDestination,
    "other-end-markers-ignored": _OtherEndMarkersIgnored,
}

REQUEST_TYPES = {
    "budget-off-by-one": _LateByOne,
    "end-marker-restarted": _RestartsEnd,
    "multi-token-start-undercounted": _ShortPromptStart,
    "start-looked-for-inside-section": _StartInsideSection,
    "end-matched-without-failure-function": _NaiveEndMatch,
    "count-excludes-partial-end": _CountExcludesPartialEnd,
    "zero-budget-one-late": _ZeroBudgetLate,
    "started-end-completed": _CompletesStartedEnd,
    "prompt-thinking-uncounted": _PromptThinkingUncounted,
    "first-token-never-forced": _FirstTokenNeverForced,
    "spent-forgotten": _SpentForgotten,
    "section-scope-spends": _SpentAlwaysKept,
    "phrase-not-forced": _PhraseNotForced,
    "count-from-request-start": _CountsFromRequestStart,
    "forced-phrase-garbled": _GarbledForcedSequence,
    "closed-only-by-forced-sequence": _ClosesOnlyOnForcedSequence,
}


class MutantBudget(OracleBudget):
    def __init__(self, batch, mutation):
        super().__init__(batch)
        self.mutation = mutation

    def sync_batch(self, update):
        if update is not None and self.mutation in ("minus-one-tracked", "fractional-budget-truncated"):
            added = []
            for a in update.added:
                budget = a.budget
                if self.mutation == "minus-one-tracked" and budget == -1 and not isinstance(budget, bool):
                    budget = 0
                if self.mutation == "fractional-budget-truncated" and isinstance(budget, float):
                    budget = int(budget)
                added.append(replace(a, budget=budget))
            update = replace(update, added=tuple(added))
        try:
            super().sync_batch(update)
        except ValueError as exc:
            if self.mutation != "invalid-slots-ignored" or "budget" in str(exc):
                raise

    def update_state(self, rows):
        if self.mutation == "commits-first-token-only":
            rows = [[r[0]] if len(r) else [] for r in (list(row) for row in rows)]
        super().update_state(rows)
        if self.mutation == "partial-markers-dropped-between-steps":
            for slot in range(self.batch.max_num_reqs):
                state = self.batch.state(slot)
                if state is not None:
                    state.start_matched = state.end_matched = 0

    def _slot_rows(self, num_draft_tokens):
        """``[(slot, first row, rows)]`` for ``num_draft_tokens`` (None: one row per slot)."""
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * self.batch.batch_size
        out, offset = [], 0
        for slot, k in enumerate(num):
            out.append((slot, offset, k + 1))
            offset += k + 1
        return out

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        forced = self.forced_tokens(num_draft_tokens, draft_token_ids)
        if self.mutation in ("forced-logit-added", "forced-logit-too-small"):
            bonus = 1e9 if self.mutation == "forced-logit-added" else 10.0
            for row, token in enumerate(forced):
                if token != -1:
                    logits[row, token] = (0.0 if np.isneginf(logits[row, token]) else logits[row, token]) + bonus
            return logits
        logits = super().apply_to_logits(logits, num_draft_tokens, draft_token_ids)
        if self.mutation == "untracked-logits-shifted":
            for slot, first, count in self._slot_rows(num_draft_tokens):
                if self.batch.state(slot) is None:
                    rows = slice(first, first + count)
                    logits[rows] = logits[rows] - np.max(logits[rows], axis=1, keepdims=True)
        return logits

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        rows = super().forced_tokens(num_draft_tokens, draft_token_ids)
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * self.batch.batch_size
        if self.mutation == "budget-ignored" or (self.mutation == "budget-skipped-in-steps-with-drafts" and sum(num)):
            return [-1] * len(rows)
        if self.mutation == "budget-not-applied-to-draft-rows":
            out, offset = [], 0
            for k in num:
                out += [-1] * k + [rows[offset + k]]
                offset += k + 1
            return out
        if self.mutation == "draft-rows-restart-end":
            end = self.batch.end.marker
            out = list(rows)
            for _slot, first, count in self._slot_rows(num_draft_tokens):
                for j in range(1, count):
                    if out[first + j] != -1:
                        out[first + j] = end[0]
            return out
        if self.mutation == "rows-in-reverse-slot-order":
            blocks = [rows[first : first + count] for _, first, count in self._slot_rows(num_draft_tokens)]
            return [t for block in reversed(blocks) for t in block]
        if self.mutation == "forced-tokens-to-row-0-without-drafts" and sum(num) == 0:
            out = [-1] * len(rows)
            for token in rows:
                if token != -1:
                    out[0] = token
            return out
        return rows
