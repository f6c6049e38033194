"""The oracle's ``flashinfer-philox`` scheme (specconform.harness.oracle.draws.flashinfer_philox) held against
FlashInfer 0.7.2's own ``chain_speculative_sampling`` on CUDA. Its uniforms are not an output, so each draft's coin is
pinned by two calls: with the target probability of the draft at the oracle's coin ``u`` (draft probability 1) the
kernel must reject it (``u * 1 < u`` is false), one float32 step above it must accept it; the two together hold the
coin to exactly ``u``. The second loop's fresh draws are held by ``output_accepted_token_num``. Skipped without
FlashInfer (``scripts/judge-flashinfer-gpu.sh`` installs it on the GPU machine)."""

import numpy as np
import pytest

from specconform.harness.oracle.draws import flashinfer_philox as scheme

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
sampling = pytest.importorskip("flashinfer.sampling", reason="FlashInfer 0.7.2 is installed on the GPU machine only")


def _chain_decisions(u: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(emitted [b], accepted [b])`` that ``ChainSpeculativeSampling`` counts for draws ``u [b, K + 2]`` and the
    target probabilities ``t [b, K]`` of drafts whose draft probability is 1 (its loops, in float32)."""
    b, K = t.shape
    emitted, accepted = np.full(b, K), np.zeros(b, dtype=np.int64)
    for r in range(b):
        ok = u[r, :K] < t[r]
        pos = int(np.argmin(ok)) if not ok.all() else K
        emitted[r] = pos
        accepted[r] = pos + int(sum(u[r, i + 1] < t[r, i] for i in range(pos, K)))
    return emitted, accepted


def test_chain_speculative_sampling_draws_the_oracle_coins():
    rng = np.random.default_rng(5)
    b, K = 512, 4
    seeds = np.concatenate([[0, 1, 2**32 - 1, 2**63 - 1], rng.integers(0, 2**63 - 1, b - 4, dtype=np.int64)])
    offsets = np.concatenate([[0, 1, 2, 3, 4, 5, 2**33 + 1], rng.integers(0, 2**40, b - 7)])
    u = scheme.chain_uniforms(seeds.astype(np.uint64), np.arange(b), offsets.astype(np.uint64), K)
    draft_probs = torch.zeros(b, K, 2, device="cuda")
    draft_probs[:, :, 0] = 1.0
    draft_ids = torch.zeros(b, K, dtype=torch.int32, device="cuda")
    seed = torch.tensor(seeds, dtype=torch.int64, device="cuda")
    offset = torch.tensor(offsets, dtype=torch.int64, device="cuda")
    pinned = 0
    for j in range(K):
        for threshold in (u[:, j], np.nextafter(u[:, j], np.float32(2))):
            t = np.ones((b, K), dtype=np.float32)
            t[:, j] = threshold
            target = np.ones((b, K + 1), dtype=np.float32)
            target[:, :K] = t
            target_probs = torch.tensor(np.stack([target, 1 - target], axis=-1), device="cuda")
            _, accepted, emitted = sampling.chain_speculative_sampling(
                draft_probs, draft_ids, target_probs, seed=seed, offset=offset
            )
            want_emitted, want_accepted = _chain_decisions(u, t)
            np.testing.assert_array_equal(emitted.cpu().numpy(), want_emitted)
            np.testing.assert_array_equal(accepted.cpu().numpy(), want_accepted)
        # draft j's coin, where the drafts before it were accepted, lies in [u, next float32 above u): exactly u
        pinned += int((u[:, :j] < 1).all(axis=1).sum())
    assert pinned >= b * K - 4  # 2,048 coins pinned bit-exact (a coin of 1.0 before draft j hides it)
