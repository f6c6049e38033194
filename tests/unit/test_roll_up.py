"""A check's status rolls up its requirements' results (specs/INTERPRETING.md, RUN-STATUS-3)."""

import pytest

from specconform.harness.core import FAIL, NOT_RUN, PASS, Tally

pytestmark = pytest.mark.req("RUN-STATUS-3")


def test_a_check_passes_only_when_every_requirement_passed():
    tally = Tally(("RS-PROB-5", "RS-INPUT-1"))
    tally.exercised("RS-INPUT-1")
    outcome = tally.outcome("structural only")
    assert outcome.requirements["RS-INPUT-1"].status == PASS
    assert outcome.requirements["RS-PROB-5"].status == NOT_RUN
    assert outcome.status == NOT_RUN and outcome.message == "not run: RS-PROB-5 [structural only]"
    tally.exercised("RS-PROB-5")
    assert tally.outcome("both").status == PASS


def test_a_failure_outranks_what_was_not_run():
    tally = Tally(("RS-PROB-5", "RS-INPUT-1"))
    tally.violated("RS-INPUT-1", "id-outside-vocabulary", "id 7 with V = 7")
    assert tally.outcome("x").status == FAIL


def test_a_conditional_requirement_may_stay_not_run_without_holding_back_a_pass():
    tally = Tally(("API-USAGE-1", "API-USAGE-2"), conditional=("API-USAGE-2",))
    tally.exercised("API-USAGE-1")
    outcome = tally.outcome("usage")
    assert outcome.status == PASS and outcome.requirements["API-USAGE-2"].status == NOT_RUN
    only_conditional = Tally(("API-USAGE-2",), conditional=("API-USAGE-2",))
    assert only_conditional.outcome("nothing reported").status == NOT_RUN  # nothing passed at all


def test_conditional_requirements_are_among_the_checks_requirements():
    with pytest.raises(KeyError, match="RS-GREEDY-3"):
        Tally(("RS-GREEDY-1",), conditional=("RS-GREEDY-3",))
