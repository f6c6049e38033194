"""Thinking-budget checks: persistent-batch scenarios compared with the oracle row by row,
whole generations judged by naive segmentation, and the budget API.

Scenarios are reachable: a request proposes drafts only once it has committed a token of output
(drafts come from a sampled token in every engine), and the start and end markers share no token
id (no reasoning parser has such markers). Every compared row counts as a case for the
requirements it exercises (``row_requirements``); a scenario stops at its first diverging row (its
state is no longer comparable) and the next scenario goes on, so one failure never hides another
requirement's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specs.interface import AddedRequest, BatchUpdate, Move

from ..core import Context, Outcome, Tally
from ..oracle import budget as tb
from ..oracle.naive import thinking_tokens


@dataclass
class BudgetFamily:
    """How a family of scenarios is drawn."""

    marker_lengths: tuple[int, int] = (1, 1)  # max lengths of S and E
    alphabet: int = 6  # token ids 0..alphabet-1: S from the lower half, E from the upper half
    drafts: bool = False
    batch_ops: bool = False
    prompt: str = "plain"  # plain | open | partial
    budgets: tuple = (None, -1, 0, 1, 2, 3, 8)
    steps: int = 40
    scenarios: int = 30
    max_reqs: int = 4
    max_spec: int = 3


@dataclass
class _Slot:
    """What the check remembers of a slot between steps (for tagging rows, not for judging them)."""

    output: int = 0  # tokens committed since the request was added
    prompt_partial: bool = False  # the prompt ended inside a partial S or E (TB-PROMPT-3)
    moved: str = ""  # "SWAP" or "UNIDIRECTIONAL" when a move touched the slot in this step's update
    added: bool = False  # added by this step's update


@dataclass
class _Step:
    update: BatchUpdate | None
    num: list[int]
    drafts: list[int]
    expected: list[int]
    got: list[int] = field(default_factory=list)


def _draw_markers(rng, family: BudgetFamily) -> tuple[list[int], list[int]]:
    half = family.alphabet // 2
    start = rng.integers(0, half, rng.integers(1, family.marker_lengths[0] + 1))
    end = rng.integers(half, family.alphabet, rng.integers(1, family.marker_lengths[1] + 1))
    return [int(t) for t in start], [int(t) for t in end]


def _tokens(rng, family: BudgetFamily, low: int, high: int) -> list[int]:
    return [int(t) for t in rng.integers(0, family.alphabet, rng.integers(low, high))]


def _draw_prompt(rng, family: BudgetFamily, start, end) -> list[int]:
    body = _tokens(rng, family, 0, 6)
    if family.prompt == "open":
        return body + start + _tokens(rng, family, 0, 5)
    if family.prompt == "partial":
        choice = rng.integers(0, 3)
        if choice == 0:
            return body + start[: max(len(start) - 1, 0)]
        if choice == 1:
            return body + start + _tokens(rng, family, 0, 4) + end[: max(len(end) - 1, 0)]
        return body + start + _tokens(rng, family, 0, 4)
    return body


def _self_overlapping(marker: tuple[int, ...]) -> bool:
    return any(tb.MarkerAutomaton(marker).failure)


def row_requirements(state: tb.RequestBudget | None, slot: _Slot, row: int, num_drafts: int, forced: int) -> set[str]:
    """The requirements one compared forced row exercises, from the oracle's state before the row."""
    if state is None:
        tags = {"TB-UNTRACKED-1"}
    else:
        tags = {"TB-MARK-1"}
        if state.start_matched and len(state.start) > 1 or state.end_matched and len(state.end) > 1:
            tags.add("TB-MARK-2")
            if _self_overlapping(state.end.marker if state.in_section else state.start.marker):
                tags.add("TB-MARK-3")
        if state.in_section:
            tags |= {"TB-COUNT-1", "TB-FORCE-1"}
            if forced != -1 and state.end_matched:
                tags.add("TB-FORCE-2")
            if forced == -1:
                tags.add("TB-NATURAL-1")  # the budget has not run out: the position must stay free
            if state.budget == 0 and state.count == 0 and not state.opened_in_prompt:
                tags.add("TB-FORCE-4")
            if state.opened_in_prompt:
                tags.add("TB-PROMPT-1")
                if forced != -1 and slot.output == 0 and row == 0:
                    tags.add("TB-PROMPT-2")
            if state.scope == "request" and state.spent:
                tags.add("TB-SCOPE-1")
            if state.scope == "section" and state.sections:
                tags.add("TB-SCOPE-2")
        if slot.prompt_partial:
            tags.add("TB-PROMPT-3")
    if row > 0:
        tags.add("TB-SPEC-1")
        if forced != -1:
            tags.add("TB-SPEC-2")
    if num_drafts == 0:
        tags.add("TB-SPEC-4")
    if slot.output and row == 0 and state is not None:
        tags.add("TB-SPEC-3")  # the state was advanced by an earlier step's committed run
    if slot.added or slot.moved:
        tags.add("TB-BATCH-1")
    if slot.moved == "UNIDIRECTIONAL":
        tags.add("TB-BATCH-2")
    if slot.moved == "SWAP":
        tags.add("TB-BATCH-3")
    tags.add("TB-BATCH-5")
    return tags


# The requirement a diverging row is blamed on: the most specific of those the row exercises.
_BLAME_ORDER = (
    "TB-BATCH-3",
    "TB-BATCH-2",
    "TB-PROMPT-3",
    "TB-PROMPT-2",
    "TB-SCOPE-1",
    "TB-SCOPE-2",
    "TB-SPEC-2",
    "TB-SPEC-1",
    "TB-FORCE-2",
    "TB-FORCE-4",
    "TB-NATURAL-1",
    "TB-UNTRACKED-1",
    "TB-PROMPT-1",
    "TB-FORCE-1",
    "TB-COUNT-1",
    "TB-MARK-3",
    "TB-MARK-2",
    "TB-MARK-1",
    "TB-SPEC-3",
    "TB-BATCH-1",
)


def _mode(expected: int, got: int | None, end: tuple[int, ...]) -> str:
    """The way a row diverged, without case-specific ids."""
    if got is None:
        return "row-missing"
    if expected == -1:
        return "forced-a-free-row"
    if got == -1:
        return "left-a-forced-row-free"
    if got == end[0]:
        return "forced-E0-instead-of-E[m]"
    return "forced-the-wrong-token"


class _Scenario:
    """One scenario: the oracle beside the engine, step by step."""

    def __init__(self, engine, rng, family: BudgetFamily, scope: str):
        self.rng, self.family = rng, family
        self.start, self.end = _draw_markers(rng, family)
        self.model = tb.BudgetBatch(self.start, self.end, family.max_reqs, scope)
        self.state = engine.budget_state(self.start, self.end, family.max_reqs, scope, max_spec_len=family.max_spec)
        self.slots = [_Slot() for _ in range(family.max_reqs)]
        self.size = 0
        self.history: list[_Step] = []

    def _update(self, first: bool) -> BatchUpdate:
        rng, family = self.rng, self.family
        removed = [s for s in range(self.size) if family.batch_ops and rng.random() < 0.25]
        live = [s for s in range(self.size) if s not in removed]
        holes = sorted(removed)
        added = []
        while len(live) + len(added) < family.max_reqs and (first or rng.random() < 0.5):
            slot = holes.pop(0) if holes else self.size + sum(a.index >= self.size for a in added)
            budget = family.budgets[rng.integers(0, len(family.budgets))]
            added.append(AddedRequest(slot, budget, tuple(_draw_prompt(rng, family, self.start, self.end))))
            if not family.batch_ops and len(added) >= family.max_reqs:
                break
        live = sorted(live + [a.index for a in added])
        moved = []
        while live and live[-1] >= len(live):  # condense into the holes
            hole = min(set(range(len(live))) - set(live))
            moved.append((live[-1], hole, Move.UNIDIRECTIONAL))
            live = sorted(live[:-1] + [hole])
        if family.batch_ops and len(live) >= 2 and rng.random() < 0.6:
            a, b = (int(x) for x in rng.choice(live, 2, replace=False))
            moved.append((a, b, Move.SWAP))
        if family.batch_ops and len(live) >= 2 and rng.random() < 0.3:  # a move onto an occupied slot
            src, dst = (int(x) for x in rng.choice(live, 2, replace=False))
            moved.append((src, dst, Move.UNIDIRECTIONAL))
            live.remove(src)
            if src < max(live):  # condense again: the last live slot fills the vacated source
                last = max(live)
                moved.append((last, src, Move.UNIDIRECTIONAL))
                live = sorted([s for s in live if s != last] + [src])
        return BatchUpdate(len(live), tuple(removed), tuple(added), tuple(moved))

    def _apply(self, update: BatchUpdate) -> None:
        for slot in self.slots:
            slot.moved, slot.added = "", False
        for s in update.removed:
            self.slots[s] = _Slot()
        for a in update.added:
            probe = tb.RequestBudget.from_prompt(
                self.model.start, self.model.end, 0, list(a.prompt_token_ids), self.model.scope
            )
            self.slots[a.index] = _Slot(prompt_partial=bool(probe.start_matched or probe.end_matched), added=True)
        for src, dst, kind in update.moved:
            if kind is Move.SWAP:
                self.slots[src], self.slots[dst] = self.slots[dst], self.slots[src]
                self.slots[src].moved = self.slots[dst].moved = "SWAP"
            else:
                self.slots[dst], self.slots[src] = self.slots[src], _Slot()
                self.slots[dst].moved = "UNIDIRECTIONAL"
        self.model.apply(update)
        self.state.sync_batch(update)
        self.size = update.batch_size

    def _drafts(self) -> list[list[int]]:
        family, rng = self.family, self.rng
        return [
            _tokens(rng, family, 0, family.max_spec + 1)
            if family.drafts and self.slots[s].output > 0 and rng.random() < 0.8
            else []
            for s in range(self.size)
        ]

    def _commit(self, drafts: list[list[int]], expected: list[int]) -> list[list[int]]:
        """What a conforming sampler commits: an accepted run of drafts (forced rows obeyed), then one token."""
        committed, offset = [], 0
        for slot, d in enumerate(drafts):
            rows = expected[offset : offset + len(d) + 1]
            offset += len(d) + 1
            accept = int(self.rng.integers(0, len(d) + 1))
            tokens = []
            for j in range(len(d) + 1):
                if j < accept and rows[j] in (-1, d[j]):
                    tokens.append(d[j])
                    continue
                tokens.append(rows[j] if rows[j] != -1 else int(self.rng.integers(0, self.family.alphabet)))
                break
            self.slots[slot].output += len(tokens)
            committed.append(tokens + [-1] * (self.family.max_spec + 1 - len(tokens)))
        return committed

    def run(self, tally: Tally, requirements: tuple[str, ...], label: str) -> bool:
        """Drive the scenario; every compared row is a case; stop at the first diverging row (True)."""
        for step in range(self.family.steps):
            update = None
            if step == 0 or (self.family.batch_ops and self.rng.random() < 0.3):
                update = self._update(first=step == 0)
                self._apply(update)
            drafts = self._drafts()
            num = [len(d) for d in drafts]
            flat = [t for d in drafts for t in d]
            expected = self.model.forced_rows(num, flat)
            got = [int(x) for x in self.state.forced_tokens(num, flat)]
            self.history.append(_Step(update, num, flat, expected, got))
            if not self._compare(tally, requirements, label, step, drafts, expected, got):
                return True
            committed = self._commit(drafts, expected)
            self.model.commit(committed)
            self.state.update_state(committed)
            for slot in self.slots:
                slot.moved, slot.added = "", False
        return False

    def _compare(self, tally, requirements, label, step, drafts, expected, got) -> bool:
        if len(got) != len(expected):
            layout = "TB-SPEC-4" if 0 in [len(d) for d in drafts] else "TB-BATCH-5"
            blame = layout if layout in requirements else requirements[0]
            tally.violated(blame, "wrong-number-of-rows", self._evidence(label, step, None, expected, got))
            return False
        misplaced = sorted(expected) == sorted(got) and expected != got  # the right forced tokens in the wrong rows
        if all(len(d) == 0 for d in drafts) and misplaced and "TB-SPEC-4" in requirements:
            tally.violated("TB-SPEC-4", "rows-misplaced", self._evidence(label, step, None, expected, got))
            return False
        row = 0
        for slot, d in enumerate(drafts):
            state = self.model.state(slot)
            probe = state.clone() if state is not None else None
            for j in range(len(d) + 1):
                tags = row_requirements(probe, self.slots[slot], j, len(d), expected[row]) & set(requirements)
                if got[row] != expected[row]:
                    blame = next((r for r in _BLAME_ORDER if r in tags), requirements[0])
                    mode = _mode(expected[row], got[row], tuple(self.end))
                    tally.violated(blame, mode, self._evidence(label, step, (slot, j, row), expected, got))
                    return False
                tally.exercised(*tags)
                if probe is not None and j < len(d):
                    probe.feed(d[j])
                row += 1
        return True

    def _evidence(self, label, step, where, expected, got) -> str:
        """The failing case in full: markers, what was added, the update history and the step's rows."""
        place = "" if where is None else f" slot {where[0]} row {where[1]} (flat row {where[2]})"
        history = "; ".join(
            f"step {i}: " + (f"update {s.update.to_json()} " if s.update else "") + f"drafts {s.num}/{s.drafts}"
            for i, s in enumerate(self.history[:-1])
        )
        return (
            f"{label} step {step}{place}: forced rows {got}, expected {expected} "
            f"(S={self.start}, E={self.end}, scope {self.model.scope}; drafts {self.history[-1].num}/"
            f"{self.history[-1].drafts}; history: {history or 'none'})"
        )


def scenario_check(family: BudgetFamily, requirements: tuple[str, ...], scope: str | None = None):
    """A check body: ``family.scenarios`` scenarios, each compared with the oracle row by row."""

    def run(engine, ctx: Context) -> Outcome:
        rng = np.random.default_rng(ctx.seed)
        tally = Tally(requirements)
        diverged = 0
        for n in range(family.scenarios):
            scenario = _Scenario(engine, rng, family, scope or ctx.profile.scope)
            diverged += scenario.run(tally, requirements, f"scenario {n}")
        return tally.outcome(
            f"{family.scenarios} scenarios × up to {family.steps} steps; {diverged} diverged from the oracle"
        )

    return run


def generation_invariants(engine, ctx: Context) -> Outcome:
    """Whole generations (no drafts): no section exceeds its budget; exactly the budget when the model
    never starts E; E arrives whole (TB-FORCE-3), judged by naive segmentation, not by the oracle."""
    rng = np.random.default_rng(ctx.seed)
    tally = Tally(("TB-FORCE-3",))
    plots = []
    for n in range(40):
        start, end = [100 + int(rng.integers(0, 2))], [110, 111][: int(rng.integers(1, 3))]
        budget = int(rng.integers(0, 12))
        state = engine.budget_state(start, end, 1, ctx.profile.scope, max_spec_len=0)
        state.sync_batch(BatchUpdate(1, added=(AddedRequest(0, budget, (1, 2)),)))
        stream, forced_at = [], []
        proposals = start + [int(t) for t in rng.integers(0, 50, 60)]  # never starts E on its own
        for position, proposal in enumerate(proposals):
            forced = int(state.forced_tokens(None, None)[0])
            token = proposal if forced == -1 else forced
            if forced != -1:
                forced_at.append(position)
            stream.append(token)
            state.update_state([[token]])
        if n < 3:  # budget traces for the report: thinking tokens generated so far, per position
            trace = [
                sum(t for t, _, _ in thinking_tokens([1, 2] + stream[: i + 1], start, end, 2))
                for i in range(len(stream))
            ]
            plots.append(
                {
                    "kind": "budget-trace",
                    "title": f"generation {n}: budget {budget}, S={start}, E={end}",
                    "thinking": trace,
                    "budget": budget,
                    "forced": forced_at,
                }
            )
        sections = thinking_tokens([1, 2] + stream, start, end, 2)
        case = f"generation {n} (S={start}, E={end}, budget {budget}): {stream[:30]}"
        if not sections or not sections[0][2]:
            tally.violated("TB-FORCE-3", "section-never-closed", f"{case}: the section never closed")
        elif sections[0][0] != budget:
            tally.violated("TB-FORCE-3", "thinking-tokens-differ", f"{case}: {sections[0][0]} thinking tokens")
        else:
            tally.exercised("TB-FORCE-3")
    return tally.outcome("40 generations judged by naive segmentation", plots=plots)


def api_check(engine, ctx: Context) -> Outcome:
    """TB-API-1..3: untracked budgets, invalid budgets rejected naming the field, empty markers rejected."""
    tally = Tally(("TB-API-1", "TB-API-2", "TB-API-3"))
    for value in (-2, True, 1.5, "1"):
        try:
            state = engine.budget_state([1], [2], 2, ctx.profile.scope)
            state.sync_batch(BatchUpdate(1, added=(AddedRequest(0, value, (1,)),)))
        except ValueError as exc:
            if "budget" in str(exc):
                tally.exercised("TB-API-2")
            else:
                tally.violated("TB-API-2", "error-does-not-name-budget", f"budget {value!r} rejected as: {exc}")
            continue
        tally.violated("TB-API-2", "invalid-budget-accepted", f"budget {value!r} was accepted")
    state = engine.budget_state([1], [2], 2, ctx.profile.scope)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, -1, (1, 3)), AddedRequest(1, None, (1, 3)))))
    if any(int(x) != -1 for x in state.forced_tokens(None, None)):
        tally.violated("TB-API-1", "untracked-request-forced", "a request with budget -1 or None was forced")
    else:
        tally.exercised("TB-API-1")
    for start, end in (([], [2]), ([1], [])):
        try:
            engine.budget_state(start, end, 2, ctx.profile.scope)
        except ValueError:
            tally.exercised("TB-API-3")
            continue
        tally.violated("TB-API-3", "empty-marker-accepted", f"empty marker accepted: S={start} E={end}")
    return tally.outcome("invalid budgets and markers rejected naming the field; -1 and None untracked")


def batch_errors_check(engine, ctx: Context) -> Outcome:
    """TB-BATCH-4 on slots that a removal emptied: a later removal of, move from or SWAP with such a slot,
    in the same update or the next, raises a ValueError that names the slot."""
    tally = Tally(("TB-BATCH-4",))
    full = BatchUpdate(3, added=tuple(AddedRequest(slot, slot + 1, (1,)) for slot in range(3)))
    emptied = BatchUpdate(2, removed=(2,))
    cases = {
        "move from a slot removed in the same update": [
            BatchUpdate(3, removed=(2,), moved=((2, 3, Move.UNIDIRECTIONAL),))
        ],
        "SWAP with a slot removed in the same update": [BatchUpdate(3, removed=(2,), moved=((0, 2, Move.SWAP),))],
        "removal of a slot removed the step before": [emptied, BatchUpdate(2, removed=(2,))],
        "move from a slot removed the step before": [emptied, BatchUpdate(3, moved=((2, 0, Move.SWAP),))],
    }
    for case, updates in cases.items():
        state = engine.budget_state([1], [2], 4, ctx.profile.scope)
        state.sync_batch(full)
        for update in updates[:-1]:
            state.sync_batch(update)
        try:
            state.sync_batch(updates[-1])
        except ValueError as exc:
            if "2" in str(exc):
                tally.exercised("TB-BATCH-4")
            else:
                tally.violated("TB-BATCH-4", "error-does-not-name-slot", f"{case}: rejected as {exc}")
            continue
        tally.violated("TB-BATCH-4", "emptied-slot-accepted", f"{case}: {updates[-1].to_json()} was accepted")
    return tally.outcome("updates naming a slot emptied by a removal are rejected naming the slot")


LARGE_FORCED_LOGIT = 1e8  # the least a large-constant forced cell may hold (vLLM writes 1e9)


def forced_logits_check(engine, ctx: Context) -> Outcome:
    """TB-FORCE-5 (TB-FORCE-6 under the declared large-constant variant) and TB-UNTRACKED-1 on logits,
    after one ordinary step (drafts only once output exists)."""
    variant = ctx.profile.forced_logit == "large-constant"
    forced_rid = "TB-FORCE-6" if variant else "TB-FORCE-5"
    tally = Tally((forced_rid, "TB-UNTRACKED-1"))
    state = engine.budget_state([1], [7, 8], 2, ctx.profile.scope, max_spec_len=2)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 2, (1,)), AddedRequest(1, None, (1,)))))
    state.forced_tokens(None, None)
    state.update_state([[4], [4]])  # one ordinary step: request 0 has spent one of its two tokens
    rng = np.random.default_rng(ctx.seed)
    logits = rng.normal(size=(5, 12)).astype(np.float32)
    logits[1, 7] = -np.inf  # the forced token was masked before
    out = np.asarray(state.apply_to_logits(logits.copy(), [2, 1], [3, 7, 5]))
    expected = [-1, 7, 8, -1, -1]  # request 0: after 4 and 3 the budget forces E[0], after 7 E[1]
    for row, token in enumerate(expected):
        if token == -1:
            rid = "TB-UNTRACKED-1" if row >= 3 else forced_rid
            if np.array_equal(out[row], logits[row], equal_nan=True):
                tally.exercised(rid)
            else:
                tally.violated(rid, "free-row-changed", f"free row {row} was changed: {out[row].tolist()}")
        elif variant:  # the declared variant (TB-FORCE-6)
            if not (np.isfinite(out[row, token]) and out[row, token] >= LARGE_FORCED_LOGIT):
                tally.violated(
                    "TB-FORCE-6", "forced-logit-not-large", f"forced row {row}: {out[row, token]} at {token}"
                )
            elif not np.array_equal(np.delete(out[row], token), np.delete(logits[row], token), equal_nan=True):
                tally.violated(
                    "TB-FORCE-6", "other-cells-changed", f"forced row {row}: cells other than {token} were changed"
                )
            else:
                tally.exercised("TB-FORCE-6")
        elif out[row, token] == 0 and np.isneginf(np.delete(out[row], token)).all():
            tally.exercised("TB-FORCE-5")
        else:
            tally.violated(
                "TB-FORCE-5",
                "forced-row-not-one-hot",
                f"forced row {row} is not one-hot at {token}: {out[row].tolist()}",
            )
    if variant:
        return tally.outcome(f"forced cells hold at least {LARGE_FORCED_LOGIT:g} (declared variant), rest untouched")
    return tally.outcome("forced rows one-hot (0 / -inf), free rows untouched")
