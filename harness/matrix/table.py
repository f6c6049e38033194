"""What the matrix shows, gathered once for both its pages (``matrix.md``, ``index.html``): per row, the engine's
verdict on each conformance class, the findings behind a failing class, and the files a reader follows (the run's
``summary.md``, each finding's minimal case and proof patch).

A cell's verdict is the class verdict of the run's own reports (``specconform.harness.reports.verdicts``), named as a
reader asks: CONFORMS, CONFORMS WHERE JUDGED (no failure, some requirements not judged), FAILS (a failure no
expectation covers), FAILS (known) (every failure expected: a published finding), BLOCKED, NOT JUDGED, not applicable
(wholly outside the engine's contract) and not claimed (the profile does not claim the class).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import findings, spec
from .runs import Row

LABELS = {
    "fails": "FAILS",
    "known failure": "FAILS (known)",
    "blocked": "BLOCKED",
    "not judged": "NOT JUDGED",
    "judged in part": "CONFORMS WHERE JUDGED",
    "conforms": "CONFORMS",
    "not applicable": "not applicable",
    "not claimed": "not claimed",
}
NO_RECORD = "—"  # the run has no record of the class
# the order a sorted column shows them in: the worst first
RANK = {label: i for i, label in enumerate([*LABELS.values(), NO_RECORD])}


@dataclass(frozen=True)
class FindingLink:
    """A finding as a cell shows it: its name, and its minimal case (a path relative to the run folder) and proof
    patch (relative to the project root), where it has them."""

    name: str
    expected: bool
    reproduction: str | None
    proof: str | None


@dataclass(frozen=True)
class Cell:
    cls: str
    label: str
    why: str
    findings: tuple[FindingLink, ...] = ()

    @property
    def rank(self) -> int:
        return RANK[self.label]


@dataclass(frozen=True)
class Line:
    """One row of the matrix as its pages show it: the row, the engine's verdict and one cell per class."""

    row: Row
    verdict: str
    headline: str
    findings: int
    cells: dict[str, Cell]


def _finding_class(finding: findings.Finding, registry: dict[str, spec.Requirement]) -> str:
    """The class a finding counts in: its requirement's (the first sighting's check's class for a requirement the
    registry no longer names)."""
    found = registry.get(finding.requirement)
    return found.cls if found else finding.first[0].cls


def finding_link(finding: findings.Finding) -> FindingLink:
    """A finding as a cell shows it: its first sighting's minimal case and proof."""
    record, rid = finding.first
    result = record.results[rid]
    return FindingLink(finding.title, finding.expected, result.reproduction or None, result.expectation_proof or None)


def line(row: Row, uncovered: list[str]) -> Line:
    """One row's verdict and cells (``uncovered``: the requirements no check covers)."""
    verdict = row.verdict(uncovered)
    registry = spec.load_registry()
    found = row.findings()
    per_class: dict[str, list[FindingLink]] = {}
    for finding in found:
        per_class.setdefault(_finding_class(finding, registry), []).append(finding_link(finding))
    cells = {
        c.cls: Cell(
            c.cls, LABELS[c.verdict], c.why, () if c.status == "NOT_CLAIMED" else tuple(per_class.get(c.cls, ()))
        )
        for c in verdict.classes
    }
    return Line(row, verdict.verdict, verdict.headline.replace("**", ""), len(found), cells)


def columns(lines: list[Line]) -> list[str]:
    """The classes any row has a cell for, in the order of the specification (``spec.classes``)."""
    present = {cls for item in lines for cls in item.cells}
    return [cls for cls in spec.classes() if cls in present] + sorted(present - set(spec.classes()))


def cell(item: Line, cls: str) -> Cell:
    """The row's cell of class ``cls``: ``NO_RECORD`` where its run has none."""
    return item.cells.get(cls) or Cell(cls, NO_RECORD, "the run has no record of this class")


def relative(target: Path, start: Path) -> str:
    """``target`` as a link from a page in folder ``start`` (POSIX separators)."""
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


@dataclass(frozen=True)
class Links:
    """The links of a page written to folder ``out``: each to a file that exists (``None`` where the file is not
    there, so that no link of the page leads nowhere). ``root``: the project root, which proof paths are relative
    to."""

    out: Path
    root: Path

    def _to(self, target: Path) -> str | None:
        return relative(target, self.out) if target.is_file() else None

    def summary(self, row: Row) -> str | None:
        return self._to(row.run / "summary.md")

    def html(self, row: Row) -> str | None:
        return self._to(row.run / "report.html")

    def readme(self, row: Row) -> str | None:
        return self._to(row.run.parent / "README.md")

    def reproduction(self, row: Row, finding: FindingLink) -> str | None:
        return self._to(row.run / finding.reproduction) if finding.reproduction else None

    def proof(self, finding: FindingLink) -> str | None:
        return self._to(self.root / finding.proof) if finding.proof else None
