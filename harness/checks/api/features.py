"""The budget meeting other request features (specs/openai-api.md §5, class ``api.budget``): ``max_tokens`` cutting
the forced end marker, ``n`` choices, ``enable_thinking`` false, ``logprobs``, a budget running out inside a UTF-8
character, and ``response_format``.
"""

from __future__ import annotations

import math
import re

from ...core import PRECONDITION_FAILED, Context, Outcome, Tally, uniform_outcome
from ..catalogue import check
from . import attribution, twins
from .needs import IDS, unmet_precondition
from .replay import (
    forced_positions,
    judged_choice,
    oracle_state,
    replay_oracle,
    thinking_span,
    violation,
    with_logprobs,
)
from .utf8 import readings

TRUNCATED = "api/truncated-end-marker"


@check(
    TRUNCATED,
    cls="api.budget",
    covers=("API-TRUNC-1",),
    needs=IDS,
    description="max_tokens right before and inside the forced end marker: length, forced prefix, no content",
)
def truncated_end(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """``max_tokens`` ending right before and inside the forced end marker (API-TRUNC-1): each seeded
    generation is run once in full to find its first forced position, then cut at every point of the forced
    sequence (E, or the declared phrase then E). A generation that breaks its budget uncut is the budget's
    (``attribution``), not cut."""
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    budget, model, cuts = 2, engine.api.model, 0
    for seed in range(ctx.seed, ctx.seed + 3):
        forced_length = len(engine.forced_ids)
        full = engine.complete(
            model,
            budget,
            max_tokens=budget + forced_length + 4,
            temperature=1.0,
            seed=seed,
            fields=with_logprobs(engine),
        )
        full_prompt, full_ids = full["prompt_token_ids"], full["choices"][0]["token_ids"]
        # where the forced sequence begins: after a declared wait, where the engine forced it
        whole = judged_choice(engine, full_prompt, full_ids, budget, full["choices"][0])
        uncut = twins.SeededRequest(model, budget, budget + forced_length + 4, 1.0, seed, with_logprobs(engine))
        if whole.problem and attribution.budget_failure_alone(
            engine, ctx, tally, TRUNCATED, "API-TRUNC-1", uncut, "not cut by max_tokens"
        ):
            continue  # the generation breaks its budget uncut: every cut of it would show the budget's failure
        forced = whole.forced_at or forced_positions(engine, full_prompt, full_ids, budget)
        if not forced:
            continue  # the model closed the section itself: nothing is forced to cut into
        for inside in range(forced_length):
            max_tokens = forced[0] + inside
            if max_tokens < 1:
                continue
            cuts += 1
            response = engine.complete(
                model, budget, max_tokens=max_tokens, temperature=1.0, seed=seed, fields=with_logprobs(engine)
            )
            choice, case = response["choices"][0], f"budget {budget} seed {seed} max_tokens {max_tokens}"
            ids, prompt = choice["token_ids"], response["prompt_token_ids"]
            usage = response.get("usage") or {}
            reasoning_tokens = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
            _, generated, closed = thinking_span(engine, prompt, ids)
            problems = [
                ("finish-reason-not-length", f"finish_reason {choice['finish_reason']!r}")
                if choice["finish_reason"] != "length"
                else None,
                ("forced-position-not-honoured", violation(engine, prompt, ids, budget, choice))
                if violation(engine, prompt, ids, budget, choice)
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


def _bad_request(call) -> dict | str:
    """``call()``'s response (a completion's JSON), or the message of the server's HTTP 400 (a str)."""
    import openai

    try:
        return call()
    except openai.BadRequestError as error:
        return error.response.text


@check(
    "api/n-choices",
    cls="api.budget",
    covers=("API-N-1",),
    needs=IDS,
    description="n = 2 with a budget",
)
def n_choices(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """``n = 2`` with a budget, seeded and not (API-N-1): two choices each held by the budget, or a 400 naming n."""
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    budget, model = 2, engine.api.model
    for seed in (ctx.seed, None):
        case = f"n 2 budget {budget} " + ("unseeded" if seed is None else f"seed {seed}")
        response = _bad_request(
            lambda seed=seed: engine.complete(
                model, budget, max_tokens=8, temperature=1.0, seed=seed, fields=with_logprobs(engine, {"n": 2})
            )
        )
        if isinstance(response, str):  # the server's HTTP 400
            refusal = response
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
        problems = [violation(engine, response["prompt_token_ids"], c["token_ids"], budget, c) for c in choices]
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
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    model = engine.api.model
    for seed in range(ctx.seed, ctx.seed + 3):
        free = engine.complete(
            model, None, max_tokens=10, temperature=1.0, seed=seed, fields=with_logprobs(engine, NO_THINKING)
        )
        prompt, free_ids = free["prompt_token_ids"], free["choices"][0]["token_ids"]
        closed = oracle_state(engine, 0, prompt)
        if closed.in_section:
            return uniform_outcome(
                PRECONDITION_FAILED,
                f"{model}'s chat template leaves the section open with enable_thinking false: nothing to judge",
                requirements,
            )
        for budget in (0, 2):
            case = f"enable_thinking false, budget {budget}, seed {seed}"
            response = _bad_request(
                lambda budget=budget, seed=seed: engine.complete(
                    model, budget, max_tokens=10, temperature=1.0, seed=seed, fields=with_logprobs(engine, NO_THINKING)
                )
            )
            if isinstance(response, str):  # the server's HTTP 400
                refusal = response
                tally.violated("API-NOTHINK-1", "budget-refused", f"{case}: HTTP 400: {refusal[:200]}")
                continue
            ids = response["choices"][0]["token_ids"]
            problem = violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
            if problem:
                tally.violated(
                    "API-NOTHINK-1",
                    "forced-position-not-honoured",
                    f"{case}: {problem}",
                )
            elif forced_positions(engine, prompt, free_ids, budget) or ids == free_ids:
                tally.exercised("API-NOTHINK-1")  # equal, or the unbudgeted output opened a section the budget governs
            else:
                again = engine.complete(
                    model, None, max_tokens=10, temperature=1.0, seed=seed, fields=with_logprobs(engine, NO_THINKING)
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
    if blocked := unmet_precondition(engine, requirements):
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
        forced = forced_positions(engine, response["prompt_token_ids"], ids, 1)
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


UTF8 = "api/utf8-boundary"


@check(
    UTF8,
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
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    declared, model = engine.api.utf8_boundary, engine.api.model
    inside_cases = 0
    for n, seed in enumerate(range(ctx.seed, ctx.seed + 32)):
        budget, mark = 2 + n % 3, twins.log_mark(engine)
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
        replays = [replay_oracle(engine, response["prompt_token_ids"], ids, budget, inside) for inside in placed]
        found = next((r for r in replays if not r.problem), replays[0])
        if found.problem and all(r.mode == attribution.BUDGET_MODE for r in replays):
            # no reading has a character incomplete where the budget ran out: the failure needs no UTF-8 wait
            request = twins.SeededRequest(model, budget, budget + 8, 1.0, seed, {"logprobs": True})
            feature = "the budget running out where the bytes end on a character"
            if not attribution.budget_failure_alone(engine, ctx, tally, UTF8, "API-UTF-1", request, feature):
                evidence = f"{case}: {found.problem}"  # the response itself is the minimal case
                attribution.record_owned(engine, ctx, tally, UTF8, "API-UTF-1", request, evidence, mark)
        elif found.problem:
            tally.violated("API-UTF-1", found.mode, f"{case}: {found.problem}")
        elif found.inside_at_budget:
            inside_cases += 1
            tally.exercised("API-UTF-1")
    return tally.outcome(
        f"{model}: 32 seeded requests, budgets 2 to 4; {inside_cases} ran out of budget inside a UTF-8 character "
        f"(declared {declared})"
    )


JSON_OBJECT = {"response_format": {"type": "json_object"}}


GRAMMAR = "api/budget-with-structured-output"


@check(
    GRAMMAR,
    cls="api.budget",
    covers=("API-GRAMMAR-1",),
    needs=IDS,
    description="a budget with response_format json_object: refused naming the field, or the forced positions hold",
)
def budget_with_structured_output(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """Budgets 0 and 2 with ``response_format: json_object`` (API-GRAMMAR-1): a 400 naming ``response_format``,
    or every forced position carrying its forced token (the content's validity is the constraint's own matter). A
    forced position the same request without ``response_format`` leaves free too is the budget's (``attribution``)."""
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    tally = Tally(requirements)
    model = engine.api.model
    for seed in range(ctx.seed, ctx.seed + 2):
        for budget in (0, 2):
            case = f"response_format json_object, budget {budget}, seed {seed}"
            response = _bad_request(
                lambda budget=budget, seed=seed: engine.complete(
                    model, budget, max_tokens=12, temperature=1.0, seed=seed, fields=with_logprobs(engine, JSON_OBJECT)
                )
            )
            if isinstance(response, str):  # the server's HTTP 400
                refusal = response
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
            problem = violation(engine, response["prompt_token_ids"], choice["token_ids"], budget, choice)
            twin = twins.SeededRequest(model, budget, 12, 1.0, seed, with_logprobs(engine))  # without the constraint
            if problem and not attribution.budget_failure_alone(
                engine, ctx, tally, GRAMMAR, "API-GRAMMAR-1", twin, "without response_format"
            ):
                tally.violated("API-GRAMMAR-1", "forced-position-constrained", f"{case}: {problem}")
            elif problem:
                continue
            else:
                tally.exercised("API-GRAMMAR-1")
    return tally.outcome(f"{model}: budgets 0 and 2 with response_format json_object × 2 seeds")
