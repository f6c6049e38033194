"""GPU benchmarks of the reference implementation, side by side in one process.

Times are medians of CUDA-event timings (``triton.testing.do_bench``, which flushes L2 between
runs); small batches are timed as CUDA-graph replays. The read-once floor is the bytes of
``target_logits`` + ``draft_probs`` over the device-to-device copy bandwidth measured in the same
run (bytes read plus bytes written). Results go to ``reports/perf/<gpu>/bench-<time>.json``.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import torch

import impl
from harness.oracle import budget as tb

VOCAB = 151_936


def _do_bench(fn, graph: bool) -> float:
    """Median milliseconds of ``fn`` (or of a CUDA-graph replay of it)."""
    import triton.testing

    if graph:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()
        torch.cuda.current_stream().wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return triton.testing.do_bench(g.replay, warmup=50, rep=300, return_mode="median")
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/ms (read + written), median of 20 copies of 1 GiB."""
    src = torch.empty(2**28, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    ms = _do_bench(lambda: dst.copy_(src), graph=False)
    return 2 * src.numel() * 4 / ms


def _rejection_inputs(B, K, dtype, draft_probs, mode, vocab=VOCAB, draft_noise=0.3, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    logits = torch.randn(B * (K + 1), vocab, device="cuda", generator=gen) * 2
    # a draft model close to the target (high acceptance) or far from it (low acceptance)
    draft_logits = logits.view(B, K + 1, vocab)[:, :K].reshape(B * K, vocab) + draft_noise * torch.randn(
        B * K, vocab, device="cuda", generator=gen
    )
    q = torch.softmax(draft_logits, dim=1)
    drafts = torch.multinomial(q, 1, generator=gen)[:, 0]
    temperature = torch.ones(B, device="cuda")
    if mode == "greedy":
        temperature.zero_()
    elif mode == "mixed":
        temperature[::2] = 0
    return dict(
        target_logits=logits.to(dtype),
        draft_token_ids=drafts,
        num_draft_tokens=torch.full((B,), K, device="cuda"),
        draft_probs=q if draft_probs else None,
        temperature=temperature,
        seeds=torch.arange(B, device="cuda"),
        positions=torch.zeros(B, dtype=torch.int64, device="cuda"),
    )


# (family, B, K, dtype, draft probs, mode, V, draft noise): the B sweep draws the family's plot.
REJECTION_SHAPES = (
    [("batch", B, 4, torch.float32, True, "random", VOCAB, 0.3) for B in (1, 8, 64, 256, 1024)]
    + [("spec-len", 256, K, torch.float32, True, "random", VOCAB, 0.3) for K in (1, 2, 8)]
    + [("k2", B, 2, torch.float32, True, "random", VOCAB, 0.3) for B in (64, 1024)]
    + [("vocab", 256, 4, torch.float32, True, "random", V, 0.3) for V in (32_000, 128_256)]
    + [("mode", 256, 4, torch.float32, True, mode, VOCAB, 0.3) for mode in ("greedy", "mixed")]
    + [
        ("mode", 256, 4, torch.float32, False, "random", VOCAB, 0.3),
        ("mode", 256, 4, torch.float32, True, "random", VOCAB, 3.0),
        ("mode", 256, 4, torch.bfloat16, True, "random", VOCAB, 0.3),
    ]
)


def bench_rejection(bandwidth: float) -> list[dict]:
    rows = []
    for family, B, K, dtype, with_q, mode, vocab, noise in REJECTION_SHAPES:
        inputs = _rejection_inputs(B, K, dtype, with_q, mode, vocab, noise)
        read_bytes = inputs["target_logits"].numel() * inputs["target_logits"].element_size()
        if with_q:
            read_bytes += inputs["draft_probs"].numel() * 4
        floor_ms = read_bytes / bandwidth

        def ours(inputs=inputs, K=K):
            return impl.rejection_sample(**inputs, max_spec_len=K, validate=False, backend="triton")

        def plain(inputs=inputs, K=K):
            return impl.rejection_sample(**inputs, max_spec_len=K, validate=False, backend="torch")

        out = ours()
        accepted = float((out.num_emitted.float() - 1).mean() / K)
        ours_ms = _do_bench(ours, graph=B <= 64)
        plain_ms = _do_bench(plain, graph=False)
        rows.append(
            dict(
                family=family,
                B=B,
                K=K,
                V=vocab,
                dtype=str(dtype).replace("torch.", ""),
                draft_probs=with_q,
                mode=mode,
                acceptance=round(accepted, 3),
                ours_ms=ours_ms,
                plain_torch_ms=plain_ms,
                floor_ms=floor_ms,
                ours_over_floor=ours_ms / floor_ms,
                plain_over_ours=plain_ms / ours_ms,
            )
        )
        del inputs
        torch.cuda.empty_cache()
    return rows


def bench_statistics() -> dict:
    """Trials per second of one distribution check on the CUDA kernels (a GPU statistical pass)."""
    from harness import stats

    case = stats.standard_cases(large_vocab=1000)[0]

    def sampler(logits, drafts, num, q, temperature, seeds, positions):
        out = impl.rejection_sample(
            torch.tensor(logits, dtype=torch.float32, device="cuda"),
            torch.tensor(drafts, device="cuda"),
            torch.tensor(num, device="cuda"),
            draft_probs=torch.tensor(q, dtype=torch.float32, device="cuda"),
            temperature=torch.tensor(temperature, dtype=torch.float32, device="cuda"),
            seeds=torch.tensor(seeds, device="cuda"),
            positions=torch.tensor(positions, device="cuda"),
            validate=False,
            max_spec_len=int(num[0]),
        )
        return out.token_ids.cpu().numpy()

    trials = 250_000
    started = time.perf_counter()
    report = stats.distribution_check(sampler, case, trials, 1e-8, seed=1, batch=65_536)
    seconds = time.perf_counter() - started
    return dict(
        case=case.name,
        trials=trials,
        positions=case.K + 1,
        seconds=seconds,
        trials_per_second=trials / seconds,
        passed=report.passed,
    )


def bench_budget() -> list[dict]:
    rows = []
    for B in (1, 64, 256, 1024):
        for K in (0, 4):
            state = impl.ThinkingBudgetState([151667], [151668], B, max_spec_len=max(K, 1), device="cuda")
            added = tuple(
                impl.AddedRequest(i, 1000 if i % 2 == 0 else None, [1, 151667] + [7] * (i % 50)) for i in range(B)
            )
            state.sync_batch(impl.BatchUpdate(B, added=added))
            oracle = tb.BudgetBatch([151667], [151668], B)
            oracle.apply(impl.BatchUpdate(B, added=added))
            committed = torch.randint(0, 1000, (B, K + 1), device="cuda")
            num = torch.full((B,), K, device="cuda")
            drafts = torch.randint(0, 1000, (B * K,), device="cuda")

            def step(committed=committed, num=num, drafts=drafts, state=state, K=K):
                state.update_state(committed)
                return state.forced_tokens(num, drafts) if K else state.forced_tokens()

            gpu_ms = _do_bench(step, graph=True)
            rows_list, num_list, drafts_list = committed.cpu().tolist(), num.cpu().tolist(), drafts.cpu().tolist()
            times = []
            for _ in range(5):
                started = time.perf_counter()
                oracle.commit(rows_list)
                oracle.forced_rows(num_list, drafts_list)
                times.append((time.perf_counter() - started) * 1e3)
            python_ms = statistics.median(times)
            rows.append(
                dict(
                    family="budget",
                    B=B,
                    K=K,
                    ours_us=gpu_ms * 1e3,
                    per_request_python_us=python_ms * 1e3,
                    python_over_ours=python_ms / gpu_ms,
                )
            )
    return rows


def _line_plot(title: str, xs: list[int], series: dict[str, list[float]], unit: str, width=520, height=260) -> str:
    """A log-log line plot as inline SVG."""
    import html
    import math

    values = [v for vs in series.values() for v in vs if v > 0]
    lo, hi = math.log10(min(values)), math.log10(max(values))
    hi = hi if hi > lo else lo + 1
    x_lo, x_hi = math.log10(min(xs)), math.log10(max(xs)) if max(xs) > min(xs) else math.log10(min(xs)) + 1

    def point(x, y):
        px = 50 + (math.log10(x) - x_lo) / (x_hi - x_lo) * (width - 70)
        py = 20 + (1 - (math.log10(y) - lo) / (hi - lo)) * (height - 50)
        return f"{px:.1f},{py:.1f}"

    colours = ["#4C78A8", "#F58518", "#999999", "#54A24B"]
    parts = [
        f'<svg width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)} ({unit}, log-log)</text>',
    ]
    for i, (name, ys) in enumerate(series.items()):
        dash = ' stroke-dasharray="5"' if name == "floor" else ""
        points = " ".join(point(x, y) for x, y in zip(xs, ys) if y > 0)
        parts.append(f'<polyline fill="none" stroke="{colours[i % 4]}"{dash} points="{points}"/>')
        parts.append(
            f'<text x="{width - 150}" y="{30 + 14 * i}" font-size="11" fill="{colours[i % 4]}">'
            f"{html.escape(name)}</text>"
        )
    for x in xs:
        parts.append(f'<text x="{point(x, 10**lo).split(",")[0]}" y="{height - 8}" font-size="10">B={x}</text>')
    parts.append("</svg>")
    return "".join(parts)


def perf_page(results: dict) -> str:
    """A self-contained HTML page: environment, one plot per family, the full tables."""
    import html

    batch = [r for r in results["rejection"] if r["family"] == "batch"]
    xs = [r["B"] for r in batch]
    plots = [
        _line_plot(
            "rejection sampler, K = 4, fp32, draft probs",
            xs,
            {
                "ours": [r["ours_ms"] for r in batch],
                "plain PyTorch": [r["plain_torch_ms"] for r in batch],
                "floor": [r["floor_ms"] for r in batch],
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
                    "per-request Python": [r["per_request_python_us"] for r in budget],
                },
                "µs",
            )
        )

    def table(rows):
        keys = list(rows[0])
        head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
        body = "".join(
            "<tr>"
            + "".join(f"<td>{v:.4g}</td>" if isinstance(v, float) else f"<td>{v}</td>" for v in r.values())
            + "</tr>"
            for r in rows
        )
        return f"<table><tr>{head}</tr>{body}</table>"

    env = html.escape(json.dumps(results["environment"]))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform perf</title><style>"
        "body{font-family:sans-serif;margin:20px}td,th{border:1px solid #ccc;padding:3px;font-size:12px}"
        "table{border-collapse:collapse}</style></head><body><h1>specconform benchmarks</h1>"
        f"<p>{env}</p>{''.join(plots)}<h2>Rejection sampler</h2>{table(results['rejection'])}"
        f"<h2>Budget state</h2>{table(results['budget'])}<h2>Statistical suite</h2>"
        f"{table([results['statistics']])}</body></html>\n"
    )


def main(out_dir: str | None = None) -> int:
    if not torch.cuda.is_available():
        print("specconform bench needs a CUDA device")
        return 2
    import triton

    props = torch.cuda.get_device_properties(0)
    bandwidth = copy_bandwidth()
    env = dict(
        gpu=props.name,
        sms=props.multi_processor_count,
        torch=torch.__version__,
        triton=triton.__version__,
        cuda=torch.version.cuda,
        python=platform.python_version(),
        copy_tb_per_s=bandwidth / 1e9,
    )
    results = dict(
        environment=env, rejection=bench_rejection(bandwidth), budget=bench_budget(), statistics=bench_statistics()
    )
    directory = Path(out_dir or Path("reports/perf") / props.name.replace(" ", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1))
    path.with_suffix(".html").write_text(perf_page(results))
    print(f"\n{env['gpu']} | torch {env['torch']} | triton {env['triton']} | copy {env['copy_tb_per_s']:.2f} TB/s")
    widths = (10, 5, 2, 7, 8, 2, 6, 5, 8, 9, 9, 10, 10)
    header = (
        "rejection",
        "B",
        "K",
        "V",
        "dtype",
        "q",
        "mode",
        "acc",
        "ours ms",
        "torch ms",
        "floor ms",
        "ours/floor",
        "torch/ours",
    )
    print(" ".join(f"{c:>{w}}" for c, w in zip(header, widths)))
    for r in results["rejection"]:
        cells = (
            r["family"],
            r["B"],
            r["K"],
            r["V"],
            r["dtype"],
            "y" if r["draft_probs"] else "n",
            r["mode"],
            f"{r['acceptance']:.2f}",
            f"{r['ours_ms']:.4f}",
            f"{r['plain_torch_ms']:.3f}",
            f"{r['floor_ms']:.4f}",
            f"{r['ours_over_floor']:.2f}",
            f"{r['plain_over_ours']:.1f}",
        )
        print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths)))
    print(f"{'budget':10} {'B':>5} {'K':>2} {'ours us (GPU, graph)':>22} {'per-request Python us':>22} {'ratio':>8}")
    for r in results["budget"]:
        print(
            f"{'':10} {r['B']:>5} {r['K']:>2} {r['ours_us']:>22.1f} {r['per_request_python_us']:>22.0f} "
            f"{r['python_over_ours']:>8.0f}"
        )
    st = results["statistics"]
    print(
        f"statistics: {st['trials']} trials × {st['positions']} positions in {st['seconds']:.1f} s "
        f"({st['trials_per_second']:.0f} trials/s), passed {st['passed']}"
    )
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else None))
