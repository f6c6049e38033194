"""SGLang 0.5.23's budget B, the strict-thinking grammar (``specconform.harness.adapters.sglang_strict``).

Skipped unless SGLang and xgrammar are installed (``tox -e sglang``, or ``PYTHONPATH`` naming a ``pip install
--no-deps --target`` folder): the adapter drives SGLang's grammar manager, its batch mask fill and its speculative
tree traversal on a case inside budget B's domain (the prompt opens the section with its last token), compared
with the oracle row by row.
"""

from __future__ import annotations

import importlib.util

import pytest

from specconform.harness.adapters.oracle import OracleEngine
from specconform.specs.interface import AddedRequest, BatchUpdate


def _needs(*packages):
    for package in packages:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")


def _forced_rows(engine, steps):
    """The forced rows of each ``(num_draft_tokens, draft_token_ids, committed)`` step for a prompt-opened request
    with ``E = [101, 102]`` and budget 3, and an untracked one beside it."""
    state = engine.budget_state([100], [101, 102], 2, "section", max_spec_len=2)
    prompt = (1, 100)  # the chat template leaves the section open with S as its last token
    state.sync_batch(BatchUpdate(batch_size=2, added=[AddedRequest(0, 3, prompt), AddedRequest(1, None, prompt)]))
    rows = []
    for num_draft_tokens, draft_token_ids, committed in steps:
        rows.append(list(state.forced_tokens(num_draft_tokens, draft_token_ids)))
        state.update_state(committed)
    return rows


def test_budget_b_forces_the_multi_token_end_over_drafts_as_the_oracle_does(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    _needs("sglang", "xgrammar")
    from specconform.harness.adapters.sglang_strict import make

    steps = [
        (None, None, [[5], [5]]),  # one ordinary step: one thinking token spent
        ([2, 1], [6, 101, 6], [[6, 101, 102], [6, 7]]),  # drafts: the budget forces E[0] after 6, E[1] after 101
        (None, None, [[9], [9]]),  # the section is closed: free again
    ]
    assert _forced_rows(make(), steps) == _forced_rows(OracleEngine(), steps)
