"""Every requirement has a check that can fail on its own: for each registered id, a mutant engine of
the zoo (harness/adapters/zoo/) breaks that requirement, and the checks covering it FAIL it.

Permissions (MAY) are no requirements and have no mutant: tests/harness/test_permissions.py shows each
honoured. A requirement that cannot fail on its own is folded into the one it follows from
(``aliases`` in specs/requirements.yaml).
"""

from pathlib import Path

import pytest

from specconform.harness import checks, spec
from specconform.harness.adapters import zoo
from specconform.harness.core import ERROR, FAIL, Context, uniform_outcome

# API-level requirements are broken by HTTP engines (tests/harness/test_api_*.py, tests/e2e); RUN-*
# requirements bind the runner (tests/harness/test_runner.py); STAT-* requirements bind the harness's
# statistics, each broken by a mutant of them (tests/harness/test_stat_mutants.py).
LEVELS_ELSEWHERE = ("API-", "RUN-", "STAT-")
# The first mutant of each requirement (sampler mutants are judged at full trials in their own
# process by tests/harness/test_zoo_and_engines.py; the others here, in process).
_MUTANTS_BY_REQUIREMENT = {}
for _mutant in zoo.MUTANTS:
    _MUTANTS_BY_REQUIREMENT.setdefault(_mutant.breaks, _mutant)


def _kernel_requirements():
    return sorted(r for r in spec.load_registry() if not r.startswith(LEVELS_ELSEWHERE))


def test_every_kernel_requirement_has_a_mutant_or_a_stated_reason():
    requirements = set(_kernel_requirements())
    with_mutant = set(_MUTANTS_BY_REQUIREMENT)
    assert sorted(with_mutant - requirements - {r for r in with_mutant if r.startswith(LEVELS_ELSEWHERE)}) == []
    assert sorted(requirements - with_mutant) == [], "add a mutant"


def _judge_in_process(mutant: zoo.Mutant, trials: int = 1_500):
    """Run the checks covering ``mutant.breaks`` that the mutant's profile claims and can run (the
    statistical ones at few trials: a mutant's deviation is gross, and the oracle-based mutants are slow)."""
    engine = zoo.make_mutant(mutant.name)
    ctx = Context(profile=engine.profile, trials=trials)
    outcomes = {}
    for check in checks.kernel_checks():
        if mutant.breaks not in check.requirements or not engine.profile.claims(check.cls):
            continue
        if set(check.needs) - set(engine.profile.capabilities):
            continue
        try:
            outcomes[check.name] = check.run(engine, ctx)
        except Exception as exc:  # an ERROR, as the runner would record it: not a FAIL of the requirement
            outcomes[check.name] = uniform_outcome(ERROR, f"{type(exc).__name__}: {exc}", check.requirements)
    return outcomes


@pytest.mark.parametrize(
    "mutant",
    [m for m in zoo.MUTANTS if m not in zoo.SAMPLER_MUTANTS and not m.breaks.startswith(LEVELS_ELSEWHERE)],
    ids=lambda m: f"{m.breaks}:{m.name}",
)
def test_the_checks_of_a_requirement_fail_it_under_its_mutant(mutant):
    outcomes = _judge_in_process(mutant)
    assert outcomes, f"no check covering {mutant.breaks} can run against {mutant.name}"
    # the finding is the declared requirement's, or the one it builds on that the mutant's entry names (found_under)
    owners = {mutant.breaks, mutant.found_under} - {""}
    failed = [
        name
        for name, o in outcomes.items()
        for rid in owners
        if o.requirements.get(rid, None) is not None and o.requirements[rid].status == FAIL
    ]
    assert failed, {name: (o.status, o.message[:300]) for name, o in outcomes.items()}


def _shipped_table() -> set[tuple[str, str, str]]:
    """``(bug, mutant, requirement)`` of every row of docs/mutation.md's table "Bugs that engines shipped"."""
    text = (Path(__file__).parents[2] / "docs" / "mutation.md").read_text()
    table = text.split("Bugs that engines shipped", 1)[1].split("\n\n")[1]
    rows = set()
    for line in table.splitlines()[2:]:  # past the header and its rule
        bug, mutant, requirement = (cell.strip() for cell in line.strip("|").split("|"))
        rows.add((bug.split(":", 1)[0], mutant.strip("`"), requirement))
    return rows


def test_the_shipped_bugs_table_names_each_bug_with_its_mutant():
    """docs/mutation.md's table of shipped bugs and the mutants' ``shipped`` fields name the same bugs, each with
    the mutant that stands for it and the requirement that mutant breaks. Each such mutant breaks a kernel-level
    requirement, so it is judged FAIL on it: by the in-process test above, or for a sampler mutant by
    tests/harness/test_zoo_and_engines.py at full trials."""
    registered = {(bug, m.name, m.breaks) for m in zoo.MUTANTS for bug in m.shipped}
    assert registered, "no mutant names a shipped bug"
    assert _shipped_table() == registered
    assert [m.name for m in zoo.MUTANTS if m.shipped and m.breaks.startswith(LEVELS_ELSEWHERE)] == []
