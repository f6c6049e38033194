"""Engine idioms: how an exported test drives one engine through its own API.

Each module holds the source text the exported file inlines for its engine (``BUDGET_IMPORTS`` and
``BUDGET_DRIVER``, a class ``EngineBudget`` with ``sync_batch``, ``forced_tokens`` and ``update_state`` over plain
lists and dicts; ``REJECTION_IMPORTS`` and ``REJECTION_DRIVER`` where it exports rejection cases) and what its driver
can state (``MULTI_TOKEN_MARKERS``, ``DRAFTS``). The text is its adapter's calls (``harness/products/<product>/*.py``)
written out, so the exported file imports the engine and never specconform's harness. Only engines whose adapters
drive kernel-level code have an idiom; for any other the export is a usage error naming those that have one, never
a guess.
"""

from __future__ import annotations

from types import ModuleType

from ...core import UsageError
from . import reference, sglang, sglang_strict, vllm_mrv2

IDIOMS: tuple[ModuleType, ...] = (reference, vllm_mrv2, sglang, sglang_strict)


def idiom_for(engine: str) -> ModuleType:
    """The idiom of ``engine`` (an engine name as a run records it, or its ``--engine`` spec)."""
    for idiom in IDIOMS:
        if engine in idiom.ENGINES:
            return idiom
    names = ", ".join(idiom.NAME for idiom in IDIOMS)
    if not engine:
        raise UsageError(f"the reproduction names no engine: choose the idiom with --engine ({names})")
    raise UsageError(
        f"no pytest idiom for engine {engine!r}: the engines with one are {names} (--engine chooses one; a zoo "
        "mutant's finding exports against the reference implementation with --engine reference)"
    )
