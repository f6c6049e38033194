"""The self-contained HTML page of a run (``report.html``): the Jinja2 template ``templates/report.html.j2``,
and what it shows gathered here (rows, anchors, colours, the spec text of each requirement cited)."""

from __future__ import annotations

import html
import re

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension
from markupsafe import Markup

from .. import findings, spec
from ..schemas import RunRecord
from .svg import plots_html
from .tables import cell_text, requirement_rows, uncovered_lines
from .text import (
    ORDER,
    check_status_text,
    count_of,
    evidence_of,
    first_line,
    incomplete_lines,
    own_reproduction,
    sorted_records,
    status_counts_text,
    also_failing,
)
from .verdicts import class_cells, not_claimed_line, engine_verdicts, run_verdict

_COLOURS = {
    "PASS": "#d4edda",
    "FAIL": "#f8d7da",
    "ERROR": "#f5c6cb",
    "TIMEOUT": "#f5c6cb",
    "NOT_RUN": "#fde2c8",
    "NOT_CLAIMED": "#e2e3e5",
    "PRECONDITION_FAILED": "#fff3cd",
}


_REQUIREMENT_ITEM = re.compile(r"^- \*\*(?P<id>(?:TB|RS|AC|API|STAT|RUN)-[A-Z]+-\d+)\*\*")


def requirement_texts() -> dict[str, tuple[str, str]]:
    """``{requirement id: (document, its text)}``, the text being the requirement's list item in the
    normative Markdown (``specs/*.md``), continuation lines included."""
    out: dict[str, tuple[str, str]] = {}
    for document in spec.SPEC_DOCUMENTS:
        current = None
        for line in (spec.spec_dir() / document).read_text().splitlines():
            match = _REQUIREMENT_ITEM.match(line)
            if match:
                current = match["id"]
                out[current] = (document, line[2:])
            elif current and line.startswith("  ") and line.strip():
                out[current] = (document, out[current][1] + " " + line.strip())
            else:
                current = None
    return out


class JoinLines(Extension):
    """Joins the lines of an ``.html.j2`` template and drops their indentation before Jinja reads it: the
    template is laid out for its reader, and the page keeps the one line it always had (the published reports
    re-render byte-identical). A space that matters stays inside a line."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if not (name or "").endswith(".html.j2"):
            return source
        return re.sub(r"\n\s*", "", source.rstrip()) + "\n"


def _escape(value) -> Markup:
    """Every ``{{ value }}`` is escaped as ``html.escape`` escapes it (``&#x27;``, ``&quot;``), which wrote the
    published pages; markupsafe's own escaping writes ``&#39;`` and ``&#34;``. Markup passes as it is."""
    return value if hasattr(value, "__html__") else Markup(html.escape(str(value)))


_ENVIRONMENT = Environment(
    loader=PackageLoader("specconform.harness.reports"),
    autoescape=True,
    finalize=_escape,
    keep_trailing_newline=True,
    extensions=[JoinLines],
    undefined=StrictUndefined,
)
_ENVIRONMENT.filters.update(
    md_bold=lambda text: Markup(_md_bold(text)),
    between_bars=lambda values: "|" + "|".join(dict.fromkeys(values)) + "|",
)


def _class_rows(records: list[RunRecord], engines: list[str], cells: dict, classes: list[str]) -> list[dict]:
    """Per class: its cells (an engine's ``ClassVerdict`` or ``None``, from ``class_cells``), the statuses and
    requirements the filters match."""
    registered = spec.classes()
    return [
        {
            "cls": cls,
            "cells": [cells.get((cls, e)) for e in engines],
            "statuses": [cells[(cls, e)].status for e in engines if (cls, e) in cells],
            "requirements": sorted(
                set(registered.get(cls, ())) | {rid for r in records if r.cls == cls for rid in r.results}
            ),
        }
        for cls in classes
    ]


def _requirement_page_rows(records: list[RunRecord], engines: list[str], uncovered: list[str]) -> list[dict]:
    """Per requirement (failures first): its cells as (background, text) and the statuses the filters match."""
    return [
        {
            "rid": rid,
            "level": level,
            "cls": cls,
            "cells": [(_COLOURS.get(c[0], "#fff") if isinstance(c, tuple) else "#fff", cell_text(c)) for c in row],
            "statuses": [c[0] for c in row if isinstance(c, tuple)] or ["NOT_RUN"],
        }
        for rid, level, cls, _, row in requirement_rows(records, engines, uncovered)
    ]


def _check_rows(ordered: list[RunRecord]) -> list[dict]:
    """Per judged check (NOT_CLAIMED ones are summed up per class): its statistic, plots and what the filters
    match."""
    return [
        {
            "record": r,
            "statistic": ""
            if r.p_value is None
            else f"p = {r.p_value:.3g}, α = {r.alpha:.2g}, N = {r.trials}",
            "plots": Markup(plots_html(r)),
            "statuses": [r.status, *(result.status for result in r.results.values())],
            "requirements": list(r.results) or r.requirements,
        }
        for r in ordered
        if r.status != "NOT_CLAIMED"
    ]


def html_report(
    records: list[RunRecord],
    uncovered: list[str],
    missing: list[str] = (),
    zoo_table: list[dict] | None = None,
    spec_href: str = "specs",
) -> str:
    """A self-contained page (no external resource; inline SVG plots, a small inline script for the
    filters): the verdict, the failures with links to their evidence, minimal reproduction and spec
    text, then the class, requirement and check tables, which filter by status, class, engine and
    requirement. ``spec_href`` is the path from the page to ``specs/``. The page is the template
    ``templates/report.html.j2``; this function gathers what it shows."""
    verdicts = engine_verdicts(records, uncovered)
    engines = [v.engine for v in verdicts]
    passed, line = run_verdict(verdicts, list(missing))
    ordered = sorted_records(records)
    index = {id(r): i for i, r in enumerate(ordered)}
    texts = requirement_texts()
    cells = class_cells(records, engines, uncovered)
    classes = sorted({cls for cls, _ in cells})
    cited = sorted({rid for r in records for rid in [*r.requirements, *r.results]} | set(uncovered))
    return _ENVIRONMENT.get_template("report.html.j2").render(
        passed=passed,
        line=line,
        verdicts=verdicts,
        incomplete=[text for text in incomplete_lines(list(missing)) if text],
        found=findings.findings(records),
        errors=[r for r in ordered if r.status in ("ERROR", "TIMEOUT")],
        outside=[(e, rid, why) for e, pairs in sorted(findings.not_applicable(records).items()) for rid, why in pairs],
        passes=[r for v in verdicts for r in v.unexpected_passes],
        zoo_table=zoo_table,
        statuses=list(ORDER),
        classes=classes,
        engines=engines,
        class_rows=_class_rows(records, engines, cells, classes),
        requirement_rows=_requirement_page_rows(records, engines, uncovered),
        uncovered_lines=[text for text in uncovered_lines(uncovered) if text],
        check_rows=_check_rows(ordered),
        spec_items=[(rid, *texts[rid]) for rid in cited if rid in texts],
        spec_href=spec_href,
        anchor=lambda record: index[id(record)],
        colour=lambda status: _COLOURS.get(status, "#fff"),
        also_failing=also_failing,
        check_status=check_status_text,
        count=count_of,
        evidence=evidence_of,
        first_line=first_line,
        not_claimed_line=not_claimed_line,
        own_reproduction=own_reproduction,
        status_counts=status_counts_text,
    )


def _md_bold(text: str) -> str:
    """Markdown ``**bold**`` (as in the verdict lines) as HTML, the rest escaped."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))
