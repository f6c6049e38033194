"""The kernel-level adapters of lmdeploy and SGLang (``harness.adapters.lmdeploy``, ``harness.adapters.sglang``).

Without the peer installed (CI) only the clear error is tested; with it (``tox -e lmdeploy``, ``tox -e sglang``, or
``PYTHONPATH`` naming a ``pip install --no-deps --target`` folder) the adapters drive the peer's own code on small
cases whose outcome the oracle or the budget rule fixes.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from harness.contract import OutsideContract
from harness.oracle import rejection as rs
from specs.interface import AddedRequest, BatchUpdate


def _needs(package):
    """Skip unless ``package`` is installed (found, not imported: the adapters stand in for its root)."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")


def _missing(monkeypatch, package):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a))


def test_lmdeploy_adapter_names_the_package_it_needs(monkeypatch):
    from harness.adapters import lmdeploy

    _missing(monkeypatch, "lmdeploy")
    with pytest.raises(RuntimeError, match=r"pip install --no-deps lmdeploy==0\.18\.0"):
        lmdeploy.import_lmdeploy("torch")


def test_sglang_adapter_names_the_package_it_needs(monkeypatch):
    from harness.adapters import sglang

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _missing(monkeypatch, "sglang")
    with pytest.raises(RuntimeError, match=r"pip install --no-deps sglang==0\.5\.23"):
        sglang.import_sglang()


def test_lmdeploy_greedy_and_certain_drafts_match_the_oracle():
    _needs("lmdeploy")
    from harness.adapters.lmdeploy import make

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


def _sglang_budget(start, end, budget, prompt):
    from harness.adapters.sglang import make

    state = make().budget_state(start, end, 1, "section")
    state.sync_batch(BatchUpdate(batch_size=1, added=[AddedRequest(0, budget, prompt)]))
    return state


def test_sglang_budget_a_forces_the_end_marker_after_the_budget(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _needs("sglang")
    state = _sglang_budget([100], [101], 2, [1, 100])  # prompt-opened section, budget 2
    forced = []
    for token in (5, 6, 101):
        forced.append(state.forced_tokens(None, None)[0])
        state.update_state([[token]])
    forced.append(state.forced_tokens(None, None)[0])
    assert forced == [-1, -1, 101, -1]  # two free tokens, then E, then free again after the section closes


def test_sglang_budget_a_is_never_handed_drafts_or_longer_markers(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _needs("sglang")
    with pytest.raises(OutsideContract, match="end_token_ids"):
        _sglang_budget([100], [101, 102], 2, [100])
    state = _sglang_budget([100], [101], 2, [100])
    with pytest.raises(OutsideContract, match="outside verification only"):
        state.forced_tokens([1], [5])
