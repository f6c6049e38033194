"""Bad input gets a clear error naming the field and the value; nothing is half-written."""

import pytest
import torch

from specconform import impl
from specconform.harness import spec, vectors


@pytest.mark.req("TB-API-2")
@pytest.mark.parametrize("budget", [-2, True, 1.5, "1", [3]])
def test_invalid_budget_is_rejected_naming_it(budget):
    state = impl.ThinkingBudgetState([1], [2], 2)
    with pytest.raises(ValueError, match="budget.*" + repr(budget).replace("[", r"\[").replace("]", r"\]")):
        state.sync_batch(impl.BatchUpdate(1, added=(impl.AddedRequest(0, budget, [1]),)))


@pytest.mark.req("TB-API-1")
def test_minus_one_and_none_mean_untracked():
    state = impl.ThinkingBudgetState([1], [2], 2)
    state.sync_batch(impl.BatchUpdate(2, added=(impl.AddedRequest(0, -1, [1]), impl.AddedRequest(1, None, [1]))))
    assert not state.has_tracked_requests()
    assert state.forced_tokens().tolist() == [-1, -1]


@pytest.mark.req("TB-API-3")
@pytest.mark.parametrize(
    "start,end,field",
    [
        ([], [2], "start_token_ids"),
        ([1], [], "end_token_ids"),
        ("ab", [2], "start_token_ids"),
        ([1], [-3], "end_token_ids"),
    ],
)
def test_bad_markers_are_rejected(start, end, field):
    with pytest.raises(ValueError, match=field):
        impl.ThinkingBudgetState(start, end, 4)


@pytest.mark.req("TB-BATCH-4")
@pytest.mark.parametrize(
    "update,message",
    [
        (impl.BatchUpdate(1, added=(impl.AddedRequest(4, 1, [1]),)), "added index"),
        (impl.BatchUpdate(5), "batch_size"),
        (impl.BatchUpdate(1, removed=(1,)), "removed index 1 names an empty slot"),
        (impl.BatchUpdate(1, moved=((2, 0, impl.Move.UNIDIRECTIONAL),)), "move from empty slot 2"),
        (impl.BatchUpdate(1, moved=((0, 3, impl.Move.SWAP),)), "SWAP with empty slot 3"),
        (impl.BatchUpdate(1, moved=((0, 1, "SWAP"),)), "move kind"),
    ],
)
def test_bad_batch_updates_are_rejected_and_change_nothing(update, message):
    state = impl.ThinkingBudgetState([1], [2], 4)
    state.sync_batch(impl.BatchUpdate(1, added=(impl.AddedRequest(0, 0, [1]),)))
    before = state.state.clone()
    with pytest.raises(ValueError, match=message):
        state.sync_batch(update)
    assert torch.equal(state.state, before) and state.batch_size == 1
    assert state.forced_tokens().tolist() == [2]


def test_swap_with_untracked_leaves_the_vacated_side_untracked(target):
    device, backend = target
    state = impl.ThinkingBudgetState([1], [2], 3, device=device, backend=backend)
    state.sync_batch(impl.BatchUpdate(2, added=(impl.AddedRequest(0, 0, [1]), impl.AddedRequest(1, None, [1]))))
    state.sync_batch(impl.BatchUpdate(2, moved=((0, 1, impl.Move.SWAP),)))
    assert state.forced_tokens().cpu().tolist() == [-1, 2]
    state.sync_batch(impl.BatchUpdate(1, removed=(1,)))
    assert not state.has_tracked_requests()


@pytest.mark.parametrize("vocab_size, end", [(10, 7), (9000, 8500)], ids=["one-block", "forced-in-third-block"])
def test_forced_rows_become_one_hot_and_free_rows_stay_untouched(target, vocab_size, end):
    device, backend = target
    state = impl.ThinkingBudgetState([1], [end], 2, max_spec_len=2, device=device, backend=backend)
    state.sync_batch(impl.BatchUpdate(2, added=(impl.AddedRequest(0, 1, [1]), impl.AddedRequest(1, None, [1]))))
    logits = torch.randn(5, vocab_size, device=device)
    logits[1, end] = float("-inf")  # the forced token was masked before: still well defined
    original = logits.clone()
    num, drafts = torch.tensor([2, 1], device=device), torch.tensor([3, 4, 5], device=device)
    state.apply_to_logits(logits, num, drafts)
    forced = state.forced_tokens(num, drafts).cpu().tolist()
    assert forced == [-1, end, end, -1, -1]
    for row, token in enumerate(forced):
        if token == -1:
            assert torch.equal(logits[row], original[row])
        else:
            assert logits[row, token] == 0 and torch.isneginf(logits[row]).sum() == vocab_size - 1


def test_a_step_with_misshapen_logits_advances_nothing(target):
    device, backend = target
    state = impl.ThinkingBudgetState([1], [2], 1, device=device, backend=backend)
    state.sync_batch(impl.BatchUpdate(1, added=(impl.AddedRequest(0, 5, [1]),)))
    before = state.state.clone()
    committed = torch.tensor([[7, 7]], device=device)
    with pytest.raises(ValueError, match=r"logits must have shape \(1, V\); got \(3, 10\)"):
        state.apply_to_logits(torch.zeros(3, 10, device=device), sampled_token_ids=committed)
    assert torch.equal(state.state, before)
    state.apply_to_logits(torch.zeros(1, 10, device=device), sampled_token_ids=committed)
    assert not torch.equal(state.state, before)  # the same step with well-shaped logits advances the count


@pytest.mark.req("RS-INPUT-3", "RS-INPUT-4", "RS-INPUT-5")
@pytest.mark.parametrize("entry", spec.load_vectors("rejection")["errors"], ids=lambda e: e["name"])
def test_invalid_sampler_input_is_rejected_naming_the_field(target, entry):
    device, backend = target
    case = vectors.case_from_json(entry["case"])

    def t(x, dtype):
        return None if x is None else torch.tensor(x, dtype=dtype, device=device)

    with pytest.raises(ValueError, match=entry["expected_error_field"]):
        impl.rejection_sample(
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


def test_shape_errors_name_the_field():
    with pytest.raises(ValueError, match="target_logits has 3 rows"):
        impl.rejection_sample(torch.zeros(3, 4), torch.tensor([1]), torch.tensor([1]))
    with pytest.raises(ValueError, match="draft_probs must have shape"):
        impl.rejection_sample(torch.zeros(2, 4), torch.tensor([1]), torch.tensor([1]), draft_probs=torch.zeros(1, 3))
    with pytest.raises(ValueError, match="max_spec_len"):
        impl.rejection_sample(torch.zeros(3, 4), torch.tensor([1, 2]), torch.tensor([2]), max_spec_len=1)
