"""Thinking-budget scenarios, one concern per module: what a scenario and a family are and which scenarios are
unreachable (``scenario``), the Hypothesis strategies that draw them and why each drawn scenario is reachable for a
real engine (``strategies``), reachable shapes the strategies draw rarely (``examples``) and the reductions that
shrink a failing scenario (``shrinking``)."""

from .examples import EXAMPLES
from .scenario import BudgetFamily, BudgetScenario, unreachable
from .shrinking import single_removals, smaller
from .strategies import markers, scenarios

__all__ = [
    "EXAMPLES",
    "BudgetFamily",
    "BudgetScenario",
    "markers",
    "scenarios",
    "single_removals",
    "smaller",
    "unreachable",
]
