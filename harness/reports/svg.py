"""The inline SVG plots of the HTML page: target against empirical distributions, accepted lengths against their
closed form, and thinking-budget traces.

Drawn by hand, not with a plotting library (issue 30 asks for one library for every chart): these plots are part
of the published ``report.html`` files, which must re-render byte-identical, and a library's SVG (matplotlib's
paths, ids and metadata) is another document. Moving the three plotters (this one, ``history``'s and ``bench``'s)
to one library is a change of the published pages, to land on its own with the pages re-rendered."""

from __future__ import annotations

from ..schemas import RunRecord

import html
import math


def _bars(title: str, series: dict[str, list[float]], labels: list[str], width=560, height=180) -> str:
    colours = ["#4C78A8", "#F58518", "#54A24B"]
    n = len(labels)
    top = max((v for values in series.values() for v in values if v == v), default=1.0) or 1.0
    group = (width - 40) / max(n, 1)
    bar = group / (len(series) + 1)
    parts = [
        f'<svg width="{width}" height="{height + 40}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>',
    ]
    for s, (name, values) in enumerate(series.items()):
        for i, v in enumerate(values):
            h = 0 if v != v else (v / top) * height
            x = 30 + i * group + s * bar
            parts.append(
                f'<rect x="{x:.1f}" y="{20 + height - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colours[s % 3]}"><title>{html.escape(name)} {labels[i]}: {v:.4f}</title></rect>'
            )
        parts.append(
            f'<text x="{width - 150}" y="{14 + 14 * s}" font-size="11" fill="{colours[s % 3]}">'
            f"{html.escape(name)}</text>"
        )
    for i, label in enumerate(labels):
        if n <= 40 or i % math.ceil(n / 40) == 0:
            parts.append(f'<text x="{30 + i * group:.1f}" y="{height + 34}" font-size="9">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _trace(title: str, values: list[int], budget: int, forced: list[int], width=560, height=160) -> str:
    n = max(len(values), 1)
    top = max(max(values, default=1), budget, 1)
    pts = " ".join(
        f"{30 + i * (width - 40) / n:.1f},{20 + height - v / top * height:.1f}" for i, v in enumerate(values)
    )
    y_budget = 20 + height - budget / top * height
    marks = "".join(
        f'<circle cx="{30 + i * (width - 40) / n:.1f}" cy="{20 + height - values[i] / top * height:.1f}" '
        f'r="3" fill="#E45756"><title>forced at {i}</title></circle>'
        for i in forced
        if i < len(values)
    )
    return (
        f'<svg width="{width}" height="{height + 30}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>'
        f'<line x1="30" x2="{width - 10}" y1="{y_budget:.1f}" y2="{y_budget:.1f}" stroke="#999" '
        f'stroke-dasharray="4"/><polyline fill="none" stroke="#4C78A8" points="{pts}"/>{marks}</svg>'
    )


def plots_html(record: RunRecord) -> str:
    out = []
    for plot in record.plots or []:
        if plot["kind"] == "distribution":
            for j, (target, seen) in enumerate(zip(plot["target"], plot["empirical"])):
                cells = sorted(range(len(target)), key=lambda x: -max(target[x], seen[x]))[:32]
                cells.sort()
                out.append(
                    _bars(
                        f"{plot['case']} position {j}: target vs empirical (p = {plot['positions'][j]['p_value']:.3g})",
                        {"target": [target[x] for x in cells], "empirical": [seen[x] for x in cells]},
                        [str(x) for x in cells],
                    )
                )
            out.append(
                _bars(
                    f"{plot['case']}: accepted length vs closed form",
                    {"closed form": plot["expected_lengths"], "observed": plot["lengths"]},
                    [str(a) for a in range(len(plot["lengths"]))],
                )
            )
        elif plot["kind"] == "budget-trace":
            out.append(_trace(plot["title"], plot["thinking"], plot["budget"], plot["forced"]))
    return "".join(out)
