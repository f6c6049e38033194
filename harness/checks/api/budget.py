"""The budget's request field (specs/openai-api.md §1, class ``api.budget``): the budget holds and binds, at 0
and 1, under concurrency and with speculative decoding, with a multi-token end marker arriving whole; the end
marker that closed the section is in neither the reasoning nor the content (API-REASON-1).
"""

from __future__ import annotations

import concurrent.futures

from ...core import PRECONDITION_FAILED, Context, Outcome, Tally, uniform_outcome
from ..catalogue import check
from . import attribution, twins
from .needs import BUDGET_SPEC, IDS, unmet_precondition
from .replay import judged_choice, thinking_span, violation, with_logprobs
from .reproduction import reproduction_document


def _judge_budgets(engine, ctx: Context, tally: Tally, check_name: str, model: str, budgets, holds: str) -> None:
    """Three seeded requests per budget: ``holds`` (the requirement the budget's holding stands for),
    API-BUDGET-1 (the field was accepted) and API-REASON-1 (the end marker in neither reasoning nor content) per
    response. A request that fails ``holds`` and is not reproducible is tried again (``twins``)."""
    for budget in budgets:
        for seed in range(3):
            request = twins.SeededRequest(model, budget, budget + 12, 1.0, ctx.seed + seed, with_logprobs(engine))
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
            problem = violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
            if problem:
                if not twins.alone(engine, ctx, tally, check_name, holds, request).attributed:
                    tally.violated(holds, "forced-position-not-honoured", f"{case}: {problem}")
            else:
                tally.exercised(holds)
            if "API-REASON-1" not in tally.requirements:
                continue
            _, _, closed = thinking_span(engine, response["prompt_token_ids"], ids)
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


@check(
    "api/budget-holds",
    cls="api.budget",
    covers=("API-BUDGET-1", "API-BUDGET-2", "API-REASON-1"),
    needs=IDS,
    description="every position the budget forces carries the forced token (oracle replay over returned ids)",
)
def holds(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := unmet_precondition(engine, requirements):
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
    if blocked := unmet_precondition(engine, requirements):
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
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    budget = 3
    response = engine.complete(engine.api.model, None, max_tokens=24, temperature=1.0, seed=ctx.seed)
    thinking, _, _ = thinking_span(engine, response["prompt_token_ids"], response["choices"][0]["token_ids"])
    if thinking <= budget:
        return uniform_outcome(
            PRECONDITION_FAILED,
            f"the positive control thought only {thinking} tokens without a budget; a budget of {budget} cannot "
            "be shown to bind",
            requirements,
        )
    tally = Tally(requirements)
    bounded = engine.complete(
        engine.api.model, budget, max_tokens=24, temperature=1.0, seed=ctx.seed, fields=with_logprobs(engine)
    )
    prompt, ids = bounded["prompt_token_ids"], bounded["choices"][0]["token_ids"]
    held = judged_choice(engine, prompt, ids, budget, bounded["choices"][0])
    if held.problem and held.mode == attribution.BUDGET_MODE:  # not held, and no wait for a character played a part
        request = twins.SeededRequest(engine.api.model, budget, 24, 1.0, ctx.seed, with_logprobs(engine))
        if where := attribution.budget_failure_alone(
            engine, ctx, tally, "api/budget-binds", "API-BUDGET-3", request, "the positive control's bounded request"
        ):
            return tally.outcome(f"with budget {budget} the budget does not hold: a failure of {where}")
    t2, _, closed = thinking_span(engine, prompt, ids)
    phrase = len(engine.forced_ids) - len(engine.end_ids)  # TB-END-1: thinking tokens too
    late = held.late  # a declared wait's (API-UTF-1)
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
    needs=BUDGET_SPEC,
    description="the budget holds with speculative decoding on",
)
def spec_budget(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := unmet_precondition(engine, requirements, spec_model=True):
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
    if blocked := unmet_precondition(engine, requirements):
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
        _, generated, closed = thinking_span(engine, prompt, ids)
        close_at = generated + len(engine.end_ids)  # in output coordinates
        if not closed:
            tally.violated("API-BUDGET-7", "section-never-closed", f"seed {ctx.seed + seed}: never closed: {ids}")
        elif ids[close_at - len(engine.end_ids) : close_at] != list(engine.end_ids):
            tally.violated("API-BUDGET-7", "end-marker-not-contiguous", f"seed {ctx.seed + seed}: {ids}")
        else:
            tally.exercised("API-BUDGET-7")
    return tally.outcome(f"{engine.api.end_text!r} = {engine.end_ids} over 4 seeded requests")


CONCURRENT = "api/concurrent-mixed-budgets"


@check(
    CONCURRENT,
    cls="api.budget",
    covers=("API-BUDGET-5",),
    needs=IDS,
    description="16 concurrent requests, mixed budgets and seeds, each equal to its sequential run",
)
def concurrent_budgets(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """Each request of the batch beside its sequential run (``twins.alone``). A request that breaks its budget alone
    too is the budget requirement's of what it holds (``attribution.budget_owner``); one whose concurrent and
    sequential ids part before either carries a token its budget forces is the seed's (``_draws_differ``)."""
    if blocked := unmet_precondition(engine, requirements):
        return blocked
    budgets = [None, 0, 1, 2, 3, 5, 8, None, 4, 0, 6, 2, None, 7, 1, 3]
    models = [engine.api.model] + ([engine.api.spec_model] if engine.api.spec_model else [])

    def one(i):
        model = models[i % len(models)]
        return (
            model,
            budgets[i],
            engine.complete(
                model, budgets[i], max_tokens=16, temperature=1.0, seed=ctx.seed + i, fields=with_logprobs(engine)
            ),
        )

    batch_from = twins.log_mark(engine)
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(len(budgets))))
    batch = twins.requests_since(engine, batch_from)
    tally = Tally(requirements)
    for i, (model, budget, response) in enumerate(results):
        ids = response["choices"][0]["token_ids"]
        problem = violation(engine, response["prompt_token_ids"], ids, budget, response["choices"][0])
        request = twins.SeededRequest(model, budget, 16, 1.0, ctx.seed + i, with_logprobs(engine))
        alone = twins.alone(engine, ctx, tally, CONCURRENT, "API-BUDGET-5", request)
        if alone.attributed:
            continue
        first = alone.responses[0]["choices"][0]
        alone_problem = violation(engine, alone.responses[0]["prompt_token_ids"], first["token_ids"], budget, first)
        if alone_problem and not alone.differ:
            evidence = f"request {i} ({request}) sent alone: {alone_problem}"
            attribution.record_owned(engine, ctx, tally, CONCURRENT, "API-BUDGET-5", request, evidence, alone.mark)
        elif problem:
            held = "; sent alone, it holds" if not alone.differ else ""
            tally.violated("API-BUDGET-5", "forced-position-not-honoured", f"request {i} ({model}): {problem}{held}")
        elif first["token_ids"] != ids and (parting := _draws_differ(engine, request, response, first["token_ids"])):
            evidence = f"request {i} ({request}) beside {len(budgets) - 1} others: {ids} vs alone {first['token_ids']}"
            exchanges = batch + twins.requests_since(engine, alone.mark)[:1]
            _seed_depends_on_batch(engine, ctx, tally, f"{evidence}: {parting}", exchanges)
        elif first["token_ids"] != ids:
            tally.violated(
                "API-BUDGET-5",
                "concurrent-differs-from-sequential",
                f"request {i} ({model}, budget {budget}): concurrent {ids} vs sequential {first['token_ids']}",
            )
        else:
            tally.exercised("API-BUDGET-5")
    return tally.outcome(f"{len(budgets)} concurrent requests with mixed budgets, each beside its sequential run")


def _draws_differ(engine, request: twins.SeededRequest, response: dict, sequential: list[int]) -> str:
    """Why a concurrent response and the same request's sequential ids part on the draws, not on a budget (""
    where they may part on a budget): up to where they part, neither carries a token the request's budget forces, and
    the concurrent token is no token of the forced sequence, so no budget of the batch, leaked or not, put it there
    (a budget changes a stream only by forcing)."""
    ids = response["choices"][0]["token_ids"]
    position = attribution.first_difference(ids, sequential)
    if position is None or position >= min(len(ids), len(sequential)) or ids[position] in engine.forced_ids:
        return ""
    outputs = [ids, sequential]
    if not attribution.without_budget_up_to(engine, request, response["prompt_token_ids"], outputs, position):
        return ""
    return (
        f"they part at output position {position} ({ids[position]} vs {sequential[position]}), which no budget "
        f"forces, and {ids[position]} is no token of the forced sequence: the seeded request's draws depend on what "
        "else the server serves"
    )


def _seed_depends_on_batch(engine, ctx: Context, tally: Tally, evidence: str, exchanges: list[dict]) -> None:
    """Record a concurrent request whose draws depend on the batch under API-SEED-1 (a seeded request draws from
    its own stream whatever else the engine serves), the batch and the request sent alone as its reproduction;
    API-BUDGET-5 reads BLOCKED naming it."""
    mode = "seeded-request-not-reproducible"
    reproduction = reproduction_document(
        CONCURRENT, twins.SEED_RID, f"{twins.SEED_RID}/{mode}", evidence, ctx.seed, exchanges
    )
    tally.violated(twins.SEED_RID, mode, evidence, reproduction, finding=twins.SEED_RID)
    tally.blocked("API-BUDGET-5", twins.SEED_RID, "a request's draws depend on the batch, with no budget in play")
