"""A batch mixing seeded and unseeded requests (rejection-sampling.md section 6, mixed batches): the case layout, the
vectors' codec, the reference implementation against the oracle, and which engines are handed such a batch."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from specconform import impl
from specconform.harness import checks, runner, vectors
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.core import PRECONDITION_FAILED, Context
from specconform.harness.oracle import rejection as rs


def _mixed_case(seeded=(True, False, True, False)) -> rs.RejectionCase:
    """Four requests (V = 9, one or two drafts from a stated q, temperature 1) whose seeds ``seeded`` marks."""
    rng = np.random.default_rng(5)
    num = [2, 1, 2, 1]
    V = 9
    return rs.RejectionCase(
        rng.normal(size=(sum(num) + len(num), V)),
        rng.integers(0, V, size=sum(num)),
        num,
        [1.0] * len(num),
        rng.dirichlet(np.ones(V), size=sum(num)),
        seeds=rng.integers(0, 2**62, size=len(num)),
        positions=rng.integers(0, 1000, size=len(num)),
        seeded=list(seeded),
    )


def _alone(case: rs.RejectionCase, i: int) -> rs.RejectionCase:
    """Request ``i`` of ``case`` alone, with its seed."""
    rows, drafts = rs.request_slices(case, i)
    return rs.RejectionCase(
        case.target_logits[rows],
        case.draft_token_ids[drafts],
        [case.num_draft_tokens[i]],
        [case.temperature[i]],
        case.draft_probs[drafts],
        seeds=[case.seeds[i]],
        positions=[case.positions[i]],
    )


@pytest.mark.req("RS-INPUT-5")
@pytest.mark.parametrize(
    "seeded,seeds,message",
    [
        ([True, False], None, "seeded.*seeds is None"),
        ([1, 0], [1, 2], "seeded must hold booleans"),
        ([True], [1, 2], "seeded has 1 entries; seeds has 2"),
    ],
)
def test_the_oracle_rejects_a_seeded_mask_it_cannot_read_naming_it(seeded, seeds, message):
    case = rs.RejectionCase(np.zeros((2, 3)), [], [0, 0], [1.0, 1.0], seeds=seeds, seeded=seeded)
    with pytest.raises(rs.InvalidCase, match=message):
        case.validate()


@pytest.mark.req("RS-INPUT-5", "RS-TENSOR-1")
@pytest.mark.parametrize(
    "seeded,seeds,message",
    [
        (torch.tensor([True, False]), None, "seeded marks entries of seeds, but seeds is None"),
        (torch.tensor([1, 0]), torch.tensor([1, 2]), "seeded must be a torch.Tensor of bool dtype"),
        ([True, False], torch.tensor([1, 2]), "seeded must be a torch.Tensor of bool dtype"),
        (torch.tensor([True]), torch.tensor([1, 2]), r"seeded must have shape \(2,\)"),
    ],
)
def test_the_tensor_api_rejects_a_seeded_mask_it_cannot_read_naming_it(target, seeded, seeds, message):
    device, backend = target
    seeds = None if seeds is None else seeds.to(device)
    seeded = seeded.to(device) if isinstance(seeded, torch.Tensor) else seeded
    with pytest.raises(ValueError, match=message):
        impl.rejection_sample(
            torch.zeros(2, 3, device=device),
            torch.zeros(0, dtype=torch.int64, device=device),
            torch.zeros(2, dtype=torch.int64, device=device),
            temperature=torch.ones(2, device=device),
            seeds=seeds,
            seeded=seeded,
            backend=backend,
        )


@pytest.mark.req("RS-RNG-1")
def test_the_oracle_samples_a_seeded_request_beside_unseeded_ones_as_alone():
    case = _mixed_case()
    tokens, _, _ = rs.sample_case(case)
    for i in (0, 2):
        alone, _, _ = rs.sample_case(_alone(case, i))
        assert tokens[i, : case.num_draft_tokens[i] + 1].tolist() == alone[0].tolist()


@pytest.mark.req("RS-PROB-5")
def test_the_oracle_draws_fresh_for_an_unseeded_request():
    """Request 1 alone has 9 ids to emit at each of its rows: 20 calls that all emit the same row happen with
    probability below 1e-15 for fresh draws, and always for draws keyed by the case."""
    case = _mixed_case()
    rows = {tuple(rs.sample_case(case)[0][1].tolist()) for _ in range(20)}
    assert len(rows) > 1


@pytest.mark.req("RS-RNG-1", "RS-RNG-3")
def test_the_reference_emits_the_oracles_tokens_for_the_seeded_requests_of_a_mixed_batch(target):
    """The reference draws (RS-RNG-3) key a seeded request's tokens: beside unseeded requests the reference emits
    for it what the oracle emits for it alone; its unseeded requests emit ids inside the vocabulary."""
    device, backend = target
    case = _mixed_case()

    def t(x, dtype):
        return torch.tensor(np.asarray(x), dtype=dtype, device=device)

    out = impl.rejection_sample(
        t(case.target_logits, torch.float32),
        t(case.draft_token_ids, torch.int64),
        t(case.num_draft_tokens, torch.int64),
        draft_probs=t(case.draft_probs, torch.float32),
        temperature=t(case.temperature, torch.float32),
        seeds=t(case.seeds, torch.int64),
        positions=t(case.positions, torch.int64),
        seeded=t(case.seeded, torch.bool),
        backend=backend,
    )
    tokens = out.token_ids.cpu().numpy()
    for i in (0, 2):
        alone, _, _ = rs.sample_case(_alone(case, i))
        assert tokens[i, : case.num_draft_tokens[i] + 1].tolist() == alone[0].tolist()
    for i in (1, 3):
        emitted = tokens[i, : int(out.num_emitted[i])]
        assert ((emitted >= 0) & (emitted < case.vocab_size)).all()


def test_a_case_without_a_seeded_mask_is_written_as_before_and_one_with_it_round_trips():
    case = _mixed_case()
    unmarked = replace(case, seeded=None)
    assert "seeded" not in vectors.codec.case_json(unmarked)  # golden vectors and records keep their bytes
    assert vectors.case_from_json(vectors.codec.case_json(unmarked)).seeded is None
    again = vectors.case_from_json(vectors.codec.case_json(case))
    assert again.seeded.dtype == np.bool_ and again.seeded.tolist() == case.seeded.tolist()


class _RecordingOracle(OracleEngine):
    """The oracle without the capability ``mixed-seeding``, recording every case it is handed."""

    def __init__(self):
        super().__init__()
        self.profile = replace(self.profile, capabilities=self.profile.capabilities - {"mixed-seeding"})
        self.cases = []

    def rejection_sample(self, case):
        self.cases.append(case)
        return super().rejection_sample(case)


def test_an_engine_that_declares_no_mixed_batches_is_handed_none():
    """No false blame: the runner's gate keeps ``rejection/mixed-seeding`` from an engine without ``mixed-seeding``,
    and the other checks of ``rs.seeded`` hand it no request without a seed beside seeded ones."""
    engine = _RecordingOracle()
    ctx = Context(profile=engine.profile, trials=1_000)
    for check in [c for c in checks.kernel_checks() if c.cls == "rs.seeded"]:
        gated = runner.gate(check, engine.profile)
        if check.name == "rejection/mixed-seeding":
            assert gated is not None and gated[0] == PRECONDITION_FAILED
        elif gated is None:
            check.run(engine, ctx)
    assert engine.cases and not [case for case in engine.cases if case.seeded is not None]
