"""Reports rendered from the JSON-lines record of a run: ``summary.md``, ``junit.xml``, a self-contained
``report.html``, the cross-engine summary and the difference between two runs.

One module per concern: ``text`` (the phrases every report shares), ``verdicts`` (per class, per engine, per
run), ``tables`` and ``summary`` (Markdown), ``junit_xml``, ``html_page`` (the template ``templates/report.html.j2``)
with ``svg`` (its plots), ``run_diff``, and ``run_folder`` (writes the three reports of a run). This face
re-exports what the rest of the harness uses, the console and the history included.
"""

from .html_page import html_report
from .junit_xml import junit
from .run_diff import bad_results, diff
from .run_folder import write_all, write_html
from .summary import engines_summary, markdown
from .text import ORDER, count_of, evidence_of, first_line, status_counts_text
from .verdicts import engine_verdicts, requirement_status, run_verdict

__all__ = [
    "ORDER",
    "bad_results",
    "count_of",
    "evidence_of",
    "first_line",
    "status_counts_text",
    "diff",
    "engine_verdicts",
    "engines_summary",
    "html_report",
    "junit",
    "markdown",
    "requirement_status",
    "run_verdict",
    "write_all",
    "write_html",
]
