"""The candidate draw functions of the sampled bonus race, timed side by side against reading the rows once (issue 38,
items 5 and 6: spec 0.3 may redefine the reference draws, RS-RNG-3, by this measurement).

For N rows of V logits (float32 and bfloat16, N in 256 and 1024, V = 151,936 and 32,000) it times, as CUDA-graph
replays (``harness.bench.timing.do_bench``, as ``specconform bench`` times the sampler), one Triton kernel per
candidate of scripts/draw_candidates.py (its docstring defines them: ``reference-0.2``, ``vllm-mrv2``, ``philox4``,
``cross-multiply``, ``lean-hash``, ``no-noise``), each racing every row (the exponential race ``argmax w(x) / e_x``, or
the Gumbel argmax), and the read-once floor of those rows (``harness.read_floor``). The kernels share one skeleton, so
only the noise differs. Each is timed at each of ``CANDIDATE_LAUNCHES`` in the first repeat and at the fastest of
them in the others; the floor is the fastest of its readers in every repeat. The repeats are interleaved.

Before timing, each candidate's winners on the first ``CHECK_ROWS`` rows of each dtype and V are held to its NumPy
definition (scripts/draw_definitions.py) where the winner leads by more than ``NEAR_TIE``: a disagreement is printed
with how far below the definition's winner the kernel's token scores, and makes the exit status 1 (after the table).

It prints, per shape, the floor (and its bandwidth), then one line per candidate: median of the repeats' medians
(µs), spread (largest / smallest repeat), median over the floor's median, and the launch shape chosen.

From the repository root on a GPU: ``PYTHONPATH=$PWD python3 scripts/profile-draws.py`` (``--help`` for subsets).
"""

import argparse
import statistics
import sys

import numpy as np
import torch
import triton
from draw_candidates import CANDIDATES, Launch, race_launcher, winners
from draw_definitions import scores, winner

from specconform.harness.bench import timing
from specconform.harness.read_floor import read_floor_ms

VOCABS = (151_936, 32_000)
ROWS = (256, 1024)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
CANDIDATE_LAUNCHES = (Launch(split=4096, block=1024, warps=4), Launch(split=16384, block=2048, warps=8))
CHECK_ROWS = 8  # rows per dtype and V whose winners are held to the NumPy definitions
NEAR_TIE = 1e-4  # leads below this (relative) may go either way in float32
LOGIT_SCALE = 2.0  # logits ~ N(0, 4): a spread like a model's, no -inf


def graph_ms(fn) -> float:
    """Median milliseconds of a CUDA-graph replay of ``fn`` (looked up in ``timing`` when called, as the bench's
    CPU smoke run replaces it)."""
    return timing.do_bench(fn, graph=True)


def inputs(rows: int, vocab: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits [rows, vocab] of ``dtype``, seeds [rows] int64, positions [rows] int64), the same for every run."""
    gen = torch.Generator(device=timing.DEVICE).manual_seed(38)
    logits = (torch.randn(rows, vocab, device=timing.DEVICE, generator=gen) * LOGIT_SCALE).to(dtype)
    seeds = torch.arange(rows, dtype=torch.int64, device=timing.DEVICE) * 7919 + 12345
    positions = torch.arange(rows, dtype=torch.int64, device=timing.DEVICE) + 100
    return logits, seeds, positions


def check(names: list[str], dtype_name: str, vocab: int) -> int:
    """Hold each candidate's winners of ``CHECK_ROWS`` rows to its NumPy definition; print a line per candidate and
    return the number of rows that disagree."""
    logits, seeds, positions = inputs(CHECK_ROWS, vocab, DTYPES[dtype_name])
    rows = logits.double().cpu().numpy()
    seed_list, position_list = seeds.tolist(), positions.tolist()
    wrong = 0
    for name in names:
        run, best, arg = race_launcher(name, logits, seeds, positions, CANDIDATE_LAUNCHES[0])
        run()
        got = winners(best, arg).tolist()
        judged = agree = 0
        for row in range(CHECK_ROWS):
            want, lead = winner(name, rows[row], seed_list[row], position_list[row])
            if lead > NEAR_TIE:
                judged += 1
                agree += got[row] == want
                if got[row] != want:
                    score = scores(name, rows[row], seed_list[row], position_list[row])
                    behind = (score[want] - score[got[row]]) / max(1.0, abs(score[want]))
                    print(
                        f"  MISMATCH {name} {dtype_name} V={vocab} row {row}: kernel {got[row]}, NumPy {want} (the"
                        f" kernel's token scores {behind:.2e} below, relative; NumPy's lead {lead:.2e})"
                    )
        wrong += judged - agree
        print(f"  check {name:15s} {dtype_name} V={vocab}: {agree}/{judged} rows agree with the NumPy definition")
    return wrong


def time_shape(names: list[str], dtype: torch.dtype, rows: int, vocab: int) -> None:
    """Time the floor and each candidate on one shape, ``timing.REPEATS`` interleaved repeats; print their lines."""
    logits, seeds, positions = inputs(rows, vocab, dtype)
    all_rows = torch.arange(rows, dtype=torch.int64, device=timing.DEVICE)
    launchers = {
        (name, launch): race_launcher(name, logits, seeds, positions, launch)[0]
        for name in names
        for launch in CANDIDATE_LAUNCHES
    }
    floor: list[float] = []
    times: dict[str, list[float]] = {name: [] for name in names}
    chosen: dict[str, Launch] = {}
    read_bytes = 0
    for repeat in range(timing.REPEATS):
        floor_ms, read_bytes = read_floor_ms(logits, None, all_rows, all_rows[:0], graph_ms)
        floor.append(floor_ms)
        for name in names:
            if repeat == 0:
                by_launch = {launch: graph_ms(launchers[name, launch]) for launch in CANDIDATE_LAUNCHES}
                chosen[name] = min(by_launch, key=by_launch.get)
                times[name].append(by_launch[chosen[name]])
            else:
                times[name].append(graph_ms(launchers[name, chosen[name]]))
    floor_median = statistics.median(floor)
    dtype_name = str(dtype).removeprefix("torch.")
    print(
        f"{'read-once floor':15s} {dtype_name:9s} {rows:5d} {vocab:7d} {floor_median * 1e3:9.1f} "
        f"{max(floor) / min(floor):7.3f} {1.0:8.2f}  {read_bytes / floor_median / 1e9:.2f} TB/s",
        flush=True,
    )
    for name in names:
        median = statistics.median(times[name])
        launch = chosen[name]
        print(
            f"{name:15s} {dtype_name:9s} {rows:5d} {vocab:7d} {median * 1e3:9.1f} "
            f"{max(times[name]) / min(times[name]):7.3f} {median / floor_median:8.2f}  "
            f"split {launch.split} block {launch.block} warps {launch.warps}",
            flush=True,
        )


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", nargs="+", choices=list(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--dtypes", nargs="+", choices=list(DTYPES), default=list(DTYPES))
    parser.add_argument("--rows", nargs="+", type=int, default=list(ROWS))
    parser.add_argument("--vocabs", nargs="+", type=int, default=list(VOCABS))
    args = parser.parse_args(argv)
    for field in ("rows", "vocabs"):
        bad = [n for n in getattr(args, field) if n < 1]
        if bad:
            parser.error(f"--{field} must be positive; got {bad[0]}")
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    if timing.DEVICE == "cuda" and not torch.cuda.is_available():
        print("profile-draws.py times kernels on a GPU; no CUDA device is visible", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name() if timing.DEVICE == "cuda" else timing.DEVICE
    print(f"{device}, torch {torch.__version__}, triton {triton.__version__}, numpy {np.__version__}", flush=True)
    wrong = sum(check(args.candidates, d, v) for d in args.dtypes for v in args.vocabs)
    print(f"{'candidate':15s} {'dtype':9s} {'N':>5s} {'V':>7s} {'median us':>9s} {'spread':>7s} {'x floor':>8s}")
    for dtype_name in args.dtypes:
        for vocab in args.vocabs:
            for rows in args.rows:
                time_shape(args.candidates, DTYPES[dtype_name], rows, vocab)
    if wrong:
        print(
            f"{wrong} checked rows disagree with their NumPy definition (MISMATCH lines above): a kernel's float32"
            " hardware math parting from its definition where the kernel's token scores just below (a precision"
            " finding about that candidate), or a bug where it scores far below"
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
