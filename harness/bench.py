"""GPU benchmarks of the reference implementation, side by side in one process.

Times are medians of CUDA-event timings (``triton.testing.do_bench``, which flushes L2 between
runs). Ours and vLLM Model Runner V2's kernels are timed both as CUDA-graph replays and eagerly, and
compared graph against graph and eager against eager; the other peers run eagerly. The read-once
floor of a shape is measured, not computed: the graph-replay time of a plain reduction kernel reading,
once and at their dtypes, the rows the output depends on (``read_floors``: no correct sampler reads
less), beside the one-pass floor that also reads the rows after a rejection, as a sampler that reads
every row in one parallel pass must. The environment records the device-to-device copy bandwidth
(bytes read plus bytes written) for reference. Results go to
``reports/perf/<gpu>/bench-<time>.json``.

Peers are timed in the same process on the same inputs when importable: vLLM's legacy
``rejection_sample`` (given the draft rows already gathered and the bonus tokens already sampled, so
it does less work than ours), Model Runner V2's ``rejection_sample`` (vLLM's default; on its own
layout, given the draft logits that our ``draft_probs`` are the softmax of, or none for one-hot
drafts) and its budget kernel ``apply_thinking_budget``, and FlashInfer's
``chain_speculative_sampling`` (softmax of the target logits included, as it takes probabilities; it
has no greedy mode and needs draft probabilities). A peer that cannot be imported is reported with
the reason, never skipped silently. Each shape is timed ``REPEATS`` times, interleaved across
implementations; the median of the repeats is reported with the spread (largest / smallest repeat).
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
REPEATS = 3
BUDGET_BATCHES = (1, 64, 256, 1024)
DEVICE = "cuda"  # a CPU smoke run of the bench code sets "cpu" and replaces _do_bench


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
    src = torch.empty(2**28, dtype=torch.float32, device=DEVICE).uniform_()
    dst = torch.empty_like(src)
    ms = _do_bench(lambda: dst.copy_(src), graph=False)
    return 2 * src.numel() * 4 / ms


def _rejection_inputs(B, K, dtype, draft_probs, mode, vocab=VOCAB, draft_noise=0.3, seed=0):
    """(``impl.rejection_sample``'s keyword arguments, the draft logits ``[B * K, V]`` float32 that
    ``draft_probs`` is the softmax of)."""
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    logits = torch.randn(B * (K + 1), vocab, device=DEVICE, generator=gen) * 2
    # a draft model close to the target (high acceptance) or far from it (low acceptance)
    draft_logits = logits.view(B, K + 1, vocab)[:, :K].reshape(B * K, vocab) + draft_noise * torch.randn(
        B * K, vocab, device=DEVICE, generator=gen
    )
    q = torch.softmax(draft_logits, dim=1)
    drafts = torch.multinomial(q, 1, generator=gen)[:, 0]
    temperature = torch.ones(B, device=DEVICE)
    if mode == "greedy":
        temperature.zero_()
    elif mode == "mixed":
        temperature[::2] = 0
    inputs = dict(
        target_logits=logits.to(dtype),
        draft_token_ids=drafts,
        num_draft_tokens=torch.full((B,), K, device=DEVICE),
        draft_probs=q if draft_probs else None,
        temperature=temperature,
        seeds=torch.arange(B, device=DEVICE),
        positions=torch.zeros(B, dtype=torch.int64, device=DEVICE),
    )
    return inputs, draft_logits


def read_floors(inputs: dict, num_emitted: torch.Tensor) -> dict:
    """The read-once floors of one shape, each the fastest time of a plain reduction kernel
    (``harness.read_floor``) reading those rows once, timed as a graph replay like ours:

    - ``floor_ms``: the bytes the output depends on, which no correct sampler can skip: for each
      request the target rows up to its first rejection (that row included) or, with every draft
      accepted, up to its bonus row, and for a sampled request with draft probabilities that rejected
      a draft, the ``q`` row of that draft;
    - ``one_pass_floor_ms``: as ``floor_ms``, but every draft row and every sampled bonus row, read
      in one parallel pass before any draft is judged (a greedy bonus row only where reached).

    ``num_emitted [B]``: the accepted drafts plus one of each request, from the PyTorch path (the same
    decisions as the kernels, computed apart from them)."""
    from harness.read_floor import read_floor_ms

    k = inputs["num_draft_tokens"].to(torch.int64)
    row0 = torch.cumsum(k + 1, 0) - k - 1
    accepted = num_emitted.to(torch.int64) - 1
    sampled = inputs["temperature"] > 0
    j = torch.arange(int(k.max()) + 1, device=k.device)[None, :]  # [1, max K + 1]
    owned = j <= k[:, None]
    depended = owned & (j <= accepted[:, None])
    one_pass = owned & ((j < k[:, None]) | sampled[:, None] | (accepted[:, None] == k[:, None]))
    rejected = accepted < k
    q_rows = (row0 - torch.arange(k.shape[0], device=k.device) + accepted)[rejected & sampled]
    if inputs["draft_probs"] is None:
        q_rows = q_rows[:0]
    row_ids = row0[:, None] + j
    floors = {}
    for name, mask in (("floor", depended), ("one_pass_floor", one_pass)):
        ms, read_bytes = read_floor_ms(
            inputs["target_logits"], inputs["draft_probs"], row_ids[mask], q_rows, lambda fn: _do_bench(fn, graph=True)
        )
        floors[f"{name}_ms"], floors[f"{name}_bytes"] = ms, read_bytes
    return floors


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


def load_peers() -> tuple[dict, dict[str, str]]:
    """(each peer importable here by name, why each other peer is not). A rejection peer is what its
    ``PREPARE_REJECTION`` entry takes: vLLM's engine adapter (the legacy sampler and budget holder),
    Model Runner V2's ``rejection_sample``, FlashInfer's sampling function; ``vllm_v2_budget`` is
    Model Runner V2's ``apply_thinking_budget``."""
    peers, missing = {}, {}
    try:
        from harness.adapters.vllm import VllmEngine

        peers["vllm"] = VllmEngine()
    except Exception as exc:  # noqa: BLE001 - whatever stops the import is the reason reported
        missing["vllm"] = f"{type(exc).__name__}: {exc}"
    try:
        from vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils import rejection_sample

        peers["vllm_v2"] = rejection_sample
    except Exception as exc:  # noqa: BLE001
        missing["vllm_v2"] = f"{type(exc).__name__}: {exc}"
    try:
        from vllm.v1.worker.gpu.sample.thinking_budget import apply_thinking_budget

        peers["vllm_v2_budget"] = apply_thinking_budget
    except Exception as exc:  # noqa: BLE001
        missing["vllm_v2_budget"] = f"{type(exc).__name__}: {exc}"
    try:
        from flashinfer.sampling import chain_speculative_sampling

        peers["flashinfer"] = chain_speculative_sampling
    except Exception as exc:  # noqa: BLE001
        missing["flashinfer"] = f"{type(exc).__name__}: {exc}"
    return peers, missing


def _vllm_rejection(engine, inputs: dict, K: int):
    """vLLM's ``rejection_sample`` on the draft rows (gathered beforehand) with argmax bonus tokens."""
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    rows = logits.view(B, K + 1, V)
    draft_logits = rows[:, :K].reshape(B * K, V).contiguous()
    bonus = rows[:, K].argmax(dim=-1, keepdim=True).to(torch.int32)
    metadata = engine.sampling_metadata(inputs["temperature"].cpu().numpy(), None)
    cu_num_draft_tokens = (torch.arange(1, B + 1, device=logits.device) * K).to(torch.int32)
    drafts = inputs["draft_token_ids"].to(torch.int32)
    num_draft_tokens = [K] * B
    sample = engine.vllm.rejection.rejection_sample

    def run():
        return sample(
            drafts, num_draft_tokens, K, cu_num_draft_tokens, inputs["draft_probs"], draft_logits, bonus, metadata
        )

    return run


def _vllm_v2_rejection(sample, inputs: dict, K: int, draft_logits):
    """Model Runner V2's ``rejection_sample`` on V2's layout: every row of ``target_logits``, the draft
    logits ``[B, K, V]`` (None for one-hot drafts), the input ids (row ``i``'s draft at ``i + 1``)."""
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    device = logits.device
    requests = torch.arange(B, dtype=torch.int32, device=device)
    input_ids = torch.zeros(B, K + 1, dtype=torch.int64, device=device)
    input_ids[:, 1:] = inputs["draft_token_ids"].view(B, K)
    draft_rows = draft_logits.view(B, K, V) if inputs["draft_probs"] is not None else None
    cu_num_logits = torch.arange(B + 1, dtype=torch.int32, device=device) * (K + 1)
    positions = torch.arange(B * (K + 1), dtype=torch.int64, device=device)
    expanded_idx_mapping = requests.repeat_interleave(K + 1)
    expanded_local_pos = torch.arange(K + 1, dtype=torch.int32, device=device).repeat(B)
    temperature = inputs["temperature"].to(torch.float32)
    seeds = inputs["seeds"].to(torch.int64)
    flat_input_ids = input_ids.view(-1)

    def run():
        return sample(
            logits,
            draft_rows,
            flat_input_ids,
            cu_num_logits,
            positions,
            requests,
            expanded_idx_mapping,
            expanded_local_pos,
            temperature,
            seeds,
            K,
        )

    return run


def _flashinfer_rejection(chain_speculative_sampling, inputs: dict, K: int):
    """FlashInfer's chain speculative sampling after a softmax of the target logits, or why it cannot
    run this shape."""
    if inputs["draft_probs"] is None:
        return "needs draft probabilities"
    if bool((inputs["temperature"] == 0).any()):
        return "has no greedy mode"
    logits = inputs["target_logits"]
    B, V = inputs["num_draft_tokens"].shape[0], logits.shape[1]
    rows = logits.view(B, K + 1, V)
    draft_probs = inputs["draft_probs"].view(B, K, V)
    drafts = inputs["draft_token_ids"].view(B, K).to(torch.int32)
    accepted = torch.zeros(B, dtype=torch.int32, device=logits.device)
    emitted = torch.zeros(B, dtype=torch.int32, device=logits.device)

    def run():
        target_probs = torch.softmax(rows, dim=-1, dtype=torch.float32)
        return chain_speculative_sampling(draft_probs, drafts, target_probs, accepted, emitted)

    return run


PREPARE_REJECTION = {
    "vllm": lambda engine, inputs, K, draft_logits: _vllm_rejection(engine, inputs, K),
    "vllm_v2": _vllm_v2_rejection,
    "flashinfer": lambda function, inputs, K, draft_logits: _flashinfer_rejection(function, inputs, K),
}
# Timed both eagerly and as a CUDA-graph replay, each against ours the same way.
GRAPHED = ("ours", "vllm_v2")


def _repeated(fns: dict, graph: dict) -> dict[str, list[float]]:
    """``REPEATS`` median timings of each function, interleaved so that drift hits all alike."""
    times = {name: [] for name in fns}
    for _ in range(REPEATS):
        for name, fn in fns.items():
            times[name].append(_do_bench(fn, graph=graph.get(name, False)))
    return times


def bench_rejection(peers: dict) -> list[dict]:
    """Each shape: ours and vLLM V2 eagerly and as graph replays, the other peers eagerly; ratios
    compare like with like (``X_over_ours``: graph against graph; ``X_eager_over_ours_eager`` and
    the eager-only peers: eager against eager)."""
    rows = []
    for family, B, K, dtype, with_q, mode, vocab, noise in REJECTION_SHAPES:
        inputs, draft_logits = _rejection_inputs(B, K, dtype, with_q, mode, vocab, noise)

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
        times = _repeated(fns, graph={name: True for name in GRAPHED})
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
    from harness import stats

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
    report = stats.distribution_check_on_device(sampler, case, trials, 1e-8, seed=1, device=DEVICE)
    seconds = time.perf_counter() - started
    return dict(
        case=case.name,
        trials=trials,
        positions=case.K + 1,
        seconds=seconds,
        trials_per_second=trials / seconds,
        passed=report.passed,
    )


def _vllm_budget_step(engine, B: int, K: int, added, history: int = 10):
    """Host milliseconds per step of vLLM's ``ThinkingBudgetStateHolder``, driven as vLLM's runner
    drives it: the live output lists (``history`` tokens each, one more appended per step, untimed),
    ``update_state``, then ``apply_to_logits`` on the bonus rows and (with drafts) the draft rows."""
    budget = engine.budget_state([151667], [151668], B, max_spec_len=K)
    budget.sync_batch(impl.BatchUpdate(B, added=added))
    outputs = [budget.outputs[i] for i in range(B)]
    for output in outputs:
        output.extend([7] * history)
    spec = [[5] * K for _ in range(B)] if K else None
    bonus_logits = torch.zeros(B, VOCAB, device=DEVICE)
    draft_logits = torch.zeros(B * K, VOCAB, device=DEVICE)
    times = []
    for step in range(23):
        for output in outputs:
            output.append(7)
        torch.cuda.synchronize()
        started = time.perf_counter()
        budget.holder.update_state(outputs, spec)
        budget.holder.apply_to_logits(bonus_logits, K > 0, spec)
        if K:
            budget.holder.apply_to_logits(draft_logits, False, spec)
        torch.cuda.synchronize()
        if step >= 3:  # warm-up
            times.append((time.perf_counter() - started) * 1e3)
    return statistics.median(times)


def _vllm_v2_budget_step(apply_thinking_budget, B: int, K: int, logits, history: int = 10):
    """Model Runner V2's ``apply_thinking_budget`` on the bonus and draft rows ``logits
    [B * (K + 1), V]``, in the same state as ours: even requests budgeted (2^30, never binding), each
    request's committed tokens ``[1, start] + [7] * (i % 50)`` and ``history`` more, its draft ids
    in ``input_ids``; the committed-marker cache is warm after the first call, as in decoding."""
    device = logits.device
    requests = torch.arange(B, dtype=torch.int32, device=device)
    lengths = 2 + torch.arange(B, device=device) % 50 + history
    all_token_ids = torch.full((B, int(lengths.max())), 7, dtype=torch.int32, device=device)
    all_token_ids[:, 0], all_token_ids[:, 1] = 1, 151667
    budget = torch.where(requests % 2 == 0, 2**30, -1).to(torch.int32)
    input_ids = torch.randint(0, 1000, (B * (K + 1),), dtype=torch.int32, device=device)
    expanded_idx_mapping = requests.repeat_interleave(K + 1)
    expanded_local_pos = torch.arange(K + 1, dtype=torch.int32, device=device).repeat(B)
    cached_last_start = torch.full((B,), -1, dtype=torch.int32, device=device)
    cached_last_end = torch.full((B,), -1, dtype=torch.int32, device=device)
    cached_scan_pos = torch.zeros(B, dtype=torch.int32, device=device)
    start, end = (torch.tensor([t], dtype=torch.int32, device=device) for t in (151667, 151668))
    total_len = lengths.to(torch.int32)

    def step():
        apply_thinking_budget(
            logits,
            requests,
            expanded_idx_mapping,
            budget,
            all_token_ids,
            total_len,
            input_ids,
            expanded_local_pos,
            cached_last_start,
            cached_last_end,
            cached_scan_pos,
            start,
            end,
            end,
        )

    return step


def bench_budget(vllm_engine=None, vllm_v2_budget=None) -> list[dict]:
    """Ours against the per-request Python oracle and, when importable, vLLM's legacy holder (host
    time: its work is host Python that the step waits for) and Model Runner V2's budget kernel
    (``apply_thinking_budget``, which writes the logits: compared with ours writing them, graph
    against graph and eager against eager)."""
    rows = []
    for B in BUDGET_BATCHES:
        for K in (0, 4):
            state = impl.ThinkingBudgetState([151667], [151668], B, max_spec_len=max(K, 1), device=DEVICE)
            # half the requests budgeted, with budgets that do not bind within the timed replays (each
            # replay commits K + 1 tokens): the common step, where no row is forced
            added = tuple(
                impl.AddedRequest(i, 2**30 if i % 2 == 0 else None, [1, 151667] + [7] * (i % 50)) for i in range(B)
            )
            state.sync_batch(impl.BatchUpdate(B, added=added))
            oracle = tb.BudgetBatch([151667], [151668], B)
            oracle.apply(impl.BatchUpdate(B, added=added))
            committed = torch.randint(0, 1000, (B, K + 1), device=DEVICE)
            num = torch.full((B,), K, device=DEVICE)
            drafts = torch.randint(0, 1000, (B * K,), device=DEVICE)
            logits = torch.zeros(B * (K + 1), VOCAB, device=DEVICE)

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
                fns["vllm_v2"] = _vllm_v2_budget_step(vllm_v2_budget, B, K, torch.zeros_like(logits))
                fns["vllm_v2_eager"] = fns["vllm_v2"]
            times = _repeated(fns, {"ours": True, "ours_with_logits": True, "vllm_v2": True})
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
                row["vllm_host_us"] = _vllm_budget_step(vllm_engine, B, K, added) * 1e3
                row["vllm_over_ours_with_logits"] = row["vllm_host_us"] / row["ours_with_logits_us"]
            rows.append(row)
            del logits
            torch.cuda.empty_cache()
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
    import html

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
        f"<p>{env}</p><p>peers: {html.escape(json.dumps(results['peers']))}</p>{''.join(plots)}"
        f"<h2>Rejection sampler</h2>{table(results['rejection'])}"
        f"<h2>Budget state</h2>{table(results['budget'])}<h2>Statistical suite</h2>"
        f"{table([results['statistics']])}</body></html>\n"
    )


def _print_tables(results: dict, path: Path) -> None:
    env = results["environment"]
    print(f"\n{env['gpu']} | torch {env['torch']} | triton {env['triton']} | copy {env['copy_tb_per_s']:.2f} TB/s")
    for name, reason in results["peers"].items():
        print(f"peer {name}: {reason}")
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
    reasons = {}
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


def main(out_dir: str | None = None) -> int:
    if not torch.cuda.is_available():
        print("specconform bench needs a CUDA device")
        return 2
    import triton

    props = torch.cuda.get_device_properties(0)
    bandwidth = copy_bandwidth()
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
        rejection=bench_rejection(peers),
        budget=bench_budget(peers.get("vllm"), peers.get("vllm_v2_budget")),
        statistics=bench_statistics(),
    )
    directory = Path(out_dir or Path("reports/perf") / props.name.replace(" ", "-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=1))
    path.with_suffix(".html").write_text(perf_page(results))
    _print_tables(results, path)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else None))
