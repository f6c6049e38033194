"""Attribution by the minimal case: which requirement a budget failure belongs to, and which defect it is.

A check of batch bookkeeping that meets an engine whose section count restarts at every start marker
fails, but not because of the batch: its minimal case needs no batch operation at all. Publishing that
failure under TB-BATCH-1 blames the engine twice for one defect, and names the wrong one. So after a
failing case is shrunk, its *features* are read off it (``case_features``: what it holds beyond one request
stepping through one section with one-token markers), and the failure is re-attributed where the case does
not need the check's own feature:

- each feature of the check's own requirements (``case_feature`` in ``specs/requirements.yaml``) that the
  case holds is tried away (``TWINS``: the same committed stream without drafts, each request alone, the
  prompt's section opened by the output); where the twin fails too, the feature is only the stage the defect
  was met on;
- a failure that needs none of the check's features (multi-token markers aside, which have no twin) and
  holds a misplaced marker (a start marker inside an open section, an end marker outside one) is TB-MARK-1's;
- any other failure that needs none of the check's features belongs to the most specific requirement of the
  diverging row whose feature the case still holds, or to a basic one.

When the owner is not a requirement of the check, the check records the failure under it and its own
requirement reads BLOCKED, naming the finding. A feature without a twin (multi-token markers, a re-opened
section) is kept: the failure stays the check's own.

A *finding* is one defect: the requirement that owns it (``finding_key`` adds the stage its minimal case
met it on). Reports group failed requirements of every check by finding, so one defect seen by six checks
is published once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from specconform.specs.interface import BatchUpdate, Move

from .. import spec
from ..oracle import budget as tb

_REGISTRY = spec.load_registry()
CASE_FEATURES = frozenset(r.case_feature for r in _REGISTRY.values() if r.case_feature)


def _ends_with(stream: Sequence[int], marker: Sequence[int], not_before: int) -> bool:
    """Whether ``stream`` ends with ``marker`` matched wholly at or after index ``not_before``."""
    n = len(marker)
    return len(stream) - n >= not_before and list(stream[-n:]) == list(marker)


def _stream_features(stream: Sequence[int], start: Sequence[int], end: Sequence[int]) -> set[str]:
    """``re-opened-section`` and ``misplaced-marker`` (a start marker inside an open section, or an end marker
    outside one) of one request's prompt and committed output, segmented naively."""
    found: set[str] = set()
    opened_at, sections = None, 0
    for i in range(1, len(stream) + 1):
        seen = stream[:i]
        if opened_at is None:
            if _ends_with(seen, start, 0):
                opened_at, sections = i, sections + 1
            elif _ends_with(seen, end, 0):
                found.add("misplaced-marker")
        elif _ends_with(seen, end, opened_at):
            opened_at = None
        elif _ends_with(seen, start, opened_at):
            found.add("misplaced-marker")
    if sections > 1:
        found.add("re-opened-section")
    return found


def case_features(vector: dict) -> frozenset[str]:
    """The features of a thinking-budget scenario in the golden-vector format: ``multi-token-markers``,
    ``prompt-opened`` (a prompt that leaves a section open or ends inside a marker), ``drafts``, ``batch-ops``
    (a removal, a move, or an add after the first step), ``several-requests`` (a step of more than one),
    ``re-opened-section``, ``misplaced-marker`` and ``minus-one-budget`` (a request added with the budget -1)."""
    start, end = vector["start_token_ids"], vector["end_token_ids"]
    found: set[str] = set()
    if len(start) > 1 or len(end) > 1:
        found.add("multi-token-markers")
    live: dict[int, list[int]] = {}
    finished: list[list[int]] = []
    for index, step in enumerate(vector["steps"]):
        if step["update"] is not None:
            update = BatchUpdate.from_json(step["update"])
            if update.removed or update.moved or (index and update.added):
                found.add("batch-ops")
            for slot in update.removed:
                finished.append(live.pop(slot, []))
            for added in update.added:
                if added.budget == -1:
                    found.add("minus-one-budget")
                prompt = list(added.prompt_token_ids)
                probe = tb.RequestBudget.from_prompt(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), 0, prompt)
                if probe.in_section or probe.start_matched or probe.end_matched:
                    found.add("prompt-opened")
                if added.index in live:
                    finished.append(live[added.index])
                live[added.index] = prompt
            for src, dst, kind in update.moved:
                if kind is Move.SWAP:
                    live[src], live[dst] = live.get(dst, []), live.get(src, [])
                else:
                    if dst in live:
                        finished.append(live[dst])
                    live[dst] = live.pop(src, [])
        if any(step["num_draft_tokens"]):
            found.add("drafts")
        if len(step["num_draft_tokens"]) > 1:
            found.add("several-requests")
        for slot, row in enumerate(step["sampled_token_ids"]):
            live.setdefault(slot, []).extend(t for t in row if t != -1)
    for stream in [*finished, *live.values()]:
        found |= _stream_features(stream, start, end)
    return frozenset(found)


def _single(step: dict) -> bool:
    return len(step["num_draft_tokens"]) <= 1


def sequential_twin(vector: dict) -> dict | None:
    """``vector`` without speculative decoding: every step of its one live request that committed a run of
    tokens becomes one step per token, none with drafts, and ``max_spec_len`` 0. The committed stream and the
    updates are the same, so a conforming engine forces the same tokens (TB-SPEC-1). None when a step holds
    more than one request (their runs could not be cut into steps of one token each)."""
    if not all(_single(step) for step in vector["steps"]):
        return None
    steps = []
    for step in vector["steps"]:
        if not step["num_draft_tokens"]:
            steps.append(step)
            continue
        run = [t for t in step["sampled_token_ids"][0] if t != -1] or [-1]
        for i, token in enumerate(run):
            one = {"num_draft_tokens": [0], "draft_token_ids": [], "sampled_token_ids": [[token]]}
            steps.append({**step, **one, "update": step["update"] if i == 0 else None})
    return {**vector, "steps": steps, "max_spec_len": 0}


def _place(live: dict[int, int], slot: int, request: int | None) -> None:
    """Slot ``slot`` of ``live`` (slot -> request) holds ``request`` now, or nothing where that is None."""
    if request is None:
        live.pop(slot, None)
    else:
        live[slot] = request


def solo_twins(vector: dict) -> list[dict]:
    """``vector`` without its batch: one scenario per request, alone in a batch of one from its add to its last
    step, with the drafts and commits it had. A request's forced rows do not depend on the others (TB-BATCH-1),
    so a conforming engine forces the same tokens."""
    live: dict[int, int] = {}  # slot -> request
    requests: list[dict] = []
    for step in vector["steps"]:
        if step["update"] is not None:
            update = BatchUpdate.from_json(step["update"])
            for slot in update.removed:
                live.pop(slot, None)
            for added in update.added:
                live[added.index] = len(requests)
                requests.append({"added": added, "steps": []})
            for src, dst, kind in update.moved:
                if kind is Move.SWAP:
                    into_src, into_dst = live.get(dst), live.get(src)
                    _place(live, src, into_src)
                    _place(live, dst, into_dst)
                else:
                    _place(live, dst, live.pop(src, None))
        offset = 0
        for slot, k in enumerate(step["num_draft_tokens"]):
            if slot in live:
                requests[live[slot]]["steps"].append(
                    (k, step["draft_token_ids"][offset : offset + k], step["sampled_token_ids"][slot])
                )
            offset += k
    twins = []
    for request in requests:
        added = request["added"]
        steps = [
            {"update": None, "num_draft_tokens": [k], "draft_token_ids": drafts, "sampled_token_ids": [row]}
            for k, drafts, row in request["steps"]
        ]
        if not steps:
            continue
        add = BatchUpdate(1, added=(type(added)(0, added.budget, tuple(added.prompt_token_ids)),))
        steps[0]["update"] = add.to_json()
        twins.append({**vector, "max_num_reqs": 1, "steps": steps})
    return twins


def output_opened_twin(vector: dict) -> dict | None:
    """``vector`` with the section its one request's prompt opened opened by the output instead: the prompt
    stops before its last start marker, and the start marker and the prompt's tokens after it are committed one
    per step before the vector's own steps. The section counts the same tokens (TB-PROMPT-1), so a conforming
    engine forces the same tokens afterwards. None for a batch, a prompt that leaves no section open, or where
    the oracle would force one of the moved tokens (the twin would not be a conforming run)."""
    steps = vector["steps"]
    if not steps or steps[0]["update"] is None or not all(_single(step) for step in steps):
        return None
    first = BatchUpdate.from_json(steps[0]["update"])
    if len(first.added) != 1 or any(step["update"] is not None for step in steps[1:]):
        return None
    added = first.added[0]
    start, end = vector["start_token_ids"], vector["end_token_ids"]
    state = tb.RequestBudget(tb.MarkerAutomaton(start), tb.MarkerAutomaton(end), None)
    opened_at = None
    for i, token in enumerate(added.prompt_token_ids):
        was_open = state.in_section
        state.feed(token)
        if state.in_section and not was_open:
            opened_at = i + 1 - len(start)
    if not state.in_section or opened_at is None:
        return None
    prompt_ids = list(added.prompt_token_ids)
    prompt, moved = prompt_ids[:opened_at], prompt_ids[opened_at:]
    update = BatchUpdate(first.batch_size, added=(type(added)(added.index, added.budget, tuple(prompt)),))
    model = tb.BudgetBatch(start, end, vector["max_num_reqs"], vector["scope"])
    model.apply(update)
    prefix = []
    for i, token in enumerate(moved):
        forced = model.forced_rows([0], [])[0]
        if forced not in (-1, token):
            return None
        model.commit([[token]])
        prefix.append(
            {
                "update": update.to_json() if i == 0 else None,
                "num_draft_tokens": [0],
                "draft_token_ids": [],
                "sampled_token_ids": [[token]],
            }
        )
    return {**vector, "steps": prefix + [{**steps[0], "update": None}, *steps[1:]]}


def _misplaced_spans(stream: Sequence[int], start: Sequence[int], end: Sequence[int]) -> list[range]:
    """The positions of each misplaced marker of a stream (segmented naively, as ``_stream_features`` does)."""
    spans, opened_at = [], None
    for i in range(1, len(stream) + 1):
        seen = stream[:i]
        if opened_at is None:
            if _ends_with(seen, start, 0):
                opened_at = i
            elif _ends_with(seen, end, 0):
                spans.append(range(i - len(end), i))
        elif _ends_with(seen, end, opened_at):
            opened_at = None
        elif _ends_with(seen, start, opened_at):
            spans.append(range(i - len(start), i))
    return spans


def content_twin(vector: dict) -> dict | None:
    """``vector`` with every misplaced marker of its one request (a start marker inside an open section, an end
    marker outside one) made content: its tokens replaced by an id that plays no part. A section counts the same
    tokens either way (TB-COUNT-1), so a conforming engine forces the same rows, and an engine that still diverges
    does not need the misplaced marker to. None for a batch, drafts, a later update, or where the oracle would force
    one of the twin's tokens (it would not be the same run)."""
    steps = vector["steps"]
    if not steps or steps[0]["update"] is None or any(s["update"] is not None for s in steps[1:]):
        return None
    if any(len(s["num_draft_tokens"]) != 1 or s["num_draft_tokens"][0] for s in steps):
        return None
    added = BatchUpdate.from_json(steps[0]["update"]).added
    if len(added) != 1:
        return None
    start, end = vector["start_token_ids"], vector["end_token_ids"]
    prompt = list(added[0].prompt_token_ids)
    output = [t for s in steps for t in s["sampled_token_ids"][0] if t != -1]
    stream = prompt + output
    spans = _misplaced_spans(stream, start, end)
    if not spans:
        return None
    free = max([*start, *end, *stream]) + 1
    for span in spans:
        for i in span:
            stream[i] = free
    twin_prompt, twin_output = stream[: len(prompt)], stream[len(prompt) :]
    model = tb.BudgetBatch(start, end, vector["max_num_reqs"], vector["scope"])
    first = BatchUpdate(1, added=(type(added[0])(0, added[0].budget, tuple(twin_prompt)),))
    model.apply(first)
    twin_steps, position = [], 0
    for index, step in enumerate(steps):
        row = [t for t in step["sampled_token_ids"][0] if t != -1]
        committed = twin_output[position : position + len(row)]
        position += len(row)
        forced = model.forced_rows([0], [])[0]
        if committed and forced not in (-1, committed[0]):
            return None
        model.commit([committed or [-1]])
        twin_steps.append(
            {
                "update": first.to_json() if index == 0 else None,
                "num_draft_tokens": [0],
                "draft_token_ids": [],
                "sampled_token_ids": [committed or [-1]],
            }
        )
    return {**vector, "steps": twin_steps}


def untracked_twin(vector: dict) -> dict:
    """``vector`` with every budget of -1 given as None: both mean untracked (TB-API-1), so a conforming engine forces
    the same rows, and an engine that diverges only on the first reads -1 as a budget."""
    steps = []
    for step in vector["steps"]:
        update = step["update"]
        if update is not None:
            added = [{**a, "budget": None if a["budget"] == -1 else a["budget"]} for a in update["added"]]
            update = {**update, "added": added}
        steps.append({**step, "update": update})
    return {**vector, "steps": steps}


def one_step_twin(vector: dict, step: int, row: int) -> dict | None:
    """``vector`` with its one request's output up to the row judged at ``step`` (row ``row`` of its drafts) met in
    one step, as drafts every one of which is accepted, so the row is judged on the same stream with no step boundary
    inside it. The step follows one that commits a token that plays no part where the prompt leaves nothing open
    (an engine meets drafts only after a first output), else it is the first. A conforming engine forces the same
    row (TB-SPEC-1 judges a draft row on the committed stream followed by the drafts before it), and an engine that
    forces it right here needs the boundary to fail: a marker split across decode steps (TB-MARK-2). None unless a
    step boundary of ``vector`` falls inside a partial match of S or E, for a batch or a later update, where a step
    before the row commits a run of several tokens (the failure may be that run's commit, TB-SPEC-3's, which a partial
    match lost at a boundary does not need), or where the oracle would force one of the twin's drafts otherwise."""
    steps = vector["steps"]
    if not steps or steps[0]["update"] is None or any(s["update"] is not None for s in steps[1:]):
        return None
    added = BatchUpdate.from_json(steps[0]["update"]).added
    if len(added) != 1 or not all(len(s["num_draft_tokens"]) == 1 for s in steps[: step + 1]):
        return None
    add = BatchUpdate(1, added=(type(added[0])(0, added[0].budget, tuple(added[0].prompt_token_ids)),))
    args = (vector["start_token_ids"], vector["end_token_ids"], vector["max_num_reqs"], vector["scope"])
    markers = (vector.get("forced_token_ids"), vector.get("other_end_token_ids") or ())
    model = tb.BudgetBatch(*args, *markers)
    model.apply(add)
    state = model.state(0)
    if state is None:
        return None
    leaves_open = bool(state.in_section or state.start_matched or state.end_matched)
    stream, split = [], False
    for s in steps[:step]:
        if len([t for t in s["sampled_token_ids"][0] if t != -1]) > 1:
            return None
        for token in (t for t in s["sampled_token_ids"][0] if t != -1):
            state.feed(token)
            stream.append(token)
        split = split or bool(state.start_matched or state.end_matched)
    stream += steps[step]["draft_token_ids"][:row]
    if not split:
        return None
    drafts = {"num_draft_tokens": [len(stream)], "draft_token_ids": stream, "sampled_token_ids": [[*stream, -1]]}
    model = tb.BudgetBatch(*args, *markers)
    model.apply(add)
    if leaves_open:
        twin: list[dict[str, Any]] = [{"update": add.to_json(), **drafts}]
    else:
        free = max([*args[0], *args[1], *(markers[0] or ()), *(t for m in markers[1] for t in m), *stream]) + 1
        if model.forced_rows([0], [])[0] != -1:
            return None
        model.commit([[free]])
        first = {"update": add.to_json(), "num_draft_tokens": [0], "draft_token_ids": [], "sampled_token_ids": [[free]]}
        twin = [first, {"update": None, **drafts}]
    rows = model.forced_rows([len(stream)], stream)
    if any(forced not in (-1, token) for forced, token in zip(rows, stream)):
        return None
    return {**vector, "steps": twin, "max_spec_len": len(stream)}


# a feature a check is about -> the twins of a failing case without it
TWINS = {
    "drafts": lambda vector: [twin] if (twin := sequential_twin(vector)) else [],
    "batch-ops": solo_twins,
    "several-requests": solo_twins,
    "prompt-opened": lambda vector: [twin] if (twin := output_opened_twin(vector)) else [],
    "misplaced-marker": lambda vector: [twin] if (twin := content_twin(vector)) else [],
    "minus-one-budget": lambda vector: [untracked_twin(vector)],
}


def owner(row_requirements: Iterable[str], blame_order: Sequence[str], features: frozenset[str]) -> str | None:
    """The requirement a diverging row's failure belongs to when its check's own features were shown not to be
    needed: TB-MARK-1's misplaced marker first (a minimal case holds one only where the failure needs it),
    then the most specific of ``row_requirements`` (in ``blame_order``) whose case feature ``features`` holds
    or that has none; None when the row names no such requirement."""
    tagged = set(row_requirements)
    first = [r for r in blame_order if r in tagged and _REGISTRY[r].case_feature == "misplaced-marker" in features]
    rest = [r for r in blame_order if r in tagged and _REGISTRY[r].case_feature in features | {""}]
    return next(iter(first + rest), None)


def unclaimed(profile, requirement: str) -> str:
    """Why a failure whose minimal case isolates ``requirement`` is not judged on an engine of ``profile``: the
    requirement's class is one the profile does not claim, so the case lies outside what the engine promises
    (RUN-FINDING-1); "" when the profile claims it."""
    cls = _REGISTRY[requirement].cls if requirement in _REGISTRY else ""
    if not cls or cls in profile.classes:
        return ""
    return f"its minimal case isolates {requirement}, of class {cls}, which profile {profile.name} does not claim"


def feature_of(requirement: str) -> str:
    """The case feature a minimal case needs to isolate ``requirement`` ("" for a basic requirement)."""
    return _REGISTRY[requirement].case_feature if requirement in _REGISTRY else ""


def finding_key(requirement: str, features: Iterable[str]) -> str:
    """The name of one defect: the requirement its minimal case isolates, with the features of that case beside
    it (``on ...``: the stage it was met on, which differs from check to check and does not tell defects apart)."""
    own = _REGISTRY[requirement].case_feature if requirement in _REGISTRY else ""
    stage = sorted(set(features) & CASE_FEATURES - {own})
    return f"{requirement}" + (f" ({own})" if own else "") + (f" on {', '.join(stage)}" if stage else "")


def finding_of(key: str) -> str:
    """The defect a ``finding_key`` names, without the stage: what reports group failures by."""
    return key.split(" on ", 1)[0]
