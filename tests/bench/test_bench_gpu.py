"""pytest-benchmark suite for GPU runners (`tox -e bench` compares medians with the stored baseline).

Each benchmark synchronises inside the timed function, so the times are end-to-end per call; the
CUDA-event medians and ratios to the read-once floor come from `specconform bench`.
"""

import pytest
import torch

from specconform import impl

pytestmark = pytest.mark.gpu
VOCAB = 151_936


def _inputs(B, K):
    gen = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(B * (K + 1), VOCAB, device="cuda", generator=gen)
    q = torch.softmax(logits.view(B, K + 1, VOCAB)[:, :K].reshape(B * K, VOCAB) + 0.3, dim=1)
    return dict(
        target_logits=logits,
        draft_token_ids=torch.multinomial(q, 1, generator=gen)[:, 0],
        num_draft_tokens=torch.full((B,), K, device="cuda"),
        draft_probs=q,
        temperature=torch.ones(B, device="cuda"),
        seeds=torch.arange(B, device="cuda"),
        positions=torch.zeros(B, dtype=torch.int64, device="cuda"),
        max_spec_len=K,
        validate=False,
    )


@pytest.mark.parametrize("B,K", [(1, 4), (64, 2), (256, 4), (1024, 2)])
def test_rejection_sample(benchmark, B, K):
    inputs = _inputs(B, K)

    def run():
        out = impl.rejection_sample(**inputs)
        torch.cuda.synchronize()
        return out

    out = benchmark(run)
    assert ((out.token_ids >= -1) & (out.token_ids < VOCAB)).all()


@pytest.mark.parametrize("K", [0, 4])
def test_budget_step_batch_1024(benchmark, K):
    state = impl.ThinkingBudgetState([151667], [151668], 1024, max_spec_len=max(K, 1), device="cuda")
    state.sync_batch(
        impl.BatchUpdate(1024, added=tuple(impl.AddedRequest(i, 100 if i % 2 else None, [151667]) for i in range(1024)))
    )
    committed = torch.randint(0, 1000, (1024, K + 1), device="cuda")
    num, drafts = torch.full((1024,), K, device="cuda"), torch.randint(0, 1000, (1024 * K,), device="cuda")

    def step():
        state.update_state(committed)
        forced = state.forced_tokens(num, drafts) if K else state.forced_tokens()
        torch.cuda.synchronize()
        return forced

    assert benchmark(step).shape[0] == 1024 * (K + 1)
