"""Trends across runs: conformance (new failures and fixes per requirement) and performance (each bench
shape's time, its ratio to the read-once floor and to each peer, with the spread), as Markdown and as a
self-contained HTML page with inline SVG plots.

``specconform history DIR...`` finds every conformance run (a folder with ``results.jsonl``) and every
bench run (``bench-*.json``) under the folders it is given. Runs are ordered by their name (the
``YYYYMMDD-HHMMSS`` that ``specconform run`` and ``specconform bench`` give them). Conformance runs are
grouped by engine, bench runs by GPU: times are comparable on one GPU only.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import benchdiff, reports, runner
from .core import SEVERITY
from .schemas import RunRecord

_STAMP = re.compile(r"\d{8}-\d{6}(?:-\d+)?")
_COLOURS = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#B279A2", "#72B7B2", "#9D755D", "#999999"]


@dataclass
class Run:
    """One conformance run of one engine: where it is and its records."""

    path: Path
    engine: str
    records: list[RunRecord]

    @property
    def label(self) -> str:
        return _stamp(self.path)


@dataclass
class BenchRun:
    path: Path
    results: dict

    @property
    def label(self) -> str:
        return _stamp(self.path)

    @property
    def gpu(self) -> str:
        return self.results["environment"].get("gpu", "unknown GPU")


def _stamp(path: Path) -> str:
    found = _STAMP.findall(path.as_posix())
    return found[-1] if found else path.as_posix()


def find(paths) -> tuple[list[Run], list[BenchRun]]:
    """Every conformance run (split by engine) and bench run under ``paths``, in time order. A path that
    is not there is an error naming it."""
    runs, benches = [], []
    for given in paths:
        root = Path(given)
        if not root.exists():
            raise FileNotFoundError(f"{given!r} does not exist (history reads run folders and bench-*.json files)")
        found = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in found:
            if path.name == "results.jsonl":
                records = runner.read_records(path)
                for engine in sorted({r.engine for r in records}):
                    runs.append(Run(path.parent, engine, [r for r in records if r.engine == engine]))
            elif path.name.startswith("bench-") and path.suffix == ".json":
                benches.append(BenchRun(path, benchdiff.load(path)))
    return sorted(runs, key=lambda r: (r.label, str(r.path))), sorted(benches, key=lambda b: (b.label, str(b.path)))


# ---------------------------------------------------------------------------------------------
# Conformance


def _requirement_statuses(run: Run) -> dict[str, str]:
    return {rid: status for (_, rid), (status, _) in reports.requirement_status(run.records).items()}


def _bad(run: Run) -> dict[tuple[str, str], bool]:
    """``{(check, requirement or "check"): unexpected}`` for every failure of the run."""
    return {(r.check, rid): rid in r.unexpected for (_, _, rid), r in reports.bad_results(run.records).items()}


def conformance_markdown(runs: list[Run]) -> list[str]:
    lines = ["## Conformance", ""]
    if not runs:
        return lines + ["No conformance run found.", ""]
    for engine in sorted({r.engine for r in runs}):
        mine = [r for r in runs if r.engine == engine]
        lines += [f"### {engine}", "", "| run | verdict | checks by status | unexpected failures | known failures |"]
        lines.append("| --- | --- | --- | --- | --- |")
        for run in mine:
            (verdict,) = reports.engine_verdicts(run.records)
            lines.append(
                f"| {run.label} | {verdict.verdict} | {reports.status_counts_text(verdict.counts)} | "
                f"{len(verdict.unexpected)} | {len(verdict.known)} |"
            )
        lines.append("")
        if len(mine) == 1:
            lines += [f"One run ({mine[0].path}): no trend yet.", ""]
            continue
        for before, after in zip(mine, mine[1:]):
            old, new = _bad(before), _bad(after)
            checks_after = {r.check for r in after.records}
            appeared = [key for key in new if key not in old]
            fixed = [key for key in old if key not in new and key[0] in checks_after]
            lines.append(f"{before.label} → {after.label}: {len(appeared)} new failures, {len(fixed)} fixes")
            lines += [
                f"- new: `{check}` {rid}{' (unexpected)' if new[(check, rid)] else ' (expected)'}"
                for check, rid in appeared
            ]
            lines += [f"- fixed: `{check}` {rid}" for check, rid in fixed]
            lines.append("")
        statuses = [_requirement_statuses(run) for run in mine]
        changed = sorted(
            {rid for s in statuses for rid in s if len({s.get(rid, "-") for s in statuses}) > 1},
            key=lambda rid: (min(SEVERITY.get(s.get(rid, ""), 9) for s in statuses), rid),
        )
        lines.append(f"Requirements whose status changed ({len(changed)}):")
        lines.append("")
        if changed:
            lines.append("| requirement | " + " | ".join(run.label for run in mine) + " |")
            lines.append("| --- |" + " --- |" * len(mine))
            lines += [f"| {rid} | " + " | ".join(s.get(rid, "-") for s in statuses) + " |" for rid in changed]
            lines.append("")
    return lines


# ---------------------------------------------------------------------------------------------
# Performance


def _ratios(row: dict) -> dict[str, float]:
    """What ``specconform bench`` stored as ratios: ``X_over_ours`` (graph against graph) and
    ``X_over_ours_eager`` (eager against eager), ``python_over_ours`` and the like, and ours over the floor."""
    return {
        key: value
        for key, value in row.items()
        if "_over_" in key and isinstance(value, float) and not key.startswith("ours_eager_over")
    }


GRAPH_PEERS = ("vllm_v2",)  # timed as CUDA-graph replays beside ours (harness/bench/peers.py GRAPHED)


def _peers(row: dict) -> list[str]:
    """The implementations timed beside ours on a rejection shape (``X_ms`` medians)."""
    return [
        key[: -len("_ms")]
        for key, value in row.items()
        if key.endswith("_ms")
        and isinstance(value, float)
        and not key.startswith(("ours", "floor"))
        and not key.endswith(("_eager_ms", "floor_ms"))  # floor_ms, one_pass_floor_ms: no implementation
    ]


def _peer_point(row: dict | None, peer: str):
    """``X / ours`` like with like: graph replay against graph replay for vLLM V2, eager against eager for
    the others; ``None`` where the run did not time both that way (runs before ``ours_eager`` existed)."""
    basis = "ours_ms" if peer in GRAPH_PEERS else "ours_eager_ms"
    if row is None or f"{peer}_ms" not in row or basis not in row:
        return None
    return (row[f"{peer}_ms"] / row[basis], None, None)


def _rows(results: dict) -> dict[str, dict]:
    return {benchdiff.shape_name(r): r for r in [*results.get("rejection", []), *results.get("budget", [])]}


def _series_cell(s: benchdiff.Series | None) -> str:
    if s is None:
        return "-"
    spread = f" (spread {s.spread:.2f})" if s.spread is not None else ""
    return f"{s.median:.4g} {s.unit}{spread}"


def perf_markdown(benches: list[BenchRun]) -> list[str]:
    lines = ["## Performance", ""]
    if not benches:
        return lines + ["No bench run found.", ""]
    for gpu in sorted({b.gpu for b in benches}):
        mine = [b for b in benches if b.gpu == gpu]
        lines += [f"### {gpu}", "", "| run | torch | triton | vLLM | copy TB/s | peers measured |"]
        lines.append("| --- | --- | --- | --- | --- | --- |")
        for b in mine:
            env = b.results["environment"]
            peers = [name for name, state in b.results.get("peers", {}).items() if state == "measured"]
            lines.append(
                f"| {b.label} | {env.get('torch', '-')} | {env.get('triton', '-')} | {env.get('vllm', '-')} | "
                f"{env.get('copy_tb_per_s', float('nan')):.2f} | {', '.join(peers) or '-'} |"
            )
        lines += [
            "",
            "Ours (`ours_ms`, `ours_us`) per shape and run: the median, with the spread (largest / smallest repeat) "
            "where the run repeated its timings. Runs without a spread predate repeated timing; in them the "
            "rejection sampler was a CUDA-graph replay for B ≤ 64 only (eager above), a graph replay since.",
            "",
        ]
        all_series = [benchdiff.series(b.results) for b in mine]
        all_rows = [_rows(b.results) for b in mine]
        shapes = list(dict.fromkeys(shape for s in all_series for shape in s))
        lines.append("| shape | " + " | ".join(b.label for b in mine) + " |")
        lines.append("| --- |" + " --- |" * len(mine))
        for shape in shapes:
            lines.append(
                f"| {shape} | " + " | ".join(_series_cell(s.get(shape, {}).get("ours")) for s in all_series) + " |"
            )
        lines += [
            "",
            "Ratios per shape and run (`ours_over_floor`: ours / read-once floor; `X_over_ours`: X / ours).",
            "",
        ]
        lines.append("| shape | " + " | ".join(b.label for b in mine) + " |")
        lines.append("| --- |" + " --- |" * len(mine))
        for shape in shapes:
            cells = [
                "; ".join(f"{key} {value:.2f}" for key, value in _ratios(rows[shape]).items()) if shape in rows else "-"
                for rows in all_rows
            ]
            lines.append(f"| {shape} | " + " | ".join(cells) + " |")
        lines.append("")
        for before, after in zip(mine, mine[1:]):
            text, regressions = benchdiff.markdown(before.path, after.path)
            first = text.splitlines()[0].removeprefix("# specconform bench-diff: ")
            lines.append(
                f"- {before.label} → {after.label}: {first} (`specconform bench-diff {before.path} {after.path}`)"
            )
        lines.append("")
    return lines


def markdown(runs: list[Run], benches: list[BenchRun]) -> str:
    lines = [
        "# specconform history",
        "",
        f"{len(runs)} engine runs in {len({r.path for r in runs})} conformance run folders, "
        f"{len({r.engine for r in runs})} engines; "
        f"{len(benches)} bench runs on {len({b.gpu for b in benches})} GPUs.",
        "",
    ]
    return "\n".join(lines + conformance_markdown(runs) + perf_markdown(benches)).rstrip() + "\n"


# ---------------------------------------------------------------------------------------------
# HTML with inline SVG trend plots


# a measurement over the runs: (median, smallest repeat, largest repeat), the repeats None where not known
Point = tuple[float, float | None, float | None]


def trend_plot(title: str, labels: list[str], series: dict[str, list[Point | None]], unit: str) -> str:
    """A line per series over the runs (x: ``labels``), log y, with a bar from the smallest to the largest
    repeat where known: each point is ``(median, low, high)`` (low and high None where the repeats are not known)
    or ``None`` (not measured in that run)."""
    width, height, left, top, bottom = 680, 300, 60, 24, 80
    values = [v for points in series.values() for p in points if p for v in p if v and v > 0]
    if not values:
        return ""
    lo, hi = math.log10(min(values)), math.log10(max(values))
    lo, hi = (lo - 0.1, hi + 0.1) if hi - lo > 1e-9 else (lo - 0.5, hi + 0.5)
    n = len(labels)

    def x(i: int) -> float:
        return left + (i + 0.5) * (width - left - 170) / n

    def y(v: float) -> float:
        return top + (1 - (math.log10(v) - lo) / (hi - lo)) * (height - top - bottom)

    parts = [
        f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)} ({html.escape(unit)}, log scale)</text>',
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#999"/>',
    ]
    mantissas = (1, 2, 5) if hi - lo > 1 else (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)  # a narrow range needs more ticks
    for exponent in range(math.floor(lo), math.ceil(hi) + 1):
        for mantissa in mantissas:
            v = mantissa * 10.0**exponent
            if lo <= math.log10(v) <= hi:
                parts.append(
                    f'<line x1="{left}" x2="{width - 170}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
                    f'<text x="2" y="{y(v) + 3:.1f}" font-size="9">{v:g}</text>'
                )
    for i, label in enumerate(labels):
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - bottom + 12}" font-size="9" '
            f'transform="rotate(30 {x(i):.1f} {height - bottom + 12})">{html.escape(label)}</text>'
        )
    for k, (name, points) in enumerate(series.items()):
        colour = _COLOURS[k % len(_COLOURS)]
        path = " ".join(f"{x(i):.1f},{y(p[0]):.1f}" for i, p in enumerate(points) if p and p[0] > 0)
        parts.append(f'<polyline fill="none" stroke="{colour}" points="{path}"/>')
        for i, p in enumerate(points):
            if not p or p[0] <= 0:
                continue
            median, low, high = p
            tip = f"{name} {labels[i]}: {median:.4g} {unit}" + (f" (repeats {low:.4g}..{high:.4g})" if low else "")
            if low and high:
                parts.append(
                    f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(high):.1f}" y2="{y(low):.1f}" stroke="{colour}"/>'
                )
            parts.append(
                f'<circle cx="{x(i):.1f}" cy="{y(median):.1f}" r="3" fill="{colour}">'
                f"<title>{html.escape(tip)}</title></circle>"
            )
        parts.append(
            f'<text x="{width - 165}" y="{top + 12 * k + 8}" font-size="10" fill="{colour}">{html.escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _point(s: benchdiff.Series | None) -> Point | None:
    if s is None:
        return None
    return (s.median, min(s.repeats), max(s.repeats)) if s.repeats else (s.median, None, None)


def perf_plots(benches: list[BenchRun]) -> list[str]:
    """Per GPU: ours over the runs for the batch sweep (time, and ratio to the floor), the budget step,
    and each peer's ratio to ours."""
    out = []
    for gpu in sorted({b.gpu for b in benches}):
        mine = [b for b in benches if b.gpu == gpu]
        labels = [b.label for b in mine]
        all_series = [benchdiff.series(b.results) for b in mine]
        all_rows = [_rows(b.results) for b in mine]
        batch = list(dict.fromkeys(s for rows in all_rows for s, r in rows.items() if r["family"] == "batch"))
        budget = list(dict.fromkeys(s for rows in all_rows for s, r in rows.items() if r["family"] == "budget"))
        out.append(f"<h3>{html.escape(gpu)}</h3>")
        out.append(
            trend_plot(
                f"{gpu}: rejection sampler, ours, K = 4, by batch size",
                labels,
                {shape.split(" ")[1]: [_point(s.get(shape, {}).get("ours")) for s in all_series] for shape in batch},
                "ms",
            )
        )
        out.append(
            trend_plot(
                f"{gpu}: rejection sampler, ours / read-once floor",
                labels,
                {
                    shape.split(" ")[1]: [
                        (rows[shape]["ours_over_floor"], None, None) if shape in rows else None for rows in all_rows
                    ]
                    for shape in batch
                },
                "ratio",
            )
        )
        peers = list(dict.fromkeys(p for rows in all_rows for s in batch if s in rows for p in _peers(rows[s])))
        for peer in peers:
            out.append(
                trend_plot(
                    f"{gpu}: rejection, {peer} / ours ({'graph' if peer in GRAPH_PEERS else 'eager'} vs the same)",
                    labels,
                    {shape.split(" ")[1]: [_peer_point(rows.get(shape), peer) for rows in all_rows] for shape in batch},
                    "ratio",
                )
            )
        out.append(
            trend_plot(
                f"{gpu}: budget step, ours, by batch size and K",
                labels,
                {
                    " ".join(shape.split(" ")[1:]): [_point(s.get(shape, {}).get("ours")) for s in all_series]
                    for shape in budget
                },
                "µs",
            )
        )
    return out


def _markdown_to_html(text: str) -> str:
    """The Markdown this module writes (headings, tables, lists, paragraphs) as HTML."""
    out: list[str] = []
    table: list[str] = []

    def flush():
        if table:
            rows = [row for row in table if not set(row.replace("|", "").strip()) <= {"-", " "}]
            cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
            body = "".join(
                "<tr>"
                + "".join(f"<{'th' if i == 0 else 'td'}>{_inline(c)}</{'th' if i == 0 else 'td'}>" for c in row)
                + "</tr>"
                for i, row in enumerate(cells)
            )
            out.append(f"<table>{body}</table>")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("- "):
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "".join(out)


def _inline(text: str) -> str:
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def html_page(runs: list[Run], benches: list[BenchRun]) -> str:
    """A self-contained page: the perf trend plots first, then everything the Markdown says."""
    plots = perf_plots(benches)
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform history</title><style>"
        "body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;margin-bottom:12px}"
        "td,th{border:1px solid #ccc;padding:3px;font-size:12px;vertical-align:top}</style></head><body>"
        "<h1>specconform history</h1><h2>Performance trends</h2>"
        "<p>Points are medians; bars join the smallest and largest repeat of a run.</p>"
        + "".join(plots)
        + _markdown_to_html(markdown(runs, benches).split("\n", 1)[1])
        + "</body></html>\n"
    )


def write(paths, out_dir: Path) -> tuple[Path, Path]:
    """Write ``history.md`` and ``history.html`` into ``out_dir`` from the runs under ``paths``."""
    runs, benches = find(paths)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, page = out_dir / "history.md", out_dir / "history.html"
    md.write_text(markdown(runs, benches))
    page.write_text(html_page(runs, benches))
    return md, page
