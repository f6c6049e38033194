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
