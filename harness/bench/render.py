"""A bench run shown: the self-contained HTML page (environment, one log-log plot per family, the full tables) and
the tables printed to the terminal."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

from .peers import GRAPHED


def _line_plot(title: str, xs: list[int], series: dict[str, list[float]], unit: str, width=520, height=260) -> str:
    """A log-log line plot as inline SVG."""
    values = [v for vs in series.values() for v in vs if v > 0]
    lo, hi = math.log10(min(values)), math.log10(max(values))
    hi = hi if hi > lo else lo + 1
    x_lo, x_hi = math.log10(min(xs)), math.log10(max(xs)) if max(xs) > min(xs) else math.log10(min(xs)) + 1

    def point(x, y):
        px = 50 + (math.log10(x) - x_lo) / (x_hi - x_lo) * (width - 70)
        py = 20 + (1 - (math.log10(y) - lo) / (hi - lo)) * (height - 50)
        return f"{px:.1f},{py:.1f}"

    colours = ["#4C78A8", "#F58518", "#999999", "#54A24B", "#E45756", "#B279A2", "#72B7B2"]
    parts = [
        f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)} ({unit}, log-log)</text>',
    ]
    for i, (name, ys) in enumerate(series.items()):
        dash = ' stroke-dasharray="5"' if name.endswith("floor") else ""
        points = " ".join(point(x, y) for x, y in zip(xs, ys) if y > 0)
        parts.append(f'<polyline fill="none" stroke="{colours[i % len(colours)]}"{dash} points="{points}"/>')
        parts.append(
            f'<text x="{width - 150}" y="{30 + 14 * i}" font-size="11" fill="{colours[i % len(colours)]}">'
            f"{html.escape(name)}</text>"
        )
    for x in xs:
        parts.append(f'<text x="{point(x, 10**lo).split(",")[0]}" y="{height - 8}" font-size="10">B={x}</text>')
    parts.append("</svg>")
    return "".join(parts)


def perf_page(results: dict) -> str:
    """A self-contained HTML page: environment, one plot per family, the full tables."""
    batch = [r for r in results["rejection"] if r["family"] == "batch"]
    xs = [r["B"] for r in batch]
    plots = [
        _line_plot(
            "rejection sampler, K = 4, fp32, draft probs",
            xs,
            {
                "ours (graph)": [r["ours_ms"] for r in batch],
                "ours (eager)": [r["ours_eager_ms"] for r in batch],
                **{
                    f"{peer} ({'graph' if peer in GRAPHED else 'eager'})": [r[f"{peer}_ms"] for r in batch]
                    for peer in results["peers"]
                    if f"{peer}_ms" in batch[0]
                },
                **(
                    {"vllm_v2 (eager)": [r["vllm_v2_eager_ms"] for r in batch]}
                    if "vllm_v2_eager_ms" in batch[0]
                    else {}
                ),
                "floor": [r["floor_ms"] for r in batch],
                "one-pass floor": [r["one_pass_floor_ms"] for r in batch],
            },
            "ms",
        )
    ]
    for K in (0, 4):
        budget = [r for r in results["budget"] if r["K"] == K]
        plots.append(
            _line_plot(
                f"budget step, K = {K}",
                [r["B"] for r in budget],
                {
                    "ours (GPU time)": [r["ours_us"] for r in budget],
                    **(
                        {"vLLM V2 kernel (GPU time)": [r["vllm_v2_us"] for r in budget]}
                        if "vllm_v2_us" in budget[0]
                        else {}
                    ),
                    "per-request Python": [r["per_request_python_us"] for r in budget],
                    **(
                        {"vLLM holder (host time)": [r["vllm_host_us"] for r in budget]}
                        if "vllm_host_us" in budget[0]
                        else {}
                    ),
                },
                "µs",
            )
        )

    def cell(value) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        if isinstance(value, dict):
            return "; ".join(f"{k}: {cell(v)}" for k, v in value.items())
        if isinstance(value, list):
            return ", ".join(cell(v) for v in value)
        return html.escape(str(value))

    def table(rows):
        keys = list(dict.fromkeys(k for r in rows for k in r))
        head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
        body = "".join("<tr>" + "".join(f"<td>{cell(r.get(k, ''))}</td>" for k in keys) + "</tr>" for r in rows)
        return f"<table><tr>{head}</tr>{body}</table>"

    env = html.escape(json.dumps(results["environment"]))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform perf</title><style>"
        "body{font-family:sans-serif;margin:20px}td,th{border:1px solid #ccc;padding:3px;font-size:12px}"
        "table{border-collapse:collapse}</style></head><body><h1>specconform benchmarks</h1>"
        f"<p>{env}</p><p>peers: {html.escape(json.dumps(results['peers']))}</p>"
        f"<p>draws: {html.escape(json.dumps(results.get('draws', {})))}</p>{''.join(plots)}"
        f"<h2>Rejection sampler</h2>{table(results['rejection'])}"
        f"<h2>Budget state</h2>{table(results['budget'])}<h2>Statistical suite</h2>"
        f"{table([results['statistics']])}</body></html>\n"
    )


def print_tables(results: dict, path: Path) -> None:
    env = results["environment"]
    print(f"\n{env['gpu']} | torch {env['torch']} | triton {env['triton']} | copy {env['copy_tb_per_s']:.2f} TB/s")
    for name, reason in results["peers"].items():
        print(f"peer {name}: {reason}")
    for name, scheme in results.get("draws", {}).items():
        print(f"draws of {name}: {scheme}")
    # ours/vllm_v2: graph replays; "eager": launched as a caller without graphs does; the other peers
    # run eagerly and are compared with ours eager
    columns = [
        "graph ms",
        "eager ms",
        "floor ms",
        "ours/floor",
        "ours/1pass",
        "v2/ours",
        "v2e/ourse",
        "vllm/ourse",
        "fi/ourse",
    ]
    print(
        f"{'rejection':10} {'B':>5} {'K':>2} {'V':>7} {'dtype':>8} q {'mode':>6} {'acc':>5} "
        + " ".join(f"{c:>10}" for c in columns)
    )

    def ratio(r, key):
        return f"{r[key]:.2f}" if key in r else "n/a"

    for r in results["rejection"]:
        cells = [
            f"{r['ours_ms']:.4f}",
            f"{r['ours_eager_ms']:.4f}",
            f"{r['floor_ms']:.4f}",
            f"{r['ours_over_floor']:.2f}",
            f"{r['ours_over_one_pass_floor']:.2f}",
            ratio(r, "vllm_v2_over_ours"),
            ratio(r, "vllm_v2_eager_over_ours_eager"),
            ratio(r, "vllm_over_ours_eager"),
            ratio(r, "flashinfer_over_ours_eager"),
        ]
        print(
            f"{r['family']:10} {r['B']:>5} {r['K']:>2} {r['V']:>7} {r['dtype']:>8} {'y' if r['draft_probs'] else 'n'} "
            f"{r['mode']:>6} {r['acceptance']:>5.2f} " + " ".join(f"{c:>10}" for c in cells)
        )
    reasons: dict[tuple[str, str], list[str]] = {}  # (peer, why not run) -> the cases
    for r in results["rejection"]:
        for name, why in r["not_run"].items():
            reasons.setdefault((name, why), []).append(f"B={r['B']},K={r['K']},{r['mode']}")
    for (name, why), shapes in reasons.items():
        print(f"{name} not run on {len(shapes)} shape(s) ({', '.join(shapes[:3])}...): {why}")
    print(
        f"{'budget':10} {'B':>5} {'K':>2} {'ours us':>8} {'+logits':>8} {'eager':>8} {'V2 us':>8} {'V2 eager':>8} "
        f"{'Python us':>10} {'vLLM host us':>12}"
    )
    for r in results["budget"]:
        vllm = f"{r['vllm_host_us']:.0f}" if "vllm_host_us" in r else "n/a"
        v2 = [f"{r[key]:.1f}" if key in r else "n/a" for key in ("vllm_v2_us", "vllm_v2_eager_us")]
        print(
            f"{'':10} {r['B']:>5} {r['K']:>2} {r['ours_us']:>8.1f} {r['ours_with_logits_us']:>8.1f} "
            f"{r['ours_with_logits_eager_us']:>8.1f} {v2[0]:>8} {v2[1]:>8} "
            f"{r['per_request_python_us']:>10.0f} {vllm:>12}"
        )
    st = results["statistics"]
    print(
        f"statistics: {st['trials']} trials × {st['positions']} positions in {st['seconds']:.1f} s "
        f"({st['trials_per_second']:.0f} trials/s), passed {st['passed']}"
    )
    print(f"written {path}")
