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
import shlex
from collections import Counter
from typing import TYPE_CHECKING

from .. import spec, stats, vectors
from ..core import FAIL, PRECONDITION_FAILED, Context, Outcome, Tally, UnparsableResponse, uniform_outcome
from ..oracle import budget as tb
from ..oracle.naive import thinking_tokens

if TYPE_CHECKING:
    from ..adapters.http import SpecCounters


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


def _violation(engine, prompt_ids, output_ids, budget) -> str:
    """Replay the oracle over prompt + output: every forced position must carry its token."""
    if budget is None:
        return ""
    state = tb.RequestBudget.from_prompt(
        tb.MarkerAutomaton(engine.start_ids), tb.MarkerAutomaton(engine.end_ids), budget, prompt_ids, engine.api.scope
    )
    for i, token in enumerate(output_ids):
        forced = state.forced_token()
        if forced != -1 and token != forced:
            return f"budget {budget}: output position {i} is {token}, the budget forces {forced}"
        state.feed(token)
    return ""


def _thinking(engine, prompt_ids, output_ids) -> tuple[int, int, bool]:
    """(thinking tokens, of them generated, closed) of the section open at the end of the prompt."""
    found = thinking_tokens(prompt_ids + output_ids, engine.start_ids, engine.end_ids, len(prompt_ids))
    return found[0] if found else (0, 0, False)


def _judge_budgets(engine, ctx: Context, tally: Tally, model: str, budgets, holds: str) -> None:
    """Three seeded requests per budget: ``holds`` (the requirement the budget's holding stands for),
    API-BUDGET-1 (the field was accepted) and API-REASON-1 (no end marker in the reasoning) per response."""
    for budget in budgets:
        for seed in range(3):
            response = engine.complete(model, budget, max_tokens=budget + 12, temperature=1.0, seed=ctx.seed + seed)
            ids = response["choices"][0]["token_ids"]
            case = f"{model} budget {budget} seed {ctx.seed + seed}"
            if "API-BUDGET-1" in tally.requirements:
                tally.exercised("API-BUDGET-1")
            problem = _violation(engine, response["prompt_token_ids"], ids, budget)
            if problem:
                tally.violated(holds, "forced-position-not-honoured", f"{case}: {problem}")
            else:
                tally.exercised(holds)
            if "API-REASON-1" not in tally.requirements:
                continue
            _, _, closed = _thinking(engine, response["prompt_token_ids"], ids)
            reasoning = response["choices"][0]["message"].get(engine.api.reasoning_field) or ""
            if closed and engine.api.end_text in reasoning:
                tally.violated(
                    "API-REASON-1", "end-marker-in-reasoning", f"{case}: the end marker leaked: {reasoning!r}"
                )
            elif closed:
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


def holds(engine, ctx: Context) -> Outcome:
    requirements = ("API-BUDGET-1", "API-BUDGET-2", "API-REASON-1")
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    _judge_budgets(engine, ctx, tally, engine.api.model, (2, 5, 9), "API-BUDGET-2")
    return tally.outcome(f"{engine.api.model}: budgets 2, 5, 9 × 3 seeds replayed against the oracle")


def zero_and_one(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-BUDGET-4",)):
        return blocked
    tally = Tally(("API-BUDGET-4",))
    _judge_budgets(engine, ctx, tally, engine.api.model, (0, 1), "API-BUDGET-4")
    return tally.outcome(f"{engine.api.model}: budgets 0 and 1 × 3 seeds replayed against the oracle")


def binds(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-BUDGET-3",)):
        return blocked
    budget = 3
    response = engine.complete(engine.api.model, None, max_tokens=24, temperature=1.0, seed=ctx.seed)
    thinking, _, _ = _thinking(engine, response["prompt_token_ids"], response["choices"][0]["token_ids"])
    if thinking <= budget:
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"the positive control thought only {thinking} tokens without a budget; a budget of {budget} cannot "
            "be shown to bind",
            ("API-BUDGET-3",),
        )
    tally = Tally(("API-BUDGET-3",))
    bounded = engine.complete(engine.api.model, budget, max_tokens=24, temperature=1.0, seed=ctx.seed)
    t2, _, closed = _thinking(engine, bounded["prompt_token_ids"], bounded["choices"][0]["token_ids"])
    if t2 > budget or not closed:
        tally.violated(
            "API-BUDGET-3", "budget-did-not-bind", f"with budget {budget}: {t2} thinking tokens, closed {closed}"
        )
    else:
        tally.exercised("API-BUDGET-3")
    return tally.outcome(f"without a budget {thinking} thinking tokens; with budget {budget}: {t2}")


def spec_budget(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-BUDGET-6",), spec_model=True):
        return blocked
    tally = Tally(("API-BUDGET-6",))
    _judge_budgets(engine, ctx, tally, engine.api.spec_model, (0, 1, 4, 9), "API-BUDGET-6")
    return tally.outcome(f"{engine.api.spec_model}: budgets 0, 1, 4, 9 × 3 seeds with speculative decoding")


def multitoken_end(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-BUDGET-7",)):
        return blocked
    if len(engine.end_ids) < 2:
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"{engine.api.end_text!r} is one token for {engine.api.model}: this check needs an end marker of "
            "several tokens (not a defect; a model whose end marker is several tokens judges it)",
            ("API-BUDGET-7",),
        )
    tally = Tally(("API-BUDGET-7",))
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


def concurrent_budgets(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-BUDGET-5",)):
        return blocked
    budgets = [None, 0, 1, 2, 3, 5, 8, None, 4, 0, 6, 2, None, 7, 1, 3]
    models = [engine.api.model] + ([engine.api.spec_model] if engine.api.spec_model else [])

    def one(i):
        model = models[i % len(models)]
        return model, budgets[i], engine.complete(model, budgets[i], max_tokens=16, temperature=1.0, seed=ctx.seed + i)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(len(budgets))))
    tally = Tally(("API-BUDGET-5",))
    for i, (model, budget, response) in enumerate(results):
        ids = response["choices"][0]["token_ids"]
        problem = _violation(engine, response["prompt_token_ids"], ids, budget)
        again = engine.complete(model, budget, max_tokens=16, temperature=1.0, seed=ctx.seed + i)
        if problem:
            tally.violated("API-BUDGET-5", "forced-position-not-honoured", f"request {i} ({model}): {problem}")
        elif again["choices"][0]["token_ids"] != ids:
            tally.violated(
                "API-BUDGET-5",
                "concurrent-differs-from-sequential",
                f"request {i} ({model}, budget {budget}): concurrent {ids} vs sequential "
                f"{again['choices'][0]['token_ids']}",
            )
        else:
            tally.exercised("API-BUDGET-5")
    return tally.outcome(f"{len(budgets)} concurrent requests with mixed budgets, each beside its sequential run")


def usage(engine, ctx: Context) -> Outcome:
    requirements = ("API-USAGE-1", "API-USAGE-2")
    if blocked := _precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
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


def streaming(engine, ctx: Context) -> Outcome:
    tally = Tally(("API-STREAM-1",))
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


def invalid_budget(engine, ctx: Context) -> Outcome:
    tally = Tally(("API-ERROR-1",))
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


def budget_without_markers(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-ERROR-2",), ids=False, plain_model=True):
        return blocked
    tally = Tally(("API-ERROR-2",))
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


def greedy_spec_identity(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-SPEC-1",), spec_model=True):
        return blocked
    tally = Tally(("API-SPEC-1",))
    for budget in (None, 2, 6):
        a = engine.complete(engine.api.model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        b = engine.complete(engine.api.spec_model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        if a != b:
            tally.violated("API-SPEC-1", "greedy-output-differs", f"budget {budget}: {a} vs with speculation {b}")
        else:
            tally.exercised("API-SPEC-1")
    return tally.outcome("greedy output with speculation on and off, budgets none, 2, 6")


def sampled_spec_equivalence(engine, ctx: Context) -> Outcome:
    if blocked := _precondition(engine, ("API-SPEC-2",), spec_model=True):
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
    tv, upper = stats.two_sample_tv_upper(plain, with_spec, n, delta)
    message = (
        f"first-token TV {tv:.3f}, upper bound {upper:.3f} at confidence {1 - delta} (N = {n} per side, "
        f"tolerance {engine.api.spec_tolerance})"
    )
    tally = Tally(("API-SPEC-2",))
    if upper < engine.api.spec_tolerance:
        tally.exercised("API-SPEC-2")
    else:
        tally.violated("API-SPEC-2", "not-shown-equivalent", "not shown equivalent: " + message)
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


def spec_counters_agree(engine, ctx: Context) -> Outcome:
    """API-SPEC-3 over a sequential workload on the speculative model: the counters' differences
    across each request, and across all, against the ids the client received (the server must have
    no other traffic)."""
    requirements = ("API-SPEC-3",)
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
