"""The bench run: each family timed (``bench_rejection``, ``bench_budget``, ``bench_statistics``), and ``main``,
which records the environment and writes the JSON and the HTML page of the run."""

from __future__ import annotations

import json
import platform
import statistics
import time
from pathlib import Path

import torch

from specconform import impl
from specconform.harness.oracle import budget as tb

from . import timing
from .peers import GRAPHED, PREPARE_REJECTION, draw_schemes, load_peers, vllm_budget_step, vllm_v2_budget_step
from .render import perf_page, print_tables
from .shapes import BUDGET_BATCHES, REJECTION_SHAPES, VOCAB, read_floors, rejection_inputs


def bench_rejection(peers: dict) -> list[dict]:
    """Each shape: ours and vLLM V2 eagerly and as graph replays, the other peers eagerly; ratios
    compare like with like (``X_over_ours``: graph against graph; ``X_eager_over_ours_eager`` and
    the eager-only peers: eager against eager)."""
    rows = []
    for family, B, K, dtype, with_q, mode, vocab, noise in REJECTION_SHAPES:
        inputs, draft_logits = rejection_inputs(B, K, dtype, with_q, mode, vocab, noise)

        def ours(inputs=inputs, K=K):
            return impl.rejection_sample(**inputs, max_spec_len=K, validate=False, backend="triton")

        def plain(inputs=inputs, K=K):
            return impl.rejection_sample(**inputs, max_spec_len=K, validate=False, backend="torch")

        out = ours()
        accepted = float((out.num_emitted.float() - 1).mean() / K)
        floors = read_floors(inputs, plain().num_emitted)
        fns = {"ours": ours, "plain_torch": plain}
        not_run = {}
        for name, peer in peers.items():
            if name not in PREPARE_REJECTION:
                continue
            prepared = PREPARE_REJECTION[name](peer, inputs, K, draft_logits)
            if isinstance(prepared, str):
                not_run[name] = prepared
                continue
            try:  # a peer that fails on this shape (a JIT build, an assertion) is reported, not timed
                prepared()
            except Exception as exc:  # noqa: BLE001
                not_run[name] = f"failed: {type(exc).__name__}: {str(exc)[:300]}"
                continue
            fns[name] = prepared
        for name in GRAPHED:
            if name in fns:
                fns[f"{name}_eager"] = fns[name]
        times = timing.repeated(fns, graph={name: True for name in GRAPHED})
        medians = {name: statistics.median(t) for name, t in times.items()}
        row = dict(
            family=family,
            B=B,
            K=K,
            V=vocab,
            dtype=str(dtype).replace("torch.", ""),
            draft_probs=with_q,
            mode=mode,
            acceptance=round(accepted, 3),
            **floors,
            times_ms=times,
            spread={name: max(t) / min(t) for name, t in times.items()},
            not_run=not_run,
            ours_ms=medians["ours"],
            ours_over_floor=medians["ours"] / floors["floor_ms"],
            ours_over_one_pass_floor=medians["ours"] / floors["one_pass_floor_ms"],
            ours_eager_ms=medians["ours_eager"],
        )
        for name, ms in medians.items():
            if name in ("ours", "ours_eager"):
                continue
            row[f"{name}_ms"] = ms
            if name in GRAPHED:
                row[f"{name}_over_ours"] = ms / medians["ours"]
            else:
                row[f"{name}_over_ours_eager"] = ms / medians["ours_eager"]
        rows.append(row)
        del inputs, draft_logits, fns
        torch.cuda.empty_cache()
    return rows


def bench_statistics() -> dict:
    """Trials per second of one distribution check on the CUDA kernels, as the statistical checks run
    it on a device (``stats.distribution_check_on_device``: drafts, seeds and histograms on the GPU)."""
    from specconform.harness import stats

    case = stats.standard_cases(large_vocab=1000)[0]

    def sampler(logits, drafts, num, q, temperature, seeds, positions):
        return impl.rejection_sample(
            logits,
            drafts,
            num,
            draft_probs=q,
            temperature=temperature,
            seeds=seeds,
            positions=positions,
            validate=False,
            max_spec_len=case.K,
        ).token_ids

    trials = 250_000
    torch.cuda.synchronize()
    started = time.perf_counter()
    report = stats.distribution_check_on_device(sampler, case, trials, 1e-8, seed=1, device=timing.DEVICE)
    seconds = time.perf_counter() - started
    return dict(
        case=case.name,
        trials=trials,
        positions=case.K + 1,
        seconds=seconds,
        trials_per_second=trials / seconds,
        passed=report.passed,
    )


def bench_budget(vllm_engine=None, vllm_v2_budget=None) -> list[dict]:
    """Ours against the per-request Python oracle and, when importable, vLLM's legacy holder (host
    time: its work is host Python that the step waits for) and Model Runner V2's budget kernel
    (``apply_thinking_budget``, which writes the logits: compared with ours writing them, graph
    against graph and eager against eager)."""
    rows = []
    for B in BUDGET_BATCHES:
        for K in (0, 4):
            state = impl.ThinkingBudgetState([151667], [151668], B, max_spec_len=max(K, 1), device=timing.DEVICE)
            # half the requests budgeted, with budgets that do not bind within the timed replays (each
            # replay commits K + 1 tokens): the common step, where no row is forced
            added = tuple(
                impl.AddedRequest(i, 2**30 if i % 2 == 0 else None, [1, 151667] + [7] * (i % 50)) for i in range(B)
            )
            state.sync_batch(impl.BatchUpdate(B, added=added))
            oracle = tb.BudgetBatch([151667], [151668], B)
            oracle.apply(impl.BatchUpdate(B, added=added))
            committed = torch.randint(0, 1000, (B, K + 1), device=timing.DEVICE)
            num = torch.full((B,), K, device=timing.DEVICE)
            drafts = torch.randint(0, 1000, (B * K,), device=timing.DEVICE)
            logits = torch.zeros(B * (K + 1), VOCAB, device=timing.DEVICE)

            # a step: the previous step's committed tokens, then this step's forced rows (one launch)
            def step(committed=committed, num=num, drafts=drafts, state=state, K=K):
                if K:
                    return state.forced_tokens(num, drafts, sampled_token_ids=committed)
                return state.forced_tokens(sampled_token_ids=committed)

            def step_with_logits(committed=committed, num=num, drafts=drafts, state=state, K=K, logits=logits):
                if K:
                    return state.apply_to_logits(logits, num, drafts, sampled_token_ids=committed)
                return state.apply_to_logits(logits, sampled_token_ids=committed)

            fns = {"ours": step, "ours_with_logits": step_with_logits, "ours_with_logits_eager": step_with_logits}
            if vllm_v2_budget is not None:
                fns["vllm_v2"] = vllm_v2_budget_step(vllm_v2_budget, B, K, torch.zeros_like(logits))
                fns["vllm_v2_eager"] = fns["vllm_v2"]
            times = timing.repeated(fns, {"ours": True, "ours_with_logits": True, "vllm_v2": True})
            rows_list, num_list, drafts_list = committed.cpu().tolist(), num.cpu().tolist(), drafts.cpu().tolist()
            python_times = []
            for _ in range(5):
                started = time.perf_counter()
                oracle.commit(rows_list)
                oracle.forced_rows(num_list, drafts_list)
                python_times.append((time.perf_counter() - started) * 1e3)
            ours_ms = statistics.median(times["ours"])
            row = dict(
                family="budget",
                B=B,
                K=K,
                ours_us=ours_ms * 1e3,
                ours_spread=max(times["ours"]) / min(times["ours"]),
                ours_with_logits_us=statistics.median(times["ours_with_logits"]) * 1e3,
                per_request_python_us=statistics.median(python_times) * 1e3,
            )
            row["python_over_ours"] = row["per_request_python_us"] / row["ours_us"]
            row["ours_with_logits_eager_us"] = statistics.median(times["ours_with_logits_eager"]) * 1e3
            if vllm_v2_budget is not None:
                row["vllm_v2_us"] = statistics.median(times["vllm_v2"]) * 1e3
                row["vllm_v2_eager_us"] = statistics.median(times["vllm_v2_eager"]) * 1e3
                row["vllm_v2_over_ours_with_logits"] = row["vllm_v2_us"] / row["ours_with_logits_us"]
            if vllm_engine is not None:
                row["vllm_host_us"] = vllm_budget_step(vllm_engine, B, K, added) * 1e3
                row["vllm_over_ours_with_logits"] = row["vllm_host_us"] / row["ours_with_logits_us"]
            rows.append(row)
            del logits
            torch.cuda.empty_cache()
    return rows


def main(out_dir: str | None = None) -> int:
    if not torch.cuda.is_available():
        print("specconform bench needs a CUDA device")
        return 2
    import triton

    props = torch.cuda.get_device_properties(0)
    bandwidth = timing.copy_bandwidth()
    peers, missing = load_peers()
    env = dict(
        gpu=props.name,
        sms=props.multi_processor_count,
        torch=torch.__version__,
        triton=triton.__version__,
        cuda=torch.version.cuda,
        python=platform.python_version(),
        copy_tb_per_s=bandwidth / 1e9,
    )
    if "vllm" in peers:
        env["vllm"] = peers["vllm"].version
    results = dict(
        environment=env,
        peers={
            **{name: "measured" for name in peers},
            **{name: f"not measured: {why}" for name, why in missing.items()},
        },
        draws=draw_schemes(),
        rejection=bench_rejection(peers),
        budget=bench_budget(peers.get("vllm"), peers.get("vllm_v2_budget")),
        statistics=bench_statistics(),
    )
    directory = Path(out_dir or Path("reports/perf") / props.name.replace(" ", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1))
    path.with_suffix(".html").write_text(perf_page(results))
    print_tables(results, path)
    return 0
