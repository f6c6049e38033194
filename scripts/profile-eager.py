"""Where the host time of one eager call of ours at B = 1, K = 4 goes, on a CUDA GPU: host time per call,
then a cProfile of 2,000 calls by internal time. From the repository root: ``PYTHONPATH=$PWD python3
scripts/profile-eager.py``; put another checkout's folder first on PYTHONPATH to time its ``impl``."""

import cProfile
import pstats
import time

import torch

import impl
from harness.bench import VOCAB, _rejection_inputs

inputs, _ = _rejection_inputs(1, 4, torch.float32, True, "random", VOCAB, 0.3)


def call():
    return impl.rejection_sample(**inputs, max_spec_len=4, validate=False, backend="triton")


for _ in range(50):
    call()
torch.cuda.synchronize()
N = 2000
start = time.perf_counter()
for _ in range(N):
    call()
host = (time.perf_counter() - start) / N
torch.cuda.synchronize()
total = (time.perf_counter() - start) / N
print(
    f"{torch.cuda.get_device_name()}: eager B=1 K=4: host {host * 1e6:.1f} us/call, "
    f"with the queue drained {total * 1e6:.1f} us/call"
)
profile = cProfile.Profile()
profile.enable()
for _ in range(N):
    call()
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(12)
