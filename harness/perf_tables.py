"""The performance tables of ``reports/perf/README.md``, generated from the bench JSON.

``specconform bench`` writes one ``bench-<time>.json`` per run under ``reports/perf/<gpu>/``
(``harness/bench/`` documents its fields). Prose never quotes a time: the README and ``docs/``
link here, and this module renders, for the newest bench of each GPU, the rejection sampler's and
the budget step's tables side by side with the peers and the read-once floors. Run it after
publishing a bench::

    python -m specconform.harness.perf_tables reports/perf            # writes reports/perf/README.md
    python -m specconform.harness.perf_tables reports/perf --stdout   # prints it instead
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NOT_RUN_CELL = "not run"


def newest_benches(root: Path) -> list[Path]:
    """The newest ``bench-*.json`` of each GPU folder under ``root``, sorted by folder name."""
    newest = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        runs = sorted(folder.glob("bench-*.json"))
        if runs:
            newest.append(runs[-1])
    return newest


def _time(ms: float | None) -> str:
    """A time in ms as µs below 0.1 ms, else ms, three significant figures."""
    if ms is None:
        return NOT_RUN_CELL
    return f"{ms * 1000:.1f} µs" if ms < 0.1 else f"{ms:.3f} ms"


def _ratio(row: dict, key: str) -> str:
    return f"{row[key]:.2f}" if key in row else NOT_RUN_CELL


def shape_label(row: dict) -> str:
    """A rejection shape as a reader names it: batch, drafts, and what differs from the standard shape."""
    label = f"B = {row['B']}, K = {row['K']}"
    if row["V"] != 151_936:
        label += f", V = {row['V']:,}"
    if row["mode"] != "random":
        label += f", {row['mode']}"
    elif not row["draft_probs"]:
        label += ", one-hot drafts"
    elif row["family"] == "mode" and row["dtype"] == "float32":
        label += f", acceptance {row['acceptance']:.2f}"
    if row["dtype"] != "float32":
        label += f", {row['dtype']} logits"
    return label


def _peer_cell(row: dict, peer: str, ratio_key: str) -> str:
    if f"{peer}_ms" not in row:
        return row["not_run"].get(peer, NOT_RUN_CELL)
    return f"{_time(row[f'{peer}_ms'])} ({_ratio(row, ratio_key)}×)"


def rejection_table(rows: list[dict]) -> list[str]:
    """One line per shape: ours and vLLM V2 as graphs and eagerly, the eager peers, both floors.

    Each peer's cell carries its time over ours (graph over graph, eager over eager); each floor's
    carries ours over it.
    """
    lines = [
        "| shape | acc. | ours, graph | vLLM V2, graph (× ours) | ours, eager | vLLM V2, eager (× ours) "
        "| vLLM legacy, eager (× ours) | FlashInfer, eager (× ours) | floor (ours ×) | one-pass floor (ours ×) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [
            shape_label(r),
            f"{r['acceptance']:.2f}",
            _time(r["ours_ms"]),
            _peer_cell(r, "vllm_v2", "vllm_v2_over_ours"),
            _time(r["ours_eager_ms"]),
            _peer_cell(r, "vllm_v2_eager", "vllm_v2_eager_over_ours_eager"),
            _peer_cell(r, "vllm", "vllm_over_ours_eager"),
            _peer_cell(r, "flashinfer", "flashinfer_over_ours_eager"),
            f"{_time(r['floor_ms'])} ({r['ours_over_floor']:.2f}×)",
            f"{_time(r['one_pass_floor_ms'])} ({r['ours_over_one_pass_floor']:.2f}×)",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def budget_table(rows: list[dict]) -> list[str]:
    """One line per batch and draft count: the budget step as graphs and eagerly, against vLLM V2's."""

    def us(row: dict, key: str) -> str:
        return f"{row[key]:.1f} µs" if key in row else NOT_RUN_CELL

    lines = [
        "| shape | ours, graph | ours with logits, graph | ours with logits, eager | vLLM V2, graph | vLLM V2, eager |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        keys = ("ours_us", "ours_with_logits_us", "ours_with_logits_eager_us", "vllm_v2_us", "vllm_v2_eager_us")
        lines.append(f"| B = {r['B']}, K = {r['K']} | " + " | ".join(us(r, k) for k in keys) + " |")
    return lines


def _verdict(rows: list[dict], value, limit: float, unit: str, at_least: bool = False) -> str:
    """Whether ``value(row)`` is within ``limit`` (at most, or ``at_least``) at every shape, with the worst shape."""
    if not rows:
        return NOT_RUN_CELL
    passed = [r for r in rows if (value(r) >= limit if at_least else value(r) <= limit)]
    worst = (min if at_least else max)(rows, key=value)
    verdict = "met" if len(passed) == len(rows) else f"not met ({len(passed)} of {len(rows)} shapes)"
    return f"{verdict}; worst: {shape_label(worst)}, {value(worst):.2f}{unit}"


def targets_table(results: dict) -> list[str]:
    """The project's performance targets, each judged on this bench alone (like against like)."""
    rejection = results["rejection"]
    large = [r for r in rejection if r["B"] >= 64]
    budget = [r for r in results["budget"] if r["B"] == 1024]
    with_v2 = [r for r in budget if "vllm_v2_us" in r]
    rows = [
        (
            "every shape with B ≥ 64 within 1.25× its read-once floor (graph)",
            _verdict(large, lambda r: r["ours_over_floor"], 1.25, "×"),
        ),
        (
            "every shape with B ≥ 64 at least 2× faster than vLLM V2 (graph against graph)",
            _verdict([r for r in large if "vllm_v2_over_ours" in r], lambda r: r["vllm_v2_over_ours"], 2, "×", True),
        ),
        (
            "B = 1, K = 4 at most 15 µs from a CUDA graph",
            _verdict(
                [r for r in rejection if (r["family"], r["B"], r["K"]) == ("batch", 1, 4)],
                lambda r: r["ours_ms"] * 1000,
                15,
                " µs",
            ),
        ),
        (
            "greedy within 1.05× of reading the target rows once",
            _verdict([r for r in rejection if r["mode"] == "greedy"], lambda r: r["ours_over_floor"], 1.05, "×"),
        ),
        (
            "budget step with logits at B = 1024 at most 10 µs (graph)",
            _budget_verdict(budget, lambda r: r["ours_with_logits_us"] <= 10),
        ),
        (
            "budget step with logits at B = 1024 no slower than vLLM V2's (graph)",
            _budget_verdict(with_v2, lambda r: r["ours_with_logits_us"] <= r["vllm_v2_us"]),
        ),
    ]
    lines = ["| target | this bench |", "| --- | --- |"]
    lines += [f"| {target} | {verdict} |" for target, verdict in rows]
    return lines


def _budget_verdict(rows: list[dict], ok) -> str:
    if not rows:
        return NOT_RUN_CELL
    failing = [f"K = {r['K']}" for r in rows if not ok(r)]
    return "met" if not failing else f"not met at {', '.join(failing)}"


def draws_line(results: dict) -> list[str]:
    """The draw scheme of each column, as the bench recorded it (benches before the record say nothing)."""
    if "draws" not in results:
        return []
    return ["Draws: " + "; ".join(f"{name} {scheme}" for name, scheme in results["draws"].items()) + ".", ""]


def gpu_section(path: Path) -> list[str]:
    """The tables of one bench JSON, headed by its environment, its peers and the repeats' spread."""
    results = json.loads(path.read_text())
    env = results["environment"]
    spreads = [s for r in results["rejection"] for name, s in r["spread"].items() if name in ("ours", "vllm_v2")]
    st = results["statistics"]
    lines = [
        f"## {env['gpu']}",
        "",
        f"From `{path.parent.name}/{path.name}` (plots in `{path.with_suffix('.html').name}`): torch {env['torch']}, "
        f"Triton {env['triton']}, "
        f"CUDA {env.get('cuda', '?')}, measured copy bandwidth {env['copy_tb_per_s']:.2f} TB/s. "
        f"Medians of the repeats; the largest spread (largest / smallest repeat) of ours and vLLM V2 from graphs is "
        f"{max(spreads):.2f}.",
        "",
        "Peers: " + "; ".join(f"{name} {why}" for name, why in results["peers"].items()) + ".",
        "",
        *draws_line(results),
        "### Targets",
        "",
        *targets_table(results),
        "",
        "The eager target for B = 1, K = 4 (at most 60 µs of host time per call) is measured by "
        "`scripts/profile-eager.py`, not by the bench, whose eager columns are device time.",
        "",
        "### Rejection sampler (fp32 logits unless named)",
        "",
        *rejection_table(results["rejection"]),
        "",
        "### Budget step",
        "",
        *budget_table(results["budget"]),
        "",
        f"Statistical suite on the device: {st['trials']:,} trials of {st['positions']} positions "
        f"({st['case']}) in {st['seconds']:.1f} s, {'passed' if st['passed'] else 'FAILED'}.",
        "",
    ]
    return lines


def render(root: Path) -> str:
    """``reports/perf/README.md``: the newest bench of each GPU under ``root``."""
    benches = newest_benches(root)
    if not benches:
        raise FileNotFoundError(f"no bench-*.json under {root}/<gpu>/")
    head = [
        "# Performance",
        "",
        "<!-- generated by: python -m specconform.harness.perf_tables reports/perf; do not edit by hand -->",
        "",
        "`specconform bench` on each GPU, the newest run of each (`harness/bench/` says what is timed and how; "
        "`docs/kernels.md` says why the kernels are built as they are). Ours and vLLM Model Runner V2 are timed as "
        "CUDA-graph replays and eagerly; vLLM's legacy sampler and FlashInfer eagerly. The floor is the measured "
        "time of a plain kernel reading once the rows the output depends on; the one-pass floor also reads the "
        "rows after a rejection. `specconform history reports/perf reports/engines` plots every bench over time.",
        "",
    ]
    return "\n".join(head + [line for path in benches for line in gpu_section(path)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specconform.harness.perf_tables", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("root", type=Path, help="the folder of GPU folders holding bench-*.json (reports/perf)")
    parser.add_argument("--stdout", action="store_true", help="print the page instead of writing ROOT/README.md")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"root: {args.root} is not a folder")
    try:
        page = render(args.root)
    except FileNotFoundError as error:
        parser.error(f"root: {error}")
    if args.stdout:
        print(page, end="")
    else:
        (args.root / "README.md").write_text(page)
        print(f"written {args.root / 'README.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
