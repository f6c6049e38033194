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


def _rejection_inputs(B, K, dtype, draft_probs, greedy, seed=0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    logits = torch.randn(B * (K + 1), VOCAB, device="cuda", generator=gen) * 2
    # a draft model close to the target: high acceptance
    draft_logits = logits.view(B, K + 1, VOCAB)[:, :K].reshape(B * K, VOCAB) + 0.3 * torch.randn(
        B * K, VOCAB, device="cuda", generator=gen
    )
    q = torch.softmax(draft_logits, dim=1)
    drafts = torch.multinomial(q, 1, generator=gen)[:, 0]
    return dict(
        target_logits=logits.to(dtype),
        draft_token_ids=drafts,
        num_draft_tokens=torch.full((B,), K, device="cuda"),
        draft_probs=q if draft_probs else None,
        temperature=torch.zeros(B, device="cuda") if greedy else torch.ones(B, device="cuda"),
        seeds=torch.arange(B, device="cuda"),
        positions=torch.zeros(B, dtype=torch.int64, device="cuda"),
    )


def bench_rejection(bandwidth: float) -> list[dict]:
    rows = []
    shapes = [
        (256, 4, torch.float32, True, False),
        (1, 4, torch.float32, True, False),
        (64, 2, torch.float32, True, False),
        (1024, 2, torch.float32, True, False),
        (256, 4, torch.float32, False, False),
        (256, 4, torch.float32, True, True),
        (256, 4, torch.bfloat16, True, False),
    ]
    for B, K, dtype, with_q, greedy in shapes:
        inputs = _rejection_inputs(B, K, dtype, with_q, greedy)
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
                family="rejection",
                B=B,
                K=K,
                dtype=str(dtype).replace("torch.", ""),
                draft_probs=with_q,
                mode="greedy" if greedy else "random",
                acceptance=round(accepted, 3),
                ours_ms=ours_ms,
                plain_torch_ms=plain_ms,
                floor_ms=floor_ms,
                ours_over_floor=ours_ms / floor_ms,
                plain_over_ours=plain_ms / ours_ms,
            )
        )
    return rows


def bench_budget() -> list[dict]:
    rows = []
    B = 1024
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
        rows_list = committed.cpu().tolist()
        num_list = num.cpu().tolist()
        drafts_list = drafts.cpu().tolist()
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
    results = dict(environment=env, rejection=bench_rejection(bandwidth), budget=bench_budget())
    directory = Path(out_dir or Path("reports/perf") / props.name.replace(" ", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1))
    print(f"\n{env['gpu']} | torch {env['torch']} | triton {env['triton']} | copy {env['copy_tb_per_s']:.2f} TB/s")
    print(
        f"{'rejection':10} {'B':>5} {'K':>2} {'dtype':>8} {'q':>3} {'mode':>6} {'acc':>5} {'ours ms':>8} "
        f"{'torch ms':>9} {'floor ms':>9} {'ours/floor':>10} {'torch/ours':>10}"
    )
    for r in results["rejection"]:
        print(
            f"{'':10} {r['B']:>5} {r['K']:>2} {r['dtype']:>8} {'y' if r['draft_probs'] else 'n':>3} "
            f"{r['mode']:>6} {r['acceptance']:>5.2f} {r['ours_ms']:>8.4f} {r['plain_torch_ms']:>9.3f} "
            f"{r['floor_ms']:>9.4f} {r['ours_over_floor']:>10.2f} {r['plain_over_ours']:>10.1f}"
        )
    print(f"{'budget':10} {'B':>5} {'K':>2} {'ours us (GPU, graph)':>22} {'per-request Python us':>22} {'ratio':>8}")
    for r in results["budget"]:
        print(
            f"{'':10} {r['B']:>5} {r['K']:>2} {r['ours_us']:>22.1f} {r['per_request_python_us']:>22.0f} "
            f"{r['python_over_ours']:>8.0f}"
        )
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else None))
