"""Replaying a thinking-budget scenario beside the oracle, row by row: the requirements each compared row exercises
(``row_requirements``), the first diverging row blamed on one of them (``Divergence``, ``BLAME_ORDER``), the case
in one line (``describe``) and the reproduction document of a minimal scenario (``reproduction_document``).

A scenario stops at its first diverging row: its state is no longer comparable."""

from __future__ import annotations

from dataclasses import dataclass, replace

from specconform.specs.interface import BatchUpdate, Move

from ...core import Tally
from ...oracle import budget as tb
from ...vectors import FORMAT_VERSION


@dataclass
class _Slot:
    """What the check remembers of a slot between steps (for tagging rows, not for judging them)."""

    output: int = 0  # tokens committed since the request was added
    prompt_partial: bool = False  # the prompt ended inside a partial S or E (TB-PROMPT-3)
    moved: str = ""  # "SWAP" or "UNIDIRECTIONAL" when a move touched the slot in this step's update
    added: bool = False  # added by this step's update
    minus_one: bool = False  # added with the budget -1, which means untracked (TB-API-1)
    forcing: bool = False  # the last token committed was at a row the oracle forced
    # the index of E an engine that restarts E at E[0] when the budget runs out would force next, where the forcing
    # began inside a partial match of E (``restarted``); -1 where such an engine agrees with the oracle
    restart: int = -1
    natural: bool = False  # the model closed a section of this request itself: E completed at a free position


def _self_overlapping(marker: tuple[int, ...]) -> bool:
    return any(tb.MarkerAutomaton(marker).failure)


def row_requirements(
    state: tb.RequestBudget | None, slot: _Slot, row: int, num_drafts: int, forced: int, step_drafts: bool = False
) -> set[str]:
    """The requirements one compared forced row exercises, from the oracle's state before the row (``step_drafts``:
    whether any request of the step has drafts, which puts every row of it on the speculative path)."""
    if state is None:
        tags = {"TB-UNTRACKED-1", "TB-API-1"} if slot.minus_one else {"TB-UNTRACKED-1"}
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
            if forced == -1 and (state.end_matched or slot.natural):
                # a free row where the model is closing a section itself (it began E), or after it closed one: what
                # TB-NATURAL-1 leaves untouched; any other free row is TB-FORCE-1's alone ("every other position is
                # free"), so a row forced early in a section the model never closes does not name TB-NATURAL-1
                tags.add("TB-NATURAL-1")
            if state.budget == 0 and state.count == 0 and not state.opened_in_prompt:
                tags.add("TB-FORCE-4")
            if state.opened_in_prompt:
                tags.add("TB-PROMPT-1")
                if len(state.start) > 1:  # a multi-token S the prompt holds is counted from its last token
                    tags.add("TB-PROMPT-3")
                if forced != -1 and slot.output == 0 and row == 0:
                    tags.add("TB-PROMPT-2")
            if state.scope == "request" and state.spent:
                tags.add("TB-SCOPE-1")
            if state.scope == "section" and state.sections:
                tags.add("TB-SCOPE-2")
        if slot.prompt_partial:
            tags.add("TB-PROMPT-3")
        if state.forced is not None:  # a forced end sequence other than E (TB-END-1, TB-END-2)
            if state.in_section and forced != -1:
                tags.add("TB-END-1")
            if not state.in_section:
                tags.add("TB-END-2")  # free until S: a section closes on E, forced or emitted by the model
        if state.others:
            tags.add("TB-END-3")  # whether the section is open depends on every accepted end marker
    if num_drafts or step_drafts:  # every row of a step with drafts, row 0 included, is judged on its prefix of them
        tags.add("TB-SPEC-1")
    if row > 0 and forced != -1:
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


# The requirement a diverging row is blamed on: the most specific of those the row exercises (a requirement before
# those it builds on, specs/requirement-order.md, except where noted).
BLAME_ORDER = (
    "TB-END-3",
    "TB-END-2",
    "TB-END-1",
    "TB-BATCH-3",
    "TB-BATCH-2",
    "TB-PROMPT-3",
    "TB-PROMPT-2",
    "TB-SCOPE-1",
    "TB-SCOPE-2",
    "TB-SPEC-2",
    "TB-SPEC-1",
    "TB-FORCE-2",
    "TB-NATURAL-1",
    "TB-API-1",
    "TB-UNTRACKED-1",
    "TB-PROMPT-1",
    "TB-FORCE-1",
    # a budget of 0 differs from any other in a value, not a feature: a case that fails it fails TB-FORCE-1, which
    # TB-FORCE-4 builds on, and a minimal case cannot tell them apart
    "TB-FORCE-4",
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


@dataclass
class Divergence:
    """The first row where an engine's forced rows left the oracle's, blamed on one requirement."""

    requirement: str
    mode: str
    step: int
    where: tuple[int, int, int] | None  # (slot, row within the slot, flat row); None: the layout differs
    expected: list[int]
    got: list[int]
    row_tags: frozenset[str] = frozenset()  # every requirement the diverging row exercises, the check's or not
    # the requirement the row's own values single out among those (``_partial_end_decides``); "" where none does
    diagnosis: str = ""

    @property
    def fingerprint(self) -> str:
        return f"{self.requirement}/{self.mode}"


def restarted(state: tb.RequestBudget, tokens: list[int], forcing: bool, restart: int) -> tuple[bool, int]:
    """``(forcing, restart)`` after feeding ``tokens`` (placeholders -1 skipped) to ``state`` (a clone: it is
    advanced): whether the last token sat at a forced row, and the index of E an engine that restarts E at E[0] when
    the budget runs out would force next. TB-FORCE-2 continues E from the partial match ``m`` the thinking tokens
    end with, so such an engine forces ``E[0..m)`` where the oracle already closed the section: -1 unless the
    forcing began inside a partial match of E and no free row came since."""
    for token in (t for t in tokens if t != -1):
        forced = state.forced is None and state.forced_token() != -1
        if forced and not forcing:
            restart = 0 if state.end_matched else -1
        restart = restart + 1 if forced and restart >= 0 else restart if forced else -1
        forcing = forced
        state.feed(token)
    return forcing, restart


def closes_naturally(state: tb.RequestBudget, tokens: list[int]) -> bool:
    """Whether feeding ``tokens`` (placeholders -1 skipped) to ``state`` (a clone: it is advanced) closes a section
    at a free position: E completed by the model before the budget ran out (a natural close, TB-NATURAL-1)."""
    for token in (t for t in tokens if t != -1):
        free, was_open = state.forced_token() == -1, state.in_section
        state.feed(token)
        if was_open and not state.in_section and free:
            return True
    return False


def _diagnosis(state: tb.RequestBudget | None, generated: int, expected: int, got: int, restart: int = -1) -> str:
    """The requirement a diverging forced row singles out by its own values, or "" (``generated``: the tokens the
    open section holds that the request's output, not its prompt, put there):

    - a free row forced with ``E[restart]`` right after a forced end that began inside a partial match of E:
      TB-FORCE-2 (the engine restarted E at E[0] and so forces the tokens the partial match already held; the row
      before it took the same token either way, so only this one shows it);
    - a row left free that only the trailing partial match of E puts at the budget: TB-COUNT-1 (an engine that leaves
      it out of the count leaves exactly this row free);
    - a row left free that only the prompt's tokens after S put at the budget: TB-PROMPT-1 (an engine that does not
      count them leaves exactly this row free), unless S's own extra tokens would do as well (TB-PROMPT-3's);
    - a forced row that takes ``E[k]`` for a shorter border ``k`` of the partial match ``m`` (``E[0..k)`` is also a
      suffix of the tokens matched): TB-MARK-3 (the match fell back to a border that is not the longest; the forcing
      continued the partial match it was given, as TB-FORCE-2 asks)."""
    if state is not None and expected == -1 and 0 <= restart < len(state.end) and got == state.end.marker[restart]:
        return "TB-FORCE-2"
    if state is None or not state.in_section or state.budget_left is None or expected == -1:
        return ""
    if got != -1:
        return "TB-MARK-3" if got in _shorter_border_tokens(state) else ""
    left, count = state.budget_left, state.count
    if state.end_matched and count - state.end_matched < left <= count:
        return "TB-COUNT-1"
    from_prompt = count - generated if state.opened_in_prompt else 0
    extra_start = len(state.start) - 1
    if from_prompt and count - from_prompt < left <= count and not (extra_start and count - extra_start < left):
        return "TB-PROMPT-1"
    return ""


def _shorter_border_tokens(state: tb.RequestBudget) -> set[int]:
    """The tokens a forced row would take after a partial match of the forced sequence (``F``, else ``E``) that falls
    back to a shorter non-empty border than the longest: ``E[k]`` for every border ``k`` of ``E[0..m)`` below ``m``
    other than the one ``E[m]`` itself holds."""
    automaton, matched = (state.forced, state.forced_matched) if state.forced else (state.end, state.end_matched)
    tokens, k = set(), automaton.failure[matched - 1] if matched > 1 else 0
    while k:
        tokens.add(automaton.marker[k])
        k = automaton.failure[k - 1]
    return tokens - {automaton.marker[matched]}


def _track(slots: list[_Slot], model: tb.BudgetBatch, update: BatchUpdate) -> None:
    """Follow ``update`` in the per-slot tags (added, moved, prompt ending inside a marker)."""
    for s in update.removed:
        slots[s] = _Slot()
    for a in update.added:
        probe = tb.RequestBudget.from_prompt(model.start, model.end, 0, list(a.prompt_token_ids), model.scope)
        slots[a.index] = _Slot(
            prompt_partial=bool(probe.start_matched or probe.end_matched), added=True, minus_one=a.budget == -1
        )
    for src, dst, kind in update.moved:
        if kind is Move.SWAP:
            slots[src], slots[dst] = slots[dst], slots[src]
            slots[src].moved = slots[dst].moved = "SWAP"
        else:
            slots[dst], slots[src] = slots[src], _Slot()
            slots[dst].moved = "UNIDIRECTIONAL"


def marker_arguments(vector: dict) -> dict:
    """The keywords that give an engine a vector's forced end sequence (TB-END-1) and its other accepted end
    markers (TB-END-3): none for a vector that has neither, so engines without those variants are called
    as before."""
    found = {}
    if vector.get("forced_token_ids") is not None:
        found["forced_token_ids"] = list(vector["forced_token_ids"])
    if vector.get("other_end_token_ids"):
        found["other_end_token_ids"] = [list(m) for m in vector["other_end_token_ids"]]
    return found


def replay_scenario(
    engine, vector: dict, requirements: tuple[str, ...], tally: Tally | None = None
) -> Divergence | None:
    """Drive ``engine`` through a budget scenario in the golden-vector format beside the oracle;
    each compared row counts in ``tally`` (when given); returns the first divergence or None.

    The engine gets ``max_spec_len`` from the vector when it names one (generated scenarios do),
    otherwise the largest draft count of its steps."""
    start, end, scope = vector["start_token_ids"], vector["end_token_ids"], vector["scope"]
    max_num_reqs = vector["max_num_reqs"]
    max_spec = vector.get(
        "max_spec_len", max((max(s["num_draft_tokens"], default=0) for s in vector["steps"]), default=0)
    )
    model = tb.BudgetBatch(
        start, end, max_num_reqs, scope, vector.get("forced_token_ids"), vector.get("other_end_token_ids") or ()
    )
    state = engine.budget_state(start, end, max_num_reqs, scope, max_spec_len=max_spec, **marker_arguments(vector))
    slots = [_Slot() for _ in range(max_num_reqs)]
    for index, step in enumerate(vector["steps"]):
        for slot in slots:
            slot.moved, slot.added = "", False
        update = None if step["update"] is None else BatchUpdate.from_json(step["update"])
        if update is not None:
            _track(slots, model, update)
            model.apply(update)
        try:
            state.sync_batch(update)
        except ValueError:  # the update is valid: the oracle applied it first
            blame = "TB-BATCH-1" if "TB-BATCH-1" in requirements else requirements[0]
            return Divergence(blame, "valid-update-rejected", index, None, [], [])
        num, flat = list(step["num_draft_tokens"]), list(step["draft_token_ids"])
        expected = model.forced_rows(num, flat)
        got = [int(x) for x in state.forced_tokens(num, flat)]
        divergence = _compare(model, slots, requirements, tally, index, num, flat, expected, got, tuple(end))
        if divergence:
            return divergence
        committed = step["sampled_token_ids"]
        for index_in_batch, (slot, row) in enumerate(zip(slots, committed)):
            slot.output += sum(1 for t in row if t != -1)
            if (before := model.state(index_in_batch)) is not None:
                slot.forcing, slot.restart = restarted(before.clone(), row, slot.forcing, slot.restart)
                if not slot.natural:
                    slot.natural = closes_naturally(before.clone(), row)
        model.commit(committed)
        state.update_state(committed)
    return None


def _compare(model, slots, requirements, tally, step, num, flat, expected, got, end) -> Divergence | None:
    if len(got) != len(expected):
        layout = "TB-SPEC-4" if 0 in num else "TB-BATCH-5"
        blame = layout if layout in requirements else requirements[0]
        return Divergence(blame, "wrong-number-of-rows", step, None, expected, got, frozenset({layout}))
    misplaced = sorted(expected) == sorted(got) and expected != got  # the right forced tokens in the wrong rows
    if sum(num) == 0 and misplaced:
        blame = "TB-SPEC-4" if "TB-SPEC-4" in requirements else requirements[0]
        return Divergence(blame, "rows-misplaced", step, None, expected, got, frozenset({"TB-SPEC-4"}))
    row = offset = 0
    for slot, k in enumerate(num):
        drafts = flat[offset : offset + k]
        offset += k
        state = model.state(slot)
        probe = state.clone() if state is not None else None
        forcing, restart = slots[slot].forcing, slots[slot].restart
        seen = slots[slot]  # the slot as its row j sees it: a draft before it may close a section naturally
        for j in range(k + 1):
            if j and tb.observable_rows(expected[row - j : row + k + 1 - j], drafts) <= j:
                row += k + 1 - j  # discarded whatever they hold (TB-SPEC-1): not judged
                break
            row_tags = row_requirements(probe, seen, j, k, expected[row], any(num))
            tags = row_tags & set(requirements)
            if got[row] != expected[row]:
                mode = _mode(expected[row], got[row], end)
                if -1 in (got[row], expected[row]):  # whether a row is forced is the count's matter, not which
                    row_tags -= {"TB-FORCE-2"}  # token continues E (TB-FORCE-2)
                    tags -= {"TB-FORCE-2"}
                generated = seen.output + j if probe is not None and probe.opened_in_prompt else 0
                diagnosis = _diagnosis(probe, generated, expected[row], got[row], restart)
                mode = "partial-match-lost" if diagnosis == "TB-MARK-3" else mode
                row_tags |= {diagnosis} - {""}
                tags |= {diagnosis} & set(requirements)
                blame = next((r for r in BLAME_ORDER if r in tags), requirements[0])
                blame = diagnosis if diagnosis in tags else blame
                if blame == "TB-SPEC-2" and -1 in (got[row], expected[row]):
                    blame = "TB-SPEC-1" if "TB-SPEC-1" in tags else blame  # forced vs free: which state
                return Divergence(blame, mode, step, (slot, j, row), expected, got, frozenset(row_tags), diagnosis)
            if tally is not None:
                tally.exercised(*tags)
            if probe is not None and j < k and not seen.natural and closes_naturally(probe.clone(), [drafts[j]]):
                seen = replace(seen, natural=True)
            if probe is not None and j < k:
                forcing, restart = restarted(probe.clone(), [drafts[j]], forcing, restart)
                probe.feed(drafts[j])
            row += 1
    return None


def _describe_update(update: dict) -> str:
    parts = [f"remove {update['removed']}"] if update["removed"] else []
    parts += [f"add slot {a['index']} budget {a['budget']} prompt {a['prompt_token_ids']}" for a in update["added"]]
    parts += [f"move {src}->{dst} {kind}" for src, dst, kind in update["moved"]]
    return f"batch_size {update['batch_size']}" + "".join(f", {p}" for p in parts)


def describe(vector: dict, divergence: Divergence) -> str:
    """The case in one line: markers, scope, every step's update and drafts, then the diverging row
    with the expected and observed forced rows."""
    steps = []
    for index, step in enumerate(vector["steps"][: divergence.step + 1]):
        text = f"step {index}: "
        if step["update"] is not None:
            text += f"update ({_describe_update(step['update'])}); "
        text += f"drafts per slot {step['num_draft_tokens']} ids {step['draft_token_ids']}"
        if index < divergence.step:
            text += f", committed {[[t for t in row if t != -1] for row in step['sampled_token_ids']]}"
        steps.append(text)
    place = "" if divergence.where is None else " slot {} row {} (flat row {})".format(*divergence.where)
    seen = (
        "the engine rejected this valid update"
        if divergence.mode == "valid-update-rejected"
        else f"forced rows {divergence.got}, expected {divergence.expected}"
    )
    return (
        f"S={vector['start_token_ids']} E={vector['end_token_ids']} "
        + (f"F={vector['forced_token_ids']} " if "forced_token_ids" in vector else "")
        + (f"other E={vector['other_end_token_ids']} " if vector.get("other_end_token_ids") else "")
        + f"scope {vector['scope']} "
        f"max_num_reqs {vector['max_num_reqs']}; {'; '.join(steps)}; at step {divergence.step}{place}: {seen}"
    )


def compared_rows(vector: dict) -> int:
    """The logits rows a budget scenario in the golden-vector format compares: per step, one per
    live slot plus one per draft."""
    return sum(len(step["num_draft_tokens"]) + sum(step["num_draft_tokens"]) for step in vector["steps"])


def reproduction_document(
    vector: dict, divergence: Divergence, original: dict, original_size: int, minimal_size: int
) -> dict:
    """A standalone thinking-budget vector file holding the minimal scenario ``vector`` and the
    fingerprint it fails on (``specconform replay`` re-runs it); ``original`` is the drawn scenario it
    was minimised from, whose size and rows it records beside its own."""
    return {
        "format": FORMAT_VERSION,
        "kind": "thinking-budget",
        "fingerprint": divergence.fingerprint,
        "original_size": original_size,
        "minimal_size": minimal_size,
        "original_rows": compared_rows(original),
        "minimal_rows": compared_rows(vector),
        "scenarios": [vector],
        "errors": [],
    }
