"""Shared case strategies: one source of generated cases for the project's own property tests and
for the checks that judge engines (``specconform.harness.cases.budget``, ``specconform.harness.cases.rejection``).

Checks draw their cases with ``draw(strategy, seed, count)``: Hypothesis' own generator, run through
``@given`` with an explicit ``@seed``, no example database and only the generate phase, so the same
seed gives the same cases on every machine and every run (``strategy.example()`` is not
deterministic and warns outside an interactive session). Hypothesis starts from the simplest
example and favours boundary values, which is what finds bugs; bulk numbers that no rule branches on
(logits, draft distributions, per-slot decode data of wide batches) are drawn from a NumPy generator
seeded by an integer Hypothesis draws, which keeps every example within Hypothesis' size limit at a
vocabulary of 262,144 or a batch of 256 requests.

Cases are a function of the seed and the harness version alone (its code and the Hypothesis it
pins), not of which modules happen to be imported: Hypothesis (6.131.1 on) also draws, now and
then, constants it collects from the source of every loaded local module, so the pytest plugin, the
mutation harness or one more import would draw other cases for the same ``--seed``.
``without_local_constants`` pins that pool to empty while ``draw`` runs, and the per-case seeds are
derived with SHA-256 rather than Python's ``hash``.

Failing cases are minimised by ``specconform.harness.shrink`` (delta debugging over the case's steps, requests
and drafts, judged on the same fingerprint), not by Hypothesis' shrinker: a check judges every case
it draws, so one failure must not stop the others, and the minimal case must still fail the way the
original did.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

__all__ = ["draw"]


_pinned_lock = threading.Lock()
_pinned_depth = 0
_pinned_saved: Any = None


@contextmanager
def without_local_constants() -> Iterator[None]:
    """Hypothesis with no constants from the loaded modules' source, so that generated cases do not
    depend on what was imported before them.

    Hypothesis 6.131.1 and later (``hypothesis.internal.conjecture.providers``) draw, with a small
    probability, a constant from ``GLOBAL_CONSTANTS`` (fixed per version) or from
    ``_get_local_constants()``: the literals of every module in ``sys.modules`` that is neither the
    standard library, site-packages nor a test file, collected anew whenever ``sys.modules`` grows.
    Importing ``specconform.harness.checks`` or ``specconform.harness.cli``, a mutant that edits a literal, or any new
    module therefore changes the cases a seed draws. No setting turns this off (up to 6.170 at least), so
    ``_get_local_constants`` is replaced by an empty pool while this is active, and ``CONSTANTS_CACHE``
    (which caches the pool's permitted values by constraints only) is cleared on entry and on exit
    so that no value computed with the other pool leaks either way. Re-entrant and thread-safe
    (``tests/conftest.py`` also holds it around each test under the ``ci`` profile). Raises if the
    internals it replaces are missing (a Hypothesis this harness was not checked against) rather than
    drawing import-dependent cases silently."""
    global _pinned_depth, _pinned_saved
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError as exc:  # pragma: no cover - depends on the installed Hypothesis
        raise RuntimeError(_UNSUPPORTED.format(hypothesis.__version__, exc)) from exc
    missing = [name for name in ("_get_local_constants", "CONSTANTS_CACHE") if not hasattr(providers, name)]
    if missing or not isinstance(getattr(providers.HypothesisProvider, "_local_constants", None), cached_property):
        missing = missing or ["HypothesisProvider._local_constants"]
        raise RuntimeError(_UNSUPPORTED.format(hypothesis.__version__, f"missing {', '.join(missing)}"))

    def empty_pool() -> Constants:
        return Constants()

    with _pinned_lock:
        if _pinned_depth == 0:
            _pinned_saved = providers._get_local_constants
            providers._get_local_constants = empty_pool
            providers.CONSTANTS_CACHE.cache.clear()
        _pinned_depth += 1
    try:
        yield
    finally:
        with _pinned_lock:
            _pinned_depth -= 1
            if _pinned_depth == 0:
                providers._get_local_constants = _pinned_saved
                _pinned_saved = None
                providers.CONSTANTS_CACHE.cache.clear()


_UNSUPPORTED = (
    "specconform.harness.cases cannot make generated cases independent of the imported modules with Hypothesis {}"
    " ({}): it needs _get_local_constants, CONSTANTS_CACHE and HypothesisProvider._local_constants of"
    " hypothesis.internal.conjecture.providers, as in Hypothesis 6.131.9 and later (checked up to 6.170.17)"
)


def _case_seed(case_seed: int, index: int) -> int:
    """The seed of case ``index`` of a sequence: the same on every interpreter, Python version and
    platform (``hash`` of a tuple is not promised to be)."""
    digest = hashlib.sha256(f"specconform-case/{case_seed}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & (2**63 - 1)


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

    with without_local_constants():
        collect()
    return drawn


def draw(strategy: st.SearchStrategy, case_seed: int, count: int) -> Iterator[Any]:
    """``count`` examples of ``strategy``, the same for the same ``case_seed`` on every run whatever
    else is imported: the simplest example first, then each from its own Hypothesis run seeded by
    ``_case_seed(case_seed, i)`` (within one run Hypothesis mutates earlier examples, which would
    repeat markers and batches).
    Lazily: a check meets the engine after its first case is drawn, not after all of them."""
    yield _run(strategy, case_seed, 1)[0]
    for i in range(1, count):
        yield _run(strategy, _case_seed(case_seed, i), 2)[-1]
