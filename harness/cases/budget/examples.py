"""Reachable thinking-budget scenarios that the strategies draw rarely (``EXAMPLES``), written as single requests."""

from __future__ import annotations

from specconform.specs.interface import AddedRequest, BatchUpdate

from ...vectors import SlotStep
from .scenario import BudgetScenario


def single_request(start, end, budget, prompt, emitted) -> BudgetScenario:
    """One request without drafts, added with ``budget`` and ``prompt``; one step per token of ``emitted``
    (what the request emits where its row is free), then a last step whose row is judged (per-section
    scope; a check runs it under its own)."""
    added = BatchUpdate(1, added=(AddedRequest(0, budget, tuple(prompt)),))
    tokens = [*emitted, 0]  # the last step's token is never committed before its row is judged
    steps = tuple((added if i == 0 else None, (SlotStep([], 0, token),)) for i, token in enumerate(tokens))
    return BudgetScenario(tuple(start), tuple(end), "section", 1, steps)


# Reachable shapes that the strategies draw rarely: each is a minimal case that a real engine failed
# when an earlier generator drew it (reports/engines/vllm-0.33-v1 and -mrv2, README), and that no
# seeded draw of these strategies reached again. The catalogue (specconform.harness.checks) gives each to the
# families that can draw it; their checks judge it before the drawn scenarios.
EXAMPLES = {
    # TB-NATURAL-1: the output closes a section it never opened, then opens one and closes it within
    # its budget, then opens another: that one starts with nothing spent
    "stray-end-then-sections": single_request((0,), (5,), 2, (), (5, 0, 5, 0)),
    # TB-PROMPT-2: a start marker inside the section the prompt opened is content; the prompt's two
    # thinking tokens spend the whole budget of 2, so the first generated token is forced
    "start-inside-prompt-section": single_request((0,), (2,), 2, (0, 0, 1), ()),
    # TB-PROMPT-3: the same with a prompt that ends inside E: its partial E counts (4 of 4), and the
    # first generated token completes E
    "partial-end-after-repeated-start": single_request((1,), (3, 3), 4, (1, 1, 0, 0, 3), ()),
}
