"""The matrix of engines, releases and conformance classes (``specconform matrix``), made from the published run
folders: ``reports/matrix/index.html`` (self-contained, sortable and filterable) and ``reports/matrix/matrix.md``.

One module per concern: ``runs`` (the rows: which run of which folder, release, variant and runner), ``lineage``
(each engine's history across releases: findings first seen and fixed, regressions), ``table`` (the cells and the
links both pages share), ``markdown`` and ``page`` (the template ``templates/matrix.html.j2``).
"""

from __future__ import annotations

from pathlib import Path

from .. import checks
from .lineage import histories
from .markdown import COMMAND, markdown
from .page import page
from .runs import rows
from .table import Links, line

__all__ = ["render", "write"]


def _shown(engines_dir: Path, root: Path) -> str:
    """The folder of published runs as the pages name it: relative to the project root where it lies within."""
    try:
        return engines_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return engines_dir.as_posix()


def render(engines_dir: Path, out_dir: Path, root: Path, products_dir: Path | None = None) -> tuple[str, str]:
    """The text of ``matrix.md`` and ``index.html`` made from the run folders under ``engines_dir``, with links
    relative to ``out_dir``; ``root``: the project root (proof patches are named relative to it); ``products_dir``:
    the product records (default: the harness's own)."""
    found = rows(engines_dir, products_dir)
    if not found:
        raise FileNotFoundError(f"no published run (a folder holding results.jsonl) under {str(engines_dir)!r}")
    uncovered = checks.uncovered_requirements()
    lines = [line(row, uncovered) for row in found]
    items = histories(found)
    links = Links(out_dir, root)
    shown = _shown(engines_dir, root)
    return markdown(lines, items, links, shown), page(lines, items, links, shown, COMMAND)


def write(engines_dir: Path, out_dir: Path, root: Path, products_dir: Path | None = None) -> tuple[Path, Path]:
    """Write ``matrix.md`` and ``index.html`` (``render``) into ``out_dir``; returns their paths."""
    md_text, html_text = render(engines_dir, out_dir, root, products_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, html = out_dir / "matrix.md", out_dir / "index.html"
    md.write_text(md_text)
    html.write_text(html_text)
    return md, html
