"""RUN-FINDING-2: statistical failures of one engine whose requirements lie on one chain of ``builds_on`` are one
finding, under the lowest requirement that failed; failures on no common chain stay apart (two defects, two findings).

The expected groupings are read off ``specs/requirements.yaml``'s order, which each test states: RS-PROB-2, RS-PROB-3,
RS-PROB-6 and RS-ONEHOT-1 build on RS-PROB-1; RS-PROB-5 on RS-PROB-1, RS-PROB-2, RS-PROB-3 and RS-ZERO-1; RS-GREEDY-3
on RS-GREEDY-1; neither of RS-PROB-2 and RS-PROB-3 builds on the other."""

import pytest

from specconform.harness import findings, requirement_order, runner
from specconform.harness.adapters import zoo
from specconform.harness.checks import kernel_checks
from specconform.harness.config import RunConfig, select
from specconform.harness.isolation import EngineProcess
from specconform.harness.schemas import RunRecord


def record(check: str, failed: dict[str, str], engine: str = "e", requirements=(), finding=None, proof=None):
    """A FAIL record of ``check``: ``failed`` maps each failed requirement to its failure mode; ``requirements``
    (default: the failed ones) are the ones the check lists."""
    listed = list(requirements) or list(failed)
    return RunRecord.model_validate(
        {
            "check": check,
            "cls": "rs.probabilistic",
            "requirements": listed,
            "status": "FAIL",
            "message": "",
            "results": {
                rid: {
                    "status": "FAIL" if rid in failed else "PASS",
                    "cases": 1,
                    "evidence": f"{rid} evidence" if rid in failed else "",
                    "fingerprint": f"{rid}/{failed[rid]}" if rid in failed else "",
                    "finding": finding,
                    "expectation_proof": proof,
                }
                for rid in listed
            },
            "unexpected": list(failed),
            "engine": engine,
            "engine_spec": engine,
            "engine_version": "1",
            "device": "cpu",
            "profile": "p",
            "seed": 1,
            "duration_s": 0.1,
            "reproduce": f"specconform run --check {check}",
        }
    )


def names(records) -> list[tuple[str, list[str]]]:
    return [(f.name, sorted(f.also)) for f in findings.findings(records)]


def test_the_order_the_tests_read_is_the_specs():
    below = requirement_order.below
    assert {"RS-PROB-1"} <= below("RS-PROB-2") & below("RS-PROB-3") & below("RS-PROB-6") & below("RS-ONEHOT-1")
    assert {"RS-PROB-1", "RS-PROB-2", "RS-PROB-3"} <= below("RS-PROB-5")
    assert "RS-PROB-2" in below("RS-ONEHOT-1")
    assert "RS-PROB-2" not in below("RS-PROB-3") and "RS-PROB-3" not in below("RS-PROB-2")
    assert not below("RS-GREEDY-3") & below("RS-PROB-5")


@pytest.mark.req("RUN-FINDING-2")
def test_statistical_failures_on_one_chain_are_one_finding_under_the_lowest():
    """The acceptance rate off (RS-PROB-1) moves every test built on it: one finding, every check and requirement
    listed, the higher requirements said beside it."""
    records = [
        record("rejection/acceptance-rule", {"RS-PROB-1": "acceptance-rate", "RS-PROB-3": "acceptance-rate"}),
        record("rejection/distribution", {"RS-PROB-5": "position-distribution"}),
        record("rejection/distribution", {"RS-PROB-6": "accepted-length-law"}, finding="RS-PROB-5"),
    ]
    (finding,) = findings.findings(records)
    assert (finding.name, sorted(finding.also)) == ("RS-PROB-1", ["RS-PROB-3", "RS-PROB-5"])
    assert set(finding.checks) == {"rejection/acceptance-rule", "rejection/distribution"}
    assert {rid for _, rid in finding.records} == {"RS-PROB-1", "RS-PROB-3", "RS-PROB-5", "RS-PROB-6"}


@pytest.mark.req("RUN-FINDING-2")
def test_an_exact_failure_above_a_statistical_one_joins_it():
    """A token with p = 0 emitted (RS-PROB-3, exact) where the acceptance rate deviates (RS-PROB-1): one finding,
    RS-PROB-1's; the exact case stays among its sightings."""
    records = [
        record("rejection/acceptance-rule", {"RS-PROB-1": "acceptance-rate"}),
        record("vectors/rejection/disjoint", {"RS-PROB-3": "zero-probability-token"}, finding="RS-PROB-3"),
    ]
    assert names(records) == [("RS-PROB-1", ["RS-PROB-3"])]


@pytest.mark.req("RUN-FINDING-2")
def test_two_defects_on_unrelated_requirements_stay_two_findings():
    """The token on rejection off (RS-PROB-2, statistical) and greedy ties to the highest id (RS-GREEDY-3, exact):
    no chain of builds_on joins them, so two findings."""
    records = [
        record("rejection/acceptance-rule", {"RS-PROB-2": "rejection-token"}),
        record("rejection/distribution", {"RS-PROB-5": "position-distribution"}),
        record("rejection/greedy", {"RS-GREEDY-3": "tie-not-lowest"}, finding="RS-GREEDY-3"),
    ]
    assert sorted(names(records)) == [("RS-GREEDY-3", []), ("RS-PROB-2", ["RS-PROB-5"])]


@pytest.mark.req("RUN-FINDING-2")
def test_a_higher_failure_never_joins_two_unrelated_lower_ones():
    """RS-PROB-5 builds on both RS-PROB-2 and RS-PROB-3, which build on neither each other: with both failed, the
    distribution's deviation joins one of them (the lowest in the order), and the other stays its own finding."""
    records = [
        record("rejection/acceptance-rule", {"RS-PROB-2": "rejection-token"}),
        record("vectors/rejection/disjoint", {"RS-PROB-3": "zero-probability-token"}, finding="RS-PROB-3"),
        record("rejection/distribution", {"RS-PROB-5": "position-distribution"}),
    ]
    found = names(records)
    assert len(found) == 2 and sorted(name for name, _ in found) == ["RS-PROB-2", "RS-PROB-3"]
    assert sum("RS-PROB-5" in also for _, also in found) == 1


@pytest.mark.req("RUN-FINDING-1", "RUN-FINDING-2")
def test_exact_findings_are_not_merged_by_the_order():
    """Two exact findings on one chain were told apart by their minimal cases: they stay two."""
    records = [
        record("rejection/own-draws", {"RS-PROB-1": "acceptance-differs"}, finding="RS-PROB-1"),
        record("vectors/rejection/disjoint", {"RS-PROB-3": "zero-probability-token"}, finding="RS-PROB-3"),
    ]
    assert sorted(name for name, _ in names(records)) == ["RS-PROB-1", "RS-PROB-3"]


@pytest.mark.req("RUN-FINDING-2")
def test_a_golden_vectors_emitted_row_names_none_of_its_requirements():
    """The ``residual`` vector's row deviating is recorded under its first requirement (RS-PROB-1), but its test
    judges RS-PROB-1 and RS-PROB-2 at once: with only the token on rejection off in a test of its own, the finding
    is RS-PROB-2's, not the label's. Alone, with nothing related, the vector's failure stays its own finding."""
    vector = record(
        "vectors/rejection/residual", {"RS-PROB-1": "emitted-row-distribution"}, requirements=("RS-PROB-1", "RS-PROB-2")
    )
    both = ("RS-PROB-1", "RS-PROB-2")
    rule = record("rejection/acceptance-rule", {"RS-PROB-2": "rejection-token"}, requirements=both)
    assert names([vector, rule]) == [("RS-PROB-2", ["RS-PROB-1"])]
    (finding,) = findings.findings([vector, rule])
    assert finding.mode == "rejection-token"  # shown by the test that singles it out, though the vector ran first
    greedy = record("rejection/greedy", {"RS-GREEDY-3": "tie-not-lowest"}, finding="RS-GREEDY-3")
    assert sorted(name for name, _ in names([vector, greedy])) == ["RS-GREEDY-3", "RS-PROB-1"]


@pytest.mark.req("RUN-FINDING-2")
def test_engines_and_proven_defects_are_kept_apart():
    """The rule merges within one engine, and never a finding whose failures a published proof patch groups."""
    two_engines = [
        record("rejection/acceptance-rule", {"RS-PROB-1": "acceptance-rate"}, engine="a"),
        record("rejection/distribution", {"RS-PROB-5": "position-distribution"}, engine="b"),
    ]
    assert len(findings.findings(two_engines)) == 2
    proven = [
        record("rejection/acceptance-rule", {"RS-PROB-1": "acceptance-rate"}),
        record("rejection/distribution", {"RS-PROB-5": "position-distribution"}, proof="proofs/x/fix.diff"),
    ]
    assert sorted(name for name, _ in names(proven)) == ["RS-PROB-1", "RS-PROB-5"]


def _judged(mutant: str, patterns: tuple[str, ...]) -> list[RunRecord]:
    engine = EngineProcess(f"zoo:{mutant}")
    try:
        records = runner.run_checks(engine, select(kernel_checks(), patterns), RunConfig().context)
    finally:
        engine.stop()
    return [r.model_copy(update={"engine": "two-defects"}) for r in records]


@pytest.mark.long  # minutes of statistical trials on two cores: tox -e zoo-findings runs it
@pytest.mark.req("RUN-FINDING-2")
def test_two_mutants_failures_as_one_engine_are_two_findings():
    """The failures of two zoo mutants judged as one engine: recover-from-p (the token on rejection sampled from p,
    statistical: RS-PROB-2) and zero-q-draft-accepted (a draft with q(d) = 0 accepted, exact: RS-PROB-3). Both move
    the emitted distribution (RS-PROB-5), which builds on both; they build on neither each other, so the two defects
    stay two findings, under the requirements each mutant's entry names."""
    patterns = ("rejection/acceptance-rule", "rejection/distribution", "vectors/rejection/draft-with-zero-q")
    records = _judged("recover-from-p", patterns) + _judged("zero-q-draft-accepted", patterns)
    found = findings.findings(records)
    assert sorted(f.name.split(" ", 1)[0] for f in found) == ["RS-PROB-2", "RS-PROB-3"], [
        (f.name, f.also, sorted(set(f.checks))) for f in found
    ]
    by_name = {m.name: m for m in zoo.MUTANTS}
    assert by_name["recover-from-p"].found_under == "RS-PROB-2"
    assert by_name["zero-q-draft-accepted"].breaks == "RS-PROB-3"
