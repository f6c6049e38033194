"""``index.html``: the matrix as one self-contained page (the Jinja2 template ``templates/matrix.html.j2``), sortable
by any column and filterable by text, engine and verdict with a little inline script; no server, no external asset.
Every link it holds leads to a file of the repository, relative to the page."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, StrictUndefined

from .lineage import History, summary_line
from .markdown import UNJUDGED
from .runs import release_key
from .table import LABELS, NO_RECORD, Line, Links, cell, columns, finding_link

_ENVIRONMENT = Environment(
    loader=PackageLoader("specconform.harness.matrix"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

_CSS_CLASS = {
    "FAILS": "fails",
    "FAILS (known)": "known",
    "BLOCKED": "blocked",
    "NOT JUDGED": "unjudged",
    "CONFORMS WHERE JUDGED": "part",
    "CONFORMS": "conforms",
    "not applicable": "na",
    "not claimed": "unclaimed",
    NO_RECORD: "none",
}


def _cell(item: Line, cls: str, links: Links) -> dict:
    shown = cell(item, cls)
    row = item.row
    return {
        "label": shown.label,
        "css": _CSS_CLASS[shown.label],
        "rank": shown.rank,
        "title": f"{shown.why} (run {row.stamp})",
        "href": links.summary(row) if shown.label not in UNJUDGED else None,
        "findings": [
            {
                "name": f.name,
                "expected": f.expected,
                "href": links.reproduction(row, f) or links.summary(row),
                "proof": links.proof(f),
            }
            for f in shown.findings
        ],
    }


def _rows(lines: list[Line], links: Links, classes: list[str]) -> list[dict]:
    order = {v: i for i, v in enumerate(sorted({x.row.version for x in lines}, key=release_key))}
    out = []
    for item in lines:
        row = item.row
        cells = [_cell(item, cls, links) for cls in classes]
        out.append(
            {
                "product": row.product,
                "version": row.version,
                "version_key": order[row.version],
                "variant": row.variant,
                "runner": row.runner,
                "gpu": row.gpu,
                "stamp": row.stamp,
                "date": row.date,
                "earlier": [p.name for p in row.earlier],
                "summary": links.summary(row),
                "html": links.html(row),
                "readme": links.readme(row),
                "folder": row.folder,
                "verdict": item.verdict,
                "headline": item.headline,
                "findings": item.findings,
                "verdicts": "|" + "|".join(sorted({c["label"] for c in cells})) + "|",
                "cells": cells,
            }
        )
    return out


def _histories(items: list[History], links: Links) -> list[dict]:
    out = []
    for item in items:
        product, variant, runner = item.series
        rows = {row.version: row for row in item.rows}
        lineages = []
        for lineage in item.lineages:
            version, finding = list(lineage.sightings.items())[-1]
            shown = finding_link(finding)
            lineages.append(
                {
                    "name": lineage.name,
                    "first_seen": lineage.first_seen,
                    "fixed_in": ", ".join(lineage.fixed_in),
                    "sighted": ", ".join(lineage.sightings),
                    "href": links.reproduction(rows[version], shown) or links.summary(rows[version]),
                    "proof": links.proof(shown),
                }
            )
        out.append(
            {"product": product, "variant": variant, "runner": runner, "line": summary_line(item), "lineages": lineages}
        )
    return out


def page(lines: list[Line], items: list[History], links: Links, engines_dir: str, command: str) -> str:
    """The whole ``index.html``."""
    classes = columns(lines)
    return _ENVIRONMENT.get_template("matrix.html.j2").render(
        command=command,
        engines_dir=engines_dir,
        classes=classes,
        rows=_rows(lines, links, classes),
        products=sorted({x.row.product for x in lines}),
        labels=list(LABELS.values()),
        histories=_histories(items, links),
        runs=len({x.row.run for x in lines}),
    )
