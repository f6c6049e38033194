"""Minimal reproductions: a failing batch scenario shrinks to a 1-minimal one (removing any single
element loses the failure); every kind of reproduction a failing engine leaves replays on its own with
the same verdict, and a conforming engine replays it as PASS."""

from harness.adapters.zoo import MUTANTS, MutantEngine
from harness.cases.budget import BudgetScenario, single_removals, unreachable
from harness.checks.budget import fails_the_same, minimal_scenario, replay_scenario
from harness.vectors import SlotStep
from specs.interface import AddedRequest, BatchUpdate, Move

REQUIREMENTS = ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5")


def _free(*tokens: int) -> tuple[SlotStep, ...]:
    return tuple(SlotStep([], 0, t) for t in tokens)


def _noisy_batch_scenario() -> BudgetScenario:
    """Six requests over eight steps with removals, adds, SWAPs, drafts and long prompts, of which the
    bug needs one UNIDIRECTIONAL move of a tracked request onto an occupied slot."""
    start, end = (0,), (1, 2)
    open_prompt = (3, 3, 0, 3)
    steps = [
        (
            BatchUpdate(
                4,
                added=(
                    AddedRequest(0, 5, open_prompt),
                    AddedRequest(1, None, (3, 3, 3)),
                    AddedRequest(2, 0, (3, 3)),
                    AddedRequest(3, 7, (3, 0)),
                ),
            ),
            _free(3, 3, 3, 3),
        ),
        (None, (SlotStep([3, 3], 1, 3), SlotStep([3], 0, 3), SlotStep([], 0, 3), SlotStep([3, 3, 3], 2, 3))),
        (BatchUpdate(4, moved=((0, 3, Move.SWAP),)), _free(3, 3, 3, 3)),
        (BatchUpdate(5, added=(AddedRequest(4, 2, (3, 3, 0)),)), _free(3, 3, 3, 3, 3)),
        (None, _free(3, 3, 0, 3, 3)),  # slot 2 opens a section with budget 0: E is forced next
        (BatchUpdate(4, moved=((2, 1, Move.UNIDIRECTIONAL), (4, 2, Move.UNIDIRECTIONAL))), _free(3, 3, 3, 3)),
        (None, (SlotStep([3], 1, 3), SlotStep([3, 3], 2, 3), SlotStep([], 0, 3), SlotStep([3], 0, 3))),
        (BatchUpdate(3, removed=(0,), moved=((3, 0, Move.UNIDIRECTIONAL),)), _free(3, 3, 3)),
    ]
    return BudgetScenario(start, end, "request", 8, tuple(steps))


def test_a_failing_batch_scenario_shrinks_to_a_1_minimal_one():
    engine = MutantEngine(next(m for m in MUTANTS if m.name == "move-keeps-occupied-destination"))
    scenario = _noisy_batch_scenario()
    assert unreachable(scenario) is None
    vector = scenario.vector("noisy", list(REQUIREMENTS))
    vector["max_spec_len"] = 3
    divergence = replay_scenario(engine, vector, REQUIREMENTS)
    assert divergence is not None
    minimal = minimal_scenario(engine, scenario, divergence.fingerprint, REQUIREMENTS, 3)
    still_fails = fails_the_same(engine, divergence.fingerprint, REQUIREMENTS, 3)
    assert still_fails(minimal)
    assert minimal.size < scenario.size
    removals = [c for c in single_removals(minimal) if c is not None]
    assert removals, "a scenario has elements to remove"
    assert not [c for c in removals if still_fails(c)]
    moves = [m for u, _ in minimal.steps if u is not None for m in u.moved]
    assert [kind for _, _, kind in moves] == [Move.UNIDIRECTIONAL]  # the one move the bug needs
