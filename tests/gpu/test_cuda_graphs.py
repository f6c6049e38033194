"""The per-step paths capture in a CUDA graph and replay with the eager results (no host sync)."""

import pytest
import torch

from specconform import impl

pytestmark = pytest.mark.gpu


def test_budget_step_replays_from_a_cuda_graph():
    state = impl.ThinkingBudgetState([5, 6], [7, 8, 9], 64, max_spec_len=4, device="cuda")
    twin = impl.ThinkingBudgetState([5, 6], [7, 8, 9], 64, max_spec_len=4, device="cuda")
    added = tuple(impl.AddedRequest(i, [None, 0, 2, 4][i % 4], [1, 5, 6, 3][: i % 5]) for i in range(64))
    for s in (state, twin):
        s.sync_batch(impl.BatchUpdate(64, added=added))
    num = torch.randint(0, 5, (64,), device="cuda")
    drafts = torch.randint(3, 10, (64 * 4,), device="cuda")[: int(num.sum())].clone()
    committed = torch.randint(3, 10, (64, 5), device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        state.update_state(committed)  # warm-up compiles the kernels outside the capture
        state.forced_tokens(num, drafts)
    torch.cuda.current_stream().wait_stream(stream)
    twin.update_state(committed)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        state.update_state(committed)
        forced = state.forced_tokens(num, drafts)
    for _ in range(3):
        committed.random_(3, 10)
        graph.replay()
        twin.update_state(committed)
        torch.cuda.synchronize()
        assert torch.equal(forced, twin.forced_tokens(num, drafts))
        assert torch.equal(state.state, twin.state)


def test_rejection_sampler_replays_from_a_cuda_graph():
    B, K, V = 4, 4, 32_000
    logits = torch.randn(B * (K + 1), V, device="cuda")
    q = torch.softmax(torch.randn(B * K, V, device="cuda"), dim=1)
    drafts = torch.multinomial(q, 1)[:, 0]
    kwargs = dict(
        draft_probs=q,
        temperature=torch.ones(B, device="cuda"),
        seeds=torch.arange(B, device="cuda"),
        positions=torch.zeros(B, dtype=torch.int64, device="cuda"),
        max_spec_len=K,
        validate=False,
    )
    num = torch.full((B,), K, device="cuda")
    eager = impl.rejection_sample(logits, drafts, num, **kwargs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = impl.rejection_sample(logits, drafts, num, **kwargs)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out.token_ids, eager.token_ids) and torch.equal(out.num_emitted, eager.num_emitted)
    kwargs["positions"].add_(1)  # new draws through the same graph
    graph.replay()
    again = impl.rejection_sample(logits, drafts, num, **kwargs)
    torch.cuda.synchronize()
    assert torch.equal(out.token_ids, again.token_ids)


def test_large_vocabulary_ids_stay_in_range_on_cuda():
    for V in (100, 8193, 10_000, 151_936):
        logits = torch.randn(3, V, device="cuda")
        logits[:, V // 2 :] = float("-inf")  # a zero-probability tail tile
        out = impl.rejection_sample(
            logits,
            torch.tensor([1, 2], device="cuda"),
            torch.tensor([2], device="cuda"),
            temperature=torch.ones(1, device="cuda"),
            seeds=torch.tensor([V], device="cuda"),
        )
        tokens = out.token_ids[out.token_ids != -1]
        assert ((tokens >= 0) & (tokens < V // 2)).all(), (V, tokens.tolist())  # the tail has p = 0
