"""Thinking-budget scenario strategies: markers, prompts, budgets and a persistent batch driven step by step.

Why every generated scenario is reachable for a real engine (specs/INTERPRETING.md, "Generated
cases"):

- **Markers**: ``S`` and ``E`` share no token id unless the family says ``disjoint_markers=False``
  (no check does): a reasoning parser's markers are distinct strings whose tokenisations do not
  share ids in any model we know. Multi-token and self-overlapping markers (``E = [a, a, b]``) are
  how BPE tokenisers split ``<think>``/``</think>``.
- **Prompts** are arbitrary token sequences: a chat template may open a section (``open``) or end
  inside a marker (``partial``), and a user may type marker tokens anywhere.
- **Budgets**: ``None`` and ``-1`` (untracked) and every integer in ``[0, 2^31 - 1]``, the range of
  the int32 budget fields engines keep; small budgets are weighted because only they bind.
- **Batches**: ``max_num_reqs`` in ``[1, 256]`` for the batch family; updates follow vLLM's
  ``BatchUpdate`` contract (``vllm/v1/sample/logits_processor/interface.py``: removed, then added,
  then moved; "added or moved requests may replace existing requests with the same index"). Adds
  fill the lowest vacated slot first, then the end (as ``InputBatch.add_request`` does); an add onto
  a vacated slot is announced in ``removed`` or not (vLLM's ``pop_removed`` takes it back), so adds
  land on holes and on occupied slots; the batch is condensed by UNIDIRECTIONAL moves from the last
  slot into the lowest hole; SWAPs and UNIDIRECTIONAL moves onto an occupied slot (which replace its
  request) reorder it. After every update the live slots are exactly ``[0, batch_size)``.
- **Drafts** only in a slot whose request has committed at least one token: drafts come from a
  sampled token in every engine (vLLM's budget holder returns early on an empty output). A slot
  with drafts may still propose zero of them in a step (speculation on, no drafts).
- **Commits** are what a conforming sampler commits: an accepted prefix of the drafts that obeys the
  forced rows, then one token (the forced one where the row is forced).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from specconform.specs.interface import AddedRequest, BatchUpdate, Move

from ...oracle import budget as tb
from ...vectors import SlotStep
from .scenario import BudgetFamily, BudgetScenario

MAX_BUDGET = 2**31 - 1


def markers(family: BudgetFamily) -> st.SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``(S, E)``: disjoint ids unless ``family.disjoint_markers`` is False."""

    @st.composite
    def pair(draw):
        ids = st.integers(0, family.alphabet - 1)
        start = tuple(draw(st.lists(ids, min_size=1, max_size=family.marker_lengths[0])))
        rest = [t for t in range(family.alphabet) if t not in start] if family.disjoint_markers else None
        end_ids = st.sampled_from(rest) if rest is not None else ids
        end = tuple(draw(st.lists(end_ids, min_size=1, max_size=family.marker_lengths[1])))
        return start, end

    return pair()


def forced_sequences(family: BudgetFamily, start, end) -> st.SearchStrategy[tuple[int, ...] | None]:
    """``F = P + E`` with a phrase ``P`` of ``1..family.phrase`` ids outside ``S`` that puts no other ``E`` in
    ``F`` (an engine's transition phrase is text that neither opens nor closes a section); ``None`` without."""
    if not family.phrase:
        return st.none()
    ids = [t for t in range(family.alphabet) if t not in start]
    phrase = st.lists(st.sampled_from(ids), min_size=1, max_size=family.phrase)
    return phrase.map(lambda p: (*p, *end)).filter(lambda f: not tb.occurs_before_end(tuple(end), f))


def other_ends(family: BudgetFamily, start, end) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """One end marker accepted beside ``E`` (``1..family.other_end`` ids outside ``S``, not ``E``), or none."""
    if not family.other_end:
        return st.just(())
    ids = [t for t in range(family.alphabet) if t not in start]
    other = st.lists(st.sampled_from(ids), min_size=1, max_size=family.other_end).map(tuple)
    return other.filter(lambda m: m != tuple(end)).map(lambda m: (m,))


def budgets(family: BudgetFamily) -> st.SearchStrategy:
    """The family's small budgets (they bind), twice as likely as any integer in ``[0, 2^31 - 1]``."""
    small = st.sampled_from(family.budgets)
    return st.one_of(small, small, st.integers(0, MAX_BUDGET))


def prompts(family: BudgetFamily, start, end) -> st.SearchStrategy[tuple[int, ...]]:
    """A prompt of the family's kind: ``plain`` (any ids), ``open`` (ends inside an open section) or
    ``partial`` (ends inside S, inside E, or inside an open section)."""
    token = st.integers(0, family.alphabet - 1)
    body = st.lists(token, max_size=6)
    tail = st.lists(token, max_size=4)
    if family.prompt == "plain":
        return body.map(tuple)
    if family.prompt == "open":
        return st.tuples(body, tail).map(lambda bt: (*bt[0], *start, *bt[1]))
    return st.one_of(
        body.map(lambda b: (*b, *start[:-1])),
        st.tuples(body, tail).map(lambda bt: (*bt[0], *start, *bt[1], *end[:-1])),
        st.tuples(body, tail).map(lambda bt: (*bt[0], *start, *bt[1])),
    )


def condense_slots(slots: dict[int, int], moved: list) -> None:
    """Move the last live request into the lowest hole until the live slots are ``[0, n)``."""
    while slots and max(slots) >= len(slots):
        hole = min(set(range(len(slots))) - set(slots))
        last = max(slots)
        moved.append((last, hole, Move.UNIDIRECTIONAL))
        slots[hole] = slots.pop(last)


def _update(draw, family, requests, ages: list[int], max_num_reqs: int, must_add: bool):
    """One ``BatchUpdate`` and the new per-slot ages (decode steps since each request was added).

    Hypothesis draws the counts and the moves; which slots are removed and which of the scenario's
    ``requests`` (``(budget, prompt)`` templates) each add places come from a drawn seed, so that a
    batch of 256 stays small for Hypothesis."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = len(ages)
    n_remove = draw(st.integers(0, size)) if family.batch_ops and size else 0
    removed = sorted(int(s) for s in rng.choice(size, n_remove, replace=False)) if n_remove else []
    slots = {s: age for s, age in enumerate(ages) if s not in removed}
    free = max_num_reqs - len(slots)
    low = 1 if must_add or not slots else 0  # engines never run a step without requests
    n_add = draw(st.integers(low, free)) if family.batch_ops or low else 0
    holes, end_slot, added = list(removed), size, []
    for _ in range(n_add):
        if holes:
            slot = holes.pop(0)
        else:
            slot, end_slot = end_slot, end_slot + 1
        budget, prompt = requests[int(rng.integers(0, len(requests)))]
        added.append(AddedRequest(slot, budget, prompt))
        slots[slot] = 0
    if family.batch_ops and any(a.index in removed for a in added) and draw(st.booleans()):
        # adds onto vacated slots that do not announce the removal: they replace the request there
        unannounced = {a.index for a in added if a.index in removed and rng.random() < 0.5} or {added[0].index}
        removed = [s for s in removed if s not in unannounced]
    moved: list = []
    condense_slots(slots, moved)
    if family.batch_ops and len(slots) >= 2:
        live = st.sampled_from(sorted(slots))
        for src, dst, swap in draw(st.lists(st.tuples(live, live, st.booleans()), max_size=2)):
            if src == dst or src not in slots or dst not in slots:
                continue
            if swap:
                moved.append((src, dst, Move.SWAP))
                slots[src], slots[dst] = slots[dst], slots[src]
            else:  # onto an occupied slot: the moved request replaces the one there
                moved.append((src, dst, Move.UNIDIRECTIONAL))
                slots[dst] = slots.pop(src)
                condense_slots(slots, moved)
    update = BatchUpdate(len(slots), tuple(removed), tuple(added), tuple(moved))
    return update, [slots[s] for s in range(len(slots))]


def _slot_steps(rng: np.random.Generator, family: BudgetFamily, ages: list[int]) -> tuple[SlotStep, ...]:
    """What each live slot proposes: drafts (only once it has output), accepted count, free token."""
    out = []
    for age in ages:
        drafts: list[int] = []
        if family.drafts and age > 0 and rng.random() < 0.8:
            drafts = [int(t) for t in rng.integers(0, family.alphabet, rng.integers(0, family.max_spec + 1))]
        out.append(SlotStep(drafts, int(rng.integers(0, len(drafts) + 1)), int(rng.integers(0, family.alphabet))))
    return tuple(out)


def scenarios(family: BudgetFamily, scope: str) -> st.SearchStrategy[BudgetScenario]:
    """Reachable scenarios of ``family`` under ``scope`` (see the module docstring)."""

    @st.composite
    def scenario(draw):
        start, end = draw(markers(family))
        forced = draw(forced_sequences(family, start, end))
        others = draw(other_ends(family, start, end))
        low, high = family.max_num_reqs
        max_num_reqs = draw(st.one_of(st.integers(low, min(high, 8)), st.integers(low, high)))
        requests = draw(st.lists(st.tuples(budgets(family), prompts(family, start, end)), min_size=1, max_size=8))
        ages: list[int] = []
        steps = []
        # wide batches run fewer steps: about as many rows as 8 slots over ``family.steps`` steps
        step_count = draw(st.integers(1, max(3, min(family.steps, family.steps * 8 // max_num_reqs))))
        for _ in range(step_count):
            update = None
            if not ages or (family.batch_ops and draw(st.integers(0, 9)) < 3):
                update, ages = _update(draw, family, requests, ages, max_num_reqs, must_add=not ages)
            rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
            steps.append((update, _slot_steps(rng, family, ages)))
            ages = [age + 1 for age in ages]
        return BudgetScenario(start, end, scope, max_num_reqs, tuple(steps), forced, others)

    return scenario()
