"""Thinking-budget checks over single-request token streams: whole generations judged by naive segmentation
(``budget/whole-generations``) and markers with borders met in streams that break off and resume partial matches,
judged against the oracle (``budget/marker-borders``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specconform.specs.interface import AddedRequest, BatchUpdate

from ...cases.budget import BudgetScenario
from ...core import Context, Outcome, Tally
from ...oracle import budget as tb
from ...oracle.naive import thinking_tokens
from ...vectors import SlotStep
from ..catalogue import check
from .minimal import judge_scenario
from .replay import replay_scenario


@check(
    "budget/whole-generations",
    cls="tb.core",
    covers=("TB-FORCE-1",),
    needs=("budget",),
    description="generations hold exactly the budget and close with the whole E, judged by naive segmentation",
)
def generation_invariants(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-FORCE-1 end to end (its consequence in thinking-budget.md §4), judged by naive segmentation, not by
    the oracle: over whole generations (no drafts) where the model never starts E, every section holds exactly
    its budget and closes with the whole E. A generation that fails is replayed as a scenario beside the oracle: where
    its forced rows leave the oracle's (a multi-token E restarted instead of continued, which shows here as a section
    that never closes), that failure is minimised and attributed (``minimal``) instead."""
    rng = np.random.default_rng(ctx.seed)
    tally = Tally(requirements)
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
        if (not sections or not sections[0][2] or sections[0][0] != budget) and judge_scenario(
            engine,
            ctx.profile,
            tally,
            requirements,
            _generation(start, end, budget, proposals, ctx),
            0,
            f"generation {n}",
        ):
            continue  # the generation left the oracle's forced rows: that failure, minimised and attributed
        if not sections or not sections[0][2]:
            tally.violated("TB-FORCE-1", "section-never-closed", f"{case}: the section never closed")
        elif sections[0][0] != budget:
            tally.violated("TB-FORCE-1", "thinking-tokens-differ", f"{case}: {sections[0][0]} thinking tokens")
        else:
            tally.exercised("TB-FORCE-1")
    return tally.outcome("40 generations judged by naive segmentation", plots=plots)


def _generation(start, end, budget: int, proposals: list[int], ctx: Context) -> BudgetScenario:
    """A generation as a scenario: one request (``budget``, prompt ``1, 2``), one step per proposal (a forced row
    overrides it), and a last step whose row is judged."""
    added = BatchUpdate(1, added=(AddedRequest(0, budget, (1, 2)),))
    steps = tuple((added if i == 0 else None, (SlotStep([], 0, t),)) for i, t in enumerate([*proposals, 0]))
    return BudgetScenario(tuple(start), tuple(end), ctx.profile.scope, 1, steps)


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


@check(
    "budget/marker-borders",
    cls="tb.multitoken",
    covers=("TB-MARK-2", "TB-MARK-3"),
    needs=("budget",),
    description=(
        "markers whose prefixes are also suffixes, met in streams that break off and resume partial matches, "
        "as E and as S, equal the oracle"
    ),
)
def marker_borders_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """TB-MARK-2 and TB-MARK-3 on markers whose prefixes are also suffixes (several non-zero entries in their
    KMP failure tables), in streams that break off partial matches and resume them, each a scenario judged against
    the oracle. As E (S = [1], opened by the prompt): for every prefix of a stream, a request whose budget is the
    prefix's length takes the prefix as free tokens; its next forced row shows how much of E it has matched
    (E[matched] while the section is open, -1 once E completed). As S (E = [2], budget 0): the stream is
    committed token by token, the forced token once forcing starts; each step's forced row shows whether S
    completed. A diverging case is minimised and attributed (``minimal``): one that needs no marker of several
    tokens is the forcing's failure, not the matching's."""
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    scope, compared = ctx.profile.scope, 0
    for marker in BORDER_MARKERS:
        rid = "TB-MARK-3" if tb.MarkerAutomaton(marker).failure[-1] else "TB-MARK-2"
        for stream in _border_streams(marker, rng):
            cases = [
                (f"E={list(marker)} after {stream[:length]}", _stream_case((1,), marker, length, (1,), stream[:length]))
                for length in range(1, len(stream) + 1)
            ]
            cases.append((f"S={list(marker)} in {stream}", _stream_case(marker, (2,), 0, (5,), stream)))
            compared += 1
            if not any(_diverged(engine, ctx, tally, rid, replace(case, scope=scope), label) for label, case in cases):
                tally.exercised(rid)
    return tally.outcome(f"{compared} streams over {len(BORDER_MARKERS)} markers with borders, as E and as S")


def _diverged(engine, ctx: Context, tally: Tally, rid: str, scenario: BudgetScenario, label: str) -> bool:
    """Whether the engine leaves the oracle on ``scenario``: the first such case of ``rid`` is minimised and
    attributed (``judge_scenario``), later ones count beside it."""
    if rid not in tally.failures and rid not in tally.blocking:
        return judge_scenario(engine, ctx.profile, tally, (rid,), scenario, 0, label) is not None
    vector = scenario.vector(label, [rid])
    vector["max_spec_len"] = 0
    if replay_scenario(engine, vector, (rid,)) is None:
        return False
    if rid in tally.failures:
        tally.violated(rid, "partial-match-lost", "")
    return True


def _stream_case(start, end, budget: int, prompt, stream) -> BudgetScenario:
    """One request (``budget``, ``prompt``) taking ``stream`` one free token per step, then a step whose row is
    judged."""
    added = BatchUpdate(1, added=(AddedRequest(0, budget, tuple(prompt)),))
    tokens = [*stream, 0]
    steps = tuple((added if i == 0 else None, (SlotStep([], 0, t),)) for i, t in enumerate(tokens))
    return BudgetScenario(tuple(start), tuple(end), "request", 1, steps)
