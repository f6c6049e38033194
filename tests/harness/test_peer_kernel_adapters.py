"""The kernel-level adapters of lmdeploy and SGLang (``specconform.harness.adapters.lmdeploy``,
``specconform.harness.adapters.sglang``).

Without the peer installed (CI) only the clear error is tested; with it (``tox -e lmdeploy``, ``tox -e sglang``, or
``PYTHONPATH`` naming a ``pip install --no-deps --target`` folder) the adapters drive the peer's own code on small
cases whose outcome the oracle or the budget rule fixes.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from specconform.harness.contract import OutsideContract
from specconform.harness.oracle import rejection as rs
from specconform.specs.interface import AddedRequest, BatchUpdate


def _needs(package):
    """Skip unless ``package`` is installed (found, not imported: the adapters stand in for its root)."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")


def _missing(monkeypatch, package):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a))


def test_lmdeploy_adapter_names_the_package_it_needs(monkeypatch):
    from specconform.harness.adapters import lmdeploy

    _missing(monkeypatch, "lmdeploy")
    with pytest.raises(RuntimeError, match=r"pip install --no-deps lmdeploy==0\.18\.0"):
        lmdeploy.import_lmdeploy("torch")


def test_sglang_adapter_names_the_package_it_needs(monkeypatch):
    from specconform.harness.adapters import sglang

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _missing(monkeypatch, "sglang")
    with pytest.raises(RuntimeError, match=r"pip install --no-deps sglang==0\.5\.23"):
        sglang.import_sglang()


def test_lmdeploy_greedy_and_certain_drafts_match_the_oracle():
    _needs("lmdeploy")
    from specconform.harness.adapters.lmdeploy import make

    engine = make()
    logits = np.array([[0.0, 3.0, 0.0], [0.0, 0.0, 3.0], [3.0, 0.0, 0.0], [0.0, 9.0, -9.0], [-9.0, -9.0, 9.0]])
    case = rs.RejectionCase(logits, draft_token_ids=[1, 0, 1], num_draft_tokens=[2, 1], temperature=[0.0, 0.0])
    tokens, emitted = engine.rejection_sample(case)
    # greedy: request 0 accepts 1, rejects 0 for 2; request 1 accepts 1, then its bonus row's argmax 2
    assert tokens.tolist() == [[1, 2, -1], [1, 2, -1]]
    assert emitted.tolist() == [2, 2]
    # a sampled request whose draft has target probability 1 is always accepted, then the bonus row decides
    certain = rs.RejectionCase(
        np.array([[-50.0, 50.0, -50.0], [-50.0, -50.0, 50.0]]),
        draft_token_ids=[1],
        num_draft_tokens=[1],
        temperature=[1.0],
    )
    tokens, emitted = engine.rejection_sample(certain)
    assert tokens.tolist() == [[1, 2]] and emitted.tolist() == [2]


@pytest.fixture(scope="module")
def sglang_engine():
    """One SGLang engine for the module (importing eagle_utils takes seconds); TRITON_INTERPRET must be set before the
    process starts (tox -e sglang sets it)."""
    _needs("sglang")
    import os

    if os.environ.get("TRITON_INTERPRET") != "1" and not _cuda():
        pytest.skip("SGLang's Triton kernels run on a CPU only with TRITON_INTERPRET=1 set before start")
    from specconform.harness.adapters.sglang import make

    return make()


def _cuda():
    import torch

    return torch.cuda.is_available()


def _sglang_budget(engine, start, end, budget, prompt):
    state = engine.budget_state(start, end, 1, "section")
    state.sync_batch(BatchUpdate(batch_size=1, added=[AddedRequest(0, budget, prompt)]))
    return state


def test_sglang_budget_a_forces_the_end_marker_after_the_budget(sglang_engine):
    state = _sglang_budget(sglang_engine, [100], [101], 2, [1, 100])  # prompt-opened section, budget 2
    forced = []
    for token in (5, 6, 101):
        forced.append(state.forced_tokens(None, None)[0])
        state.update_state([[token]])
    forced.append(state.forced_tokens(None, None)[0])
    assert forced == [-1, -1, 101, -1]  # two free tokens, then E, then free again after the section closes


def test_sglang_budget_a_is_never_handed_drafts_or_longer_markers(sglang_engine):
    with pytest.raises(OutsideContract, match="end_token_ids"):
        _sglang_budget(sglang_engine, [100], [101, 102], 2, [100])
    state = _sglang_budget(sglang_engine, [100], [101], 2, [100])
    with pytest.raises(OutsideContract, match="outside verification only"):
        state.forced_tokens([1], [5])


def test_sglang_greedy_verification_matches_the_oracle(sglang_engine):
    """An all-greedy batch goes through SGLang's verify_tree_greedy on CUDA (RS-GREEDY-1..3, ragged K): the oracle's
    tokens on a GPU; refused without one."""
    rng = np.random.default_rng(5)
    num_draft_tokens = [2, 3, 2, 1]
    logits = rng.normal(size=(sum(num_draft_tokens) + len(num_draft_tokens), 11))
    logits[0, [3, 7]] = logits[0].max() + 1.0  # a tie: the lowest id wins (RS-GREEDY-3)
    argmax = logits.argmax(axis=1)
    rows = np.concatenate([[0], np.cumsum(np.asarray(num_draft_tokens) + 1)])
    # request 0 and 2 draft the argmax at their first row then miss; 1 drafts every argmax; 3 misses at once
    drafts = [3, (argmax[1] + 1) % 11, *argmax[rows[1] : rows[1] + 3], argmax[rows[2]], (argmax[rows[2] + 1] + 2) % 11]
    drafts.append((argmax[rows[3]] + 1) % 11)
    case = rs.RejectionCase(logits, [int(d) for d in drafts], num_draft_tokens, [0.0] * 4)
    if sglang_engine.device.type == "cpu":  # CUDA's greedy kernel is JIT CUDA: refused, no other kernel substituted
        with pytest.raises(OutsideContract, match="needs a GPU"):
            sglang_engine.rejection_sample(case)
        return  # the XPU path's greedy kernel runs here: tests/harness/test_sglang_dispatch.py
    tokens, emitted = sglang_engine.rejection_sample(case)
    expected, expected_emitted, _ = rs.sample_case(case)
    assert tokens.tolist() == expected.tolist()
    assert emitted.tolist() == expected_emitted.tolist() == [2, 4, 2, 1]


def test_sglang_seeded_request_does_not_depend_on_its_batch(sglang_engine):
    """A seeded request takes _seeded_verify_coins: the same tokens alone, again, and behind other seeded requests
    (RS-RNG-1's batch independence), and other tokens under another seed (the coins are the seed's)."""
    rng = np.random.default_rng(9)
    V, K = 13, 3
    logits = rng.normal(size=(K + 1, V))
    q = rng.dirichlet(np.ones(V), size=K)
    drafts = [int(rng.choice(V, p=row)) for row in q]

    def emitted(seed, others):
        batch = rs.RejectionCase(
            np.concatenate([rng.normal(size=((K + 1) * others, V)), logits]),
            [int(d) for d in rng.integers(0, V, K * others)] + drafts,
            [K] * (others + 1),
            [1.0] * (others + 1),
            np.concatenate([rng.dirichlet(np.ones(V), size=K * others), q]),
            seeds=[*rng.integers(0, 2**62, others), seed],
            positions=[*rng.integers(0, 2**20, others), 77],
        )
        tokens, count = sglang_engine.rejection_sample(batch)
        return tokens[-1, : count[-1]].tolist()

    alone = [emitted(seed, 0) for seed in range(8)]
    assert alone == [emitted(seed, 0) for seed in range(8)]
    assert alone == [emitted(seed, 2) for seed in range(8)]
    assert len({tuple(tokens) for tokens in alone}) > 1


def test_sglang_mixed_batch_takes_the_sampling_path(sglang_engine):
    """A batch mixing greedy and sampled requests is not all-greedy, so SGLang samples it with the greedy request at
    top-k 1; without a top-k kernel (a CPU) the case lies outside what can be run, naming the temperatures."""
    from specconform.harness.adapters.sglang_dispatch import uses_greedy

    eagle_utils = sglang_engine.eagle.eagle_utils
    assert uses_greedy(eagle_utils, sglang_engine.platform, True) and not uses_greedy(
        eagle_utils, sglang_engine.platform, False
    )
    logits = np.array([[0.0, 5.0, 0.0], [0.0, 0.0, 5.0], [5.0, 0.0, 0.0], [0.0, 9.0, -9.0]])
    case = rs.RejectionCase(logits, [1, 1], [1, 1], [0.0, 1.0], np.array([[0.1, 0.8, 0.1], [0.2, 0.6, 0.2]]))
    if sglang_engine.device.type == "cpu":  # no taught release has a top-k kernel on a CPU
        with pytest.raises(OutsideContract, match="temperature"):
            sglang_engine.rejection_sample(case)
        return
    tokens, emitted = sglang_engine.rejection_sample(case)
    assert tokens[0].tolist() == [1, 2] and emitted[0] == 2  # the greedy request: its argmax drafts, then the bonus
