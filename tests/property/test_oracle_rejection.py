"""Properties of the rejection-sampling oracle: the theorem, the accepted-length law, greedy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from specconform.harness.oracle import rejection as rs


@st.composite
def distributions(draw, V, allow_zeros=True):
    lo = 0.0 if allow_zeros else 0.01
    w = draw(hnp.arrays(np.float64, V, elements=st.floats(lo, 1.0)))
    if w.sum() <= 0:
        w[draw(st.integers(0, V - 1))] = 1.0
    return w / w.sum()


@st.composite
def pq_cases(draw):
    V = draw(st.integers(2, 4))
    K = draw(st.integers(1, 2))
    p_rows = np.array([draw(distributions(V)) for _ in range(K + 1)])
    q_rows = np.array([draw(distributions(V)) for _ in range(K)])
    return p_rows, q_rows


@pytest.mark.req("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-PROB-5", "RS-ONEHOT-1", "RS-ONEHOT-2")
@given(pq_cases(), st.booleans())
@settings(max_examples=150, deadline=None)
def test_marginal_at_every_reached_position_is_the_target(case, one_hot):
    p_rows, q_rows = case
    V = p_rows.shape[1]
    dist = rs.distribution_with_sampled_drafts(p_rows, q_rows, one_hot=one_hot)
    assert sum(dist.values()) == pytest.approx(1.0)
    for j in range(len(p_rows)):
        marginal, reach = rs.position_marginals(dist, j, V)
        if reach > 1e-9:
            np.testing.assert_allclose(marginal, p_rows[j], atol=1e-9)


@pytest.mark.req("RS-PROB-6")
@given(pq_cases())
@settings(max_examples=150, deadline=None)
def test_accepted_length_follows_the_closed_form(case):
    p_rows, q_rows = case
    dist = rs.distribution_with_sampled_drafts(p_rows, q_rows)
    lengths = np.zeros(len(q_rows) + 1)
    for key, prob in dist.items():
        lengths[len(key) - 1] += prob
    betas = [rs.overlap(p_rows[j], q_rows[j]) for j in range(len(q_rows))]
    np.testing.assert_allclose(lengths, rs.accepted_length_distribution(betas), atol=1e-9)


@pytest.mark.req("RS-PROB-4")
def test_empty_residual_samples_p():
    p = [np.array([0.5, 0.5, 0.0]), np.array([1.0, 0.0, 0.0])]
    dist = rs.output_distribution(p, [np.array([0.5, 0.5, 0.0])], drafts=[2])
    assert dist == pytest.approx({(0,): 0.5, (1,): 0.5})


@pytest.mark.req("RS-GREEDY-1", "RS-GREEDY-2", "RS-GREEDY-3", "RS-ZERO-1", "RS-LAYOUT-2", "RS-INPUT-1")
@given(st.integers(1, 4), st.integers(0, 4), st.data())
@settings(max_examples=150, deadline=None)
def test_greedy_emits_the_argmax_prefix(V_extra, K, data):
    V = V_extra + 1
    logits = data.draw(hnp.arrays(np.float64, (K + 1, V), elements=st.integers(-2, 2).map(float)))
    drafts = data.draw(st.lists(st.integers(0, V - 1), min_size=K, max_size=K))
    tokens, num, _ = rs.sample_case(rs.RejectionCase(logits, drafts, [K], [0.0]))
    row = tokens[0]
    n = int(num[0])
    assert 1 <= n <= K + 1
    assert (row[n:] == -1).all() and (row[:n] >= 0).all() and (row[:n] < V).all()
    for j in range(n):
        best = int(np.flatnonzero(logits[j] == logits[j].max())[0])  # lowest id among ties
        assert row[j] == best
        if j < n - 1:
            assert drafts[j] == best
    if n <= K:
        assert drafts[n - 1] != row[n - 1]


@pytest.mark.req("RS-RNG-1", "RS-RNG-2", "RS-MIXED-1")
@given(st.integers(0, 2**62), st.integers(0, 10**6), st.integers(1, 3))
@settings(max_examples=50, deadline=None)
def test_seeded_request_does_not_depend_on_the_rest_of_the_batch(seed, position, others):
    rng = np.random.default_rng(seed % 1000)
    V, K = 7, 3
    logits = rng.normal(size=(K + 1, V))
    drafts = rng.integers(0, V, size=K)
    alone, _, _ = rs.sample_case(rs.RejectionCase(logits, drafts, [K], [0.9], seeds=[seed], positions=[position]))
    other_logits = rng.normal(size=(others * 2, V))
    batch = rs.RejectionCase(
        np.concatenate([other_logits, logits]),
        np.concatenate([rng.integers(0, V, size=others), drafts]),
        [1] * others + [K],
        [0.5] * others + [0.9],
        seeds=list(rng.integers(0, 1000, size=others)) + [seed],
        positions=[0] * others + [position],
    )
    together, _, _ = rs.sample_case(batch)
    assert together[-1].tolist() == alone[0].tolist()
