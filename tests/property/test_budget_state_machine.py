"""impl.ThinkingBudgetState against the oracle, as a Hypothesis state machine.

The oracle's BudgetBatch is the model. Rules change the persistent batch the way engines do
(remove, add into holes or at the end, condense with UNIDIRECTIONAL moves, SWAP), propose drafts
(zero-draft slots and marker tokens included), and commit tokens that obey the forced rows.
After every step, every logits row's forced token must equal the model's.
"""

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import impl
from harness.oracle import budget as tb

from ..conftest import CUDA, HAS_TRITON

ALPHABET = st.integers(0, 4)
MARKERS = st.lists(ALPHABET, min_size=1, max_size=3)
BUDGETS = st.one_of(st.none(), st.just(-1), st.just(0), st.just(1), st.integers(2, 5), st.just(50))
MAX_REQS = 5
MAX_SPEC = 3


def make_machine(device: str, backend: str):
    class BudgetMachine(RuleBasedStateMachine):
        @initialize(start=MARKERS, end=MARKERS, scope=st.sampled_from(tb.SCOPES))
        def setup(self, start, end, scope):
            self.model = tb.BudgetBatch(start, end, MAX_REQS, scope)
            self.impl = impl.ThinkingBudgetState(
                start, end, MAX_REQS, max_spec_len=MAX_SPEC, scope=scope, device=device, backend=backend
            )
            self.size = 0

        def _apply(self, update):
            self.model.apply(update)
            self.impl.sync_batch(update)
            self.size = update.batch_size

        @rule(
            data=st.data(),
            new=st.lists(st.tuples(BUDGETS, st.lists(ALPHABET, max_size=8)), max_size=3),
        )
        def change_batch(self, data, new):
            removed = data.draw(st.lists(st.sampled_from(range(self.size)), unique=True)) if self.size else []
            occupied = [s for s in range(self.size) if s not in removed]
            holes = sorted(removed)
            added = []
            for budget, prompt in new:
                if len(occupied) + len(added) >= MAX_REQS:
                    break
                slot = holes.pop(0) if holes else self.size + len([a for a in added if a.index >= self.size])
                added.append(impl.AddedRequest(slot, budget, prompt))
            live = sorted(occupied + [a.index for a in added])
            moved = []
            # condense: move the highest live slot into the lowest hole (UNIDIRECTIONAL)
            while live and live[-1] >= len(live):
                hole = min(set(range(len(live))) - set(live))
                moved.append((live[-1], hole, impl.Move.UNIDIRECTIONAL))
                live = sorted(live[:-1] + [hole])
            if len(live) >= 2:
                for a, b in data.draw(st.lists(st.tuples(st.sampled_from(live), st.sampled_from(live)), max_size=2)):
                    if a != b:
                        moved.append((a, b, impl.Move.SWAP))
            self._apply(impl.BatchUpdate(len(live), tuple(removed), tuple(added), tuple(moved)))

        @precondition(lambda self: self.size > 0)
        @rule(data=st.data())
        def decode_step(self, data):
            drafts = [data.draw(st.lists(ALPHABET, max_size=MAX_SPEC)) for _ in range(self.size)]
            num = [len(d) for d in drafts]
            flat = [t for d in drafts for t in d]
            expected = self.model.forced_rows(num, flat)
            got = self.impl.forced_tokens(
                torch.tensor(num, device=device), torch.tensor(flat, dtype=torch.int64, device=device)
            )
            assert got.cpu().tolist() == expected
            # commit what a conforming sampler would: accepted drafts unless a forced row differs
            committed, offset = [], 0
            for slot_drafts in drafts:
                rows = expected[offset : offset + len(slot_drafts) + 1]
                offset += len(slot_drafts) + 1
                accept = data.draw(st.integers(0, len(slot_drafts)))
                tokens = []
                for j in range(len(slot_drafts) + 1):
                    if j < accept and rows[j] in (-1, slot_drafts[j]):
                        tokens.append(slot_drafts[j])
                        continue
                    tokens.append(rows[j] if rows[j] != -1 else data.draw(ALPHABET))
                    break
                committed.append(tokens + [-1] * (MAX_SPEC + 1 - len(tokens)))
            self.model.commit(committed)
            self.impl.update_state(torch.tensor(committed, device=device))

        @invariant()
        def forced_rows_match_the_model(self):
            if not hasattr(self, "model"):
                return
            assert self.impl.forced_tokens().cpu().tolist() == self.model.forced_rows()
            tracked = any(self.model.state(s) is not None for s in range(self.size))
            assert self.impl.has_tracked_requests() == tracked

    return BudgetMachine


_SETTINGS = {
    "torch": settings(
        max_examples=60, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    ),
    "triton": settings(
        max_examples=12, stateful_step_count=10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    ),
}


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
    machine = make_machine(device, backend)
    machine.TestCase.settings = _SETTINGS[backend]
    machine.TestCase().runTest()


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
