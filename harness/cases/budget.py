"""Thinking-budget scenarios: markers, prompts, budgets and a persistent batch driven step by step.

A scenario is a program: the markers, the scope, ``max_num_reqs`` and, per step, an optional
``BatchUpdate`` and what each live slot proposes (``SlotStep``: drafts, how many a sampler accepts,
the token it emits where the row is free). ``harness.vectors.budget_scenario`` runs a program
through the oracle and records it in the golden-vector format, so a generated case, its minimal
reproduction and a checked-in vector are the same kind of object.

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

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from specs.interface import AddedRequest, BatchUpdate, Move

from ..oracle import budget as tb
from ..vectors import SlotStep, budget_scenario

MAX_BUDGET = 2**31 - 1
PROMPT_KINDS = ("plain", "open", "partial")


@dataclass(frozen=True)
class BudgetFamily:
    """How a family of scenarios is drawn: token ids ``0..alphabet-1`` (small, so that markers recur
    and overlap), marker lengths up to ``marker_lengths``, ``max_num_reqs`` in the range
    ``max_num_reqs``, up to ``steps`` steps and ``max_spec`` drafts per slot."""

    marker_lengths: tuple[int, int] = (1, 1)
    alphabet: int = 6
    disjoint_markers: bool = True
    drafts: bool = False
    batch_ops: bool = False
    prompt: str = "plain"
    budgets: tuple = (None, -1, 0, 1, 2, 3, 8)
    steps: int = 40
    scenarios: int = 30
    max_num_reqs: tuple[int, int] = (1, 4)
    max_spec: int = 3
    phrase: int = 0  # > 0: a forced end sequence F = P + E with a transition phrase P of 1..phrase ids (TB-END-1)
    other_end: int = 0  # > 0: another accepted end marker of 1..other_end ids (TB-END-3)
    # reachable scenarios judged before the drawn ones: shapes the strategies reach rarely (``EXAMPLES``)
    examples: tuple[BudgetScenario, ...] = ()

    def __post_init__(self):
        if self.prompt not in PROMPT_KINDS:
            raise ValueError(f"prompt must be one of {PROMPT_KINDS}; got {self.prompt!r}")
        if self.disjoint_markers and self.alphabet <= self.marker_lengths[0]:
            raise ValueError(
                f"alphabet {self.alphabet} leaves no id for E beside a start marker of length {self.marker_lengths[0]}"
            )
        for index, example in enumerate(self.examples):
            why = unreachable(example, self.disjoint_markers)
            lengths = (len(example.start), len(example.end))
            if why or any(n > most for n, most in zip(lengths, self.marker_lengths)):
                raise ValueError(
                    f"examples[{index}] is not a scenario of this family: "
                    f"{why or f'markers of lengths {lengths} exceed {self.marker_lengths}'}"
                )


@dataclass(frozen=True)
class BudgetScenario:
    """One drawn scenario. ``steps[i] = (update or None, slot_steps)`` with one ``SlotStep`` per live
    slot ``0..batch_size-1``."""

    start: tuple[int, ...]
    end: tuple[int, ...]
    scope: str
    max_num_reqs: int
    steps: tuple[tuple[BatchUpdate | None, tuple[SlotStep, ...]], ...]
    forced: tuple[int, ...] | None = None  # the forced end sequence F when it is not E (TB-END-1)
    others: tuple[tuple[int, ...], ...] = ()  # end markers accepted beside E (TB-END-3)

    def vector(self, name: str, requirements: list[str], description: str = "") -> dict:
        """The scenario run through the oracle, in the golden-vector format (``specs/vectors``)."""
        return budget_scenario(
            name,
            list(requirements),
            list(self.start),
            list(self.end),
            [(update, dict(enumerate(slots))) for update, slots in self.steps],
            self.scope,
            self.max_num_reqs,
            description,
            forced_token_ids=None if self.forced is None else list(self.forced),
            other_end_token_ids=[list(m) for m in self.others],
        )

    @property
    def size(self) -> int:
        """Steps + requests + removals + moves + drafts + prompt tokens: what a shrinker lowers."""
        total = len(self.steps)
        for update, slots in self.steps:
            total += sum(len(s.drafts) for s in slots)
            if update is not None:
                total += len(update.removed) + len(update.moved)
                total += sum(1 + len(a.prompt_token_ids) for a in update.added)
        return total


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


def _condense(slots: dict[int, int], moved: list) -> None:
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
    _condense(slots, moved)
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
                _condense(slots, moved)
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


def single_request(start, end, budget, prompt, emitted) -> BudgetScenario:
    """One request without drafts, added with ``budget`` and ``prompt``; one step per token of ``emitted``
    (what the request emits where its row is free), then a last step whose row is judged (per-section
    scope; a check runs it under its own)."""
    added = BatchUpdate(1, added=(AddedRequest(0, budget, tuple(prompt)),))
    tokens = [*emitted, 0]  # the last step's token is never committed before its row is judged
    steps = tuple((added if i == 0 else None, (SlotStep([], 0, token),)) for i, token in enumerate(tokens))
    return BudgetScenario(tuple(start), tuple(end), "section", 1, steps)


# Reachable shapes that the strategies draw rarely: each is a minimal case that a real engine failed
# when an earlier generator drew it (reports/engines/vllm-0.33-v1 and -mrv2, README), and that no
# seeded draw of these strategies reached again. The catalogue (harness.checks) gives each to the
# families that can draw it; their checks judge it before the drawn scenarios.
EXAMPLES = {
    # TB-NATURAL-1: the output closes a section it never opened, then opens one and closes it within
    # its budget, then opens another: that one starts with nothing spent
    "stray-end-then-sections": single_request((0,), (5,), 2, (), (5, 0, 5, 0)),
    # TB-PROMPT-2: a start marker inside the section the prompt opened is content; the prompt's two
    # thinking tokens spend the whole budget of 2, so the first generated token is forced
    "start-inside-prompt-section": single_request((0,), (2,), 2, (0, 0, 1), ()),
    # TB-PROMPT-3: the same with a prompt that ends inside E: its partial E counts (4 of 4), and the
    # first generated token completes E
    "partial-end-after-repeated-start": single_request((1,), (3, 3), 4, (1, 1, 0, 0, 3), ()),
}


def unreachable(scenario: BudgetScenario, disjoint_markers: bool = True) -> str | None:
    """Why no real engine reaches ``scenario`` (shared marker ids, drafts before any output, a batch
    whose live slots are not ``[0, batch_size)``), or None."""
    if disjoint_markers and set(scenario.start) & set(scenario.end):
        return f"S={list(scenario.start)} and E={list(scenario.end)} share ids"
    ages: dict[int, int] = {}
    for index, (update, slot_steps) in enumerate(scenario.steps):
        if update is not None:
            for s in update.removed:
                ages.pop(s, None)
            for a in update.added:
                ages[a.index] = 0
            for src, dst, kind in update.moved:
                if kind is Move.SWAP:
                    ages[src], ages[dst] = ages.get(dst, 0), ages.get(src, 0)
                else:
                    ages[dst] = ages.pop(src, 0)
            if sorted(ages) != list(range(update.batch_size)):
                return f"step {index}: live slots {sorted(ages)} are not [0, {update.batch_size})"
        if not ages:
            return f"step {index}: a decode step without requests"
        if len(slot_steps) != len(ages):
            return f"step {index}: {len(slot_steps)} slot proposals for {len(ages)} live slots"
        for slot, proposal in enumerate(slot_steps):
            if proposal.drafts and ages[slot] == 0:
                return f"step {index}: slot {slot} proposes drafts before its request has any output"
        ages = {s: age + 1 for s, age in ages.items()}
    return None


# ---------------------------------------------------------------------------------------------
# Shrinking: a scenario seen as requests and what happens to them, so that a candidate can drop whole
# requests, steps or moves and the updates are rebuilt around what is left.


@dataclass(frozen=True)
class _Program:
    """A scenario by request identity: ``requests[r] = (budget, prompt)``; per step the update's
    operations (``("remove", r)``, ``("add", r, replaced or None)``, ``("move", r, other or None, kind)``,
    ``other`` the request at the destination, None for a free slot) and each live request's proposal."""

    start: tuple[int, ...]
    end: tuple[int, ...]
    scope: str
    max_num_reqs: int
    requests: tuple[tuple, ...]
    steps: tuple[tuple[tuple, dict[int, SlotStep]], ...]
    forced: tuple[int, ...] | None = None  # the scenario's forced end sequence and other end markers, kept as they are
    others: tuple[tuple[int, ...], ...] = ()


def _program(scenario: BudgetScenario) -> _Program:
    """``scenario`` followed request by request (it must be a valid one: a drawn or shrunk scenario)."""
    requests: list[tuple] = []
    at: dict[int, int] = {}  # slot -> request
    steps = []
    for update, slot_steps in scenario.steps:
        ops: list[tuple] = []
        if update is not None:
            for slot in update.removed:
                ops.append(("remove", at.pop(slot)))
            for added in update.added:
                requests.append((added.budget, tuple(added.prompt_token_ids)))
                ops.append(("add", len(requests) - 1, at.get(added.index)))
                at[added.index] = len(requests) - 1
            for src, dst, kind in update.moved:
                ops.append(("move", at[src], at.get(dst), kind))
                if kind is Move.SWAP:
                    at[src], at[dst] = at[dst], at[src]
                else:
                    at[dst] = at.pop(src)
        steps.append((tuple(ops), {at[slot]: proposal for slot, proposal in enumerate(slot_steps)}))
    return _Program(
        scenario.start,
        scenario.end,
        scenario.scope,
        scenario.max_num_reqs,
        tuple(requests),
        tuple(steps),
        scenario.forced,
        scenario.others,
    )


def _lowest_free(at: dict[int, int], max_num_reqs: int) -> int | None:
    return next((slot for slot in range(max_num_reqs) if slot not in at), None)


def _compile(program: _Program, kept: set[int]) -> BudgetScenario | None:
    """The scenario of ``program`` with only the ``kept`` requests, or None when none is left in a step.

    Each operation on kept requests is replayed on the slots they hold now: removals first, then adds
    (onto the request they replaced where it is still there, else onto the lowest free slot), then
    moves; a request that an operation of a dropped one replaced is removed; the batch is condensed
    (the last request into the lowest hole) as the generator condenses it."""
    at: dict[int, int] = {}  # slot -> request
    steps = []
    for ops, proposals in program.steps:
        where = {r: slot for slot, r in at.items()}
        removed = {where[op[1]] for op in ops if op[0] == "remove" and op[1] in where}
        removed |= {  # requests that a dropped request's add or UNIDIRECTIONAL move replaced
            where[op[2]]
            for op in ops
            if (op[0] == "add" or op[0] == "move" and op[3] is Move.UNIDIRECTIONAL)
            and op[1] not in kept
            and op[2] in where
        }
        removed = sorted(removed)
        for slot in removed:
            del at[slot]
        added, moved = [], []
        for op in ops:
            if op[0] != "add" or op[1] not in kept:
                continue
            where = {r: slot for slot, r in at.items()}
            slot = where[op[2]] if op[2] in where else _lowest_free(at, program.max_num_reqs)
            if slot is None:
                return None
            budget, prompt = program.requests[op[1]]
            added.append(AddedRequest(slot, budget, prompt))
            at[slot] = op[1]
        for op in ops:
            where = {r: slot for slot, r in at.items()}
            if op[0] != "move" or op[1] not in where:
                continue
            src, kind = where[op[1]], op[3]
            if op[2] in where:
                dst = where[op[2]]
            elif kind is Move.UNIDIRECTIONAL:
                dst = _lowest_free(at, program.max_num_reqs)
                if dst is None or dst > src:
                    continue
            else:
                continue
            moved.append((src, dst, kind))
            if kind is Move.SWAP:
                at[src], at[dst] = at[dst], at[src]
            else:
                at[dst] = at.pop(src)
        _condense(at, moved)
        if not at:
            return None
        changed = removed or added or moved or len(at) != (len(steps[-1][1]) if steps else 0)
        update = BatchUpdate(len(at), tuple(removed), tuple(added), tuple(moved)) if changed else None
        if any(r not in proposals for r in at.values()):
            return None
        steps.append((update, tuple(proposals[at[slot]] for slot in range(len(at)))))
    return BudgetScenario(
        program.start, program.end, program.scope, program.max_num_reqs, tuple(steps), program.forced, program.others
    )


def _chunks(items, whole: bool = False) -> list[list]:
    """``items`` cut into halves, quarters, ... down to single items, biggest pieces first (delta
    debugging); with ``whole``, all of them first."""
    items = list(items)
    out, size = [], len(items) if whole else len(items) // 2
    while size >= 1:
        out += [items[i : i + size] for i in range(0, len(items), size)]
        size //= 2
    return out


def _without_steps(program: _Program, dropped: set[int]) -> tuple[_Program, set[int]]:
    """``program`` without the steps in ``dropped``: a dropped step's operations move to the next kept
    step; requests that lived only in dropped steps go (with their operations)."""
    live_in = {r for i, (_, proposals) in enumerate(program.steps) if i not in dropped for r in proposals}
    steps, carried = [], ()
    for i, (ops, proposals) in enumerate(program.steps):
        if i in dropped:
            carried += ops
            continue
        steps.append((carried + ops, proposals))
        carried = ()
    return replace(program, steps=tuple(steps)), live_in


def _with_step(program: _Program, index: int, ops: tuple, proposals: dict) -> _Program:
    steps = list(program.steps)
    steps[index] = (ops, proposals)
    return replace(program, steps=tuple(steps))


def _marker_free_token(scenario: BudgetScenario) -> int:
    """The smallest id in neither marker: what a token that plays no part is replaced by."""
    markers = _marker_ids(scenario)
    return next(t for t in range(len(markers) + 1) if t not in markers)


def _marker_ids(scenario: BudgetScenario) -> set[int]:
    """Every id of S, E, the forced end sequence and the other end markers."""
    return {*scenario.start, *scenario.end, *(scenario.forced or ()), *(t for m in scenario.others for t in m)}


def _map_tokens(program: _Program, mapping) -> _Program:
    """Every prompt token, draft and free token ``t`` replaced by ``mapping(t)`` (the markers stay)."""
    requests = tuple((budget, tuple(mapping(t) for t in prompt)) for budget, prompt in program.requests)
    steps = tuple(
        (
            ops,
            {
                r: SlotStep([mapping(t) for t in p.drafts], p.accept, mapping(p.free_token))
                for r, p in proposals.items()
            },
        )
        for ops, proposals in program.steps
    )
    return replace(program, requests=requests, steps=steps)


def smaller(scenario: BudgetScenario):
    """Candidate reductions of ``scenario``, biggest first (``_reductions``), without the ones that rebuild
    into ``scenario`` itself (a dropped condensing move comes back)."""
    for candidate in _reductions(scenario):
        if candidate is not None and candidate != scenario:
            yield candidate


def _reductions(scenario: BudgetScenario):
    """Candidate reductions of ``scenario``, biggest first: shorter prefixes; whole requests dropped
    with their update history (halves, quarters, ... single requests); steps dropped (an update moves
    to the next step); an update's moves and SWAPs dropped, all at once and one by one; drafts and
    prompt tokens dropped (all, halves, ... one by one); shorter markers; smaller budgets (powers of two
    below, half, one less); fewer distinct token ids; a smaller ``max_num_reqs``. The updates of a
    candidate are rebuilt on the slots its requests hold (renumbered from 0). A candidate may be None
    (nothing left in a step), invalid or unreachable; the caller judges that."""
    program = _program(scenario)
    everyone = set(range(len(program.requests)))
    n = len(program.steps)

    def compiled(candidate: _Program, kept: set[int] = everyone) -> BudgetScenario | None:
        return _compile(candidate, kept)

    for k in range(1, n):
        yield replace(scenario, steps=scenario.steps[:k])
    for chunk in _chunks(sorted(everyone)):
        yield compiled(program, everyone - set(chunk))
    for chunk in _chunks(list(range(n))):
        if 0 not in chunk or len(chunk) < n:
            reduced, live = _without_steps(program, set(chunk))
            yield compiled(reduced, live)
    for i, (ops, proposals) in enumerate(program.steps):
        if sum(op[0] == "move" for op in ops) > 1:  # every move of the update at once (SWAPs that cancel)
            yield compiled(_with_step(program, i, tuple(op for op in ops if op[0] != "move"), proposals))
        for o, op in enumerate(ops):
            if op[0] == "move":
                yield compiled(_with_step(program, i, ops[:o] + ops[o + 1 :], proposals))
    for i, (ops, proposals) in enumerate(program.steps):
        for r, proposal in proposals.items():
            for cut in _chunks(range(len(proposal.drafts)), whole=True):  # all drafts, halves, ... each alone
                drafts = [t for j, t in enumerate(proposal.drafts) if j not in cut]
                shorter = SlotStep(drafts, min(proposal.accept, len(drafts)), proposal.free_token)
                yield compiled(_with_step(program, i, ops, {**proposals, r: shorter}))
    for r, (budget, prompt) in enumerate(program.requests):
        variants = [
            (budget, tuple(t for i, t in enumerate(prompt) if i not in cut))
            for cut in _chunks(range(len(prompt)), whole=True)
        ]
        if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
            lower = {0, budget // 2, budget - 1} | {2**e for e in range(budget.bit_length()) if 2**e < budget}
            variants += [(smaller_budget, prompt) for smaller_budget in sorted(lower)]
        for variant in variants:
            requests = program.requests[:r] + (variant,) + program.requests[r + 1 :]
            yield compiled(replace(program, requests=requests))
    for name in ("start", "end"):
        marker = getattr(program, name)
        for cut in range(len(marker) if len(marker) > 1 else 0):
            yield compiled(replace(program, **{name: marker[:cut] + marker[cut + 1 :]}))
    filler = _marker_free_token(scenario)
    used = {t for _, prompt in program.requests for t in prompt} | {
        t for _, proposals in program.steps for p in proposals.values() for t in (*p.drafts, p.free_token)
    }
    for token in sorted(used - _marker_ids(scenario) - {filler}):
        yield compiled(_map_tokens(program, lambda t, token=token: filler if t == token else t))
    needed = max(len(slots) for _, slots in scenario.steps)
    if needed < scenario.max_num_reqs:
        yield compiled(replace(program, max_num_reqs=needed))


def single_removals(scenario: BudgetScenario):
    """Every candidate that removes exactly one element of ``scenario``: one step (its update moves to
    the next step), one request with its update history, one move or SWAP, one draft, one prompt token,
    one marker token. A 1-minimal scenario fails in none of them."""
    program = _program(scenario)
    everyone = set(range(len(program.requests)))
    for r in everyone:
        yield _compile(program, everyone - {r})
    for i in range(len(program.steps)):
        reduced, live = _without_steps(program, {i})
        yield _compile(reduced, live)
    for i, (ops, proposals) in enumerate(program.steps):
        for o, op in enumerate(ops):
            if op[0] == "move":
                yield _compile(_with_step(program, i, ops[:o] + ops[o + 1 :], proposals), everyone)
        for r, proposal in proposals.items():
            for cut in range(len(proposal.drafts)):
                drafts = proposal.drafts[:cut] + proposal.drafts[cut + 1 :]
                shorter = SlotStep(drafts, min(proposal.accept, len(drafts)), proposal.free_token)
                yield _compile(_with_step(program, i, ops, {**proposals, r: shorter}), everyone)
    for r, (budget, prompt) in enumerate(program.requests):
        for cut in range(len(prompt)):
            requests = program.requests[:r] + ((budget, prompt[:cut] + prompt[cut + 1 :]),) + program.requests[r + 1 :]
            yield _compile(replace(program, requests=requests), everyone)
    for name in ("start", "end"):
        marker = getattr(program, name)
        for cut in range(len(marker) if len(marker) > 1 else 0):
            yield _compile(replace(program, **{name: marker[:cut] + marker[cut + 1 :]}), everyone)
