"""vLLM Model Runner V2's sampled verification judged exactly under its own draws (scheme ``vllm-mrv2``,
specconform.harness.oracle.draws_exact): every acceptance decision and every emitted token of seeded, sampled
requests, through the adapter (specconform.harness.adapters.vllm_mrv2) on random cases and on the boundary cases of
``rejection/own-draws-one-hot`` (seeds hunted onto u = 1/2 and onto vLLM's largest u). Skipped without vLLM 0.33; on a
CPU it needs ``TRITON_INTERPRET=1`` and ``CUDA_VISIBLE_DEVICES=``."""

import os

import numpy as np
import pytest

from specconform.harness.oracle import draws_exact as exact
from specconform.harness.oracle import rejection as rs

vllm = pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() and (
    os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
):
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)


def _case(rng, B: int, V: int, one_hot: bool) -> rs.RejectionCase:
    """Seeded, sampled requests with 0..4 drafts drawn from their q (one-hot drafts: q a point mass), targets near
    the drafts' distributions so that drafts are accepted and rejected alike."""
    K = rng.integers(0, 5, B)
    rows, n = int((K + 1).sum()), int(K.sum())
    draft_logits = rng.normal(0.0, 3.0, (n, V))
    q = np.exp(draft_logits - draft_logits.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    drafts = np.array([rng.choice(V, p=row) for row in q], dtype=np.int64)
    target = rng.normal(0.0, 2.0, (rows, V))
    temperature = rng.choice([0.6, 1.0, 1.5], B)
    for i, (start, dstart) in enumerate(zip(np.cumsum(np.r_[0, K + 1])[:-1], np.cumsum(np.r_[0, K])[:-1])):
        # the target leans on the draft model's logits, so acceptance is neither certain nor rare
        target[start : start + K[i]] += 2 * draft_logits[dstart : dstart + K[i]] * temperature[i]
    return rs.RejectionCase(
        target_logits=target,
        draft_token_ids=drafts,
        num_draft_tokens=K,
        temperature=temperature,
        draft_probs=None if one_hot else q,
        seeds=rng.integers(-(2**63), 2**63 - 1, B, dtype=np.int64),
        positions=rng.integers(0, 2**20, B),
    )


@pytest.fixture(scope="module")
def mrv2():
    from specconform.harness.adapters import vllm_mrv2

    return vllm_mrv2.make()


@pytest.mark.req("RS-PROB-1", "RS-PROB-2", "RS-PROB-4", "RS-RNG-1")
@pytest.mark.parametrize(
    "one_hot",
    [
        pytest.param(
            False,
            id="probabilistic",
            # vLLM's residual with draft probabilities calls libdevice's log1p, which Triton 3.9's interpreter lacks
            marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="libdevice log1p needs CUDA"),
        ),
        pytest.param(True, id="one-hot"),
    ],
)
def test_every_decision_and_token_matches_vllm_draws(mrv2, one_hot):
    rng = np.random.default_rng(6 + one_hot)
    total = exact.Judgment("vllm-mrv2")
    cases = [_case(rng, 16, 40, one_hot) for _ in range(8)]
    for case in cases:
        tokens, num = mrv2.rejection_sample(case)
        total.add(exact.judge_case("vllm-mrv2", case, tokens, num))
    assert not total.mismatches, "\n".join(m.evidence for m in total.mismatches)
    print(total.summary)
    # drafts accepted and rejected, recovered and bonus tokens alike
    assert total.requests == 128 and total.decisions >= 100 and total.tokens - total.requests >= 30
    assert total.skipped <= 2
    # the judgment can fail: the same outputs under other seeds are another engine's, and are found out
    reseeded = exact.Judgment("vllm-mrv2")
    for case in cases:
        tokens, num = mrv2.rejection_sample(case)
        case.seeds = case.seeds ^ 1
        reseeded.add(exact.judge_case("vllm-mrv2", case, tokens, num))
    print(reseeded.summary)
    assert len(reseeded.mismatches) >= 32


@pytest.mark.req("RS-ONEHOT-1", "RS-PROB-2", "RS-PROB-3")
def test_boundary_cases_match_vllm_draws(mrv2):
    """The boundary cases of ``rejection/own-draws-one-hot`` (one-hot drafts with p(d) 0, 1/2 and 1 at a position
    whose acceptance uniform the hunt found at 1/2 and at vLLM's largest, 1 - 2^-24) go through vLLM as the draws
    decide: the p(d) = 1 draft accepted at the largest u, the p(d) = 0 one rejected, p(d) = 1/2 at u = 1/2 skipped."""
    from specconform.harness.checks.rejection import own_draws
    from specconform.harness.oracle import boundaries

    rng = np.random.default_rng(11)
    seed = int(rng.integers(0, 2**62))
    cases, line = own_draws.boundary_cases("vllm-mrv2", seed, rng, one_hot=True)
    found, _ = boundaries.hunt("vllm-mrv2", seed)
    assert set(found) == {"half", "top"}, line
    total = exact.Judgment("vllm-mrv2")
    for case in cases:
        assert boundaries.uniforms("vllm-mrv2", seed, case.positions[:1])[0] in (0.5, 1 - 2**-24)
        tokens, num = mrv2.rejection_sample(case)
        total.add(exact.judge_case("vllm-mrv2", case, tokens, num))
    print(total.summary)
    assert not total.mismatches, "\n".join(m.evidence for m in total.mismatches)
    # per boundary: p(d) = 0 and p(d) = 1 decided exactly; p(d) = 1/2 at u = 1/2 skipped, at the largest u decided
    assert total.exact_boundaries == 4 and total.skipped == 1 and total.requests == 6
