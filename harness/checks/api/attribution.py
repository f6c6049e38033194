"""Where an API-level failure belongs: the requirement its minimal case violates (RUN-FINDING-1 over HTTP).

A check of a request feature (a concurrent batch, a structured-output constraint, a UTF-8 wait, a ``max_tokens`` cut,
a positive control) meets budget failures that need none of its feature. Such a failure is judged on its minimal
case, the same seeded request without the feature, sent alone (``twins.alone``): where that request breaks its
budget too, reproducibly, the failure is the budget requirement's of what the request still holds (``budget_owner``),
and the check's own requirement reads BLOCKED naming it. Where the feature was already absent from the failing
response (no character was incomplete where the budget ran out), the response itself is the minimal case.

A comparison of two responses to one seeded request (whole and streamed, concurrent and sequential) parts at a first
position. Where neither response carries a token the budget forces up to there, the budget plays no part in the
difference (a budget changes a stream only by forcing: TB-FORCE-1), so the minimal case is the request without its
budget (``without_budget_up_to``).
"""

from __future__ import annotations

from ...core import Context, Tally
from . import twins
from .replay import carried_forced, violation
from .reproduction import reproduction_document

BUDGET_MODE = "forced-position-not-honoured"


def budget_owner(engine, model: str, budget: int | None) -> str:
    """The budget requirement a failure on a request served alone belongs to: the most specific whose feature the
    request holds. API-BUDGET-6 on the speculating model, API-BUDGET-4 for a budget of 0 or 1, API-BUDGET-2 else."""
    if model == engine.api.spec_model:
        return "API-BUDGET-6"
    return "API-BUDGET-4" if budget in (0, 1) else "API-BUDGET-2"


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first output position where ``a`` and ``b`` part (the shorter one's length where one is a prefix of the
    other), None where they are equal."""
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def without_budget_up_to(engine, request: twins.SeededRequest, prompt_ids, outputs, position: int) -> bool:
    """Whether ``request``'s budget shows nowhere up to ``position`` in any of ``outputs`` (its responses' ids, after
    ``prompt_ids``): no position up to there carries a token the budget forces there. A budget changes a stream only
    by forcing, so the same request without its budget must then agree with them that far."""
    if request.budget is None:
        return True
    return all(
        min(carried_forced(engine, prompt_ids, ids, request.budget), default=position + 1) > position for ids in outputs
    )


def record_owned(engine, ctx: Context, tally: Tally, check: str, own: str, request, evidence: str, mark: int) -> str:
    """Record a budget failure of ``request`` under its owner (``budget_owner``), with the requests logged since
    ``mark`` as its reproduction, and block ``own``. Returns the owner."""
    owner = budget_owner(engine, request.model, request.budget)
    tally.violated(
        owner,
        BUDGET_MODE,
        evidence,
        reproduction_document(
            check, owner, f"{owner}/{BUDGET_MODE}", evidence, ctx.seed, twins.requests_since(engine, mark)
        ),
        finding=owner,
    )
    if own != owner:
        tally.blocked(own, owner, f"{request} breaks its budget without the check's own feature")
    return owner


def budget_failure_alone(
    engine, ctx: Context, tally: Tally, check: str, own: str, request: twins.SeededRequest, feature: str
) -> str:
    """A budget failure that ``check`` (of ``own``) met: its minimal case, ``request`` (the check's request without
    its feature; ``feature`` says what the case is, for the evidence), sent alone. Returns where it went: the owner's
    requirement where the minimal case breaks its budget reproducibly, API-SEED-1 where its repeats differ with and
    without the budget (``twins.alone``), "" where the minimal case holds its budget (the failure needs the feature:
    the caller records it as its own)."""
    found = twins.alone(engine, ctx, tally, check, own, request)
    if found.attributed:
        return twins.SEED_RID
    first = found.responses[0]
    problem = violation(
        engine, first["prompt_token_ids"], first["choices"][0]["token_ids"], request.budget, first["choices"][0]
    )
    if not problem or found.differ:
        return ""
    evidence = f"{request}, {feature}, sent alone {twins.REPEATS} times: {problem}"
    return record_owned(engine, ctx, tally, check, own, request, evidence, found.mark)
