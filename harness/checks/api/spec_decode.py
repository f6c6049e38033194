"""Speculative decoding over the API (specs/openai-api.md §4, class ``api.spec-decode``): greedy output identical
and sampled output equivalent with speculation on and off, sampling parameters applied with speculation, and the
engine's speculative-decoding counters in agreement with the tokens the client received.
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections import Counter
from typing import TYPE_CHECKING

from ... import stats
from ...core import PRECONDITION_FAILED, Context, Outcome, Tally, uniform_outcome
from ..catalogue import check
from . import twins
from .needs import SPEC, unmet_precondition

if TYPE_CHECKING:
    from ...adapters.http import SpecCounters


@check(
    "api/greedy-spec-identity",
    cls="api.spec-decode",
    covers=("API-SPEC-1",),
    needs=SPEC,
    description="greedy output identical with speculation on and off",
)
def greedy_spec_identity(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """A difference is compared again (``twins.recurrences``): one that no retry shows is a one-off, named in the
    summary and not failed."""
    if blocked := unmet_precondition(engine, requirements, markers=False, spec_model=True):
        return blocked
    tally = Tally(requirements)
    one_offs = []

    def compared(budget) -> str:
        a = engine.complete(engine.api.model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        b = engine.complete(engine.api.spec_model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        return f"budget {budget}: {a} vs with speculation {b}" if a != b else ""

    for budget in (None, 2, 6):
        if not (difference := compared(budget)):
            tally.exercised("API-SPEC-1")
        elif again := twins.recurrences(functools.partial(compared, budget)):
            evidence = f"{difference} (seen again in {len(again)} of {twins.RETRIES} retries)"
            tally.violated("API-SPEC-1", "greedy-output-differs", evidence)
        else:
            one_offs.append(difference)
            tally.exercised("API-SPEC-1")  # the retries are judged cases, and agreed
    summary = "greedy output with speculation on and off, budgets none, 2, 6"
    if one_offs:
        summary += f"; one-offs that {twins.RETRIES} retries did not show again (no finding): {'; '.join(one_offs)}"
    return tally.outcome(summary)


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

    if blocked := unmet_precondition(engine, requirements, markers=False, spec_model=True):
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
    if blocked := unmet_precondition(engine, requirements, markers=False, spec_model=True):
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
    if blocked := unmet_precondition(engine, requirements, markers=False, spec_model=True):
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
