"""impl.rejection_sample against the oracle, token for token, under the same counter-based draws.

Cases within 1e-5 of a floating-point decision (an acceptance test or a sampling race the oracle
decides by less than that margin) are discarded, as specs/rejection-sampling.md RS-RNG-3 allows.
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from specconform import impl
from specconform.harness.cases.rejection import MASKS, SMALL_VOCABS, RejectionFamily, rejection_cases
from specconform.harness.oracle import rejection as rs

MARGIN = 1e-5


def cases(vocabs=SMALL_VOCABS):
    """The shared rejection cases (``specconform.harness.cases.rejection``): every draft kind, masks, ties, forced
    rows."""
    plain = RejectionFamily(masks=MASKS, vocabs=vocabs)
    rich = RejectionFamily(masks=MASKS, vocabs=vocabs, ties=True, forced=True, draft_probs="given")
    return st.one_of(rejection_cases(plain), rejection_cases(rich))


def run_impl(case, device, backend):
    def t(x, dtype):
        return None if x is None else torch.tensor(np.asarray(x), dtype=dtype, device=device)

    out = impl.rejection_sample(
        t(case.target_logits, torch.float32),
        t(case.draft_token_ids, torch.int64),
        t(case.num_draft_tokens, torch.int64),
        draft_probs=t(case.draft_probs, torch.float32),
        temperature=t(case.temperature, torch.float32),
        seeds=t(case.seeds, torch.int64),
        positions=t(case.positions, torch.int64),
        forced_token_ids=t(case.forced_token_ids, torch.int64),
        backend=backend,
    )
    return out.token_ids.cpu().numpy(), out.num_emitted.cpu().numpy()


def near_boundary(traces):
    return any(min(t.accept_margins, default=np.inf) < MARGIN or t.sample_margin < MARGIN for t in traces)


def check_case(case, target):
    expected, num, traces = rs.sample_case(case)
    assume(not near_boundary(traces))
    tokens, emitted = run_impl(case, *target)
    assert tokens.tolist() == expected.tolist()
    assert emitted.tolist() == num.tolist()
    assert ((tokens == -1) | ((tokens >= 0) & (tokens < case.vocab_size))).all()


@pytest.mark.req(
    "RS-GREEDY-1",
    "RS-GREEDY-2",
    "RS-GREEDY-3",
    "RS-PROB-1",
    "RS-PROB-2",
    "RS-PROB-3",
    "RS-PROB-4",
    "RS-ONEHOT-1",
    "RS-MIXED-1",
    "RS-ZERO-1",
    "RS-FORCE-1",
    "RS-INPUT-1",
    "RS-INPUT-2",
    "RS-RNG-1",
    "RS-RNG-2",
    "RS-RNG-3",
    "RS-LAYOUT-1",
    "RS-LAYOUT-2",
    "AC-COUNT-5",
)
def test_impl_matches_the_oracle_exactly(target):
    examples = 150 if target[1] == "torch" else 40

    @given(cases())
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(case):
        check_case(case, target)

    run()


@pytest.mark.parametrize("programs", [1, 64], ids=["one-split", "many-splits"])
def test_multi_block_vocabulary_loops_match_the_oracle(target, monkeypatch, programs):
    """Small blocks, so that every loop over the vocabulary runs several blocks and a ragged tail;
    with many programs wanted, every row is also cut into several vocabulary splits."""
    monkeypatch.setattr(impl.rejection, "_block_size", lambda vocab_size: 16)
    monkeypatch.setattr(impl.rejection, "_target_programs", lambda device, per_sm: programs)
    monkeypatch.setattr(impl.rejection, "_PLANS", {})  # plans made under other settings

    @given(cases(vocabs=(1, 5, 16, 17, 37, 64, 90)))
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def run(case):
        check_case(case, target)

    run()


def test_seeded_request_is_independent_of_its_batch(target):
    device, backend = target
    gen = np.random.default_rng(0)
    V = 50
    alone = rs.RejectionCase(gen.normal(size=(4, V)), [3, 4, 5], [3], [1.0], seeds=[42], positions=[1000])
    a, _ = run_impl(alone, device, backend)
    others = gen.normal(size=(5, V))
    together = rs.RejectionCase(
        np.concatenate([others, alone.target_logits]),
        [1, 2, 3, 3, 4, 5],
        [3, 0, 3],
        [0.5, 1.0, 1.0],
        seeds=[7, 8, 42],
        positions=[3, 4, 1000],
    )
    b, _ = run_impl(together, device, backend)
    assert b[2].tolist() == a[0].tolist()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_logits_match_the_oracle_on_their_fp32_values(target, dtype):
    device, backend = target
    gen = np.random.default_rng(1)
    logits = torch.tensor(gen.normal(size=(7, 40)), dtype=dtype)
    case = rs.RejectionCase(
        logits.float().numpy(), [1, 2, 3, 4], [2, 2, 0], [0.0, 0.8, 1.2], seeds=[1, 2, 3], positions=[0, 0, 0]
    )
    expected, _, traces = rs.sample_case(case)
    if near_boundary(traces):
        pytest.skip("drawn case lies on a decision boundary")
    out = impl.rejection_sample(
        logits.to(device),
        torch.tensor([1, 2, 3, 4], device=device),
        torch.tensor([2, 2, 0], device=device),
        temperature=torch.tensor([0.0, 0.8, 1.2], device=device),
        seeds=torch.tensor([1, 2, 3], device=device),
        positions=torch.zeros(3, dtype=torch.int64, device=device),
        backend=backend,
    )
    assert out.token_ids.cpu().tolist() == expected.tolist()
