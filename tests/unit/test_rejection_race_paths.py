"""The Triton sampler (in the interpreter) races a sampled rejection's row in one of two places: in the
row pass, where a vocabulary split is one block that its program holds (small vocabularies here), or in
the verify kernel, which reads the row again. Both must emit the PyTorch path's tokens; the GPU runs
both at once (tests/gpu/test_rejection_kernels.py)."""

import pytest
import torch

import impl
from tests.conftest import CUDA, HAS_TRITON

pytestmark = pytest.mark.skipif(not HAS_TRITON or CUDA, reason="the interpreter runs only without CUDA")


@pytest.mark.parametrize("vocab,in_row_pass", [(1000, True), (2500, False)])
@pytest.mark.parametrize("draft_probs", [True, False], ids=["draft-probs", "one-hot"])
def test_the_residual_race_emits_the_torch_paths_tokens_wherever_it_runs(vocab, in_row_pass, draft_probs):
    B, K = 6, 3
    assert impl.rejection._row_pass_shape(vocab, B, 1)[4] is in_row_pass  # the path this vocabulary takes
    gen = torch.Generator().manual_seed(vocab)
    logits = torch.randn(B * (K + 1), vocab, generator=gen) * 2
    q = torch.softmax(torch.randn(B * K, vocab, generator=gen) * 2, dim=1)  # far from p: most drafts rejected
    temperature = torch.rand(B, generator=gen) + 0.5
    temperature[::3] = 0
    inputs = dict(
        target_logits=logits,
        draft_token_ids=torch.multinomial(q, 1, generator=gen)[:, 0],
        num_draft_tokens=torch.full((B,), K),
        draft_probs=q if draft_probs else None,
        temperature=temperature,
        seeds=torch.randint(0, 2**62, (B,), generator=gen),
        positions=torch.randint(0, 2**40, (B,), generator=gen),
        max_spec_len=K,
    )
    fast = impl.rejection_sample(**inputs, backend="triton")
    plain = impl.rejection_sample(**inputs, backend="torch")
    assert torch.equal(fast.num_emitted, plain.num_emitted)
    assert torch.equal(fast.token_ids, plain.token_ids)
    sampled_rejections = (plain.num_emitted <= K) & (temperature > 0)
    assert int(sampled_rejections.sum()) >= 2  # the residual race ran
