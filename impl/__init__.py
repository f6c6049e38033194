"""The reference implementation: thinking-budget state, rejection sampler, counting."""

if __name__ != "specconform.impl":  # a checkout's root on the path makes the folder importable by its own name
    raise ModuleNotFoundError(
        f"{__name__!r} is the folder of 'specconform.impl', importable under that name only (docs/install.md)",
        name=__name__,
    )

from .counting import AcceptanceStats, ValidatedCount, count_emitted_validated
from .markers import MarkerMatcher
from .rejection import RejectionOutput, rejection_sample
from .thinking_budget import AddedRequest, BatchUpdate, Move, ThinkingBudgetState, validate_budget

__version__ = "0.1.0"

__all__ = [
    "AcceptanceStats",
    "AddedRequest",
    "BatchUpdate",
    "MarkerMatcher",
    "Move",
    "RejectionOutput",
    "ThinkingBudgetState",
    "ValidatedCount",
    "count_emitted_validated",
    "rejection_sample",
    "validate_budget",
]
