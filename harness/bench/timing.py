"""How the bench times: medians of CUDA-event timings (``triton.testing.do_bench``, which flushes L2 between
runs), eagerly or as CUDA-graph replays, repeated ``REPEATS`` times and interleaved across implementations; and the
device-to-device copy bandwidth the environment records. The other bench modules read ``DEVICE`` and
``do_bench`` through this module when they run, so setting them here sets them for the whole bench."""

from __future__ import annotations

import torch

REPEATS = 3
DEVICE = "cuda"  # a CPU smoke run of the bench code sets "cpu" and replaces do_bench


def do_bench(fn, graph: bool) -> float:
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


def repeated(fns: dict, graph: dict) -> dict[str, list[float]]:
    """``REPEATS`` median timings of each function, interleaved so that drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(REPEATS):
        for name, fn in fns.items():
            times[name].append(do_bench(fn, graph=graph.get(name, False)))
    return times


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth in bytes/ms (read + written), median of 20 copies of 1 GiB."""
    src = torch.empty(2**28, dtype=torch.float32, device=DEVICE).uniform_()
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), graph=False)
    return 2 * src.numel() * 4 / ms
