"""The per-class and per-requirement tables of ``summary.md`` and the cross-engine summary, with the rows the HTML
page renders too."""

from __future__ import annotations

from .. import spec
from ..schemas import RunRecord
from .text import ORDER
from .verdicts import NOT_CLAIMED_VERDICT, NOT_JUDGED_VERDICT, class_cells, engine_requirements, requirement_status


def class_table(records: list[RunRecord], engines: list[str], uncovered: list[str] = ()) -> list[str]:
    """Rows: conformance classes, each that an engine claims or has a record of; cells: each engine's verdict on
    the class (the worst status of its requirements, NOT_RUN for one no check of the run reached). A class judged
    in part or not at all is explained below the table."""
    cells = class_cells(records, engines, uncovered)
    lines = ["| class | " + " | ".join(engines) + " |", "| --- |" + " --- |" * len(engines)]
    notes = []
    for cls in sorted({cls for cls, _ in cells}):
        row = []
        for engine in engines:
            verdict = cells.get((cls, engine))
            if verdict is None:
                row.append("-")
                continue
            text = {"conforms": "PASS", NOT_CLAIMED_VERDICT: "NOT_CLAIMED"}.get(verdict.verdict, verdict.status)
            if verdict.verdict in ("judged in part", NOT_JUDGED_VERDICT, "known failure", "blocked"):
                notes.append(f"{engine}, {cls}: {verdict.verdict}: {verdict.why}")
                text += f" ({verdict.verdict}, note {len(notes)})"
            row.append(text)
        lines.append(f"| {cls} | " + " | ".join(row) + " |")
    if notes:
        lines += [""] + [f"{i}. {note.replace('|', '/')}" for i, note in enumerate(notes, 1)]
    return lines


def requirement_rows(records: list[RunRecord], engines: list[str], uncovered: list[str]):
    """``(requirement, level, class, rank, [cell per engine])`` rows, failures first. A cell is
    ``(status, cases, expected)``, ``None`` when no check of the run reached it for that engine, or
    ``"not covered"`` when no check covers it at all."""
    per_req = requirement_status(records)
    expected = {
        (r.engine, rid)
        for r in records
        for rid, result in r.results.items()
        if result.status == "FAIL" and rid not in r.unexpected
    }
    registry = spec.load_registry()
    rows = []
    for rid in engine_requirements(registry):
        cells = []
        for e in engines:
            if rid in uncovered:
                cells.append("not covered")
            elif (e, rid) in per_req:
                status, cases = per_req[(e, rid)]
                cells.append((status, cases, (e, rid) in expected))
            else:
                cells.append(None)
        rank = min((ORDER[c[0]] for c in cells if isinstance(c, tuple)), default=9)
        rows.append((rid, registry[rid].level, registry[rid].cls, rank, cells))
    return sorted(rows, key=lambda row: (row[3], row[0]))


def cell_text(cell) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, str):
        return cell
    status, cases, expected = cell
    if status in ("PASS", "FAIL"):
        return f"{status} ({cases}{', expected' if expected else ''})"
    return status


def requirement_table(records: list[RunRecord], engines: list[str], uncovered: list[str]) -> list[str]:
    """Rows: the requirements an engine is judged on, failures first; cells: each engine's status with
    the cases that exercised it; ``not covered`` where no check covers it, ``-`` where none ran here."""
    lines = ["| requirement | level | " + " | ".join(engines) + " |", "| --- | --- |" + " --- |" * len(engines)]
    for rid, level, _, _, cells in requirement_rows(records, engines, uncovered):
        lines.append(f"| {rid} | {level} | " + " | ".join(cell_text(c) for c in cells) + " |")
    return lines


def uncovered_lines(uncovered: list[str]) -> list[str]:
    runner_reqs = [rid for rid in spec.load_registry() if rid.startswith("RUN-")]
    lines = []
    if uncovered:
        lines += [f"**Not yet covered by any check** ({len(uncovered)}): " + ", ".join(uncovered), ""]
    lines.append(
        f"Runner requirements ({len(runner_reqs)}: {', '.join(runner_reqs)}) bind the runner, not an engine; "
        "the project's own tests judge them."
    )
    permissions = spec.load_permissions().values()
    lines += [
        "",
        "Permissions are no requirements: each is declared in the profile and honoured by the checks "
        "(specs/INTERPRETING.md, RUN-PROFILE-1): " + "; ".join(f"{p.id} ({p.declared_by})" for p in permissions) + ".",
    ]
    return lines
