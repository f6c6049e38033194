"""vLLM's two model runners through their adapters, against the oracle (skipped without vLLM: ``tox -e vllm-v1`` /
``tox -e vllm-mrv2`` install 0.33, ``tox -e vllm-mrv2-0.32``, ``tox -e vllm-v1-0.32`` and their siblings another
release, which each adapter's releases.yaml teaches it; on a CPU they need ``TRITON_INTERPRET=1`` and
``CUDA_VISIBLE_DEVICES=`` set before Python starts)."""

import dataclasses
import os

import numpy as np
import pytest

from specconform.harness.oracle import budget as tb
from specconform.harness.oracle import rejection as rs
from specconform.specs.interface import AddedRequest, BatchUpdate

vllm = pytest.importorskip("vllm", reason="vLLM 0.33 is installed by tox -e vllm-v1 / vllm-mrv2 only")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available() and (
    os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != ""
):
    pytest.skip("no GPU and no Triton interpreter (TRITON_INTERPRET=1, CUDA_VISIBLE_DEVICES=)", allow_module_level=True)


@pytest.fixture(scope="module")
def mrv2():
    from specconform.harness.adapters import vllm_mrv2

    return vllm_mrv2.make()


@pytest.fixture(scope="module")
def v1():
    from specconform.harness.adapters import vllm as vllm_v1

    return vllm_v1.make()


@pytest.mark.req("TB-SPEC-1", "TB-FORCE-2")
def test_mrv2_judges_every_draft_row_on_its_own_prefix(mrv2):
    start, end = [5], [6, 7]
    oracle = tb.BudgetBatch(start, end, 2, "section")
    state = mrv2.budget_state(start, end, 2, "section", max_spec_len=3)
    update = BatchUpdate(2, added=(AddedRequest(0, 1, (1, 5)), AddedRequest(1, None, (1, 5))))
    oracle.apply(update)
    state.sync_batch(update)
    for committed, num, drafts in (
        ([[1, -1, -1, -1], [1, -1, -1, -1]], [0, 0], []),  # one ordinary step first: no drafts before output
        (None, [3, 1], [2, 6, 3, 4]),
    ):
        assert state.forced_tokens(num, drafts) == oracle.forced_rows(num, drafts)
        if committed:
            oracle.commit(committed)
            state.update_state(committed)
    assert oracle.forced_rows([3, 1], [2, 6, 3, 4])[:4] == [6, 6, 7, 6]  # the case reaches a continued marker


@pytest.mark.req("TB-BATCH-4")
def test_mrv2_removal_of_an_emptied_slot_reaches_vllm_which_ignores_it(mrv2):
    """Model Runner V2 names requests by id: the adapter hands the id the slot last held to vLLM's
    ``RequestState.remove_request``, which ignores an id it no longer holds; the others stay judged."""
    start, end = [5], [6]
    oracle = tb.BudgetBatch(start, end, 3, "section")
    state = mrv2.budget_state(start, end, 3, "section")
    full = BatchUpdate(3, added=tuple(AddedRequest(slot, 1, (1, 5)) for slot in range(3)))
    oracle.apply(full)
    state.sync_batch(full)
    oracle.apply(BatchUpdate(2, removed=(2,)))
    state.sync_batch(BatchUpdate(2, removed=(2,)))
    state.sync_batch(BatchUpdate(2, removed=(2,)))  # accepted, as vLLM accepts a finished id it does not hold
    assert state.req_states.num_reqs == 2
    assert sorted(state.req_states.free_indices) == sorted(set(state.req_states.free_indices))
    committed = [[3, -1], [3, -1]]
    oracle.commit(committed)
    state.update_state(committed)
    assert state.forced_tokens([0, 0], []) == oracle.forced_rows([0, 0], []) == [6, 6]


@pytest.mark.req("TB-API-3")
@pytest.mark.parametrize("runner", ["mrv2", "v1"])
def test_empty_marker_is_refused_by_vllms_reasoning_config(runner, request):
    engine = request.getfixturevalue(runner)
    for start, end in (([], [2]), ([1], [])):
        with pytest.raises(ValueError, match="failed to tokenize"):
            engine.budget_state(start, end, 2)


@pytest.mark.req("RS-GREEDY-1")
@pytest.mark.parametrize("runner", ["mrv2", "v1"])
def test_greedy_verification_equals_the_oracle(runner, request):
    engine = request.getfixturevalue(runner)
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(3 + 1 + 2 + 1, 11))
    argmax = logits.argmax(axis=1)
    drafts = [int(argmax[0]), int(argmax[1]), (int(argmax[2]) + 1) % 11, int(argmax[4]), int(argmax[5])]
    case = rs.RejectionCase(logits, drafts, [3, 2], [0.0, 0.0])
    tokens, num = engine.rejection_sample(case)
    expected, expected_num, _ = rs.sample_case(case)
    assert np.array_equal(num, expected_num)
    assert np.array_equal(tokens, expected)


@pytest.mark.req("AC-METRIC-2")
def test_v1_metrics_skip_steps_the_scheduler_skips(v1):
    from specconform.harness.oracle import counting as ac

    steps = [(3, [1, 2, -1, -1], None), (2, [-1, -1, -1], None), (1, [4, 5], None)]  # the middle row: discarded
    oracle = ac.AcceptanceMetrics(max_positions=3)
    for k, row, _ in steps:
        oracle.observe(k, row, [])
    got = v1.acceptance_metrics(steps, [])
    assert got["mean_acceptance_length"] == pytest.approx(oracle.mean_acceptance_length)
    assert list(got["accepted_per_position"]) == oracle.accepted_per_position


def _mixed_case():
    """Three sampled requests (V = 8, two drafts from a stated q); the second has no seed (a mixed batch)."""
    rng = np.random.default_rng(11)
    return rs.RejectionCase(
        rng.normal(size=(9, 8)),
        rng.integers(0, 8, size=6),
        [2, 2, 2],
        [1.0, 0.8, 1.0],
        rng.dirichlet(np.ones(8), size=6),
        seeds=[3, 4, 5],
        positions=[0, 0, 0],
        seeded=[True, False, True],
    )


@pytest.mark.req("RS-RNG-1")
def test_v1_gives_a_generator_to_the_seeded_random_requests_alone(v1):
    """vLLM's model runner makes a generator only for a random request whose SamplingParams.seed is set, and its input
    batch keeps those alone in SamplingMetadata.generators."""
    metadata = v1.sampling_metadata(np.array([1.0, 1.0, 0.0, 0.5], dtype=np.float32), [5, None, 7, 9])
    assert sorted(metadata.generators) == [0, 3]


@pytest.mark.req("RS-RNG-1")
def test_v1_emits_for_a_seeded_request_beside_an_unseeded_one_what_it_emits_alone(v1):
    case = _mixed_case()
    together, _ = v1.rejection_sample(case)
    alone, _ = v1.rejection_sample(
        rs.RejectionCase(case.target_logits[:3], case.draft_token_ids[:2], [2], [1.0], case.draft_probs[:2], seeds=[3])
    )
    assert together[0].tolist() == alone[0].tolist()


def test_mrv2_leaves_an_unseeded_request_to_draw_its_own_seed(mrv2):
    """SamplingStates.add_request marks a request without a seed (seeds_set) and draws one for it; the others keep
    theirs."""
    sampling = mrv2._sampling_states(_mixed_case())
    assert sampling.seeds_set[:3].tolist() == [True, False, True]
    assert [int(sampling.seeds.np[i]) for i in (0, 2)] == [3, 5]


def test_mrv2_refuses_a_release_it_was_not_taught(monkeypatch):
    from specconform.harness.adapters import vllm_mrv2
    from specconform.harness.core import UsageError

    monkeypatch.setattr(vllm, "__version__", "0.29.0")
    with pytest.raises(UsageError, match=r"not taught vllm 0.29.0; it judges 0.30.0, .*0.33.0"):
        vllm_mrv2.make()


def test_mrv2_refuses_a_range_whose_signatures_are_not_the_installed_code(monkeypatch):
    """The installed release judged with another range's declarations: 0.31 brought LogitsContext, which
    ThinkingBudgetState.apply takes from then on in place of the batch's tensors, so 0.30's range does not fit a later
    release (the signature) and 0.31's does not fit 0.30 (the import)."""
    from specconform.harness.adapters import vllm_mrv2
    from specconform.harness.core import UsageError
    from specconform.harness.products import releases

    installed = vllm.__version__
    if installed == "0.30.0":
        other, refusal = "0.31.0", r"LogitsContext is not at vllm.v1.worker.gpu.sample.logits_processor.interface:"
    else:
        other, refusal = "0.30.0", r"ThinkingBudgetState.apply takes \(self, logits, ctx\), not what its range "
    declared = releases.release("vllm-mrv2", other)
    monkeypatch.setattr(releases, "release", lambda name, version: dataclasses.replace(declared, version=installed))
    with pytest.raises(UsageError, match=rf"vllm-mrv2 {installed}: {refusal}"):
        vllm_mrv2.make()


def test_v1_refuses_a_release_it_was_not_taught(monkeypatch):
    from specconform.harness.adapters import vllm as vllm_v1
    from specconform.harness.core import UsageError

    monkeypatch.setattr(vllm, "__version__", "0.29.0")
    with pytest.raises(UsageError, match=r"not taught vllm 0.29.0; it judges 0.30.0, .*0.33.0"):
        vllm_v1.make()


def test_v1_refuses_a_range_whose_signatures_are_not_the_installed_code(monkeypatch):
    """The installed release's range declaring another parameter than its holder's update_state takes is refused,
    naming the method and what it takes, before anything is judged."""
    from specconform.harness.adapters import vllm as vllm_v1
    from specconform.harness.core import UsageError
    from specconform.harness.products import releases

    declared = releases.release("vllm-v1", vllm.__version__)
    moved = {**declared.signatures, "ThinkingBudgetStateHolder.update_state": ["output_token_ids", "draft_token_ids"]}
    monkeypatch.setattr(releases, "release", lambda name, version: dataclasses.replace(declared, signatures=moved))
    with pytest.raises(
        UsageError, match=r"ThinkingBudgetStateHolder.update_state takes \(self, output_token_ids, spec_token_ids, "
    ):
        vllm_v1.make()
