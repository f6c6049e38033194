"""The thinking-budget golden vectors (``specs/vectors/thinking-budget.json``), generated from their sources in
``golden/thinking-budget/``: each scenario is run beside the oracle (``budget_scenario``), which records the forced
row of every logits row; error vectors are written as their source gives them."""

from __future__ import annotations

from specconform.specs.interface import AddedRequest, BatchUpdate

from .codec import FORMAT_VERSION
from .scenarios import SlotStep, budget_scenario
from .schema import BudgetError, BudgetErrorFile, Scenario, ScenarioFile, read


def budget_vectors() -> dict:
    scenarios = read("thinking-budget", "scenarios", ScenarioFile).vectors
    errors = read("thinking-budget", "errors", BudgetErrorFile).vectors
    return {
        "format": FORMAT_VERSION,
        "kind": "thinking-budget",
        "scenarios": [_scenario(s) for s in scenarios],
        "errors": [_error(e) for e in errors],
    }


def _scenario(source: Scenario) -> dict:
    if source.steps is None:  # one request, no drafts: each step the model proposes one token
        # (both set: the schema's validator requires them without steps)
        prompt, proposals = source.prompt_token_ids or [], source.proposals or []
        first = BatchUpdate(1, added=[AddedRequest(0, source.budget, prompt)])
        steps = [(first if i == 0 else None, {0: SlotStep([], 0, t)}) for i, t in enumerate(proposals)]
        max_num_reqs = 1 if source.max_num_reqs is None else source.max_num_reqs
    else:
        steps = [
            (
                None if step.update is None else step.update.batch_update(),
                {slot: SlotStep(p.drafts, p.accept, p.free_token) for slot, p in step.slots.items()},
            )
            for step in source.steps
        ]
        max_num_reqs = 4 if source.max_num_reqs is None else source.max_num_reqs
    return budget_scenario(
        source.name,
        source.requirements,
        source.start_token_ids,
        source.end_token_ids,
        steps,
        source.scope,
        max_num_reqs,
        source.description,
        source.forced_token_ids,
        source.other_end_token_ids,
    )


def _error(source: BudgetError) -> dict:
    return {
        "name": source.name,
        "requirements": source.requirements,
        "start_token_ids": source.start_token_ids,
        "end_token_ids": source.end_token_ids,
        "max_num_reqs": source.max_num_reqs,
        "update": None if source.update is None else source.update.batch_update().to_json(),
        "expected_error_field": source.expected_error_field,
    }
