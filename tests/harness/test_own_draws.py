"""``rejection/own-draws`` and ``rejection/own-draws-one-hot``: the sampled path judged exactly under the draw scheme
a profile declares. The oracle passes under the reference draws; an engine keyed off by one seed fails, under the
requirement its minimal case names; the zoo's zero-coin mutant (SGLang 35771, under SGLang's own draws) is equal to
its draws on every random case and is caught only by the case whose coin the hunt put at exactly 0, on RS-PROB-3."""

from dataclasses import replace

import pytest

from specconform.harness import checks
from specconform.harness.adapters import zoo
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.checks.rejection import own_draws
from specconform.harness.core import BLOCKED, FAIL, NOT_APPLICABLE, NOT_RUN, PASS, Context

NAMES = ("rejection/own-draws", "rejection/own-draws-one-hot")


def _run(name: str, engine):
    return checks.by_name()[name].run(engine, Context(profile=engine.profile))


@pytest.mark.req("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-ONEHOT-1")
@pytest.mark.parametrize("name", NAMES)
def test_the_oracle_passes_under_the_reference_draws_boundaries_included(name):
    outcome = _run(name, OracleEngine())
    assert outcome.status == PASS, outcome.message
    assert "under the reference draws" in outcome.message and "0 mismatches" in outcome.message
    assert "zero at position" in outcome.message and "top at position" in outcome.message
    assert outcome.requirements["RS-PROB-3"].cases == 3  # one p(d) = 0 draft per boundary, decided exactly


@pytest.mark.req("RS-RNG-3")
def test_draws_keyed_by_another_seed_fail():
    """An engine that claims the reference draws but keys them by another seed parts from them; its minimal case
    names RS-RNG-3, as the exact checks name it, and the check's own requirement it reached reads BLOCKED."""
    outcome = _run("rejection/own-draws", zoo.make_mutant("draws-not-the-reference"))
    assert outcome.status == FAIL
    assert outcome.requirements["RS-RNG-3"].fingerprint == "RS-RNG-3/draws-not-the-reference"
    assert BLOCKED in {r.status for r in outcome.requirements.values()}


def test_a_scheme_the_oracle_does_not_compute_is_not_applicable():
    engine = OracleEngine()
    engine.profile = replace(engine.profile, capabilities=engine.profile.capabilities - {"reference-draws"}, draws=None)
    outcome = _run("rejection/own-draws", engine)
    assert {r.status for r in outcome.requirements.values()} == {NOT_APPLICABLE}


@pytest.mark.req("RS-PROB-3")
@pytest.mark.parametrize("name", NAMES)
def test_the_zero_coin_mutant_is_caught_by_its_boundary_case_only(name, monkeypatch):
    mutant = zoo.make_mutant("zero-coin-accepts-zero-p")
    assert mutant.profile.draws == "sglang-seeded"
    caught = _run(name, mutant)
    assert caught.status == FAIL
    failed = {rid for rid, result in caught.requirements.items() if result.status == FAIL}
    assert failed == {"RS-PROB-3"}
    evidence = caught.requirements["RS-PROB-3"].evidence
    assert evidence.startswith("boundary case") and "p 0" in evidence
    assert caught.requirements["RS-PROB-3"].fingerprint == "RS-PROB-3/zero-probability-draft-accepted"
    # without the hunted cases the same check finds nothing: the random cases' draws never put a coin at 0, and
    # their drafts all have p(d) > 0, so RS-PROB-3 is not reached at all
    monkeypatch.setattr(own_draws, "boundary_cases", lambda scheme, seed, rng, one_hot: ([], "no hunt"))
    unhunted = _run(name, mutant)
    assert unhunted.requirements["RS-PROB-3"].status == NOT_RUN
    assert {r.status for rid, r in unhunted.requirements.items() if rid != "RS-PROB-3"} == {PASS}
