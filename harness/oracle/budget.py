"""Executable oracle for the thinking-token budget (specs/thinking-budget.md).

Plain Python, one request at a time, written to be read against the spec rather than to be fast.
Each request runs a streaming automaton over its prompt and committed output:

* ``S`` (start marker) is matched only while no section is open, ``E`` (end marker) only while
  one is; both with KMP partial matches, so markers split across steps, across the prompt/output
  boundary, and self-overlapping markers such as ``E = [a, a, b]`` are found (TB-MARK-*).
* ``count`` is the number of tokens since the open section's ``S`` completed, including a trailing
  partial match of ``E`` (TB-COUNT-1).
* A position is forced when a section is open and ``count >= budget_left``; the forced token is
  ``E[m]`` where ``m`` is the current partial match of ``E`` (TB-FORCE-1, TB-FORCE-2).
* A forced end sequence ``F`` other than ``E`` (a transition phrase ``P`` then ``E``, TB-END-1): forced
  positions carry ``F[f]`` where ``f`` is the current partial match of ``F``; the section still closes when
  ``E`` completes, forced or not (TB-END-2). Without one, ``F = E``.
* Other accepted end markers (TB-END-3): any of them closes an open section too, the longest that completes
  at a token being the one that closed it; forcing still continues ``E`` (or ``F``).
* Scope ``"request"``: ``budget_left = budget - spent`` where ``spent`` sums the thinking tokens of
  the request's earlier sections that opened in the prompt's open section or the output
  (TB-SCOPE-1); scope ``"section"``: ``budget_left = budget`` (TB-SCOPE-2).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

SCOPES = ("request", "section")


def validate_budget(value: Any, field_name: str = "budget") -> int | None:
    """Return the canonical budget: ``None`` (untracked) or an int >= 0 (TB-API-1, TB-API-2).

    ``-1`` and ``None`` mean untracked. Booleans, floats, strings and other negatives raise
    ``ValueError`` naming ``field_name`` and the value.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{field_name} must be an integer >= 0, -1 or None; got {value!r} of type {type(value).__name__}"
        )
    if value == -1:
        return None
    if value < 0:
        raise ValueError(f"{field_name} must be an integer >= 0, -1 or None; got {value!r}")
    return int(value)


def validate_marker(tokens: Any, field_name: str) -> tuple[int, ...]:
    """Return a marker as a tuple of token ids; empty or non-integer markers raise ValueError."""
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise ValueError(f"{field_name} must be a sequence of token ids; got {tokens!r}")
    marker = tuple(tokens)
    if not marker:
        raise ValueError(f"{field_name} must hold at least one token id; got an empty sequence")
    for token in marker:
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            raise ValueError(f"{field_name} must hold token ids >= 0; got {tokens!r}")
    return marker


def validate_forced(forced: Any, end: Sequence[int]) -> tuple[int, ...]:
    """Return the forced end sequence ``F`` (TB-END-1): non-empty token ids that end with ``E`` and hold no
    other occurrence of ``E`` (one would close the section before ``F`` is complete); else ValueError."""
    sequence = validate_marker(forced, "forced_token_ids")
    end = tuple(end)
    if sequence[len(sequence) - len(end) :] != end:
        raise ValueError(f"forced_token_ids must end with the end marker {list(end)}; got {list(sequence)}")
    if occurs_before_end(end, sequence):
        raise ValueError(f"forced_token_ids must hold the end marker {list(end)} only at its end; got {list(sequence)}")
    return sequence


def occurs_before_end(marker: tuple[int, ...], sequence: tuple[int, ...]) -> bool:
    """Whether ``marker`` occurs in ``sequence`` ending before its last token."""
    return any(sequence[i : i + len(marker)] == marker for i in range(len(sequence) - len(marker)))


class MarkerAutomaton:
    """KMP matcher for one marker: ``step(m, token)`` returns the new partial-match length."""

    def __init__(self, marker: Sequence[int]):
        self.marker = tuple(marker)
        failure = [0] * len(self.marker)
        k = 0
        for i in range(1, len(self.marker)):
            while k and self.marker[i] != self.marker[k]:
                k = failure[k - 1]
            if self.marker[i] == self.marker[k]:
                k += 1
            failure[i] = k
        self.failure = failure

    def __len__(self) -> int:
        return len(self.marker)

    def step(self, matched: int, token: int) -> int:
        if matched == len(self.marker):
            matched = self.failure[matched - 1]
        while matched and self.marker[matched] != token:
            matched = self.failure[matched - 1]
        if self.marker[matched] == token:
            matched += 1
        return matched


@dataclass
class RequestBudget:
    """Budget state of one request, fed one committed token at a time."""

    start: MarkerAutomaton
    end: MarkerAutomaton
    budget: int | None
    scope: str = "request"
    forced: MarkerAutomaton | None = None  # the forced end sequence F when it is not E (TB-END-1)
    others: tuple[MarkerAutomaton, ...] = ()  # other accepted end markers (TB-END-3)
    in_section: bool = False
    start_matched: int = 0
    end_matched: int = 0
    forced_matched: int = 0  # partial match of F (only with ``forced``)
    others_matched: list[int] = field(default_factory=list)  # partial match of each of ``others``
    count: int = 0
    spent: int = 0
    sections: list[int] = field(default_factory=list)  # thinking tokens of each closed section
    forced_positions: int = 0
    opened_in_prompt: bool = False  # the open section was opened by the prompt (TB-PROMPT-1)

    @classmethod
    def from_prompt(
        cls,
        start: MarkerAutomaton,
        end: MarkerAutomaton,
        budget: int | None,
        prompt_token_ids: Sequence[int],
        scope: str = "request",
        forced: MarkerAutomaton | None = None,
        others: tuple[MarkerAutomaton, ...] = (),
    ) -> RequestBudget:
        """Scan the prompt (TB-PROMPT-1): only the section left open by the prompt counts."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}; got {scope!r}")
        state = cls(start=start, end=end, budget=budget, scope=scope, forced=forced, others=tuple(others))
        state.others_matched = [0] * len(state.others)
        for token in prompt_token_ids:
            state.feed(token)
        state.spent = 0
        state.sections = []
        state.opened_in_prompt = state.in_section
        return state

    @property
    def budget_left(self) -> int | None:
        if self.budget is None:
            return None
        if self.scope == "section":
            return self.budget
        return self.budget - self.spent

    def forced_token(self) -> int:
        """The token this position must take, or -1 when the position is free (TB-FORCE-1, TB-END-1)."""
        left = self.budget_left  # None: an untracked request
        if left is None or not self.in_section:
            return -1
        if self.count >= left:
            if self.forced is not None:
                return self.forced.marker[self.forced_matched]
            return self.end.marker[self.end_matched]
        return -1

    def feed(self, token: int) -> None:
        if self.in_section:
            self.count += 1
            self.end_matched = self.end.step(self.end_matched, token)
            if self.forced is not None:
                self.forced_matched = self.forced.step(self.forced_matched, token)
            closing = [len(self.end)] if self.end_matched == len(self.end) else []  # forced or not (TB-END-2)
            for k, other in enumerate(self.others):
                self.others_matched[k] = other.step(self.others_matched[k], token)
                if self.others_matched[k] == len(other):
                    closing.append(len(other))  # another accepted end marker (TB-END-3)
            if closing:
                thinking = self.count - max(closing)
                self.sections.append(thinking)
                self.spent += thinking
                self.in_section = False
                self.opened_in_prompt = False
                self.count = 0
                self.end_matched = 0
                self.forced_matched = 0
                self.others_matched = [0] * len(self.others)
                self.start_matched = 0
        else:
            self.start_matched = self.start.step(self.start_matched, token)
            if self.start_matched == len(self.start):
                self.in_section = True
                self.count = 0
                self.end_matched = 0
                self.forced_matched = 0
                self.others_matched = [0] * len(self.others)
                self.start_matched = 0

    def open_thinking_tokens(self) -> int:
        """Thinking tokens of the open section so far (tokens not part of a partial ``E``)."""
        return self.count - self.end_matched if self.in_section else 0

    def clone(self) -> RequestBudget:
        return copy.deepcopy(self)


def move_kind_name(kind: Any) -> str:
    """Accept ``Move.SWAP``-like enums or the strings ``"SWAP"``/``"UNIDIRECTIONAL"``."""
    name = getattr(kind, "name", kind)
    if name not in ("SWAP", "UNIDIRECTIONAL"):
        raise ValueError(f"move kind must be SWAP or UNIDIRECTIONAL; got {kind!r}")
    return name


_EMPTY = object()  # a slot holding no request


class BudgetBatch:
    """The oracle's persistent batch: slot -> request state (``None`` = untracked request).

    ``apply(update)`` follows the BatchUpdate contract (TB-BATCH-1..5): ``removed``, then
    ``added``, then ``moved``. ``update`` is duck-typed: it needs ``batch_size``, ``removed``
    (slots), ``added`` (objects with ``index``, ``budget``, ``prompt_token_ids``) and ``moved``
    (``(src, dst, kind)`` tuples).
    """

    request_type = RequestBudget  # the per-request automaton (the bug zoo substitutes broken ones)

    def __init__(
        self,
        start_token_ids: Sequence[int],
        end_token_ids: Sequence[int],
        max_num_reqs: int,
        scope: str = "request",
        forced_token_ids: Sequence[int] | None = None,
        other_end_token_ids: Sequence[Sequence[int]] = (),
    ):
        """``forced_token_ids``: the forced end sequence ``F`` (TB-END-1); ``None`` forces ``E`` itself.
        ``other_end_token_ids``: end markers accepted beside ``E`` (TB-END-3)."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}; got {scope!r}")
        self.start = MarkerAutomaton(validate_marker(start_token_ids, "start_token_ids"))
        self.end = MarkerAutomaton(validate_marker(end_token_ids, "end_token_ids"))
        forced = None if forced_token_ids is None else validate_forced(forced_token_ids, self.end.marker)
        self.forced = None if forced is None or forced == self.end.marker else MarkerAutomaton(forced)
        others = [validate_marker(m, "other_end_token_ids") for m in other_end_token_ids]
        for other in others:
            if other == self.end.marker:
                raise ValueError(f"other_end_token_ids must differ from the end marker; got {list(other)}")
            if forced is not None and occurs_before_end(other, forced):
                raise ValueError(
                    f"other_end_token_ids {list(other)} occurs inside forced_token_ids {list(forced)} before its end"
                )
        self.others = tuple(MarkerAutomaton(m) for m in others)
        self.scope = scope
        self.max_num_reqs = max_num_reqs
        self.slots: list[Any] = [_EMPTY] * max_num_reqs
        self.batch_size = 0

    def _check_slot(self, slot: Any, what: str) -> int:
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < self.max_num_reqs:
            raise ValueError(f"{what} must be a slot in [0, {self.max_num_reqs}); got {slot!r}")
        return slot

    def occupied(self, slot: int) -> bool:
        return self.slots[slot] is not _EMPTY

    def state(self, slot: int) -> RequestBudget | None:
        value = self.slots[slot]
        return None if value is _EMPTY else value

    def apply(self, update: Any) -> None:
        if update is None:
            return
        batch_size = update.batch_size
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or not (0 <= batch_size <= self.max_num_reqs)
        ):
            raise ValueError(f"batch_size must be in [0, {self.max_num_reqs}]; got {batch_size!r}")
        for slot in update.removed:
            self._check_slot(slot, "removed index")
            if not self.occupied(slot):
                raise ValueError(f"removed index {slot} names an empty slot")
            self.slots[slot] = _EMPTY
        for added in update.added:
            slot = self._check_slot(added.index, "added index")
            budget = validate_budget(added.budget, "budget")
            self.slots[slot] = (
                None
                if budget is None
                else self.request_type.from_prompt(
                    self.start, self.end, budget, list(added.prompt_token_ids), self.scope, self.forced, self.others
                )
            )
        for src, dst, kind in update.moved:
            self._check_slot(src, "move source")
            self._check_slot(dst, "move destination")
            name = move_kind_name(kind)
            if not self.occupied(src):
                raise ValueError(f"move from empty slot {src}")
            if name == "SWAP":
                if not self.occupied(dst):
                    raise ValueError(f"SWAP with empty slot {dst}")
                self.slots[src], self.slots[dst] = self.slots[dst], self.slots[src]
            else:
                self.slots[dst] = self.slots[src]
                self.slots[src] = _EMPTY
        self.batch_size = batch_size

    def forced_rows(
        self,
        num_draft_tokens: Sequence[int] | None = None,
        draft_token_ids: Sequence[int] | None = None,
    ) -> list[int]:
        """Forced token per logits row (``-1`` = free), ``K_i`` draft rows then the bonus row.

        Row ``j`` of a slot is judged on the state after its first ``j`` drafts (TB-SPEC-1).
        """
        if num_draft_tokens is None:
            num_draft_tokens = [0] * self.batch_size
            draft_token_ids = []
        if len(num_draft_tokens) != self.batch_size:
            raise ValueError(f"num_draft_tokens has {len(num_draft_tokens)} entries; batch_size is {self.batch_size}")
        draft_token_ids = list(draft_token_ids or [])
        if sum(num_draft_tokens) != len(draft_token_ids):
            raise ValueError(
                f"draft_token_ids has {len(draft_token_ids)} entries; num_draft_tokens sums to {sum(num_draft_tokens)}"
            )
        rows: list[int] = []
        offset = 0
        for slot, k in enumerate(num_draft_tokens):
            drafts = draft_token_ids[offset : offset + k]
            offset += k
            state = self.state(slot)
            if state is None:
                rows.extend([-1] * (k + 1))
                continue
            probe = state.clone()
            for draft in drafts:
                rows.append(probe.forced_token())
                probe.feed(draft)
            rows.append(probe.forced_token())
        return rows

    def commit(self, sampled_token_ids: Sequence[Sequence[int]]) -> None:
        """Feed each slot's committed tokens: a ``-1``-padded contiguous prefix per row."""
        if len(sampled_token_ids) != self.batch_size:
            raise ValueError(f"sampled_token_ids has {len(sampled_token_ids)} rows; batch_size is {self.batch_size}")
        for slot, row in enumerate(sampled_token_ids):
            tokens = list(row)
            n = tokens.index(-1) if -1 in tokens else len(tokens)
            if any(t != -1 for t in tokens[n:]):
                raise ValueError(f"row {slot} is not a -1-padded prefix: {tokens}")
            state = self.state(slot)
            if state is None:
                continue
            for token in tokens[:n]:
                state.feed(token)


def observable_rows(forced: Sequence[int], drafts: Sequence[int]) -> int:
    """How many of a slot's ``K + 1`` rows can be committed (TB-SPEC-1): up to and including the first
    draft row forced to a token other than its draft; the rows after it are discarded."""
    for j, draft in enumerate(drafts):
        if forced[j] not in (-1, draft):
            return j + 1
    return len(drafts) + 1


def generate_with_budget(
    state: RequestBudget,
    proposals: Iterable[int],
) -> list[int]:
    """Sequential decoding: each proposed token is replaced by the forced one where forced.

    Returns the committed stream. Used by invariant checks over whole generations.
    """
    out = []
    for proposal in proposals:
        forced = state.forced_token()
        token = proposal if forced == -1 else forced
        if forced != -1:
            state.forced_positions += 1
        state.feed(token)
        out.append(token)
    return out
