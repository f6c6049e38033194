"""Budget attribution by the minimal case (``specconform.harness.checks.budget.minimal.attributed_owner``): a marker
split across steps, a border lost and the prompt's tokens are told apart from the forcing that shows them, each
against the oracle's run of the same case."""

import pytest

from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.adapters.zoo import make_mutant
from specconform.harness.cases.budget import BudgetScenario
from specconform.harness.checks import attribution
from specconform.harness.checks.budget.minimal import attributed_owner
from specconform.harness.checks.budget.replay import BLAME_ORDER, replay_scenario
from specconform.harness.checks.budget.update_order import parts_twin
from specconform.harness.vectors import SlotStep
from specconform.specs.interface import AddedRequest, BatchUpdate, Move


def _vector(end, budget, prompt, committed, runs=None):
    """One request (``budget``, ``prompt``, S = [100]) committing ``committed`` one token per step (or the runs of
    ``runs``, each through drafts accepted), then a step whose row is judged."""
    added = BatchUpdate(1, added=(AddedRequest(0, budget, tuple(prompt)),))
    runs = runs or [[t] for t in committed]
    slots = [SlotStep(list(run[:-1]), len(run) - 1, run[-1]) for run in runs] + [SlotStep([], 0, 0)]
    steps = tuple((added if i == 0 else None, (slot,)) for i, slot in enumerate(slots))
    vector = BudgetScenario((100,), tuple(end), "request", 1, steps).vector("case", list(BLAME_ORDER))
    vector["max_spec_len"] = max((len(run) - 1 for run in runs), default=0)
    return vector


@pytest.mark.req("TB-MARK-2")
@pytest.mark.parametrize(
    "mutant,owner", [("partial-markers-dropped-between-steps", "TB-MARK-2"), ("end-marker-restarted", "TB-FORCE-2")]
)
def test_a_partial_end_lost_at_a_step_boundary_is_the_matchings_and_a_restart_the_forcings(mutant, owner):
    """E = [59, 32], budget 0: S, then E[0] forced, then the row the oracle forces to E[1]. Both engines force E[0]
    there; only the one that forgets the partial match between steps forces E[1] when the same stream is met in one
    step, as drafts."""
    vector = _vector((59, 32), 0, (), (100, 59))
    engine = make_mutant(mutant)
    shown = replay_scenario(engine, vector, BLAME_ORDER)
    assert (shown.expected[0], shown.got[0]) == (32, 59)
    assert attributed_owner(engine, shown, vector)[0] == owner


@pytest.mark.req("TB-MARK-3")
def test_a_forced_row_at_a_shorter_border_is_tb_mark_3s():
    """E = [7, 7, 8] after 7 7 7 (budget 3): the longest border leaves E[0..2) matched, so the row is forced to 8; a
    matcher without borders has E[0..1) and forces 7."""
    vector = _vector((7, 7, 8), 3, (), (100, 7, 7, 7))
    engine = make_mutant("end-matched-without-failure-function")
    shown = replay_scenario(engine, vector, BLAME_ORDER)
    assert shown.fingerprint == "TB-MARK-3/partial-match-lost" and (shown.expected[0], shown.got[0]) == (8, 7)
    assert attributed_owner(engine, shown, vector)[0] == "TB-MARK-3"


@pytest.mark.req("TB-PROMPT-1")
def test_a_row_only_the_prompts_thinking_tokens_force_is_tb_prompt_1s():
    """Prompt [S, 0], budget 1: the prompt's one token after S spends the budget, so the first generated row is
    forced (TB-PROMPT-2 says so too, built on TB-PROMPT-1); an engine that does not count it leaves the row free."""
    vector = _vector((101,), 1, (100, 0), ())
    engine = make_mutant("prompt-thinking-uncounted")
    shown = replay_scenario(engine, vector, BLAME_ORDER)
    assert shown.diagnosis == "TB-PROMPT-1" and attributed_owner(engine, shown, vector)[0] == "TB-PROMPT-1"


def test_the_one_step_twin_needs_a_partial_match_at_a_boundary_and_one_token_per_step():
    split = _vector((59, 32), 0, (), (100, 59))
    twin = attribution.one_step_twin(split, 2, 0)
    assert [s["draft_token_ids"] for s in twin["steps"]] == [[], [100, 59]]
    assert attribution.one_step_twin(_vector((101,), 2, (), (100, 5)), 2, 0) is None  # no partial match
    assert attribution.one_step_twin(_vector((59, 32), 5, (), (), runs=[[100, 59], [5]]), 2, 0) is None


def _add_and_move(kind):
    """Slot 0 (budget 0, S = [100] in its prompt) and an untracked slot 1; one step later an update adds a request
    (budget 0, S in its prompt) to slot 1 and moves ``kind`` 0 -> 1. TB-BATCH-1 applies the addition first, so the
    move finds both slots filled: a SWAP leaves the new request in slot 0, a one-way move puts slot 0's in slot 1.
    Both requests are in a section with nothing left of their budget, so each slot that holds one is forced."""
    first = BatchUpdate(2, added=(AddedRequest(0, 0, (100,)), AddedRequest(1, None, (1,))))
    second = BatchUpdate(2, added=(AddedRequest(1, 0, (100,)),), moved=((0, 1, kind),))
    steps = ((first, (SlotStep([], 0, 101), SlotStep([], 0, 5))), (second, (SlotStep([], 0, 5), SlotStep([], 0, 5))))
    vector = BudgetScenario((100,), (101,), "request", 2, steps).vector("case", list(BLAME_ORDER))
    vector["max_spec_len"] = 0
    return vector


@pytest.mark.req("TB-BATCH-1")
@pytest.mark.parametrize(
    "mutant,kind,owner",
    [
        ("moves-before-additions", Move.SWAP, "TB-BATCH-1"),
        ("moves-before-additions", Move.UNIDIRECTIONAL, "TB-BATCH-1"),
        ("move-keeps-occupied-destination", Move.UNIDIRECTIONAL, "TB-BATCH-2"),
    ],
)
def test_an_updates_parts_applied_out_of_order_are_tb_batch_1s_a_wrong_move_the_moves(mutant, kind, owner):
    """An update that adds and moves: the reference forces the same rows on the case and on its twin with each part
    applied as an update of its own (``parts_twin``, what TB-BATCH-1 defines an update to be). The engine that moves
    before it adds fails the case and replays the twin, so its failure is the order's; an engine whose move is wrong
    fails both, and its failure stays the move's."""
    vector = _add_and_move(kind)
    twin = parts_twin(vector)
    assert len(twin["steps"]) == len(vector["steps"]) + 1  # the second update's addition in a step of its own
    assert replay_scenario(ReferenceEngine(), vector, BLAME_ORDER) is None
    assert replay_scenario(ReferenceEngine(), twin, BLAME_ORDER) is None
    engine = make_mutant(mutant)
    shown = replay_scenario(engine, vector, BLAME_ORDER)
    assert shown is not None, f"{mutant} replays the case"
    assert attributed_owner(engine, shown, vector)[0] == owner
