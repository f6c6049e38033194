"""impl.ThinkingBudgetState against the oracle on the shared scenario strategies.

Scenarios (``specconform.harness.cases.budget``) change the persistent batch the way engines do (removals, adds
into holes and onto occupied slots, condensing and replacing UNIDIRECTIONAL moves, SWAPs), propose
drafts once a request has output (zero-draft slots and marker tokens included), and commit tokens
that obey the forced rows. After every step, every logits row's forced token must equal the oracle's,
with and without drafts, and the implementation must know whether any slot is tracked.
"""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specconform import impl
from specconform.harness.cases.budget import BudgetFamily, scenarios
from specconform.harness.oracle import budget as tb
from specconform.specs.interface import BatchUpdate

from ..conftest import CUDA, HAS_TRITON

FAMILY = BudgetFamily(
    marker_lengths=(3, 3),
    alphabet=5,
    drafts=True,
    batch_ops=True,
    prompt="partial",
    budgets=(None, -1, 0, 1, 2, 3, 5, 50),
    steps=20,
    max_num_reqs=(1, 5),
)
SCENARIOS = st.sampled_from(tb.SCOPES).flatmap(lambda scope: scenarios(FAMILY, scope))
_EXAMPLES = {"torch": 45, "triton": 10}


def _follow(scenario, device: str, backend: str, fused: bool) -> None:
    """Step the state beside the oracle. ``fused``: a step's committed tokens reach the state with the
    next step's ``forced_tokens`` (``sampled_token_ids``) where no batch update comes between."""
    vector = scenario.vector("property", [])
    model = tb.BudgetBatch(scenario.start, scenario.end, scenario.max_num_reqs, scenario.scope)
    state = impl.ThinkingBudgetState(
        scenario.start,
        scenario.end,
        scenario.max_num_reqs,
        max_spec_len=FAMILY.max_spec,
        scope=scenario.scope,
        device=device,
        backend=backend,
    )
    pending = None  # committed tokens not yet given to the state
    for index, step in enumerate(vector["steps"]):
        update = None if step["update"] is None else BatchUpdate.from_json(step["update"])
        if pending is not None and update is not None:
            state.update_state(pending)
            pending = None
        model.apply(update)
        state.sync_batch(update)
        num, flat = step["num_draft_tokens"], step["draft_token_ids"]
        got = state.forced_tokens(
            torch.tensor(num, dtype=torch.int64, device=device),
            torch.tensor(flat, dtype=torch.int64, device=device),
            sampled_token_ids=pending,
        )
        pending = None
        assert state.forced_tokens().cpu().tolist() == model.forced_rows(), index
        expected = model.forced_rows(num, flat)
        assert got.cpu().tolist() == expected, index  # the reference fills every row the oracle does
        # the vector leaves rows no one can observe open (None, TB-SPEC-1) and agrees with the oracle on the rest
        assert len(step["expected_forced"]) == len(expected), index
        assert all(v is None or v == e for v, e in zip(step["expected_forced"], expected)), index
        model.commit(step["sampled_token_ids"])
        committed = torch.tensor(step["sampled_token_ids"], dtype=torch.int64, device=device)
        if fused:
            pending = committed
        else:
            state.update_state(committed)
        tracked = any(model.state(s) is not None for s in range(model.batch_size))
        assert state.has_tracked_requests() == tracked, index


@pytest.mark.req(
    "TB-BATCH-1",
    "TB-BATCH-2",
    "TB-BATCH-3",
    "TB-BATCH-5",
    "TB-SPEC-1",
    "TB-SPEC-2",
    "TB-SPEC-3",
    "TB-SPEC-4",
    "TB-MARK-2",
    "TB-MARK-3",
    "TB-FORCE-2",
    "TB-PROMPT-3",
    "TB-UNTRACKED-1",
)
def test_budget_state_follows_the_oracle(target):
    device, backend = target

    @settings(
        max_examples=_EXAMPLES[backend],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(SCENARIOS, st.booleans())
    def follows(scenario, fused):
        _follow(scenario, device, backend, fused)

    follows()


@pytest.mark.gpu
@pytest.mark.skipif(not (CUDA and HAS_TRITON), reason="needs CUDA and triton")
def test_triton_and_torch_paths_agree_bit_for_bit_on_cuda():
    gen = torch.Generator().manual_seed(5)
    for trial in range(20):
        start = torch.randint(0, 4, (int(torch.randint(1, 4, (1,), generator=gen)),), generator=gen).tolist()
        end = torch.randint(0, 4, (int(torch.randint(1, 4, (1,), generator=gen)),), generator=gen).tolist()
        states = [
            impl.ThinkingBudgetState(start, end, 64, max_spec_len=4, device="cuda", backend=b)
            for b in ("torch", "triton")
        ]
        added = tuple(
            impl.AddedRequest(i, [None, 0, 1, 3, 9][i % 5], torch.randint(0, 4, (i % 7,), generator=gen).tolist())
            for i in range(64)
        )
        for s in states:
            s.sync_batch(impl.BatchUpdate(64, added=added))
        for _ in range(10):
            num = torch.randint(0, 5, (64,), generator=gen)
            drafts = torch.randint(0, 4, (int(num.sum()),), generator=gen)
            rows = [s.forced_tokens(num.cuda(), drafts.cuda()) for s in states]
            assert torch.equal(rows[0], rows[1]), trial
            committed = torch.randint(-1, 4, (64, 5), generator=gen)
            for s in states:
                s.update_state(committed.cuda())
        assert torch.equal(states[0].state, states[1].state)
