"""Minimal reproductions: greedy delta debugging over a failing case.

``minimise(case, candidates, still_fails)`` walks ``candidates(case)`` (smaller variants, biggest cuts
first) and moves to the first one that still fails the same way, until no candidate does or the
evaluation limit is reached. What "the same way" means is the caller's: the checks compare the
failure's fingerprint (``<requirement>/<mode>``), so the minimal case shows the bug that was found,
not another one met on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Case = TypeVar("Case")

MAX_EVALUATIONS = 400


def minimise(
    case: Case,
    candidates: Callable[[Case], Iterable[Case]],
    still_fails: Callable[[Case], bool],
    max_evaluations: int = MAX_EVALUATIONS,
) -> Case:
    """The smallest case reached from ``case`` by steps to candidates that ``still_fail``."""
    evaluations = 0
    improved = True
    while improved and evaluations < max_evaluations:
        improved = False
        for candidate in candidates(case):
            evaluations += 1
            if still_fails(candidate):
                case, improved = candidate, True
                break
            if evaluations >= max_evaluations:
                break
    return case
