"""The oracle replayed over prompt + output ids as the engine returned them, so "the budget holds" is judged
exactly: every position the oracle forces must carry the forced token. Under a declared complete-character wait
(API-UTF-1) a forced position may be left free while the bytes so far end inside a UTF-8 character.
``thinking_span`` reads the thinking section open at the end of the prompt from the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...oracle import budget as tb
from ...oracle.naive import thinking_tokens
from .utf8 import UTF8_MAX_OVERRUN, readings


def oracle_state(engine, budget, prompt_ids) -> tb.RequestBudget:
    """The oracle's state after ``prompt_ids`` under the engine's markers, scope and forced sequence (TB-END-1:
    the profile's ``forced_end_text``, when it names one)."""
    forced_ids = engine.forced_ids
    forced = None if list(forced_ids) == list(engine.end_ids) else tb.validate_forced(forced_ids, engine.end_ids)
    return tb.RequestBudget.from_prompt(
        tb.MarkerAutomaton(engine.start_ids),
        tb.MarkerAutomaton(engine.end_ids),
        budget,
        prompt_ids,
        engine.api.scope,
        None if forced is None else tb.MarkerAutomaton(forced),
    )


@dataclass
class _Replay:
    """What replaying the oracle over one response found."""

    problem: str = ""  # the first forced position that does not carry its token ("" when all do)
    mode: str = "forced-position-not-honoured"
    inside_at_budget: bool = False  # a forced position came where the bytes so far ended inside a character
    forced_at: tuple[int, ...] = ()  # the output positions that carry the token the budget forces there
    late: int = 0  # forced positions a declared complete-character wait left free


def replay_oracle(engine, prompt_ids, output_ids, budget, inside=None) -> _Replay:
    """Replay the oracle over prompt + output: every forced position must carry its token. Given where the
    bytes so far end inside a UTF-8 character (``inside``: one flag per output position, a reading of
    ``specconform.harness.checks.api.utf8``), a profile declaring ``utf8_boundary: complete-character`` may leave a
    forced position free there, at most ``UTF8_MAX_OVERRUN`` times (API-UTF-1)."""
    found = _Replay()
    state = oracle_state(engine, budget, prompt_ids)
    declared = engine.api.utf8_boundary
    allowed = UTF8_MAX_OVERRUN if declared == "complete-character" and inside is not None else 0
    late, forced_at = 0, []
    for i, token in enumerate(output_ids):
        forced = state.forced_token()
        inside_here = inside is not None and inside[i]
        found.inside_at_budget |= forced != -1 and inside_here and late == 0
        if forced != -1 and token == forced:
            forced_at.append(i)
        elif forced != -1:
            if inside_here and late < allowed:
                late += 1  # complete-character: free while the character is incomplete, up to the bound
            else:
                if inside is not None and not inside_here and late:
                    found.mode = "overran-past-the-character"
                elif inside_here:
                    found.mode = "overran-the-bound" if allowed else "waited-for-the-character"
                where = (
                    "" if inside is None else f"; the bytes so far end {'inside' if inside_here else 'on'} a character"
                )
                found.problem = (
                    f"budget {budget}: output position {i} is {token}, the budget forces {forced} "
                    f"({late} position(s) late{where}; {declared} allows {allowed})"
                )
                break
        state.feed(token)
    found.forced_at, found.late = tuple(forced_at), late
    return found


def _waits(engine) -> bool:
    """Whether the profile declares the complete-character wait (API-UTF-1): budget requests then ask for
    ``logprobs`` and are replayed on the bytes they return."""
    return engine.api.utf8_boundary == "complete-character"


def with_logprobs(engine, fields: dict | None = None) -> dict | None:
    """``fields`` of a budget request, with ``logprobs`` where the profile declares the wait (``_waits``)."""
    return {**(fields or {}), "logprobs": True} if _waits(engine) else fields


def judged_choice(engine, prompt_ids, output_ids, budget, choice=None) -> _Replay:
    """``replay_oracle`` of one choice: under a declared complete-character wait on every reading of where its bytes
    end inside a character (``utf8.readings``), the first that holds, else the first reading's failure; the
    evidence says when the choice's logprobs give no reading."""
    if budget is None:
        return _Replay()
    found = readings(choice or {}, output_ids) if _waits(engine) and choice is not None else None
    insides: list[tuple[bool, ...] | None] = list(found) if found else [None]  # None: no reading
    replays = [replay_oracle(engine, prompt_ids, output_ids, budget, inside) for inside in insides]
    replay = next((r for r in replays if not r.problem), replays[0])
    if replay.problem and _waits(engine) and found is None:
        replay.problem += (
            " (utf8_boundary complete-character declared, but the logprobs place no characters: judged without it)"
        )
    return replay


def violation(engine, prompt_ids, output_ids, budget, choice=None) -> str:
    """The first forced position that does not carry its token (``judged_choice``), or ""; no budget, nothing forced."""
    return judged_choice(engine, prompt_ids, output_ids, budget, choice).problem


def thinking_span(engine, prompt_ids, output_ids) -> tuple[int, int, bool]:
    """(thinking tokens, of them generated, closed) of the section open at the end of the prompt."""
    found = thinking_tokens(prompt_ids + output_ids, engine.start_ids, engine.end_ids, len(prompt_ids))
    return found[0] if found else (0, 0, False)


def forced_positions(engine, prompt_ids, output_ids, budget) -> list[int]:
    """Output positions the budget forces when the engine's returned ids are replayed through the oracle."""
    state = oracle_state(engine, budget, prompt_ids)
    forced = []
    for i, token in enumerate(output_ids):
        if state.forced_token() != -1:
            forced.append(i)
        state.feed(token)
    return forced


def carried_forced(engine, prompt_ids, output_ids, budget) -> list[int]:
    """Output positions where the output carries the token the budget forces there, the oracle fed the output as
    returned (forced positions left free included): where the budget's forcing shows in a response."""
    state = oracle_state(engine, budget, prompt_ids)
    carried = []
    for i, token in enumerate(output_ids):
        if state.forced_token() != -1 and token == state.forced_token():
            carried.append(i)
        state.feed(token)
    return carried
