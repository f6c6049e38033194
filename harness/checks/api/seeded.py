"""Seeded requests (specs/openai-api.md §6, class ``api.seeded``): a seeded sampled request sent again alone
returns the same ids (API-SEED-1).
"""

from __future__ import annotations

from ...core import Context, Outcome, Tally
from ..catalogue import check
from . import twins
from .needs import OUTPUT_IDS, unmet_precondition


@check(
    "api/seeded-reproducible",
    cls="api.seeded",
    covers=("API-SEED-1",),
    needs=OUTPUT_IDS,
    description="a seeded sampled request sent again alone returns the same ids, with speculation on and off",
)
def seeded_reproducible(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    if blocked := unmet_precondition(engine, requirements, markers=False):
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
