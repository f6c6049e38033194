"""The harness catches every mutant on the requirement it breaks; the reference and the oracle pass."""

import pytest

from harness import checks, runner, zoo
from harness.engines import OracleEngine, ReferenceEngine


@pytest.mark.parametrize("mutant", zoo.MUTANTS, ids=lambda m: m.name)
def test_every_mutant_is_caught_on_the_requirement_it_breaks(mutant):
    engine = zoo.make_mutant(mutant.name)
    selected = runner.select(checks.all_checks(), mutant.area)
    records = runner.run_checks(engine, f"zoo:{mutant.name}", selected, checks.Context(profile=engine.profile))
    caught = [r.check for r in records if r.status == "FAIL" and mutant.breaks in r.violated]
    assert caught, [(r.check, r.status, r.violated) for r in records if r.status != "PASS"]
    assert not [r for r in records if r.status in ("ERROR", "TIMEOUT")]


@pytest.mark.req("RUN-STATUS-2")  # the invalid-input vectors pass because the engines raise
@pytest.mark.parametrize(
    "make,trials",
    [(lambda: ReferenceEngine("cpu", "torch"), 20_000), (OracleEngine, 3_000)],
    ids=["reference", "oracle"],
)
def test_the_reference_and_the_oracle_pass_every_claimed_check(make, trials):
    engine = make()
    records = runner.run_checks(
        engine, engine.name, checks.all_checks(), checks.Context(profile=engine.profile, trials=trials)
    )
    bad = [(r.check, r.status, r.message[:200]) for r in records if r.status not in ("PASS", "NOT_CLAIMED")]
    assert bad == []
    assert {r.check for r in records if r.status == "NOT_CLAIMED"} == {
        "budget/scope-section",
        "vectors/thinking-budget/reopen-after-spent-section-scope",
    }


def test_every_requirement_is_covered_by_a_check_or_listed():
    uncovered = checks.uncovered_requirements()
    assert uncovered == ["RS-INPUT-6", "RS-LAYOUT-3", "TB-FORCE-6"]  # variants only other engines show
