"""impl.counting against the oracle's definitions (specs/accepted-tokens.md)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from specconform import impl
from specconform.harness import spec
from specconform.harness.oracle import counting as ac

rows = st.lists(st.lists(st.integers(-1, 12), min_size=1, max_size=6), min_size=1, max_size=6)


def pad(batch):
    width = max(len(r) for r in batch)
    return [r + [-1] * (width - len(r)) for r in batch]


@pytest.mark.req("AC-COUNT-1", "AC-COUNT-2", "AC-COUNT-3", "AC-COUNT-4")
@given(rows)
@settings(max_examples=200, deadline=None)
def test_validated_count_matches_the_definition_and_flags_every_bad_row(batch):
    batch = pad(batch)
    result = impl.count_emitted_validated(torch.tensor(batch), vocab_size=10)
    problems = ac.validate_rows(batch, 10)
    assert result.num_emitted.tolist() == [ac.num_emitted(r) for r in batch]
    assert result.broken_prefix.nonzero()[:, 0].tolist() == sorted({p.row for p in problems if p.kind == "hole"})
    assert result.out_of_vocab.nonzero()[:, 0].tolist() == sorted({p.row for p in problems if p.kind == "out_of_vocab"})


@pytest.mark.req("AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-STOP-1")
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(0, 5),
            st.lists(st.integers(0, 6), min_size=5, max_size=5),
            st.none() | st.integers(1, 5),  # the commit limit max_tokens or a stop string leaves
        ),
        min_size=1,
        max_size=20,
    )
)
@settings(max_examples=150, deadline=None)
def test_acceptance_stats_match_the_oracle(steps):
    stats = impl.AcceptanceStats(max_positions=4, eos_token_ids=[6])
    oracle = ac.AcceptanceMetrics(max_positions=4)
    committed = 0
    for k, emitted, tokens, limit in steps:
        emitted = min(emitted, k + 1)
        row = tokens[:emitted] + [-1] * (5 - emitted)
        got = stats.observe(torch.tensor([k]), torch.tensor([row]), None if limit is None else torch.tensor([limit]))
        assert got.tolist() == [oracle.observe(k, row, [6], limit)]
        if k:
            committed += ac.committed_tokens(row, [6], limit)
    assert stats.num_accepted_tokens == oracle.num_accepted_tokens
    assert stats.num_drafts == oracle.num_drafts and stats.num_discarded == oracle.num_discarded
    assert stats.accepted_per_position.tolist() == oracle.accepted_per_position
    per_pos = stats.accepted_per_position.tolist()
    assert all(a >= b for a, b in zip(per_pos, per_pos[1:]))
    if stats.num_drafts:
        assert stats.num_drafts * stats.mean_acceptance_length == pytest.approx(committed)


@pytest.mark.req("AC-STOP-1")
@pytest.mark.parametrize("entry", spec.load_vectors("counting")["metrics"], ids=lambda e: e["name"])
def test_metric_vector_replays(entry):
    stats = impl.AcceptanceStats(max_positions=4, eos_token_ids=entry["eos_token_ids"])
    for step in entry["steps"]:
        limit = None if step["commit_limit"] is None else torch.tensor([step["commit_limit"]])
        stats.observe(torch.tensor([step["num_draft_tokens"]]), torch.tensor([step["row"]]), limit)
    assert stats.mean_acceptance_length == pytest.approx(entry["expected"]["mean_acceptance_length"])
    assert stats.acceptance_rate == pytest.approx(entry["expected"]["acceptance_rate"])
    assert stats.accepted_per_position.tolist() == entry["expected"]["accepted_per_position"]
