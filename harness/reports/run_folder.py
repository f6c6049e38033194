"""The three reports of a run folder: ``summary.md``, ``junit.xml`` and ``report.html``."""

from __future__ import annotations

import os
from pathlib import Path

from .. import spec
from .html_page import html_report
from .junit_xml import junit
from .summary import markdown


def write_all(
    run_dir: Path, records: list[dict], uncovered: list[str], missing: list[str] = (), zoo_table=None
) -> None:
    (run_dir / "summary.md").write_text(markdown(records, uncovered, missing))
    (run_dir / "junit.xml").write_text(junit(records, missing))
    spec_href = Path(os.path.relpath(spec.spec_dir(), run_dir)).as_posix()
    (run_dir / "report.html").write_text(html_report(records, uncovered, missing, zoo_table, spec_href))
