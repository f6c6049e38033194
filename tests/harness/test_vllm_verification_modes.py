"""vLLM 0.33's other verification modes (``SpeculativeConfig.rejection_sample_method``) through
``specconform.harness.adapters.vllm_mrv2`` (skipped without vLLM 0.33; on a CPU it needs ``TRITON_INTERPRET=1`` and
``CUDA_VISIBLE_DEVICES=`` set before Python starts).

The lossy modes, ``synthetic`` and ``fly``, are negative controls: each is judged once under the exact profile
of its runner (vllm-mrv2), as if an engine ran it without declaring it, and the exact greedy check must FAIL;
under its own profile, which declares the mode (RUN-PROFILE-3), the exact rules are not claimed."""

import os

import numpy as np
import pytest

from specconform.harness import checks, products, runner
from specconform.harness.core import FAIL, NOT_CLAIMED, Context
from specconform.harness.oracle import rejection as rs

vllm = pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() and (
    os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
):
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)

LOSSY = ("synthetic", "fly")


@pytest.fixture(scope="module", params=LOSSY)
def lossy(request):
    from specconform.harness.adapters import vllm_mrv2

    return getattr(vllm_mrv2, f"make_{request.param}")()


def _greedy_mismatch_case():
    """One greedy request, K = 3: every row's argmax is id 0 (a high-entropy row, logits [V = 6]), the first draft
    is id 3 and the others 0. The exact rule (RS-GREEDY-1/2) rejects the first draft and emits 0."""
    logits = np.zeros((4, 6))
    logits[:, 0] = 0.1
    return rs.RejectionCase(logits, np.array([3, 0, 0]), np.array([3]), np.array([0.0]), None)


@pytest.mark.req("RUN-PROFILE-3", "RS-GREEDY-1")
def test_a_lossy_mode_fails_the_exact_greedy_rule_on_one_case(lossy):
    case = _greedy_mismatch_case()
    tokens, num = lossy.rejection_sample(case)
    expected, expected_num, _ = rs.sample_case(case)
    assert expected[0, : expected_num[0]].tolist() == [0]
    assert tokens[0, 0] == 3 and num[0] > 1  # the mismatched draft was accepted


@pytest.mark.req("RUN-PROFILE-3", "RS-GREEDY-2")
def test_the_exact_greedy_check_fails_a_lossy_mode_run_under_the_exact_profile(lossy):
    check = checks.by_name()["rejection/greedy"]
    exact = products.profile_of("vllm-mrv2")
    outcome = check.run(lossy, Context(profile=exact, seed=0))
    assert outcome.status == FAIL, outcome.message
    failed = {rid for rid, result in outcome.requirements.items() if result.status == FAIL}
    assert failed & {"RS-GREEDY-1", "RS-GREEDY-2"}, outcome.message  # a mismatched draft accepted, or its row
    assert lossy.profile.verification != "exact"
    assert runner.gate(check, lossy.profile) == (NOT_CLAIMED, f"profile {lossy.profile.name} does not claim rs.greedy")
