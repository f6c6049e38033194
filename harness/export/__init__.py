"""``specconform export FINDING --pytest``: a finding as one standalone pytest file in the engine's own idiom.

An engine team attaches the file to a bug report and keeps it in its own suite: it builds the minimal case with
literal lists, drives the engine through its own API (the adapter's calls written out, ``idioms``) and asserts what
the specification's oracle expects: the forced rows of a thinking-budget scenario (``budget``), or the tokens and
counts of a rejection case (``rejection``). ``source`` finds the reproduction a finding names; ``render`` writes
the file.

What is exported: thinking-budget scenarios (every idiom, within what its driver states: ``MULTI_TOKEN_MARKERS``,
``DRAFTS``) and exact rejection cases (idioms with a ``REJECTION_DRIVER``). Statistical entries, whole-check and API
reproductions are usage errors naming what is exported.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from ..core import UsageError
from .budget import budget_case
from .idioms import idiom_for
from .rejection import rejection_case
from .render import render_budget, render_rejection, slug
from .source import Source, resolve


def _budget_file(idiom: ModuleType, source: Source, label: str) -> str:
    cases = [budget_case(scenario) for scenario in source.document["scenarios"]]
    for case in cases:
        if case.longest_marker > 1 and not idiom.MULTI_TOKEN_MARKERS:
            raise UsageError(f"{idiom.NAME}'s driver holds one token per marker; {case.name!r} has a longer one")
        if case.has_drafts and not idiom.DRAFTS:
            raise UsageError(f"{idiom.NAME}'s driver states no steps with drafts; {case.name!r} has some")
    return render_budget(idiom, cases, source.document, label)


def _rejection_file(idiom: ModuleType, source: Source, label: str) -> str:
    statistical = [group for group in ("sampled_drafts", "acceptance_rule") if source.document.get(group)]
    if statistical:
        raise UsageError(f"{source.path}: statistical entries ({', '.join(statistical)}) are not exported yet")
    if not hasattr(idiom, "REJECTION_DRIVER"):
        raise UsageError(f"{idiom.NAME}'s idiom exports thinking-budget scenarios only; this is a rejection case")
    cases = [rejection_case(entry) for entry in source.document["exact"]]
    return render_rejection(idiom, cases, source.document, label)


def export_pytest(finding: str, selector: str = "", check: str = "", engine: str = "") -> tuple[str, Source, str]:
    """``(the file's text, its source, the idiom's name)`` for ``finding`` (a reproduction file, or a run folder
    with ``selector``); ``engine`` chooses the idiom where the reproduction's own engine has none."""
    source = resolve(finding, selector, check)
    idiom = idiom_for(engine or source.engine)
    kind = source.document["kind"]
    label = str(source.path)
    if kind == "thinking-budget":
        return _budget_file(idiom, source, label), source, idiom.NAME
    if kind == "rejection":
        return _rejection_file(idiom, source, label), source, idiom.NAME
    raise UsageError(
        f"{source.path} is a {kind!r} reproduction (a whole check or API requests re-run): only thinking-budget "
        "scenarios and exact rejection cases export as a test"
    )


def default_name(source: Source, idiom_name: str) -> Path:
    """``test_<idiom>_<requirement>.py`` in the current folder."""
    what = source.document.get("requirement") or source.path.stem
    return Path(f"test_{slug(idiom_name)}_{slug(what)}.py")
