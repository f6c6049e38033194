"""The three reports of a run folder: ``summary.md``, ``junit.xml`` and ``report.html`` (``write_html`` alone renders
the page on demand, for a published run that keeps only its data)."""

from __future__ import annotations

import os
from pathlib import Path

from .. import spec
from ..schemas import RunRecord
from .html_page import html_report
from .junit_xml import junit
from .summary import markdown


def write_all(
    run_dir: Path, records: list[RunRecord], uncovered: list[str], missing: list[str] = (), zoo_table=None
) -> None:
    (run_dir / "summary.md").write_text(markdown(records, uncovered, missing))
    (run_dir / "junit.xml").write_text(junit(records, missing))
    write_html(run_dir / "report.html", records, uncovered, missing, zoo_table)


def write_html(path: Path, records: list[RunRecord], uncovered: list[str], missing: list[str] = (), zoo_table=None) -> None:
    """A run's ``report.html`` written to ``path`` (in its run folder: its links to minimal reproductions are relative
    to it), its links to the specification relative to where it is written."""
    spec_href = Path(os.path.relpath(spec.spec_dir(), path.resolve().parent)).as_posix()
    path.write_text(html_report(records, uncovered, missing, zoo_table, spec_href))
