"""Thinking-budget checks: persistent-batch scenarios compared with the oracle row by row,
whole generations judged by naive segmentation, and the budget API.

Scenarios come from the shared strategies (``harness.cases.budget``), which document why each is
reachable for a real engine. Every compared row counts as a case for the requirements it exercises
(``row_requirements``); a scenario stops at its first diverging row (its state is no longer
comparable) and the next scenario goes on, so one failure never hides another requirement's verdict.
The first failing scenario of each requirement is minimised (``harness.shrink``) to one that fails
on the same fingerprint, and that minimal scenario, in the golden-vector format, is the evidence and
the reproduction (``specconform replay FILE --engine E``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from specs.interface import AddedRequest, BatchUpdate, Move

from .. import cases, shrink
from ..cases.budget import BudgetFamily, BudgetScenario, scenarios, smaller, unreachable
from ..core import Context, Outcome, Tally
from ..oracle import budget as tb
from ..oracle.naive import thinking_tokens
from ..vectors import FORMAT_VERSION
from . import attribution

__all__ = ["BudgetFamily", "replay_scenario", "reproduction_document", "scenario_check"]


@dataclass
class _Slot:
    """What the check remembers of a slot between steps (for tagging rows, not for judging them)."""

    output: int = 0  # tokens committed since the request was added
    prompt_partial: bool = False  # the prompt ended inside a partial S or E (TB-PROMPT-3)
    moved: str = ""  # "SWAP" or "UNIDIRECTIONAL" when a move touched the slot in this step's update
    added: bool = False  # added by this step's update


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
        if state.forced is not None:  # a forced end sequence other than E (TB-END-1, TB-END-2)
            if state.in_section and forced != -1:
                tags.add("TB-END-1")
            if not state.in_section:
                tags.add("TB-END-2")  # free until S: a section closes on E, forced or emitted by the model
        if state.others:
            tags.add("TB-END-3")  # whether the section is open depends on every accepted end marker
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

    @property
    def fingerprint(self) -> str:
        return f"{self.requirement}/{self.mode}"


def _track(slots: list[_Slot], model: tb.BudgetBatch, update: BatchUpdate) -> None:
    """Follow ``update`` in the per-slot tags (added, moved, prompt ending inside a marker)."""
    for s in update.removed:
        slots[s] = _Slot()
    for a in update.added:
        probe = tb.RequestBudget.from_prompt(model.start, model.end, 0, list(a.prompt_token_ids), model.scope)
        slots[a.index] = _Slot(prompt_partial=bool(probe.start_matched or probe.end_matched), added=True)
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
        for slot, row in zip(slots, committed):
            slot.output += sum(1 for t in row if t != -1)
        model.commit(committed)
        state.update_state(committed)
    return None


def _compare(model, slots, requirements, tally, step, num, flat, expected, got, end) -> Divergence | None:
    if len(got) != len(expected):
        layout = "TB-SPEC-4" if 0 in num else "TB-BATCH-5"
        blame = layout if layout in requirements else requirements[0]
        return Divergence(blame, "wrong-number-of-rows", step, None, expected, got)
    misplaced = sorted(expected) == sorted(got) and expected != got  # the right forced tokens in the wrong rows
    if sum(num) == 0 and misplaced and "TB-SPEC-4" in requirements:
        return Divergence("TB-SPEC-4", "rows-misplaced", step, None, expected, got)
    row = offset = 0
    for slot, k in enumerate(num):
        drafts = flat[offset : offset + k]
        offset += k
        state = model.state(slot)
        probe = state.clone() if state is not None else None
        for j in range(k + 1):
            if j and tb.observable_rows(expected[row - j : row + k + 1 - j], drafts) <= j:
                row += k + 1 - j  # discarded whatever they hold (TB-SPEC-1): not judged
                break
            row_tags = row_requirements(probe, slots[slot], j, k, expected[row])
            tags = row_tags & set(requirements)
            if got[row] != expected[row]:
                mode = _mode(expected[row], got[row], end)
                if -1 in (got[row], expected[row]):  # whether a row is forced is the count's matter, not which
                    row_tags -= {"TB-FORCE-2"}  # token continues E (TB-FORCE-2)
                    tags -= {"TB-FORCE-2"}
                blame = next((r for r in BLAME_ORDER if r in tags), requirements[0])
                if blame == "TB-SPEC-2" and -1 in (got[row], expected[row]):
                    blame = "TB-SPEC-1" if "TB-SPEC-1" in tags else blame  # forced vs free: which state
                return Divergence(blame, mode, step, (slot, j, row), expected, got, frozenset(row_tags))
            if tally is not None:
                tally.exercised(*tags)
            if probe is not None and j < k:
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


def fails_the_same(engine, fingerprint: str, requirements: tuple[str, ...], max_spec: int):
    """A predicate: whether a candidate scenario is reachable, valid for the oracle, and makes ``engine``
    diverge with ``fingerprint`` (another failure met on the way does not count)."""

    def still_fails(candidate: BudgetScenario) -> bool:
        if unreachable(candidate):
            return False
        try:
            vector = candidate.vector("candidate", list(requirements))
        except ValueError:  # an update the oracle rejects: not a valid scenario
            return False
        vector["max_spec_len"] = max_spec
        try:
            found = replay_scenario(engine, vector, requirements)
        except Exception:  # the engine fails otherwise on this candidate: not the same failure
            return False
        return found is not None and found.fingerprint == fingerprint

    return still_fails


def minimal_scenario(engine, scenario: BudgetScenario, fingerprint: str, requirements, max_spec) -> BudgetScenario:
    """``scenario`` shrunk (``cases.budget.smaller``) while ``engine`` still fails it with ``fingerprint``."""
    return shrink.minimise(scenario, smaller, fails_the_same(engine, fingerprint, tuple(requirements), max_spec))


def attributed_owner(
    engine, requirements: tuple[str, ...], shown: Divergence, minimal: dict
) -> tuple[str, frozenset[str]]:
    """``(requirement, features)``: the requirement a failing minimal case of a check of ``requirements``
    isolates, and the features it holds (``harness.checks.attribution`` says how)."""
    features = attribution.case_features(minimal)
    own = {attribution.feature_of(r) for r in requirements} - {"", "misplaced-marker"}
    proven = set()  # features whose twins pass: the failure needs them
    for feature in sorted(features):
        twins = attribution.TWINS.get(feature, lambda vector: [])(minimal)
        if twins and any(_diverges(engine, twin) for twin in twins):
            features -= {feature}
        elif twins:
            proven.add(feature)
    needed = own & features
    if "misplaced-marker" in features and "TB-MARK-1" in shown.row_tags and needed <= {"multi-token-markers"}:
        return "TB-MARK-1", features  # a misplaced marker stays misplaced whatever the markers' length
    if not needed or shown.requirement not in shown.row_tags:  # a check of the basic machinery included
        return attribution.owner(shown.row_tags, BLAME_ORDER, features) or shown.requirement, features
    # the check's own feature is needed: a twin without it passes, so the most specific of the row's requirements
    # about it; where no twin could show it, the check's blame stands
    about = [
        r for r in (*BLAME_ORDER, "TB-BATCH-5") if r in shown.row_tags and attribution.feature_of(r) in proven & own
    ]
    return next(iter(about), shown.requirement), features


def _diverges(engine, vector: dict) -> bool:
    try:
        return replay_scenario(engine, vector, tuple(BLAME_ORDER)) is not None
    except Exception:  # noqa: BLE001 - the engine fails the twin another way: it does not show the same defect
        return False


def _record_attributed(
    engine,
    tally: Tally,
    requirements: tuple[str, ...],
    shown: Divergence,
    minimal: dict,
    evidence: str,
    document: dict,
) -> None:
    """Record the minimal case's failure under the requirement it isolates (``attributed_owner``): the check's own
    requirement when the case holds its feature, else the owner, and the check's requirement reads BLOCKED."""
    owner, features = attributed_owner(engine, requirements, shown, minimal)
    if owner == "TB-SPEC-2" and -1 in (shown.got[shown.where[2]], shown.expected[shown.where[2]]):
        owner = "TB-SPEC-1"  # forced against free: which state the row was judged on, as the blame rule says
    finding = attribution.finding_key(owner, features)
    document = {**document, "fingerprint": f"{owner}/{shown.mode}", "finding": finding}
    if owner != shown.requirement:  # the reproduction blames the owner, as the record does, when replayed
        document["scenarios"] = [{**scenario, "requirements": [owner]} for scenario in document["scenarios"]]
    if owner not in requirements:  # a requirement of another check: this check's own one cannot be certified
        tally.blocked(shown.requirement, finding, f"its minimal case fails {owner} ({shown.mode})")
    tally.violated(owner, shown.mode, evidence, reproduction=document, finding=finding)


def scenario_check(family: BudgetFamily, requirements: tuple[str, ...], scope: str | None = None):
    """A check body: the family's examples, then ``family.scenarios`` scenarios drawn from ``ctx.seed``, each
    compared with the oracle row by row; the first failure of each requirement is minimised into a reproduction."""

    def run(engine, ctx: Context) -> Outcome:
        tally = Tally(requirements)
        examples = [
            (f"example {n}", replace(e, scope=scope or ctx.profile.scope)) for n, e in enumerate(family.examples)
        ]
        drawn = cases.draw(scenarios(family, scope or ctx.profile.scope), ctx.seed, family.scenarios)
        numbered = ((f"scenario {n}", scenario) for n, scenario in enumerate(drawn))
        # a family without drafts runs each scenario with speculative decoding configured and without it: an engine
        # may keep two paths (vLLM's legacy budget holder does), and each must force the same rows
        configs = (family.max_spec,) if family.drafts else (0, family.max_spec)
        diverged = count = 0
        for (label, scenario), max_spec in itertools.product(itertools.chain(examples, numbered), configs):
            count += 1
            if max_spec == 0 and len(configs) > 1:
                label += " without speculative decoding"
            vector = scenario.vector(label.replace(" ", "-"), list(requirements))
            vector["max_spec_len"] = max_spec
            divergence = replay_scenario(engine, vector, requirements, tally)
            if divergence is None:
                continue
            diverged += 1
            if divergence.requirement in tally.blocking:  # its first failure was another requirement's finding
                continue
            if divergence.requirement in tally.failures:
                tally.violated(divergence.requirement, divergence.mode, "")
                continue
            minimal = minimal_scenario(engine, scenario, divergence.fingerprint, requirements, max_spec)
            reduced = minimal.vector(
                f"minimal-{label.replace(' ', '-')}", list(requirements), f"minimised from {label}"
            )
            reduced["max_spec_len"] = max_spec
            shown = replay_scenario(engine, reduced, requirements) or divergence
            if shown.fingerprint != divergence.fingerprint:  # the engine is not deterministic: keep the original
                reduced, shown, minimal = vector, divergence, scenario
            _record_attributed(
                engine,
                tally,
                requirements,
                shown,
                reduced,
                f"{label} (size {scenario.size}, minimised to {minimal.size}): {describe(reduced, shown)}",
                reproduction_document(reduced, shown, vector, scenario.size, minimal.size),
            )
        first = f" ({len(examples)} examples first)" if examples else ""
        both = ", each with and without speculative decoding configured" if len(configs) > 1 else ""
        return tally.outcome(
            f"{count} runs of scenarios{first}{both} × up to {family.steps} steps; {diverged} diverged from the oracle"
        )

    run.family = family  # the cases it draws, for tests of the strategies
    return run


def generation_invariants(engine, ctx: Context) -> Outcome:
    """TB-FORCE-1 end to end (its consequence in thinking-budget.md §4), judged by naive segmentation, not by
    the oracle: over whole generations (no drafts) where the model never starts E, every section holds exactly
    its budget and closes with the whole E. A multi-token E restarted instead of continued (TB-FORCE-2, which
    ``budget/multitoken`` separates) shows here as a section that never closes."""
    rng = np.random.default_rng(ctx.seed)
    tally = Tally(("TB-FORCE-1",))
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
            tally.violated("TB-FORCE-1", "section-never-closed", f"{case}: the section never closed")
        elif sections[0][0] != budget:
            tally.violated("TB-FORCE-1", "thinking-tokens-differ", f"{case}: {sections[0][0]} thinking tokens")
        else:
            tally.exercised("TB-FORCE-1")
    return tally.outcome("40 generations judged by naive segmentation", plots=plots)


BORDER_MARKERS = ((7, 7, 8, 7), (7, 8, 7, 8, 9), (7, 7, 7), (7, 8, 7, 7, 8, 7, 8), (7, 7, 7, 8, 7, 7, 7, 7, 9))


def _border_streams(marker: tuple[int, ...], rng) -> list[list[int]]:
    """Streams that break off a partial match and resume it: for every proper prefix of ``marker``, the prefix
    then all of the marker, and the prefix then the marker's rest after the prefix's longest border (so the
    match completes only through that border); and four streams of 12 tokens drawn from the marker's own ids
    and 0."""
    failure = tb.MarkerAutomaton(marker).failure
    streams = [list(marker[:k] + marker) for k in range(1, len(marker))]
    streams += [list(marker[:k] + marker[failure[k - 1] :]) for k in range(1, len(marker)) if failure[k - 1]]
    alphabet = sorted(set(marker) | {0})
    return streams + [[int(t) for t in rng.choice(alphabet, 12)] for _ in range(4)]


def marker_borders_check(engine, ctx: Context) -> Outcome:
    """TB-MARK-2 and TB-MARK-3 on markers whose prefixes are also suffixes (several non-zero entries in their
    KMP failure tables), in streams that break off partial matches and resume them, judged against the oracle.
    As E (S = [1], opened by the prompt): for every prefix of a stream, a fresh request whose budget is the
    prefix's length takes the prefix as free tokens; its next forced row shows how much of E it has matched
    (E[matched] while the section is open, -1 once E completed). As S (E = [2], budget 0): the stream is
    committed token by token, the forced token once forcing starts; each step's forced row shows whether S
    completed."""
    tally = Tally(("TB-MARK-2", "TB-MARK-3"))
    rng = np.random.default_rng(ctx.seed)
    scope, compared = ctx.profile.scope, 0
    for marker in BORDER_MARKERS:
        for stream in _border_streams(marker, rng):
            problems = []
            for length in range(1, len(stream) + 1):  # the marker as E
                update = BatchUpdate(1, added=(AddedRequest(0, length, (1,)),))
                state, model = engine.budget_state([1], list(marker), 1, scope), tb.BudgetBatch([1], marker, 1, scope)
                state.sync_batch(update)
                model.apply(update)
                for token in stream[:length]:
                    state.forced_tokens(None, None)
                    state.update_state([[token]])
                    model.commit([[token]])
                got, expected = int(state.forced_tokens(None, None)[0]), model.forced_rows()[0]
                if got != expected:
                    problems.append(f"E={list(marker)} after {stream[:length]}: forced {got}, expected {expected}")
            update = BatchUpdate(1, added=(AddedRequest(0, 0, (5,)),))  # the marker as S
            state, model = engine.budget_state(list(marker), [2], 1, scope), tb.BudgetBatch(marker, [2], 1, scope)
            state.sync_batch(update)
            model.apply(update)
            for position, proposal in enumerate(stream):
                got, expected = int(state.forced_tokens(None, None)[0]), model.forced_rows()[0]
                if got != expected:
                    problems.append(f"S={list(marker)} after {stream[:position]}: forced {got}, expected {expected}")
                    break
                token = proposal if expected == -1 else expected
                state.update_state([[token]])
                model.commit([[token]])
            compared += 1
            rid = "TB-MARK-3" if tb.MarkerAutomaton(marker).failure[-1] else "TB-MARK-2"
            if problems:
                tally.violated(rid, "partial-match-lost", problems[0])
            else:
                tally.exercised(rid)
    return tally.outcome(f"{compared} streams over {len(BORDER_MARKERS)} markers with borders, as E and as S")


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
    _extreme_values(engine, ctx, tally)
    return tally.outcome(
        "invalid budgets and markers rejected naming the field; -1 and None untracked; markers holding the largest "
        "token id and a budget beyond 32 bits work"
    )


def _extreme_values(engine, ctx: Context, tally: Tally) -> None:
    """TB-API-3 and TB-API-1 at the top of their ranges: markers holding the largest token id in contract,
    ``2^31 − 1`` (S) and ``2^31 − 2`` (E), with two requests whose prompts open a section: budget 0 forces E
    at once, and budget ``2^40`` (any integer ``B ≥ 0`` is a budget) forces nothing."""
    top = 2**31 - 1
    prompt = (5, top)
    try:
        state = engine.budget_state([top], [top - 1], 3, ctx.profile.scope)
        added = (AddedRequest(0, 0, prompt), AddedRequest(1, 2**40, prompt), AddedRequest(2, 0, (5,)))
        state.sync_batch(BatchUpdate(3, added=added))
        state.forced_tokens(None, None)
        state.update_state([[top - 1], [6], [top]])  # request 2 opens its section with a committed S
        forced = [int(x) for x in state.forced_tokens(None, None)]
    except ValueError as exc:
        tally.violated("TB-API-3", "extreme-value-rejected", f"S=[{top}], E=[{top - 1}], budgets 0 and 2**40: {exc}")
        return
    if forced[0] == -1 and forced[2] == top - 1:  # request 0 committed E; request 2 committed S
        tally.exercised("TB-API-3")
    else:
        tally.violated(
            "TB-API-3",
            "large-marker-id-not-matched",
            f"budget 0, E=[{top - 1}] committed after S=[{top}] in the prompt, and S committed: forced {forced}",
        )
    if forced[1] == -1:
        tally.exercised("TB-API-1")
    else:
        tally.violated("TB-API-1", "large-budget-forced", f"budget 2**40, nothing thought yet: forced {forced[1]}")


def batch_errors_check(engine, ctx: Context) -> Outcome:
    """TB-BATCH-4 on slots that a removal or a UNIDIRECTIONAL move emptied: a later removal of, move from or
    SWAP with such a slot, in the same update or the next, raises a ValueError that names the slot; on an engine that
    takes tensors, so do logits whose row count differs from the batch's rows. TB-BATCH-5
    on a state stepped before its first update: its batch holds no slot, so a step lays out no row."""
    tally = Tally(("TB-BATCH-4", "TB-BATCH-5"))
    fresh = engine.budget_state([1], [2], 4, ctx.profile.scope)
    forced = list(fresh.forced_tokens(None, None))
    if forced:
        tally.violated("TB-BATCH-5", "rows-before-first-update", f"a step before any update forced rows {forced}")
    else:
        tally.exercised("TB-BATCH-5")
    full = BatchUpdate(3, added=tuple(AddedRequest(slot, slot + 1, (1,)) for slot in range(3)))
    _empty_batch(engine, ctx, full, tally)
    outside = ctx.profile.outside_contract({"invalid-batch-update"})
    if outside:  # every TB-BATCH-4 case is an update (or logits) the engine's own scheduler never produces
        tally.not_applicable(outside, "TB-BATCH-4")
        return tally.outcome("no row before any update, nor once every request is removed")
    emptied = BatchUpdate(2, removed=(2,))
    cases = {
        "move from a slot removed in the same update": [
            BatchUpdate(3, removed=(2,), moved=((2, 3, Move.UNIDIRECTIONAL),))
        ],
        "SWAP with a slot removed in the same update": [BatchUpdate(3, removed=(2,), moved=((0, 2, Move.SWAP),))],
        "removal of a slot removed the step before": [emptied, BatchUpdate(2, removed=(2,))],
        "move from a slot removed the step before": [emptied, BatchUpdate(3, moved=((2, 0, Move.SWAP),))],
        "move from a slot moved away in the same update": [
            BatchUpdate(4, moved=((2, 3, Move.UNIDIRECTIONAL), (2, 0, Move.SWAP)))
        ],
        "removal of a slot moved away the step before": [
            BatchUpdate(4, moved=((2, 3, Move.UNIDIRECTIONAL),)),
            BatchUpdate(4, removed=(2,)),
        ],
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
    _slots_out_of_range(engine, ctx, full, tally)
    summary = (
        "updates naming a slot emptied by a removal or a move, or a slot outside [0, max_num_reqs), are rejected "
        "naming the slot"
    )
    if getattr(engine, "tensor_device", None) is not None and "budget-logits" in ctx.profile.capabilities:
        _logits_row_count(engine, ctx, tally)  # only an engine that takes tensors is handed logits by its caller
        summary += "; so are logits with a row more than the batch lays out"
    return tally.outcome(summary + "; no row before any update, nor once every request is removed")


def _slots_out_of_range(engine, ctx: Context, full: BatchUpdate, tally: Tally) -> None:
    """TB-BATCH-4 on slot indices just outside ``[0, 4)`` (an add, a removal, a move's source and destination),
    each given to a state holding ``full``: a ValueError naming the index."""
    cases = {
        "an add at slot -1": (BatchUpdate(4, added=(AddedRequest(-1, 1, (1,)),)), "-1"),
        "removal of slot 4": (BatchUpdate(2, removed=(4,)), "4"),
        "a SWAP from slot 4": (BatchUpdate(3, moved=((4, 0, Move.SWAP),)), "4"),
        "a UNIDIRECTIONAL move to slot 4": (BatchUpdate(3, moved=((0, 4, Move.UNIDIRECTIONAL),)), "4"),
    }
    for case, (update, index) in cases.items():
        state = engine.budget_state([1], [2], 4, ctx.profile.scope)
        state.sync_batch(full)
        try:
            state.sync_batch(update)
        except ValueError as exc:
            if index in str(exc):
                tally.exercised("TB-BATCH-4")
            else:
                tally.violated("TB-BATCH-4", "error-does-not-name-slot", f"{case}: rejected as {exc}")
            continue
        tally.violated("TB-BATCH-4", "slot-out-of-range-accepted", f"{case} (max_num_reqs 4) was accepted")


def _empty_batch(engine, ctx: Context, full: BatchUpdate, tally: Tally) -> None:
    """TB-BATCH-5 on a batch whose requests were all removed (``batch_size`` 0): a step lays out no row, with
    and without (empty) drafts."""
    state = engine.budget_state([1], [2], 4, ctx.profile.scope)
    state.sync_batch(full)
    try:
        state.sync_batch(BatchUpdate(0, removed=(0, 1, 2)))
        rows = [list(state.forced_tokens(None, None)), list(state.forced_tokens([], []))]
    except ValueError as exc:
        tally.violated("TB-BATCH-5", "empty-batch-rejected", f"removing every request, then a step: {exc}")
        return
    if rows == [[], []]:
        tally.exercised("TB-BATCH-5")
    else:
        tally.violated("TB-BATCH-5", "rows-for-empty-batch", f"every request removed: a step laid out rows {rows}")


def _logits_row_count(engine, ctx: Context, tally: Tally) -> None:
    """TB-BATCH-4 on ``apply_to_logits`` given logits float32 ``[3, V]`` for a batch that lays out 2 rows (TB-BATCH-5):
    a ValueError naming ``logits``."""
    state = engine.budget_state([1], [2], 4, ctx.profile.scope)
    state.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 0, (1,)), AddedRequest(1, None, (1,)))))
    logits = np.zeros((3, 4), dtype=np.float32)
    try:
        state.apply_to_logits(logits, None, None)
    except ValueError as exc:
        if "logits" in str(exc):
            tally.exercised("TB-BATCH-4")
        else:
            tally.violated("TB-BATCH-4", "error-does-not-name-field", f"logits [3, 4] for 2 rows: rejected as {exc}")
        return
    tally.violated("TB-BATCH-4", "logits-row-count-accepted", "logits [3, 4] for a batch of 2 rows were accepted")


LARGE_FORCED_LOGIT = 1e8  # the least a large-constant forced cell may hold (vLLM writes 1e9)


# The drafted case of ``budget/forced-logits`` as a scenario of the golden-vector format: request 0 opens a section
# in its prompt with budget 2 and E = [7, 8], spends one token in an ordinary step, then drafts [3, 7]; the budget
# forces E[0] after 3 and E[1] after 7 (row 0 free). The check's untracked request 1 is left out: its rows are
# judged under TB-UNTRACKED-1 alone.
_DRAFTED_CASE = {
    "name": "end-marker-forced-across-drafts",
    "description": "the drafted case of budget/forced-logits: budget 2 in a prompt-opened section, one ordinary step "
    "(4), then drafts [3, 7]: the budget forces E[0] = 7 after 3 and E[1] = 8 after 7",
    "start_token_ids": [1],
    "end_token_ids": [7, 8],
    "scope": "section",
    "max_num_reqs": 1,
    "steps": [
        {
            "update": {
                "batch_size": 1,
                "removed": [],
                "added": [{"index": 0, "budget": 2, "prompt_token_ids": [1]}],
                "moved": [],
            },
            "num_draft_tokens": [0],
            "draft_token_ids": [],
            "expected_forced": [-1],
            "sampled_token_ids": [[4]],
        },
        {
            "update": None,
            "num_draft_tokens": [2],
            "draft_token_ids": [3, 7],
            "expected_forced": [-1, 7, 8],
            "sampled_token_ids": [[3, 7, 8]],
        },
    ],
    "max_spec_len": 2,
}
_DRAFTED_FEATURES = ("drafts", "multi-token-markers", "prompt-opened")


def forced_logits_check(engine, ctx: Context) -> Outcome:
    """TB-FORCE-5 (TB-FORCE-6 under the declared large-constant variant) and TB-UNTRACKED-1 on logits,
    after one ordinary step (drafts only once output exists).

    Both forcing requirements are about how a forced position is forced. A forced row after drafts that the engine
    leaves as it was is not forced at all: that failure is TB-SPEC-1's (the row's state includes the drafts before
    it), and the check's own requirement reads BLOCKED by it."""
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
    # request 0: after 4 and 3 the budget forces E[0], after 7 E[1]; rows 3 and 4 belong to the untracked request
    judged = [(logits, out, [-1, 7, 8, -1, -1], 3, _DRAFTED_FEATURES)]
    plain = engine.budget_state([1], [0], 2, ctx.profile.scope)  # E = [0]: the forced token is the id 0
    plain.sync_batch(BatchUpdate(2, added=(AddedRequest(0, 0, (1,)), AddedRequest(1, None, (1,)))))
    logits = rng.normal(size=(2, 12)).astype(np.float32)
    judged.append((logits, np.asarray(plain.apply_to_logits(logits.copy())), [0, -1], 1, ("prompt-opened",)))
    for logits, out, expected, untracked_from, features in judged:
        _judge_forced_logits(logits, out, expected, untracked_from, forced_rid, variant, tally, features)
    if variant:
        return tally.outcome(f"forced cells hold at least {LARGE_FORCED_LOGIT:g} (declared variant), rest untouched")
    return tally.outcome("forced rows one-hot (0 / -inf), free rows untouched, with drafts and without")


def _judge_forced_logits(
    logits, out, expected, untracked_from: int, forced_rid: str, variant: bool, tally, features=()
) -> None:
    """Each row of ``out`` float32 ``[rows, V]`` against ``logits`` before the call: one-hot (or, under the
    large-constant variant, large) at ``expected[row]`` where that is a token, unchanged where it is -1; rows from
    ``untracked_from`` on belong to untracked requests (TB-UNTRACKED-1). ``features`` are the case's
    (``attribution.CASE_FEATURES``): with drafts, a forced row after them left unchanged is TB-SPEC-1's failure."""
    for row, token in enumerate(expected):
        if token == -1:
            rid = "TB-UNTRACKED-1" if row >= untracked_from else forced_rid
            if np.array_equal(out[row], logits[row], equal_nan=True):
                tally.exercised(rid)
            else:
                tally.violated(rid, "free-row-changed", f"free row {row} was changed: {out[row].tolist()}")
        elif "drafts" in features and row > 0 and np.array_equal(out[row], logits[row], equal_nan=True):
            _record_unforced_draft_row(tally, forced_rid, row, token, features)
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


def _record_unforced_draft_row(tally: Tally, forced_rid: str, row: int, token: int, features) -> None:
    """A row after drafts that the budget forces to ``token``, left unchanged: the row was not forced at all, which
    is TB-SPEC-1's failure (row ``j`` judged on the state after the drafts before it), not the forcing form's; its
    reproduction is the drafted case as a scenario, and ``forced_rid`` reads BLOCKED by it."""
    finding = attribution.finding_key("TB-SPEC-1", features)
    reproduction = {
        "format": FORMAT_VERSION,
        "kind": "thinking-budget",
        "fingerprint": "TB-SPEC-1/left-a-forced-row-free",
        "scenarios": [{**_DRAFTED_CASE, "requirements": ["TB-SPEC-1"]}],
        "errors": [],
        "finding": finding,
    }
    tally.blocked(forced_rid, finding, f"forced row {row} after drafts was not forced at all (TB-SPEC-1)")
    tally.violated(
        "TB-SPEC-1",
        "left-a-forced-row-free",
        f"forced row {row} after drafts [3, 7] (the budget forces {token}) was left as it was",
        reproduction=reproduction,
        finding=finding,
    )
