"""Where the host time of one eager call of ours at B = 1, K = 4 goes, on a CUDA GPU: host time per call
(and that of one eager budget step with logits at B = 64, K = 4), then a cProfile of 2,000 sampler calls
by internal time. From the repository root: ``PYTHONPATH=$PWD python3
scripts/profile-eager.py``; put another checkout's folder first on PYTHONPATH to time its ``impl``."""

import cProfile
import pstats
import time

import torch

from specconform import impl
from specconform.harness.bench.shapes import VOCAB, rejection_inputs

inputs, _ = rejection_inputs(1, 4, torch.float32, True, "random", VOCAB, 0.3)


def call():
    return impl.rejection_sample(**inputs, max_spec_len=4, validate=False, backend="triton")


# the budget step with logits at B = 64, K = 4, as specconform bench runs it (budgets that never bind)
BATCH = 64
budget = impl.ThinkingBudgetState([151667], [151668], BATCH, max_spec_len=4, device="cuda")
budget.sync_batch(impl.BatchUpdate(BATCH, added=tuple(impl.AddedRequest(i, 2**30, [1, 151667]) for i in range(BATCH))))
committed = torch.randint(0, 1000, (BATCH, 5), device="cuda")
num_draft = torch.full((BATCH,), 4, device="cuda")
drafts = torch.randint(0, 1000, (BATCH * 4,), device="cuda")
logits = torch.zeros(BATCH * 5, VOCAB, device="cuda")


def budget_step():
    return budget.apply_to_logits(logits, num_draft, drafts, sampled_token_ids=committed)


def host_time(fn, label: str, calls: int = 2000) -> None:
    """Print the host time per call of ``calls`` back-to-back calls, and with the queue drained."""
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    total = (time.perf_counter() - start) / calls
    print(
        f"{torch.cuda.get_device_name()}: {label}: host {host * 1e6:.1f} us/call, "
        f"with the queue drained {total * 1e6:.1f} us/call"
    )


host_time(call, "eager B=1 K=4")
host_time(budget_step, f"eager budget step with logits B={BATCH} K=4")
N = 2000
profile = cProfile.Profile()
profile.enable()
for _ in range(N):
    call()
profile.disable()
torch.cuda.synchronize()
pstats.Stats(profile).sort_stats("tottime").print_stats(12)
