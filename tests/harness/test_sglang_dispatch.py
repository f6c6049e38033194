"""SGLang's verification reached through its own dispatch, per declared platform
(``specconform.harness.adapters.sglang_dispatch``): the platform that cannot run here is refused, and each runnable one
reaches the kernel SGLang's own branches name for it. Without sglang installed only the refusals are tested; with it
(``tox -e sglang-xpu``, TRITON_INTERPRET=1 on a CPU) the adapter drives SGLang's code.
"""

from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np
import pytest

from specconform.harness.adapters import sglang, sglang_dispatch
from specconform.harness.contract import OutsideContract
from specconform.harness.core import UsageError
from specconform.harness.oracle import rejection as rs


def test_cpu_platform_is_refused_naming_its_kernel():
    """SGLang's CPU greedy verifier is sgl_kernel's CPU op, which no package ships: refused, nothing substituted."""
    with pytest.raises(UsageError, match=r"platform is 'cpu'.*sgl_kernel.*nothing is substituted"):
        sglang.make_cpu()


def test_unknown_platform_names_the_known_ones():
    with pytest.raises(UsageError, match=r"platform is 'tpu': SGLang's adapter knows cuda, xpu, cpu"):
        sglang_dispatch.platform("tpu")


def test_cuda_greedy_kernel_is_refused_without_a_gpu():
    """The CUDA platform's greedy verifier is JIT CUDA: without a GPU its batches lie outside what can be run, and
    the verifier is never called (no other kernel stands in for it)."""
    called = []
    with pytest.raises(OutsideContract, match=r"verify path: cuda greedy \(verify_tree_greedy, JIT CUDA"):
        sglang_dispatch.verify_greedy(lambda **kw: called.append(kw), sglang_dispatch.platform("cuda"), on_gpu=False)
    assert called == []


@pytest.fixture(scope="module")
def eagle_utils():
    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed")
    if os.environ.get("TRITON_INTERPRET") != "1" and not importlib.import_module("torch").cuda.is_available():
        pytest.skip("SGLang's Triton kernels run on a CPU only with TRITON_INTERPRET=1 set before start")
    sglang.import_sglang()
    return sglang.import_eagle_utils()


@pytest.mark.parametrize(
    ("name", "all_greedy", "greedy"),
    [("cuda", True, True), ("cuda", False, False), ("xpu", True, True), ("xpu", False, True)],
)
def test_predicate_is_sglangs_own_for_the_platform(eagle_utils, name, all_greedy, greedy):
    """_verify_uses_greedy with the platform's flags and rejection sampling on: CUDA samples a sampled batch, XPU
    sends every batch greedy (eagle_utils.py line 500)."""
    assert sglang_dispatch.uses_greedy(eagle_utils, sglang_dispatch.platform(name), all_greedy) is greedy


def test_xpu_greedy_branch_reaches_the_triton_kernel(eagle_utils, monkeypatch):
    """verify_tree_greedy_func's own branch, with spec_tree's flags set to XPU's, calls verify_tree_greedy_triton;
    the process's flags are restored after."""
    spec_tree = importlib.import_module("sglang.kernels.ops.speculative.spec_tree")
    before = {flag: getattr(spec_tree, flag) for flag in sglang_dispatch.FLAGS}
    reached = []
    monkeypatch.setattr(spec_tree, "verify_tree_greedy_triton", lambda **kw: reached.append(kw))
    names = ("predicts", "accept_index", "accept_token_num", "candidates", "retrieve_index", "retrieve_next_token")
    tensors = {name: name for name in (*names, "retrieve_next_sibling", "target_predict")}
    sglang_dispatch.verify_greedy(
        spec_tree.verify_tree_greedy_func, sglang_dispatch.platform("xpu"), on_gpu=False, **tensors
    )
    assert reached == [tensors]
    assert {flag: getattr(spec_tree, flag) for flag in sglang_dispatch.FLAGS} == before


@pytest.fixture(scope="module")
def xpu_engine(eagle_utils):
    return sglang.make_xpu()


def test_xpu_engine_names_its_path(xpu_engine):
    assert xpu_engine.name == "sglang-0.5.23-xpu"
    assert "every batch: verify path: xpu greedy (verify_tree_greedy_triton" in xpu_engine.version


def test_xpu_greedy_verification_matches_the_oracle(xpu_engine):
    """An all-greedy ragged batch on the XPU path (RS-GREEDY-1..3): the oracle's tokens."""
    rng = np.random.default_rng(5)
    num_draft_tokens = [2, 3, 1]
    logits = rng.normal(size=(sum(num_draft_tokens) + len(num_draft_tokens), 11))
    argmax = logits.argmax(axis=1)
    drafts = [argmax[0], (argmax[1] + 1) % 11, *argmax[3:6], (argmax[7] + 2) % 11]
    case = rs.RejectionCase(logits, [int(d) for d in drafts], num_draft_tokens, [0.0] * 3)
    tokens, emitted = xpu_engine.rejection_sample(case)
    expected, expected_emitted, _ = rs.sample_case(case)
    assert tokens.tolist() == expected.tolist()
    assert emitted.tolist() == expected_emitted.tolist()


def test_xpu_sampled_request_takes_the_greedy_path(xpu_engine):
    """The finding: a sampled request whose draft the spec accepts with probability 0.9 (p = 0.45, q = 0.5) is
    rejected on every call, the argmax emitted, because SGLang's XPU dispatch verifies it greedily."""
    logits = np.log(np.array([[0.45, 0.55, 1e-6], [0.2, 0.3, 0.5]]))
    case = rs.RejectionCase(logits, [0], [1], [1.0], np.array([[0.5, 0.25, 0.25]]))
    emitted = {tuple(xpu_engine.rejection_sample(case)[0][0].tolist()) for _ in range(20)}
    assert emitted == {(1, -1)}  # 0.9 ** 20 of the spec's acceptances missed: the greedy path, every time
