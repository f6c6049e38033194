"""Shared case strategies: one source of generated cases for the project's own property tests and
for the checks that judge engines (``harness.cases.budget``, ``harness.cases.rejection``).

Checks draw their cases with ``draw(strategy, seed, count)``: Hypothesis' own generator, run through
``@given`` with an explicit ``@seed``, no example database and only the generate phase, so the same
seed gives the same cases on every machine and every run (``strategy.example()`` is not
deterministic and warns outside an interactive session). Hypothesis starts from the simplest
example and favours boundary values, which is what finds bugs; bulk numbers that no rule branches on
(logits, draft distributions, per-slot decode data of wide batches) are drawn from a NumPy generator
seeded by an integer Hypothesis draws, which keeps every example within Hypothesis' size limit at a
vocabulary of 262,144 or a batch of 256 requests.

Failing cases are minimised by ``harness.shrink`` (delta debugging over the case's steps, requests
and drafts, judged on the same fingerprint), not by Hypothesis' shrinker: a check judges every case
it draws, so one failure must not stop the others, and the minimal case must still fail the way the
original did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

__all__ = ["draw"]


def _run(strategy: st.SearchStrategy, run_seed: int, examples: int) -> list[Any]:
    drawn: list[Any] = []

    @seed(run_seed)
    @settings(
        database=None,
        max_examples=examples,
        phases=[Phase.generate],
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(strategy)
    def collect(example):
        drawn.append(example)

    collect()
    return drawn


def draw(strategy: st.SearchStrategy, case_seed: int, count: int) -> Iterator[Any]:
    """``count`` examples of ``strategy``, the same for the same ``case_seed`` on every run: the
    simplest example first, then each from its own Hypothesis run seeded by ``(case_seed, i)``
    (within one run Hypothesis mutates earlier examples, which would repeat markers and batches).
    Lazily: a check meets the engine after its first case is drawn, not after all of them."""
    yield _run(strategy, case_seed, 1)[0]
    for i in range(1, count):
        yield _run(strategy, hash((case_seed, i)) & (2**63 - 1), 2)[-1]
