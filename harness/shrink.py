"""Minimal reproductions: greedy delta debugging over a failing case.

``minimise(case, candidates, still_fails)`` walks ``candidates(case)`` (smaller variants, biggest cuts
first; None for a variant that cannot be built) and moves to the first one that still fails the same
way. The next round resumes at the same place in the new case's candidates and wraps around, so a
cut that worked is tried again before the ones that failed; the case is returned when a whole round
finds nothing (it is then 1-minimal with respect to ``candidates``) or the evaluation limit is
reached. What "the same way" means is the caller's: the checks compare the failure's fingerprint
(``<requirement>/<mode>``), so the minimal case shows the bug that was found, not another one met on
the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Case = TypeVar("Case")

MAX_EVALUATIONS = 400


def minimise(
    case: Case,
    candidates: Callable[[Case], Iterable[Case | None]],
    still_fails: Callable[[Case], bool],
    max_evaluations: int = MAX_EVALUATIONS,
) -> Case:
    """The smallest case reached from ``case`` by steps to candidates that ``still_fail``."""
    evaluations = resume = 0
    while evaluations < max_evaluations:
        listed = [c for c in candidates(case) if c is not None]
        order = listed[resume:] + listed[:resume]
        for offset, candidate in enumerate(order):
            evaluations += 1
            if still_fails(candidate):
                case, resume = candidate, (resume + offset) % len(listed)
                break
            if evaluations >= max_evaluations:
                return case
        else:
            return case
    return case
