"""What a response reports beside its ids (specs/openai-api.md §2): ``usage`` equals the returned ids
(class ``api.usage``), and a streamed response equals the whole one (class ``api.streaming``).
"""

from __future__ import annotations

import functools
from dataclasses import replace

from ...core import Context, Outcome, Tally
from ..catalogue import check
from . import attribution, twins
from .needs import HTTP, OUTPUT_IDS, unmet_precondition
from .replay import thinking_span


@check(
    "api/usage",
    cls="api.usage",
    covers=("API-USAGE-1", "API-USAGE-2"),
    needs=OUTPUT_IDS,
    description="usage equals the returned ids; reasoning_tokens equals the reasoning tokens",
)
def usage(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """API-USAGE-1 on the generated ids; API-USAGE-2 where the server reports ``reasoning_tokens`` and the
    prompt's and the markers' ids are known (``marker-ids``) to count the reasoning tokens."""
    if blocked := unmet_precondition(engine, requirements, markers=False):
        return blocked
    tally = Tally(requirements, conditional=("API-USAGE-2",))  # judged only where the server reports it
    unjudged = []  # reasoning_tokens reported, but no marker ids to count them with
    for budget in (None, 4):
        response = engine.complete(engine.api.model, budget, max_tokens=20, temperature=1.0, seed=ctx.seed)
        ids = response["choices"][0]["token_ids"]
        reported_usage = response["usage"]
        if reported_usage["completion_tokens"] != len(ids):
            tally.violated(
                "API-USAGE-1",
                "completion-tokens-differ",
                f"budget {budget}: completion_tokens {reported_usage['completion_tokens']} but {len(ids)} ids returned",
            )
        else:
            tally.exercised("API-USAGE-1")
        reported = (reported_usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        if reported is None:
            continue
        if "marker-ids" not in engine.profile.capabilities:
            unjudged.append(f"budget {budget}: reasoning_tokens {reported}")
            continue
        _, generated, _ = thinking_span(engine, response["prompt_token_ids"], ids)
        if reported != generated:
            tally.violated(
                "API-USAGE-2",
                "reasoning-tokens-differ",
                f"budget {budget}: reasoning_tokens {reported}, but {generated} reasoning tokens were generated",
            )
        else:
            tally.exercised("API-USAGE-2")
    not_judged = f"; not judged for want of marker ids: {', '.join(unjudged)}" if unjudged else ""
    return tally.outcome(f"usage against the returned ids (reasoning tokens where reported){not_judged}")


def _differences(engine, model: str, budget, temperature: float, seed: int) -> tuple[dict, dict, list[tuple]]:
    """One request sent whole and streamed: (whole response, streamed response, ``(what, whole's, streamed's)`` for
    each of ids (where the engine streams them), reasoning, content and finish reason that differ)."""
    whole = engine.complete(model, budget, max_tokens=16, temperature=temperature, seed=seed)
    streamed = engine.stream(model, budget, max_tokens=16, temperature=temperature, seed=seed)
    choice = whole["choices"][0]
    pairs = [
        ("reasoning", choice["message"].get(engine.api.reasoning_field) or "", streamed["reasoning"]),
        ("content", choice["message"]["content"] or "", streamed["content"]),
        ("finish reason", choice["finish_reason"], streamed["finish_reason"]),
    ]
    if streamed["token_ids"] is not None:
        pairs.insert(0, ("token ids", choice.get("token_ids", []), streamed["token_ids"]))
    return whole, streamed, [(what, a, b) for what, a, b in pairs if a != b]


def _greedy_again(engine, model: str, budget: int | None, seed: int) -> str:
    """The greedy request's streamed and whole answers compared once more: "" where they agree, else what differs."""
    return _described(model, budget, _differences(engine, model, budget, 0.0, seed)[2])


def _described(model: str, budget, differing: list[tuple]) -> str:
    """The first difference of ``differing`` (``_differences``), or "" where there is none."""
    if not differing:
        return ""
    what, a, b = differing[0]
    return f"{model} budget {budget}: {what} {a!r} vs streamed {b!r}"


def _seed_not_honoured(engine, ctx: Context, tally: Tally, request, whole: dict, streamed: dict, mark: int) -> bool:
    """Whether a sampled request whose whole and streamed responses differ is shown not reproducible without
    streaming (``twins.alone``, recorded under API-SEED-1): its minimal case is sent alone and not streamed, and
    compared with the whole response. Where the ids part before either carries a token the budget forces, the minimal
    case has no budget and is compared up to there (``attribution.without_budget_up_to``). An engine that returns no
    ids cannot be shown not reproducible (its repeats are compared by id, as API-SEED-1's own check needs ids): the
    difference stays the check's own."""
    ids, streamed_ids = whole["choices"][0].get("token_ids"), streamed["token_ids"]
    if ids is None:
        return False
    position = None if streamed_ids is None else attribution.first_difference(ids, streamed_ids)
    minimal, upto = request, None
    judged = request.budget is None or "marker-ids" in engine.profile.capabilities
    if position is not None and judged:
        outputs = [ids, streamed_ids]
        if attribution.without_budget_up_to(engine, request, whole["prompt_token_ids"], outputs, position):
            minimal, upto = replace(request, budget=None), position
    found = twins.alone(engine, ctx, tally, STREAMING, "API-STREAM-1", minimal, upto, (whole,), mark)
    return found.attributed


STREAMING = "api/streaming-parity"


@check(
    STREAMING,
    cls="api.streaming",
    covers=("API-STREAM-1",),
    needs=HTTP,
    description="streaming and non-streaming agree",
)
def streaming(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """A sampled request whose whole and streamed responses differ is tried again alone (``twins.alone``); a greedy
    one is compared again (``twins.recurrences``), and a difference no retry shows is a one-off, named in the
    summary and not failed."""
    tally = Tally(requirements)
    budgets = ((None, 0.0), (3, 0.0), (4, 1.0)) if engine.api.budget_field else ((None, 0.0), (None, 1.0))
    one_offs = []
    for model in filter(None, (engine.api.model, engine.api.spec_model)):
        for budget, temperature in budgets:
            mark = twins.log_mark(engine)
            whole, streamed, differing = _differences(engine, model, budget, temperature, ctx.seed)
            seen_again = ""
            if differing and temperature:
                request = twins.SeededRequest(model, budget, 16, temperature, ctx.seed)
                if _seed_not_honoured(engine, ctx, tally, request, whole, streamed, mark):
                    continue
            elif differing:
                again = twins.recurrences(functools.partial(_greedy_again, engine, model, budget, ctx.seed))
                if not again:
                    one_offs.append(_described(model, budget, differing))
                    tally.exercised("API-STREAM-1")  # the retries are judged cases, and agreed
                    continue
                seen_again = f" (seen again in {len(again)} of {twins.RETRIES} retries)"
            if differing:
                what = differing[0][0]
                evidence = _described(model, budget, differing) + seen_again
                tally.violated("API-STREAM-1", f"{what.replace(' ', '-')}-differ", evidence)
            else:
                tally.exercised("API-STREAM-1")
    ids = "ids, " if engine.api.token_ids == "return_token_ids" else "(the engine streams no ids) "
    summary = f"streaming and non-streaming compared on {ids}reasoning, content and finish reason"
    if one_offs:
        summary += f"; one-offs that {twins.RETRIES} retries did not show again (no finding): {'; '.join(one_offs)}"
    return tally.outcome(summary)
