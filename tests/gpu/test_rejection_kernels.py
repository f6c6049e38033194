"""The Triton sampler at production shapes on the GPU, token for token against the PyTorch path.

The property tests cover the semantics at small vocabularies; here the launch shapes are the real
ones (many vocabulary splits per row at B = 1, one at B = 1024), so the last-split finish of the
residual race runs with programs truly concurrent. Both paths use the same counter-based draws.
"""

import pytest
import torch

from specconform import impl

pytestmark = pytest.mark.gpu
VOCAB = 151_936


def _case(B, K, draft_probs, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    logits = torch.randn(B * (K + 1), VOCAB, device="cuda", generator=gen) * 2
    # far from the target: most requests reject a draft and resample the residual
    q = torch.softmax(torch.randn(B * K, VOCAB, device="cuda", generator=gen) * 2, dim=1)
    temperature = torch.rand(B, device="cuda", generator=gen) + 0.5
    temperature[::3] = 0  # greedy requests beside sampled ones
    forced = torch.full((B * (K + 1),), -1, device="cuda")
    forced[::7] = torch.randint(0, VOCAB, (len(forced[::7]),), device="cuda", generator=gen)
    return dict(
        target_logits=logits,
        draft_token_ids=torch.multinomial(q, 1, generator=gen)[:, 0],
        num_draft_tokens=torch.full((B,), K, device="cuda"),
        draft_probs=q if draft_probs else None,
        temperature=temperature,
        seeds=torch.randint(0, 2**62, (B,), device="cuda", generator=gen),
        positions=torch.randint(0, 2**40, (B,), device="cuda", generator=gen),
        forced_token_ids=forced,
        max_spec_len=K,
    )


@pytest.mark.parametrize("B,K", [(1, 4), (3, 1), (64, 2), (1024, 4)])
@pytest.mark.parametrize("draft_probs", [True, False], ids=["draft-probs", "one-hot"])
def test_triton_matches_the_torch_path_at_full_vocabulary(B, K, draft_probs):
    for seed in range(3):
        inputs = _case(B, K, draft_probs, seed)
        fast = impl.rejection_sample(**inputs, backend="triton")
        plain = impl.rejection_sample(**inputs, backend="torch")
        assert torch.equal(fast.num_emitted, plain.num_emitted), seed
        assert torch.equal(fast.token_ids, plain.token_ids), seed
        rejected = int((fast.num_emitted <= K).sum())
        assert B < 16 or rejected > B // 4  # the residual race ran on many rows


def test_an_installed_launch_hook_sees_every_launch():
    """Compiled launches skip Triton's launch-hook bookkeeping only while no hook is installed: a hook
    (as a profiler installs one) sees each of the sampler's three launches, and the tokens are those
    of a call without it."""
    from triton import knobs

    inputs = _case(4, 2, True, 0)
    expected = impl.rejection_sample(**inputs, backend="triton")  # the launch key's first call: through the JIT
    launched = []

    def hook(metadata):
        launched.append(metadata.get()["name"])

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        hooked = impl.rejection_sample(**inputs, backend="triton")
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)
    assert launched == ["setup_kernel", "row_pass_kernel", "verify_kernel"]
    assert torch.equal(hooked.token_ids, expected.token_ids)
    assert torch.equal(hooked.num_emitted, expected.num_emitted)
