"""The order of the requirements: what each one builds on (``builds_on`` in ``specs/requirements.yaml``).

At the bottom are the requirements everything else assumes (the prefix invariant and the count, the layout,
zero-draft rows, greedy verification and the acceptance rule, marker detection and the forcing rule); above them
the ones that combine them (forced rows in the sampler, the distribution of every position, the metrics, the batch
operations, speculative budgets). A failure whose minimal case also fails a requirement the failing one builds on
belongs to that lower requirement (RUN-FINDING-1), and findings are shown lowest first, so the first one a reader
meets is the likeliest root cause.

The order is checked when it is loaded: every id it names is a requirement, and it has no cycle."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from . import spec


@cache
def checked_order() -> dict[str, tuple[str, ...]]:
    """``{requirement: the requirements it names in builds_on}``, checked: a ``ValueError`` names an unknown id or
    a cycle."""
    registry = spec.load_registry()
    order = {rid: requirement.builds_on for rid, requirement in registry.items()}
    for rid, below in order.items():
        if unknown := [other for other in below if other not in registry]:
            raise ValueError(f"specs/requirements.yaml: {rid} builds_on unknown requirement(s) {unknown}")
    state: dict[str, str] = {}  # rid -> "open" while its ancestors are walked, "done" after

    def walk(rid: str, path: tuple[str, ...]) -> None:
        if state.get(rid) == "done":
            return
        if state.get(rid) == "open":
            cycle = path[path.index(rid) :] + (rid,)
            raise ValueError(f"specs/requirements.yaml: builds_on has a cycle: {' -> '.join(cycle)}")
        state[rid] = "open"
        for other in order[rid]:
            walk(other, (*path, rid))
        state[rid] = "done"

    for rid in order:
        walk(rid, ())
    return order


def builds_on(rid: str) -> tuple[str, ...]:
    """The requirements ``rid`` names directly (none for an id outside the registry)."""
    return checked_order().get(rid, ())


@cache
def below(rid: str) -> frozenset[str]:
    """Every requirement ``rid`` builds on, directly or through others."""
    found: set[str] = set()
    for other in builds_on(rid):
        found |= {other} | below(other)
    return frozenset(found)


@cache
def level(rid: str) -> int:
    """0 for a requirement that builds on none, else one more than the highest it builds on."""
    return 1 + max((level(other) for other in builds_on(rid)), default=-1)


@cache
def _registry_index() -> dict[str, int]:
    return {rid: index for index, rid in enumerate(spec.load_registry())}


def sort_key(rid: str) -> tuple[int, int, str]:
    """Lowest first, then in the registry's order (ids outside it last)."""
    return level(rid), _registry_index().get(rid, len(_registry_index())), rid


def lowest(rids: Iterable[str]) -> list[str]:
    """Those of ``rids`` that build on none of the others (in ``sort_key`` order): where a minimal case fails
    several requirements, the failure belongs to these."""
    rids = set(rids)
    return sorted((rid for rid in rids if not below(rid) & rids), key=sort_key)


def render_markdown() -> str:
    """The order as the spec documents show it: one line per level, each requirement with what it builds on."""
    registry = spec.load_registry()
    levels: dict[int, list[str]] = {}
    for rid in registry:
        levels.setdefault(level(rid), []).append(rid)
    lines = [
        "<!-- generated from specs/requirements.yaml by `specconform list order`; "
        "tests/unit/test_requirement_order.py keeps it in step -->",
        "",
        "| level | requirement | class | builds on |",
        "| --- | --- | --- | --- |",
    ]
    for number in sorted(levels):
        for rid in sorted(levels[number], key=sort_key):
            named = ", ".join(builds_on(rid)) or "—"
            lines.append(f"| {number} | {rid} | `{registry[rid].cls}` | {named} |")
    return "\n".join(lines) + "\n"
