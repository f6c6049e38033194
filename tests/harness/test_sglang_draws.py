"""The oracle's ``sglang-seeded`` draw scheme (specconform.harness.oracle.draws.sglang_seeded) held against SGLang
0.5.23's own ``eagle_utils._seeded_verify_coins``: bit-exact coins. On a CPU its ``murmur_hash32_kernel`` runs under
Triton's interpreter (``TRITON_INTERPRET=1``; SGLang's CPU branch needs ``sgl_kernel``, which no wheel ships for this
torch: ``specconform.harness.adapters.sglang_eagle`` launches the Triton kernel as the GPU branch does); on CUDA in the
test marked gpu, unchanged. Skipped without SGLang 0.5.23 (``tox -e sglang`` installs it)."""

import importlib.util
import os

import numpy as np
import pytest

from specconform.harness.oracle.draws import sglang_seeded as scheme

if importlib.util.find_spec("sglang") is None:
    pytest.skip("SGLang 0.5.23 is installed by tox -e sglang only", allow_module_level=True)
torch = pytest.importorskip("torch")
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
if not torch.cuda.is_available() and not INTERPRETED:
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1)", allow_module_level=True)

DEVICES = [
    pytest.param("cpu", marks=pytest.mark.skipif(not INTERPRETED, reason="the CPU runs Triton only interpreted")),
    pytest.param("cuda", marks=pytest.mark.gpu),
]
EDGE_SEEDS = [0, 1, -1, 2**31, 2**32 - 1, 2**63 - 1, -(2**63)]
EDGE_LENGTHS = [0, 1, 2**31 - 1, 2**32 - 1, 2**32 + 7]


@pytest.fixture(scope="module")
def helpers_on():
    from specconform.harness.adapters.sglang import import_sglang
    from specconform.harness.adapters.sglang_eagle import EagleVerifyHelpers

    import_sglang()
    return lambda device: EagleVerifyHelpers(torch, torch.device(device))


@pytest.mark.req("RS-RNG-1")
@pytest.mark.parametrize("device", DEVICES)
def test_seeded_verify_coins_are_bit_exact(helpers_on, device):
    rng = np.random.default_rng(4)
    rows, draft_token_num = 512, 7
    seeds = np.concatenate([EDGE_SEEDS, rng.integers(-(2**63), 2**63 - 1, rows - len(EDGE_SEEDS), dtype=np.int64)])
    lengths = np.concatenate([EDGE_LENGTHS, rng.integers(1, 2**20, rows - len(EDGE_LENGTHS))])
    coins, final = helpers_on(device).seeded_coins(seeds, lengths, draft_token_num)
    want_coins, want_final = scheme.verify_coins(seeds, lengths, draft_token_num)
    # bit-exact: 512 requests x (7 draft coins + 1 final coin) = 4,096 float32 coins
    np.testing.assert_array_equal(coins.cpu().numpy().view(np.uint32), want_coins.view(np.uint32))
    np.testing.assert_array_equal(final.cpu().numpy().view(np.uint32), want_final.view(np.uint32))
    assert coins.dtype == torch.float32 and tuple(coins.shape) == (rows, draft_token_num)


@pytest.mark.req("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-ONEHOT-1")
@pytest.mark.parametrize("one_hot", [True, False], ids=["one-hot", "probabilistic"])
def test_sampled_verification_matches_the_scheme_at_a_zero_coin_too(one_hot):
    """SGLang's chain sampler (reject_sampling.py) through the adapter decides as the ``sglang-seeded`` draws and the
    rule decide (specconform.harness.oracle.draws_exact), on the random and boundary cases of
    ``rejection/own-draws``: among them a draft with p(d) = 0 at a coin of exactly 0, which 0.5.23 rejects
    (``coin * q < p``; issue 35771's ``coin <= p`` accepted it, the zoo's ``zero-coin-accepts-zero-p``)."""
    from specconform.harness.adapters import sglang
    from specconform.harness.checks.rejection import own_draws
    from specconform.harness.oracle import draws_exact

    engine = sglang.make()
    rng = np.random.default_rng(8)
    cases = [own_draws.random_case(rng, one_hot) for _ in range(2)]
    hunted, line = own_draws.boundary_cases("sglang-seeded", int(rng.integers(0, 2**62)), rng, one_hot)
    total = draws_exact.Judgment("sglang-seeded")
    for case in cases + hunted:
        tokens, num = engine.rejection_sample(case)
        total.add(draws_exact.judge_case("sglang-seeded", case, tokens, num))
    print(total.summary, line)
    assert not total.mismatches, "\n".join(m.evidence for m in total.mismatches)
    # three boundaries, each with a p(d) = 0 and a p(d) = 1 draft decided without tolerance
    assert total.requests == 2 * own_draws.BATCH + 9 and total.exact_boundaries == 6
