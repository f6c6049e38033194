"""Shrinking thinking-budget scenarios: a scenario seen as requests and what happens to them, so that a candidate
can drop whole requests, steps or moves and the updates are rebuilt around what is left (``smaller``), and every
candidate one element smaller (``single_removals``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from specconform.specs.interface import AddedRequest, BatchUpdate, Move

from ...vectors import SlotStep
from .scenario import BudgetScenario
from .strategies import condense_slots


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
        condense_slots(at, moved)
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


def _shorter_phrases(program: _Program):
    """The forced end sequence ``F = P + E`` with a shorter transition phrase ``P``: none at all first (``F = E``, no
    forced sequence, as an engine that forces ``E`` is set up), then one token of ``P`` dropped at a time."""
    if program.forced is None:
        return
    yield None
    phrase = len(program.forced) - len(program.end)
    for cut in range(phrase if phrase > 1 else 0):
        yield program.forced[:cut] + program.forced[cut + 1 :]


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
    prompt tokens dropped (all, halves, ... one by one); smaller budgets (powers of two below, half, one
    less); a prompt token dropped with one unit of budget; shorter markers; a shorter transition phrase (none
    first); fewer distinct token ids; a smaller ``max_num_reqs``. The updates of a candidate are rebuilt on
    the slots its requests hold (renumbered from 0). A candidate may be None (nothing left in a step), invalid
    or unreachable; the caller judges that."""
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
            # a prompt token dropped with one unit of budget: a thinking token of the prompt's section and the budget
            # it spent go together, so what is left to spend is the same
            variants += [(budget - 1, prompt[:i] + prompt[i + 1 :]) for i in range(len(prompt))]
        for variant in variants:
            requests = program.requests[:r] + (variant,) + program.requests[r + 1 :]
            yield compiled(replace(program, requests=requests))
    for name in ("start", "end"):
        marker = getattr(program, name)
        for cut in range(len(marker) if len(marker) > 1 else 0):
            yield compiled(replace(program, **{name: marker[:cut] + marker[cut + 1 :]}))
    yield from (compiled(replace(program, forced=forced)) for forced in _shorter_phrases(program))
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
