"""Where the GPU time of the reference sampler goes, per kernel, at the bench's rejection shapes: each
shape's graph-replay median (as ``specconform bench`` times it) and each kernel's mean CUDA time over
20 eager calls (torch.profiler). From the repository root: ``PYTHONPATH=$PWD python3
scripts/profile-kernels.py [--level-programs N] [--race-programs N] [--split-min-ids N] [--mode MODE]
[B,K ...]``, where
``--level-programs`` sets the row pass's programs per SM and draft index
(``impl.rejection.LEVEL_PROGRAMS_PER_SM``) and ``--race-programs`` the verify kernel's programs per SM
(``impl.rejection.PROGRAMS_PER_SM``), ``--split-min-ids`` the fewest ids a split of the row pass reads
(``ROW_SPLIT_MIN_IDS``), and ``--mode`` (random, greedy or mixed) replaces the mode of the
fp32 shapes with draft probabilities and draft noise 0.3 that ``B,K`` selects (each (B, K) once); put another
checkout's folder first on PYTHONPATH to time its ``impl``."""

import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

from specconform import impl
from specconform.harness.bench.shapes import REJECTION_SHAPES, VOCAB, rejection_inputs
from specconform.harness.bench.timing import do_bench

arguments = sys.argv[1:]
OPTIONS = {
    "--level-programs": "LEVEL_PROGRAMS_PER_SM",
    "--race-programs": "PROGRAMS_PER_SM",
    "--split-min-ids": "ROW_SPLIT_MIN_IDS",
}
forced_mode = None
while arguments[:1] and arguments[0] in (*OPTIONS, "--mode"):
    if arguments[0] == "--mode":
        forced_mode = arguments[1]
    else:
        setattr(impl.rejection, OPTIONS[arguments[0]], int(arguments[1]))
    arguments = arguments[2:]
wanted = {tuple(int(v) for v in arg.split(",")) for arg in arguments}
shapes = REJECTION_SHAPES
if forced_mode is not None:
    plain = {
        (B, K): (family, B, K, dtype, with_q, forced_mode, vocab, noise)
        for family, B, K, dtype, with_q, mode, vocab, noise in REJECTION_SHAPES
        if dtype == torch.float32 and with_q and noise == 0.3 and vocab == VOCAB
    }
    shapes = list(plain.values())
print(
    torch.cuda.get_device_name(),
    impl.__file__,
    "level programs per SM",
    getattr(impl.rejection, "LEVEL_PROGRAMS_PER_SM", None),
    "race programs per SM",
    impl.rejection.PROGRAMS_PER_SM,
    "row split min ids",
    getattr(impl.rejection, "ROW_SPLIT_MIN_IDS", None),
)
for family, B, K, dtype, with_q, mode, vocab, noise in shapes:
    if wanted and (B, K) not in wanted:
        continue
    inputs, _ = rejection_inputs(B, K, dtype, with_q, mode, vocab, noise)

    def ours(inputs=inputs, K=K):
        return impl.rejection_sample(**inputs, max_spec_len=K, validate=False, backend="triton")

    ours()
    graph_ms = do_bench(ours, graph=True)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            ours()
        torch.cuda.synchronize()
    per_kernel = defaultdict(float)
    for event in prof.key_averages():
        if event.device_type.name == "CUDA" and event.count:
            per_kernel[event.key[:24]] += event.device_time_total / 20
    kernels = "  ".join(f"{name} {us:.1f}" for name, us in sorted(per_kernel.items(), key=lambda kv: -kv[1]))
    label = f"{family:9s} B={B:<5d}K={K} V={vocab:<7d}{str(dtype)[6:]:9s} q={int(with_q)} {mode:7s} noise={noise}"
    print(f"{label} graph {graph_ms * 1e3:8.1f} us | per call (us): {kernels}", flush=True)
