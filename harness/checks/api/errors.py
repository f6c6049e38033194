"""Requests a server must refuse (specs/openai-api.md §3, class ``api.errors``): an invalid budget, and a budget
on a model without reasoning markers, get HTTP 400.
"""

from __future__ import annotations

from ...core import Context, Outcome, Tally
from ..catalogue import check
from .needs import HTTP, PLAIN, unmet_precondition


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
    if blocked := unmet_precondition(engine, requirements, ids=False, plain_model=True):
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
