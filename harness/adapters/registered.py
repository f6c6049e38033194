"""Engines other packages register: an engine team's adapter, installed with its own package, named by a short name.

A package registers its adapter's factory in the entry-point group ``specconform.engines``
(``[project.entry-points."specconform.engines"]`` in its ``pyproject.toml``: ``my-engine = "my_engine.adapter:make"``);
after ``pip install my-engine``, ``specconform run --engine my-engine`` judges the engine the factory returns, as
``--engine my_engine.adapter:make`` would. specconform's own engine names (``oracle``, ``reference``, ``embedded``,
``openai``, ``zoo:...``) come first: a registered name that is one of them is never looked up.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

from ..core import UsageError

GROUP = "specconform.engines"


def engines() -> dict[str, importlib.metadata.EntryPoint]:
    """The registered engines by name, from the installed distributions' entry points (the first of a name wins, as
    ``importlib.metadata`` orders them)."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for entry in importlib.metadata.entry_points(group=GROUP):
        found.setdefault(entry.name, entry)
    return found


def _where(entry: importlib.metadata.EntryPoint) -> str:
    """``entry`` as a user reads it in an error: its name, its value and the distribution that registers it."""
    dist = entry.dist
    by = f" by {dist.name} {dist.version}" if dist is not None else ""
    return f"engine {entry.name!r} (registered{by} in {GROUP} as {entry.value!r})"


def check(entry: importlib.metadata.EntryPoint) -> None:
    """A ``UsageError`` when the module ``entry`` names cannot be found on the Python path; nothing is imported (the
    engine is built only in its own process)."""
    try:
        found = importlib.util.find_spec(entry.module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise UsageError(f"{_where(entry)}: no module named {entry.module!r} on the Python path")


def build(entry: importlib.metadata.EntryPoint):
    """The engine ``entry``'s factory returns, called without arguments; a ``UsageError`` names the entry point, its
    distribution and the cause when it does not load (an import error in the adapter, a factory it lacks)."""
    try:
        factory = entry.load()
    except Exception as exc:  # whatever the adapter's import raises: the user's package, not the harness, is broken
        raise UsageError(f"{_where(entry)} failed to load: {type(exc).__name__}: {exc}") from exc
    if not callable(factory):
        raise UsageError(f"{_where(entry)} is a {type(factory).__name__}, not a factory that returns an engine")
    return factory()
