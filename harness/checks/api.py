"""API-level checks (specs/openai-api.md) over an engine's OpenAI-compatible server.

The oracle is replayed over prompt + output ids as the engine returned them, so "the budget holds"
is judged exactly: every position the oracle forces must carry the forced token. Each response is a
case for the requirements it exercises; checks go on after a failing response, since requests are
independent.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import math
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import spec, stats, vectors
from ..core import FAIL, PRECONDITION_FAILED, Context, Outcome, Tally, UnparsableResponse, uniform_outcome
from ..oracle import budget as tb
from ..oracle.naive import thinking_tokens
from . import api_twins as twins
from .catalogue import check
from .utf8 import UTF8_MAX_OVERRUN, readings

if TYPE_CHECKING:
    from ..adapters.http import SpecCounters

# What each check needs of the server, declared so that the runner and `specconform doctor` know it before the check
# runs (each check's own precondition says the same when it is called directly).
HTTP = ("http",)  # a server
IDS = (*HTTP, "token-ids", "marker-ids")  # token ids in responses, the markers' ids from /tokenize
SPEC = (*IDS, "spec-model")
PLAIN = (*HTTP, "plain-model")


def curl(exchange: dict) -> str:
    """A shell command that sends one logged chat request again (``ApiEngine.exchanges``)."""
    return (
        f"curl -s {shlex.quote(exchange['url'])} -H 'Content-Type: application/json' "
        f"-d {shlex.quote(json.dumps(exchange['body']))}"
    )


def reproduction_document(check: str, rid: str, fingerprint: str, evidence: str, seed: int, exchanges) -> dict:
    """A standalone API reproduction: the check and seed that ``specconform replay`` re-runs, the
    requirement and the property it states, and every chat request the check sent (as JSON and as a
    curl command) with the response the engine gave."""
    statement = spec.load_registry()[rid].summary
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "api",
        "fingerprint": fingerprint,
        "check": check,
        "requirement": rid,
        "expected": statement,
        "observed": evidence,
        "seed": seed,
        "requests": [{**exchange, "curl": curl(exchange)} for exchange in exchanges],
    }


def leaves_reproductions(name: str, run):
    """``run`` (an API check named ``name``), where every failed requirement carries a reproduction
    (``reproduction_document``) of the requests the check sent."""

    @functools.wraps(run)
    def judged(engine, ctx: Context) -> Outcome:
        log = getattr(engine, "exchanges", None)
        if log is not None:
            log.clear()
        outcome = run(engine, ctx)
        for rid, result in outcome.requirements.items():
            if result.status == FAIL and result.reproduction is None:
                result.reproduction = reproduction_document(
                    name, rid, result.fingerprint, result.evidence, ctx.seed, list(log or ())
                )
        return outcome

    return judged


def client_parses(run, requirements: tuple[str, ...]):
    """``run`` (a check over an ``ApiEngine``), where a response the ``openai`` client cannot parse
    fails every requirement the check judges, with the client's error as the evidence."""

    @functools.wraps(run)
    def judged(engine, ctx: Context) -> Outcome:
        try:
            return run(engine, ctx)
        except UnparsableResponse as error:
            tally = Tally(requirements)
            for rid in requirements:
                tally.violated(rid, "response-unparsable", str(error))
            return tally.outcome(f"a response the openai client cannot parse: {error}")

    return judged


def _oracle(engine, budget, prompt_ids) -> tb.RequestBudget:
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


def _replay(engine, prompt_ids, output_ids, budget, inside=None) -> _Replay:
    """Replay the oracle over prompt + output: every forced position must carry its token. Given where the
    bytes so far end inside a UTF-8 character (``inside``: one flag per output position, a reading of
    ``harness.checks.utf8``), a profile declaring ``utf8_boundary: complete-character`` may leave a forced
    position free there, at most ``UTF8_MAX_OVERRUN`` times (API-UTF-1)."""
    found = _Replay()
    state = _oracle(engine, budget, prompt_ids)
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


def _fields(engine, fields: dict | None = None) -> dict | None:
    """``fields`` of a budget request, with ``logprobs`` where the profile declares the wait (``_waits``)."""
    return {**(fields or {}), "logprobs": True} if _waits(engine) else fields


def _judged(engine, prompt_ids, output_ids, budget, choice=None) -> _Replay:
    """``_replay`` of one choice: under a declared complete-character wait on every reading of where its bytes
    end inside a character (``utf8.readings``), the first that holds, else the first reading's failure; the
    evidence says when the choice's logprobs give no reading."""
    if budget is None:
        return _Replay()
    found = readings(choice or {}, output_ids) if _waits(engine) and choice is not None else None
    replays = [_replay(engine, prompt_ids, output_ids, budget, inside) for inside in found or [None]]
    replay = next((r for r in replays if not r.problem), replays[0])
    if replay.problem and _waits(engine) and found is None:
        replay.problem += (
            " (utf8_boundary complete-character declared, but the logprobs place no characters: judged without it)"
        )
    return replay


def _violation(engine, prompt_ids, output_ids, budget, choice=None) -> str:
    """The first forced position that does not carry its token (``_judged``), or ""; no budget, nothing forced."""
    return _judged(engine, prompt_ids, output_ids, budget, choice).problem


def _thinking(engine, prompt_ids, output_ids) -> tuple[int, int, bool]:
    """(thinking tokens, of them generated, closed) of the section open at the end of the prompt."""
    found = thinking_tokens(prompt_ids + output_ids, engine.start_ids, engine.end_ids, len(prompt_ids))
    return found[0] if found else (0, 0, False)


def _judge_budgets(engine, ctx: Context, tally: Tally, check_name: str, model: str, budgets, holds: str) -> None:
    """Three seeded requests per budget: ``holds`` (the requirement the budget's holding stands for),
    API-BUDGET-1 (the field was accepted) and API-REASON-1 (the end marker in neither reasoning nor content) per
    response. A request that fails ``holds`` and is not reproducible is tried again (``api_twins``)."""
    for budget in budgets:
        for seed in range(3):
            request = twins.SeededRequest(model, budget, budget + 12, 1.0, ctx.seed + seed, _fields(engine))
            response = engine.complete(
                model,
                budget,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                fields=request.fields,
            )
            ids = response["choices"][0]["token_ids"]
            case = f"{model} budget {budget} seed {ctx.seed + seed}"
            if "API-BUDGET-1" in tally.requirements:
                tally.exercised("API-BUDGET-1")
            problem = _violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
            if problem:
                if not twins.alone(engine, ctx, tally, check_name, holds, request).attributed:
                    tally.violated(holds, "forced-position-not-honoured", f"{case}: {problem}")
            else:
                tally.exercised(holds)
            if "API-REASON-1" not in tally.requirements:
                continue
            _, _, closed = _thinking(engine, response["prompt_token_ids"], ids)
            if closed:
                _judge_end_marker_apart(engine, tally, response["choices"][0]["message"], ids, case)


def _judge_end_marker_apart(engine, tally: Tally, message: dict, ids: list[int], case: str) -> None:
    """API-REASON-1 on a response whose section closed: the end marker that closed it is in neither the
    reasoning nor the content. The content may spell the end marker only as often as the output generated
    it again after the close (each later end-marker id sequence)."""
    reasoning = message.get(engine.api.reasoning_field) or ""
    content = message.get("content") or ""
    width = len(engine.end_ids)
    generated = sum(ids[i : i + width] == list(engine.end_ids) for i in range(len(ids) - width + 1))
    if engine.api.end_text in reasoning:
        tally.violated("API-REASON-1", "end-marker-in-reasoning", f"{case}: the end marker leaked: {reasoning!r}")
    elif content.count(engine.api.end_text) > generated - 1:
        tally.violated(
            "API-REASON-1",
            "end-marker-in-content",
            f"{case}: the end marker that closed the section is in the content: {content!r} (output ids {ids})",
        )
    else:
        tally.exercised("API-REASON-1")


def _precondition(engine, requirements, *, ids=True, spec_model=False, plain_model=False) -> Outcome | None:
    capabilities = engine.profile.capabilities
    missing = []
    if ids and not {"token-ids", "marker-ids"} <= capabilities:
        problem = getattr(engine, "probe_problem", "")
        missing.append(
            "the engine returns no token ids or marker ids" + (f" (probing it: {problem})" if problem else "")
        )
    if spec_model and "spec-model" not in capabilities:
        missing.append("the profile names no speculative-decoding model")
    if plain_model and "plain-model" not in capabilities:
        missing.append("the profile names no model without reasoning markers")
    return uniform_outcome(PRECONDITION_FAILED, "; ".join(missing), requirements) if missing else None


@check(
    "api/budget-holds",
    cls="api.budget",
    covers=("API-BUDGET-1", "API-BUDGET-2", "API-REASON-1"),
    needs=IDS,
    description="every position the budget forces carries the forced token (oracle replay over returned ids)",
)
def holds(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    _judge_budgets(engine, ctx, tally, "api/budget-holds", engine.api.model, (2, 5, 9), "API-BUDGET-2")
    return tally.outcome(f"{engine.api.model}: budgets 2, 5, 9 × 3 seeds replayed against the oracle")


@check(
    "api/budget-zero-and-one",
    cls="api.budget",
    covers=("API-BUDGET-4",),
    needs=IDS,
    description="budgets 0 and 1",
)
def zero_and_one(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    _judge_budgets(engine, ctx, tally, "api/budget-zero-and-one", engine.api.model, (0, 1), "API-BUDGET-4")
    return tally.outcome(f"{engine.api.model}: budgets 0 and 1 × 3 seeds replayed against the oracle")


@check(
    "api/budget-binds",
    cls="api.budget",
    covers=("API-BUDGET-3",),
    needs=IDS,
    description="a positive control thinks longer",
)
def binds(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    budget = 3
    response = engine.complete(engine.api.model, None, max_tokens=24, temperature=1.0, seed=ctx.seed)
    thinking, _, _ = _thinking(engine, response["prompt_token_ids"], response["choices"][0]["token_ids"])
    if thinking <= budget:
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"the positive control thought only {thinking} tokens without a budget; a budget of {budget} cannot "
            "be shown to bind",
            requirements,
        )
    tally = Tally(requirements)
    bounded = engine.complete(
        engine.api.model, budget, max_tokens=24, temperature=1.0, seed=ctx.seed, fields=_fields(engine)
    )
    prompt, ids = bounded["prompt_token_ids"], bounded["choices"][0]["token_ids"]
    t2, _, closed = _thinking(engine, prompt, ids)
    phrase = len(engine.forced_ids) - len(engine.end_ids)  # TB-END-1: thinking tokens too
    late = _judged(engine, prompt, ids, budget, bounded["choices"][0]).late  # a declared wait's (API-UTF-1)
    if t2 > budget + phrase + late or not closed:
        tally.violated(
            "API-BUDGET-3", "budget-did-not-bind", f"with budget {budget}: {t2} thinking tokens, closed {closed}"
        )
    else:
        tally.exercised("API-BUDGET-3")
    return tally.outcome(f"without a budget {thinking} thinking tokens; with budget {budget}: {t2}")


@check(
    "api/budget-with-speculation",
    cls="api.budget",
    covers=("API-BUDGET-6",),
    needs=SPEC,
    description="the budget holds with speculative decoding on",
)
def spec_budget(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements, spec_model=True):
        return blocked
    tally = Tally(requirements)
    _judge_budgets(
        engine, ctx, tally, "api/budget-with-speculation", engine.api.spec_model, (0, 1, 4, 9), "API-BUDGET-6"
    )
    return tally.outcome(f"{engine.api.spec_model}: budgets 0, 1, 4, 9 × 3 seeds with speculative decoding")


@check(
    "api/multi-token-end-marker",
    cls="api.budget",
    covers=("API-BUDGET-7",),
    needs=IDS,
    description="a multi-token end marker arrives whole and contiguous",
)
def multitoken_end(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    if len(engine.end_ids) < 2:
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"{engine.api.end_text!r} is one token for {engine.api.model}: this check needs an end marker of "
            "several tokens (not a defect; a model whose end marker is several tokens judges it)",
            requirements,
        )
    tally = Tally(requirements)
    for seed in range(4):
        response = engine.complete(engine.api.model, 3, max_tokens=20, temperature=1.0, seed=ctx.seed + seed)
        prompt, ids = response["prompt_token_ids"], response["choices"][0]["token_ids"]
        _, generated, closed = _thinking(engine, prompt, ids)
        close_at = generated + len(engine.end_ids)  # in output coordinates
        if not closed:
            tally.violated("API-BUDGET-7", "section-never-closed", f"seed {ctx.seed + seed}: never closed: {ids}")
        elif ids[close_at - len(engine.end_ids) : close_at] != list(engine.end_ids):
            tally.violated("API-BUDGET-7", "end-marker-not-contiguous", f"seed {ctx.seed + seed}: {ids}")
        else:
            tally.exercised("API-BUDGET-7")
    return tally.outcome(f"{engine.api.end_text!r} = {engine.end_ids} over 4 seeded requests")


@check(
    "api/concurrent-mixed-budgets",
    cls="api.budget",
    covers=("API-BUDGET-5",),
    needs=IDS,
    description="16 concurrent requests, mixed budgets and seeds, each equal to its sequential run",
)
def concurrent_budgets(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    budgets = [None, 0, 1, 2, 3, 5, 8, None, 4, 0, 6, 2, None, 7, 1, 3]
    models = [engine.api.model] + ([engine.api.spec_model] if engine.api.spec_model else [])

    def one(i):
        model = models[i % len(models)]
        return (
            model,
            budgets[i],
            engine.complete(
                model, budgets[i], max_tokens=16, temperature=1.0, seed=ctx.seed + i, fields=_fields(engine)
            ),
        )

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(len(budgets))))
    tally = Tally(requirements)
    for i, (model, budget, response) in enumerate(results):
        ids = response["choices"][0]["token_ids"]
        problem = _violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
        request = twins.SeededRequest(model, budget, 16, 1.0, ctx.seed + i, _fields(engine))
        alone = twins.alone(engine, ctx, tally, "api/concurrent-mixed-budgets", "API-BUDGET-5", request)
        if alone.attributed:
            continue
        first = alone.responses[0]["choices"][0]
        alone_problem = _violation(engine, alone.responses[0]["prompt_token_ids"], first["token_ids"], budget, first)
        if alone_problem and not alone.differ:
            _owned_alone(engine, ctx, tally, i, request, alone_problem, alone.mark)
        elif problem:
            held = "; sent alone, it holds" if not alone.differ else ""
            tally.violated("API-BUDGET-5", "forced-position-not-honoured", f"request {i} ({model}): {problem}{held}")
        elif first["token_ids"] != ids:
            tally.violated(
                "API-BUDGET-5",
                "concurrent-differs-from-sequential",
                f"request {i} ({model}, budget {budget}): concurrent {ids} vs sequential {first['token_ids']}",
            )
        else:
            tally.exercised("API-BUDGET-5")
    return tally.outcome(f"{len(budgets)} concurrent requests with mixed budgets, each beside its sequential run")


def _owned_alone(engine, ctx: Context, tally: Tally, i: int, request, problem: str, mark: int) -> None:
    """A request of the concurrent batch that breaks its budget sent alone, reproducibly: the failure needs no
    concurrency and is the budget requirement's of its server (``budget_owner``), API-BUDGET-5 reading
    BLOCKED."""
    owner = twins.budget_owner(engine, request.model)
    evidence = f"request {i} ({request}) sent alone: {problem}"
    tally.violated(
        owner,
        "forced-position-not-honoured",
        evidence,
        reproduction_document(
            "api/concurrent-mixed-budgets",
            owner,
            f"{owner}/forced-position-not-honoured",
            evidence,
            ctx.seed,
            twins.requests_since(engine, mark),
        ),
        finding=owner,
    )
    tally.blocked("API-BUDGET-5", owner, f"request {i} breaks its budget sent alone too")


@check(
    "api/usage",
    cls="api.usage",
    covers=("API-USAGE-1", "API-USAGE-2"),
    needs=IDS,
    description="usage equals the returned ids; reasoning_tokens equals the reasoning tokens",
)
def usage(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements, conditional=("API-USAGE-2",))  # judged only where the server reports it
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
        _, generated, _ = _thinking(engine, response["prompt_token_ids"], ids)
        if reported != generated:
            tally.violated(
                "API-USAGE-2",
                "reasoning-tokens-differ",
                f"budget {budget}: reasoning_tokens {reported}, but {generated} reasoning tokens were generated",
            )
        else:
            tally.exercised("API-USAGE-2")
    return tally.outcome("usage against the returned ids (reasoning tokens where reported)")


@check(
    "api/streaming-parity",
    cls="api.streaming",
    covers=("API-STREAM-1",),
    needs=HTTP,
    description="streaming and non-streaming agree",
)
def streaming(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    tally = Tally(requirements)
    budgets = ((None, 0.0), (3, 0.0), (4, 1.0)) if engine.api.budget_field else ((None, 0.0), (None, 1.0))
    for model in filter(None, (engine.api.model, engine.api.spec_model)):
        for budget, temperature in budgets:
            whole = engine.complete(model, budget, max_tokens=16, temperature=temperature, seed=ctx.seed)
            streamed = engine.stream(model, budget, max_tokens=16, temperature=temperature, seed=ctx.seed)
            choice = whole["choices"][0]
            pairs = [
                ("reasoning", choice["message"].get(engine.api.reasoning_field) or "", streamed["reasoning"]),
                ("content", choice["message"]["content"] or "", streamed["content"]),
                ("finish reason", choice["finish_reason"], streamed["finish_reason"]),
            ]
            if streamed["token_ids"] is not None:
                pairs.insert(0, ("token ids", choice.get("token_ids", []), streamed["token_ids"]))
            differing = [(what, a, b) for what, a, b in pairs if a != b]
            if differing and temperature:
                request = twins.SeededRequest(model, budget, 16, temperature, ctx.seed)
                if twins.alone(engine, ctx, tally, "api/streaming-parity", "API-STREAM-1", request).attributed:
                    continue
            if differing:
                what, a, b = differing[0]
                tally.violated(
                    "API-STREAM-1",
                    f"{what.replace(' ', '-')}-differ",
                    f"{model} budget {budget}: {what} {a!r} vs streamed {b!r}",
                )
            else:
                tally.exercised("API-STREAM-1")
    ids = "ids, " if engine.api.token_ids == "return_token_ids" else "(the engine streams no ids) "
    return tally.outcome(f"streaming and non-streaming compared on {ids}reasoning, content and finish reason")


@check(
    "api/seeded-reproducible",
    cls="api.seeded",
    covers=("API-SEED-1",),
    needs=IDS,
    description="a seeded sampled request sent again alone returns the same ids, with speculation on and off",
)
def seeded_reproducible(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    models = tuple(filter(None, (engine.api.model, engine.api.spec_model)))
    for model in models:
        for seed in range(4):
            request = twins.SeededRequest(model, None, 16, 1.0, ctx.seed + seed)
            responses = twins.repeats(engine, request)
            if twins.differ(responses):
                seen = dict.fromkeys(tuple(ids) for ids in twins.ids(responses))
                tally.violated(
                    "API-SEED-1",
                    "seeded-request-not-reproducible",
                    f"{request}, sent {twins.REPEATS} times alone: " + " vs ".join(str(list(ids)) for ids in seen),
                )
            else:
                tally.exercised("API-SEED-1")
    return tally.outcome(f"{', '.join(models)}: 4 seeded requests at temperature 1, each sent {twins.REPEATS} times")


@check(
    "api/invalid-budget",
    cls="api.errors",
    covers=("API-ERROR-1",),
    needs=HTTP,
    description="invalid budgets get 400",
)
def invalid_budget(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    tally = Tally(requirements)
    field_name = engine.api.budget_field.split(".")[-1]
    for value in (-2, 1.5, "7", True):
        response = engine.complete(engine.api.model, value, max_tokens=2, temperature=0, raw=True)
        if response.status_code != 400:
            tally.violated("API-ERROR-1", "invalid-budget-not-400", f"budget {value!r}: HTTP {response.status_code}")
        elif field_name not in response.text:
            tally.violated(
                "API-ERROR-1",
                "400-does-not-name-field",
                f"budget {value!r}: the 400 does not name {field_name}: {response.text[:200]}",
            )
        else:
            tally.exercised("API-ERROR-1")
    return tally.outcome("budgets -2, 1.5, '7', true")


@check(
    "api/budget-without-markers",
    cls="api.errors",
    covers=("API-ERROR-2",),
    needs=PLAIN,
    description="a budget on a model without markers gets 400",
)
def budget_without_markers(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements, ids=False, plain_model=True):
        return blocked
    tally = Tally(requirements)
    response = engine.complete(engine.api.plain_model, 4, max_tokens=2, temperature=0, raw=True)
    if response.status_code != 400:
        tally.violated(
            "API-ERROR-2",
            "budget-without-markers-not-400",
            f"a budget on {engine.api.plain_model}: HTTP {response.status_code}",
        )
    else:
        tally.exercised("API-ERROR-2")
    return tally.outcome("a budget on a model without reasoning markers")


@check(
    "api/greedy-spec-identity",
    cls="api.spec-decode",
    covers=("API-SPEC-1",),
    needs=SPEC,
    description="greedy output identical with speculation on and off",
)
def greedy_spec_identity(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements, spec_model=True):
        return blocked
    tally = Tally(requirements)
    for budget in (None, 2, 6):
        a = engine.complete(engine.api.model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        b = engine.complete(engine.api.spec_model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        if a != b:
            tally.violated("API-SPEC-1", "greedy-output-differs", f"budget {budget}: {a} vs with speculation {b}")
        else:
            tally.exercised("API-SPEC-1")
    return tally.outcome("greedy output with speculation on and off, budgets none, 2, 6")


# API-SPEC-4: sampling parameters that leave one token at every position, at temperature 1
SINGLE_TOKEN_SETTINGS = ("top_k", "min_p", "logit_bias")


@check(
    "api/sampling-params-with-speculation",
    cls="api.spec-decode",
    covers=("API-SPEC-4",),
    needs=SPEC,
    description="top_k 1, min_p 1 and a +100 logit bias leave one token with speculation on, as without",
)
def sampling_params_with_speculation(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """API-SPEC-4 on settings whose distribution is a single token, so that the ids are determined
    whatever the draws: ``top_k = 1`` and ``min_p = 1`` leave the argmax (the greedy output), a ``+100``
    logit bias leaves the biased token (the greedy output's first). With
    speculation on, at temperature 1, the ids must be exactly those; an HTTP 400 naming the parameter is a
    refusal (a pass); a parameter the API profile declares unsupported with speculation is not sent."""
    import openai

    if blocked := _precondition(engine, requirements, spec_model=True):
        return blocked
    max_tokens = 12
    # the speculating model's own greedy output: a difference from the plain model's is API-SPEC-1's
    greedy = engine.complete(engine.api.spec_model, None, max_tokens, temperature=0)["choices"][0]["token_ids"]
    if not greedy:
        return uniform_outcome(PRECONDITION_FAILED, "the greedy output is empty: no token to bias", requirements)
    biased = greedy[0]
    settings = {
        "top_k": ({"top_k": 1}, greedy),
        "min_p": ({"min_p": 1.0}, greedy),
        "logit_bias": ({"logit_bias": {str(biased): 100}}, [biased] * len(greedy)),
    }
    tally = Tally(requirements)
    declared = [name for name in SINGLE_TOKEN_SETTINGS if name in engine.api.unsupported_with_speculation]
    for name, (sampling, expected) in settings.items():
        if name in declared:
            continue
        try:
            response = engine.complete(engine.api.spec_model, None, max_tokens, 1.0, seed=ctx.seed, fields=sampling)
        except openai.BadRequestError as refusal:  # HTTP 400
            if name in refusal.response.text:
                tally.exercised("API-SPEC-4")  # refused, naming the parameter
            else:
                tally.violated("API-SPEC-4", "400-does-not-name-parameter", f"{sampling}: the 400 does not name {name}")
            continue
        ids = response["choices"][0]["token_ids"]
        if ids != expected:
            tally.violated(
                "API-SPEC-4",
                f"{name.replace('_', '-')}-not-applied-with-speculation",
                f"{sampling} at temperature 1 with speculation: {ids}; the parameter leaves only {expected}",
            )
        else:
            tally.exercised("API-SPEC-4")
    unsent = f"; declared unsupported with speculation, not sent: {', '.join(declared)}" if declared else ""
    return tally.outcome(f"top_k 1, min_p 1 and a +100 logit bias at temperature 1 with speculation{unsent}")


@check(
    "api/sampled-spec-equivalence",
    cls="api.spec-decode",
    covers=("API-SPEC-2",),
    needs=SPEC,
    description="sampled first tokens equivalent with speculation on and off (TV upper bound)",
)
def sampled_spec_equivalence(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := _precondition(engine, requirements, spec_model=True):
        return blocked
    n, delta = 1000, 1e-3
    requests = [(m, seed) for m in (engine.api.model, engine.api.spec_model) for seed in range(n)]

    def first_token(item):
        model, seed = item
        response = engine.complete(model, None, max_tokens=1, temperature=0.1, seed=ctx.seed + seed)
        ids = response["choices"][0]["token_ids"]
        return model, ids[0] if ids else "eos"

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        tokens = list(pool.map(first_token, requests))
    plain = Counter(t for m, t in tokens if m == engine.api.model)
    with_spec = Counter(t for m, t in tokens if m == engine.api.spec_model)
    tv, lower, upper = stats.two_sample_tv_bounds(plain, with_spec, n, delta)
    message = (
        f"first-token TV {tv:.3f}, between {lower:.3f} and {upper:.3f} at confidence {1 - delta} "
        f"(N = {n} per side, tolerance {engine.api.spec_tolerance})"
    )
    tally = Tally(requirements)
    if lower > engine.api.spec_tolerance:
        tally.violated("API-SPEC-2", "shown-different", "speculation changes the distribution: " + message)
    elif upper < engine.api.spec_tolerance:
        tally.exercised("API-SPEC-2")
    else:  # neither shown equivalent nor shown different: too few samples to judge, never a FAIL
        message = "inconclusive: " + message
    return tally.outcome(message, statistic=tv, trials=n)


# greedy requests repeat themselves (n-gram drafts get accepted), sampled ones rarely do; max_tokens
# of 8, 17 and 30 end requests inside a run of accepted drafts
SPEC_COUNTER_WORKLOAD = tuple(
    (budget, temperature, max_tokens)
    for temperature in (0.0, 1.0)
    for budget in (None, 2, 5)
    for max_tokens in (8, 17, 30)
)


def _counter_problems(seen: SpecCounters, after_first: int) -> list[tuple[str, str]]:
    """(mode, evidence) of what API-SPEC-3 finds wrong in counter differences ``seen`` over requests
    that returned ``after_first`` tokens after each one's first (those a verified draft can commit)."""
    problems = []
    per_position = seen.accepted_per_position
    if seen.accepted > seen.draft_tokens:
        problems.append(("accepted-exceeds-drafted", "more tokens accepted than drafted"))
    if per_position:
        if any(later > earlier for earlier, later in zip(per_position, per_position[1:])):
            problems.append(("per-position-increases", "per-position acceptances increase with the position"))
        if sum(per_position) != seen.accepted:
            problems.append(
                ("per-position-sum", f"per-position acceptances sum to {sum(per_position)}, not to the accepted count")
            )
        if seen.draft_tokens > len(per_position) * seen.drafts:
            problems.append(("draft-tokens-exceed-positions", f"more draft tokens than {len(per_position)} × drafts"))
    if seen.drafts + seen.accepted > after_first:
        problems.append(
            (
                "counted-beyond-received",
                f"verified drafts commit {seen.drafts + seen.accepted} tokens (one per draft plus the accepted), "
                f"more than the {after_first} the client received after the first",
            )
        )
    return problems


def _describe(seen: SpecCounters) -> str:
    return (
        f"{seen.drafts} drafts, {seen.draft_tokens} draft tokens, {seen.accepted} accepted, "
        f"per position {list(seen.accepted_per_position)}"
    )


@check(
    "api/spec-counters-agree",
    cls="api.spec-decode",
    covers=("API-SPEC-3",),
    needs=SPEC,
    description="the engine's speculative-decoding counters agree with the tokens the client received",
)
def spec_counters_agree(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """API-SPEC-3 over a sequential workload on the speculative model: the counters' differences
    across each request, and across all, against the ids the client received (the server must have
    no other traffic)."""
    if blocked := _precondition(engine, requirements, spec_model=True):
        return blocked
    first = engine.spec_counters()
    if first is None:
        where = f"{engine.url_of(engine.api.spec_model).rsplit('/v1', 1)[0]}/metrics"
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"no speculative-decoding counters {engine.api.spec_counters}_* at {where}"
            if engine.api.spec_counters
            else "the API profile names no speculative-decoding counters",
            requirements,
        )
    tally = Tally(requirements)
    before, total_after_first = first, 0
    for i, (budget, temperature, max_tokens) in enumerate(SPEC_COUNTER_WORKLOAD):
        seed = ctx.seed + i
        response = engine.complete(engine.api.spec_model, budget, max_tokens, temperature, seed=seed)
        after_first = max(len(response["choices"][0]["token_ids"]) - 1, 0)
        after = engine.spec_counters()
        problems = _counter_problems(after - before, after_first)
        for mode, evidence in problems:
            tally.violated(
                "API-SPEC-3",
                mode,
                f"request {i} (budget {budget}, temperature {temperature}, max_tokens {max_tokens}, seed {seed}, "
                f"finish {response['choices'][0]['finish_reason']}): {evidence} "
                f"(counters moved by {_describe(after - before)})",
            )
        if not problems:
            tally.exercised("API-SPEC-3")
        before, total_after_first = after, total_after_first + after_first
    seen = before - first
    summary = (
        f"{len(SPEC_COUNTER_WORKLOAD)} requests, {total_after_first} tokens received after each request's first; "
        f"counters: {_describe(seen)}"
    )
    if seen.drafts == 0:
        return uniform_outcome(
            PRECONDITION_FAILED, f"no draft was verified, nothing to compare: {summary}", requirements
        )
    for mode, evidence in _counter_problems(seen, total_after_first):
        tally.violated("API-SPEC-3", mode, f"all requests: {evidence}")
    if not tally.failed:
        summary += f"; mean acceptance length {1 + seen.accepted / seen.drafts:.3f}, request by request in agreement"
    return tally.outcome(summary)


# The budget meeting other request features (specs/openai-api.md §5)


def _forced_positions(engine, prompt_ids, output_ids, budget) -> list[int]:
    """Output positions the budget forces when the engine's returned ids are replayed through the oracle."""
    state = _oracle(engine, budget, prompt_ids)
    forced = []
    for i, token in enumerate(output_ids):
        if state.forced_token() != -1:
            forced.append(i)
        state.feed(token)
    return forced


@check(
    "api/truncated-end-marker",
    cls="api.budget",
    covers=("API-TRUNC-1",),
    needs=IDS,
    description="max_tokens right before and inside the forced end marker: length, forced prefix, no content",
)
def truncated_end(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """``max_tokens`` ending right before and inside the forced end marker (API-TRUNC-1): each seeded
    generation is run once in full to find its first forced position, then cut at every point of the forced
    sequence (E, or the declared phrase then E)."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    budget, model, cuts = 2, engine.api.model, 0
    for seed in range(ctx.seed, ctx.seed + 3):
        forced_length = len(engine.forced_ids)
        full = engine.complete(
            model, budget, max_tokens=budget + forced_length + 4, temperature=1.0, seed=seed, fields=_fields(engine)
        )
        full_prompt, full_ids = full["prompt_token_ids"], full["choices"][0]["token_ids"]
        # where the forced sequence begins: after a declared wait, where the engine forced it
        forced = _judged(engine, full_prompt, full_ids, budget, full["choices"][0]).forced_at
        forced = forced or _forced_positions(engine, full_prompt, full_ids, budget)
        if not forced:
            continue  # the model closed the section itself: nothing is forced to cut into
        for inside in range(forced_length):
            max_tokens = forced[0] + inside
            if max_tokens < 1:
                continue
            cuts += 1
            response = engine.complete(
                model, budget, max_tokens=max_tokens, temperature=1.0, seed=seed, fields=_fields(engine)
            )
            choice, case = response["choices"][0], f"budget {budget} seed {seed} max_tokens {max_tokens}"
            ids, prompt = choice["token_ids"], response["prompt_token_ids"]
            usage = response.get("usage") or {}
            reasoning_tokens = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
            _, generated, closed = _thinking(engine, prompt, ids)
            problems = [
                ("finish-reason-not-length", f"finish_reason {choice['finish_reason']!r}")
                if choice["finish_reason"] != "length"
                else None,
                ("forced-position-not-honoured", _violation(engine, prompt, ids, budget, choice))
                if _violation(engine, prompt, ids, budget, choice)
                else None,
                ("content-before-the-section-closed", f"content {choice['message'].get('content')!r}")
                if not closed and (choice["message"].get("content") or "")
                else None,
                (
                    "completion-tokens-differ",
                    f"usage.completion_tokens {usage.get('completion_tokens')}, {len(ids)} ids",
                )
                if usage.get("completion_tokens") != len(ids)
                else None,
                (
                    "reasoning-tokens-leave-out-forced",
                    f"reasoning_tokens {reasoning_tokens}, {len(ids)} generated tokens in the open section",
                )
                if reasoning_tokens is not None and not closed and reasoning_tokens != len(ids)
                else None,
            ]
            found = [p for p in problems if p]
            for mode, evidence in found[:1]:
                tally.violated("API-TRUNC-1", mode, f"{case} ({inside} of E's tokens returned): {evidence}; ids {ids}")
            if not found:
                tally.exercised("API-TRUNC-1")
    return tally.outcome(f"{model}: {cuts} generations cut right before or inside the forced end marker")


def _bad_request(call) -> tuple[object | None, str | None]:
    """``(response, None)``, or ``(None, message)`` when the server answers HTTP 400."""
    import openai

    try:
        return call(), None
    except openai.BadRequestError as error:
        return None, error.response.text


@check(
    "api/n-choices",
    cls="api.budget",
    covers=("API-N-1",),
    needs=IDS,
    description="n = 2 with a budget",
)
def n_choices(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """``n = 2`` with a budget, seeded and not (API-N-1): two choices each held by the budget, or a 400 naming n."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    budget, model = 2, engine.api.model
    for seed in (ctx.seed, None):
        case = f"n 2 budget {budget} " + ("unseeded" if seed is None else f"seed {seed}")
        response, refusal = _bad_request(
            lambda seed=seed: engine.complete(
                model, budget, max_tokens=8, temperature=1.0, seed=seed, fields=_fields(engine, {"n": 2})
            )
        )
        if refusal is not None:
            if re.search(r"\bn\b", refusal):
                tally.exercised("API-N-1")
            else:
                tally.violated("API-N-1", "400-does-not-name-n", f"{case}: the 400 does not name n: {refusal[:200]}")
            continue
        choices = response["choices"]
        if len(choices) != 2:
            tally.violated("API-N-1", "fewer-choices", f"{case}: {len(choices)} choice(s) for n = 2")
            continue
        if any(c.get("token_ids") is None for c in choices):
            return uniform_outcome(
                PRECONDITION_FAILED, "the engine returns no token ids for every choice of n > 1", requirements
            )
        problems = [_violation(engine, response["prompt_token_ids"], c["token_ids"], budget, c) for c in choices]
        for index, problem in enumerate(problems):
            if problem:
                tally.violated("API-N-1", "forced-position-not-honoured", f"{case}, choice {index}: {problem}")
        if not any(problems):
            tally.exercised("API-N-1")
    return tally.outcome(f"{model}: n = 2 with a budget of {budget}, seeded and unseeded")


NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}


@check(
    "api/budget-without-thinking",
    cls="api.budget",
    covers=("API-NOTHINK-1",),
    needs=IDS,
    description="a budget with enable_thinking false changes nothing the prompt closed",
)
def budget_without_thinking(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """Budgets 0 and 2 with ``enable_thinking: false`` (API-NOTHINK-1): accepted, and the output equals the
    unbudgeted one unless it opens a section itself (then replayed against the oracle)."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    model = engine.api.model
    for seed in range(ctx.seed, ctx.seed + 3):
        free = engine.complete(
            model, None, max_tokens=10, temperature=1.0, seed=seed, fields=_fields(engine, NO_THINKING)
        )
        prompt, free_ids = free["prompt_token_ids"], free["choices"][0]["token_ids"]
        closed = _oracle(engine, 0, prompt)
        if closed.in_section:
            return uniform_outcome(
                PRECONDITION_FAILED,
                f"{model}'s chat template leaves the section open with enable_thinking false: nothing to judge",
                requirements,
            )
        for budget in (0, 2):
            case = f"enable_thinking false, budget {budget}, seed {seed}"
            response, refusal = _bad_request(
                lambda budget=budget, seed=seed: engine.complete(
                    model, budget, max_tokens=10, temperature=1.0, seed=seed, fields=_fields(engine, NO_THINKING)
                )
            )
            if refusal is not None:
                tally.violated("API-NOTHINK-1", "budget-refused", f"{case}: HTTP 400: {refusal[:200]}")
                continue
            ids = response["choices"][0]["token_ids"]
            problem = _violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
            if problem:
                tally.violated(
                    "API-NOTHINK-1",
                    "forced-position-not-honoured",
                    f"{case}: {problem}",
                )
            elif _forced_positions(engine, prompt, free_ids, budget) or ids == free_ids:
                tally.exercised("API-NOTHINK-1")  # equal, or the unbudgeted output opened a section the budget governs
            else:
                again = engine.complete(
                    model, None, max_tokens=10, temperature=1.0, seed=seed, fields=_fields(engine, NO_THINKING)
                )
                if again["choices"][0]["token_ids"] != free_ids:
                    return uniform_outcome(
                        PRECONDITION_FAILED, f"{case}: the same seeded request gives different outputs", requirements
                    )
                tally.violated(
                    "API-NOTHINK-1", "closed-section-budgeted", f"{case}: {ids}; without the budget {free_ids}"
                )
    return tally.outcome(f"{model}: budgets 0 and 2 with enable_thinking false × 3 seeds")


@check(
    "api/forced-logprobs",
    cls="api.budget",
    covers=("API-LOGPROB-1",),
    needs=IDS,
    description="logprobs of forced tokens as the profile declares",
)
def forced_logprobs(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """``logprobs`` with a budget (API-LOGPROB-1): one entry per returned token; forced tokens' logprobs as
    the profile declares (``raw``: finite, at most 0; ``processed``: 0)."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    declared, model = engine.api.forced_logprobs, engine.api.model
    for seed in range(ctx.seed, ctx.seed + 3):
        response = engine.complete(model, 1, max_tokens=8, temperature=1.0, seed=seed, fields={"logprobs": True})
        choice, case = response["choices"][0], f"budget 1 seed {seed}"
        ids = choice["token_ids"]
        entries = (choice.get("logprobs") or {}).get("content")
        if entries is None:
            return uniform_outcome(PRECONDITION_FAILED, "the engine returns no logprobs", requirements)
        if len(entries) != len(ids):
            tally.violated(
                "API-LOGPROB-1", "entries-not-one-per-token", f"{case}: {len(entries)} entries, {len(ids)} ids"
            )
            continue
        forced = _forced_positions(engine, response["prompt_token_ids"], ids, 1)
        for i in forced:
            value = entries[i]["logprob"]
            wrong = (
                value is None or not math.isfinite(value) or value > 1e-9
                if declared == "raw"
                else value is None or abs(value) > 1e-6
            )
            if wrong:
                tally.violated(
                    "API-LOGPROB-1",
                    f"forced-logprob-not-{declared}",
                    f"{case}: position {i} (forced {ids[i]}) has logprob {value!r}; the profile declares {declared}",
                )
                break
        else:
            if forced:
                tally.exercised("API-LOGPROB-1")
    return tally.outcome(f"{model}: budget 1 × 3 seeds with logprobs (forced logprobs declared {declared})")


@check(
    "api/utf8-boundary",
    cls="api.budget",
    covers=("API-UTF-1",),
    needs=IDS,
    description="a budget that runs out inside a UTF-8 character forces at once, or as late as the profile declares",
)
def utf8_boundary(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """Budgets running out after a token that ends inside a UTF-8 character (API-UTF-1), the bytes of
    every token read from the engine's ``logprobs`` (``bytes``): forced at once, or under
    ``complete-character`` at most 3 positions later and no later than the first character boundary. A
    response counts only when its budget ran out inside a character (the case that tells the two apart)."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    declared, model = engine.api.utf8_boundary, engine.api.model
    inside_cases = 0
    for n, seed in enumerate(range(ctx.seed, ctx.seed + 32)):
        budget = 2 + n % 3
        response = engine.complete(
            model, budget, max_tokens=budget + 8, temperature=1.0, seed=seed, fields={"logprobs": True}
        )
        choice, case = response["choices"][0], f"budget {budget} seed {seed}"
        ids = choice["token_ids"]
        placed = readings(choice, ids)
        if placed is None:
            return uniform_outcome(
                PRECONDITION_FAILED,
                "the engine's logprobs place no characters: bytes neither per token nor merged per character",
                requirements,
            )
        replays = [_replay(engine, response["prompt_token_ids"], ids, budget, inside) for inside in placed]
        found = next((r for r in replays if not r.problem), replays[0])
        if found.problem:
            tally.violated("API-UTF-1", found.mode, f"{case}: {found.problem}")
        elif found.inside_at_budget:
            inside_cases += 1
            tally.exercised("API-UTF-1")
    return tally.outcome(
        f"{model}: 32 seeded requests, budgets 2 to 4; {inside_cases} ran out of budget inside a UTF-8 character "
        f"(declared {declared})"
    )


JSON_OBJECT = {"response_format": {"type": "json_object"}}


@check(
    "api/budget-with-structured-output",
    cls="api.budget",
    covers=("API-GRAMMAR-1",),
    needs=IDS,
    description="a budget with response_format json_object: refused naming the field, or the forced positions hold",
)
def budget_with_structured_output(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """Budgets 0 and 2 with ``response_format: json_object`` (API-GRAMMAR-1): a 400 naming ``response_format``,
    or every forced position carrying its forced token (the content's validity is the constraint's own matter)."""
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    model = engine.api.model
    for seed in range(ctx.seed, ctx.seed + 2):
        for budget in (0, 2):
            case = f"response_format json_object, budget {budget}, seed {seed}"
            response, refusal = _bad_request(
                lambda budget=budget, seed=seed: engine.complete(
                    model, budget, max_tokens=12, temperature=1.0, seed=seed, fields=_fields(engine, JSON_OBJECT)
                )
            )
            if refusal is not None:
                if "response_format" in refusal:
                    tally.exercised("API-GRAMMAR-1")
                else:
                    tally.violated(
                        "API-GRAMMAR-1",
                        "400-does-not-name-response-format",
                        f"{case}: the 400 does not name response_format: {refusal[:200]}",
                    )
                continue
            choice = response["choices"][0]
            problem = _violation(engine, response["prompt_token_ids"], choice["token_ids"], budget, choice)
            if problem:
                tally.violated("API-GRAMMAR-1", "forced-position-constrained", f"{case}: {problem}")
            else:
                tally.exercised("API-GRAMMAR-1")
    return tally.outcome(f"{model}: budgets 0 and 2 with response_format json_object × 2 seeds")
