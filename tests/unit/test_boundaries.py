"""Boundary hunting (specconform.harness.oracle.boundaries) and exact judgment under a draw scheme
(specconform.harness.oracle.draws_exact): the positions a hunt returns put the scheme's own uniform exactly on the
boundary, as the scheme's scalar definition computes it; the judge decides the boundary draws by the rule, not by a
tolerance, and names the requirement a wrong output breaks."""

import numpy as np
import pytest

from specconform.harness.oracle import boundaries, draws_exact, rng
from specconform.harness.oracle import rejection as rs
from specconform.harness.oracle.draws import sglang_seeded, vllm_mrv2


@pytest.mark.req("RS-RNG-3")
def test_reference_search_lands_on_each_boundary_and_nowhere_before():
    seed = 987654321
    found, searched = boundaries.search("reference", seed)
    assert set(found) == {"zero", "half", "top"} and searched >= max(found.values())
    for name, position in found.items():
        assert rng.uniform(seed, position) == boundaries.TARGETS["reference"][name]  # the scalar definition
    positions = np.arange(0, 5000, dtype=np.int64)
    vector = boundaries.reference_uniforms(seed, positions)
    assert vector.tolist() == [rng.uniform(seed, int(p)) for p in positions]
    # the first hit: none of the positions searched before it is on that boundary
    first = min(found.values())
    before = boundaries.reference_uniforms(seed, np.arange(first, dtype=np.int64))
    assert not np.isin(before, list(boundaries.TARGETS["reference"].values())).any()


@pytest.mark.parametrize("column", [0, 1, 3])
@pytest.mark.parametrize("seed", [0, 42, -1, 2**63 - 1, -(2**40) + 5])
def test_sglang_positions_give_the_coins_their_hash(seed, column):
    """SGLang's coin is 0 only for the hash 0 (one coin in 2^32): the hash inverted for the position finds it; the
    coin computed forwards by the scheme (``verify_coins``) is then exactly the boundary."""
    found, searched = boundaries.hunt("sglang-seeded", seed, column)
    assert searched == 0 and set(found) == {"zero", "half", "top"}
    for name, position in found.items():
        assert 0 <= position < 2**32
        coins, final = sglang_seeded.verify_coins([seed], [position], column + 1)
        assert float(coins[0, column]) == boundaries.TARGETS["sglang-seeded"][name]
        assert int(sglang_seeded.coin_hash(seed, position, column)) == boundaries.SGLANG_HASHES[name]


@pytest.mark.long
def test_vllm_search_finds_its_largest_uniform_below_one():
    """Model Runner V2's uniform is ``float32(x) * float32(4.6566127342e-10)``, and that scale is 2^-31 rounded down,
    so its largest uniform is 1 - 2^-24, never 1; the hunt finds it and u = 1/2 in some 10^7 positions."""
    assert float(vllm_mrv2.TL_RAND_SCALE) * 2**31 == 1 - 2**-24
    seed = 123456789
    found, _ = boundaries.search("vllm-mrv2", seed)
    assert set(found) == {"half", "top"}
    for name, position in found.items():
        assert float(vllm_mrv2.acceptance_uniform(seed, position)) == boundaries.TARGETS["vllm-mrv2"][name]


def test_inverse_cdf_is_the_first_running_sum_above_the_threshold():
    weights = np.array([0.0, 0.25, 0.0, 0.5, 0.25])
    for coin in (0.0, 0.1, 0.25, 0.5, 0.74, 0.75, 0.999):
        token, _ = sglang_seeded.inverse_cdf(weights, coin)
        assert token == int(np.searchsorted(np.cumsum(weights), coin, side="right"))
    assert sglang_seeded.inverse_cdf(weights, 0.0)[0] == 1  # a zero coin takes the first id with weight
    assert sglang_seeded.inverse_cdf(weights, 0.25)[1] == 0  # on a running sum: no margin


def _boundary_case(p_draft: float, position: int, seed: int, q=None) -> rs.RejectionCase:
    """One request, one draft (id 2, V = 4), whose ``p(2)`` is 0, 1/2 or 1 exactly."""
    row = {0: [0.0, 0.0, -np.inf, 0.0], 0.5: [-np.inf, -np.inf, 0.0, 0.0], 1: [-np.inf, -np.inf, 0.0, -np.inf]}
    logits = np.array([row[p_draft], [0.3, -0.2, 0.1, 0.0]])
    return rs.RejectionCase(logits, [2], [1], [1.0], q, seeds=[seed], positions=[position])


@pytest.mark.req("RS-PROB-3", "RS-ONEHOT-1")
def test_boundary_draws_are_decided_by_the_rule_not_skipped():
    """At a zero coin a p(d) = 0 draft is rejected, at the largest coin a p(d) = 1 draft accepted, both decided
    exactly; p(d) = 1/2 at u = 1/2 is within the tolerance and skipped. A wrong output is named: accepting the
    p(d) = 0 draft breaks RS-PROB-3, rejecting the p(d) = 1 draft RS-ONEHOT-1."""
    seed = 5
    found, _ = boundaries.hunt("sglang-seeded", seed)
    zero = _boundary_case(0, found["zero"], seed)
    want = draws_exact.expected_request("sglang-seeded", zero, 0)
    assert want.complete and want.kinds == ["recovered"] and want.zero_probability == 1 and want.exact_boundaries == 1
    wrong = draws_exact.judge_case("sglang-seeded", zero, np.array([[2, 0]]), np.array([2]))
    assert [(m.requirement, m.mode) for m in wrong.mismatches] == [("RS-PROB-3", "zero-probability-draft-accepted")]
    top = _boundary_case(1, found["top"], seed)
    want = draws_exact.expected_request("sglang-seeded", top, 0)
    assert want.emitted[0] == 2 and want.kinds == ["draft", "bonus"] and want.exact_boundaries == 1
    stopped = draws_exact.judge_case("sglang-seeded", top, np.array([[2, -1]]), np.array([1]))
    assert [(m.requirement, m.mode) for m in stopped.mismatches] == [("RS-ONEHOT-1", "draft-rejected-against-draws")]
    half = draws_exact.expected_request("sglang-seeded", _boundary_case(0.5, found["half"], seed), 0)
    assert not half.complete and half.decisions == 0 and "within tolerance" in half.skipped


@pytest.mark.req("RS-PROB-1", "RS-PROB-2", "RS-RNG-3")
def test_the_oracle_is_judged_equal_under_the_reference_scheme_and_wrong_draws_are_not():
    """The oracle samples with the reference draws (RS-RNG-3), so its output is what the reference scheme decides,
    request by request; the same output judged against other seeds parts from them."""
    generator = np.random.default_rng(3)
    V, B = 30, 24
    K = generator.integers(0, 4, B)
    q = generator.dirichlet(np.ones(V) * 0.5, size=int(K.sum()))
    drafts = np.array([generator.choice(V, p=row) for row in q])
    case = rs.RejectionCase(
        generator.normal(0, 2, (int((K + 1).sum()), V)),
        drafts,
        K,
        generator.choice([0.7, 1.0], B),
        q,
        seeds=generator.integers(0, 2**62, B),
        positions=generator.integers(0, 2**30, B),
    )
    tokens, num, _ = rs.sample_case(case)
    judged = draws_exact.judge_case("reference", case, tokens, num)
    assert not judged.mismatches and judged.requests == B and judged.decisions >= K.sum() // 2
    case.seeds = case.seeds + 1
    assert len(draws_exact.judge_case("reference", case, tokens, num).mismatches) >= B // 3
