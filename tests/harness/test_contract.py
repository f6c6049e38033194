"""No false blame (specs/INTERPRETING.md, "The engine contract" and "Findings"): an engine is judged only on inputs
its own callers produce and on values it produced itself, and one defect is one finding under the requirement its
minimal case isolates."""

from pathlib import Path

import numpy as np
import pytest

from specconform.harness import cli, contract, findings, profiles, runner
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.checks import attribution
from specconform.harness.oracle import rejection as rs
from specconform.harness.schemas import RunRecord


def _run(tmp_path: Path, engine: str, *checks: str, options=()) -> list[RunRecord]:
    argv = ["run", "--engine", engine, "--report-dir", str(tmp_path), "--quiet", *options]
    for pattern in checks:
        argv += ["--check", pattern]
    cli.main(argv)
    (run_dir,) = tmp_path.iterdir()
    return runner.read_records(run_dir)


@pytest.mark.req("RUN-FINDING-1", "RUN-FINDING-2", "RUN-STATUS-4")
def test_a_basic_defect_fails_its_own_requirement_alone_and_blocks_the_others(tmp_path):
    """The zoo's start-marker restart (a start marker inside an open section restarts the count) is seen by
    seven checks of six classes; it is one finding, FAIL on TB-MARK-1 only, and BLOCKED where other checks met it."""
    records = _run(tmp_path, "zoo:start-looked-for-inside-section", "budget/*", "vectors/thinking-budget/*")
    failed = {rid for r in records for rid, res in r.results.items() if res.status == "FAIL"}
    blocked = {(r.check, rid) for r in records for rid, res in r.results.items() if res.status == "BLOCKED"}
    assert failed == {"TB-MARK-1"}
    assert {check for check, _ in blocked} >= {"budget/batch", "budget/spec-decode", "budget/prompt-opened"}
    (finding,) = findings.findings(records)
    assert finding.name == "TB-MARK-1 (misplaced-marker)" and len(set(finding.checks)) >= 5
    merged = findings.requirement_statuses(records)
    assert merged[("zoo:start-looked-for-inside-section", "TB-MARK-1")][0] == "FAIL"
    batch = ("TB-BATCH-1", "TB-BATCH-2", "TB-BATCH-3", "TB-BATCH-5")  # which one a check blamed first is its own
    assert "BLOCKED" in {merged[("zoo:start-looked-for-inside-section", rid)][0] for rid in batch}


@pytest.mark.req("RUN-FINDING-1")
def test_a_defect_of_the_checks_own_feature_stays_its_own(tmp_path):
    """Control: a mutant that breaks only draft rows is a spec-decode finding, not re-attributed: the same stream
    without drafts passes (the sequential twin)."""
    records = _run(tmp_path, "zoo:budget-not-applied-to-draft-rows", "budget/spec-decode")
    (record,) = records
    assert record.results["TB-SPEC-1"].status == "FAIL"
    assert not [rid for rid, res in record.results.items() if res.status == "BLOCKED"]


@pytest.mark.req("RUN-CONTRACT-1")
def test_an_engine_that_declares_sampled_drafts_never_meets_a_draft_outside_q(tmp_path):
    """The engine raises on a draft with q(draft) = 0 (its run would record ERROR); the checks leave such cases
    out, the vectors that need one read NOT_APPLICABLE, and the checks that mix them with others still judge."""
    records = _run(
        tmp_path,
        "tests.harness.contract_engines:sampled_drafts_only",
        "rejection/*",
        "vectors/rejection/*",
        options=("--deviation", "0.3", "--trials", "3000"),
    )
    statuses = {r.check: r.status for r in records}
    assert "ERROR" not in statuses.values() and "FAIL" not in statuses.values(), statuses
    assert statuses["vectors/rejection/draft-with-zero-q"] == "NOT_APPLICABLE"
    assert statuses["vectors/rejection/residual-without-mass"] == "NOT_APPLICABLE"
    for mixed in ("rejection/output-contract", "rejection/acceptance-rule"):
        assert statuses[mixed] == "PASS", mixed
    merged = findings.requirement_statuses(records)
    assert merged[("sampled-drafts-only", "RS-PROB-3")][0] == "PASS"  # exercised by cases inside the contract


@pytest.mark.req("RUN-CONTRACT-2")
def test_a_value_the_adapter_derived_is_neither_pass_nor_fail(tmp_path):
    """Malformed-row flags the adapter makes up: with them declared derived, AC-COUNT-2/3 read NOT_APPLICABLE in
    every record, although the made-up flags would FAIL (holes) and PASS (well-formed rows)."""
    records = _run(tmp_path, "tests.harness.contract_engines:derived_flags", "counting/*", "vectors/counting/*")
    for record in records:
        for rid in ("AC-COUNT-2", "AC-COUNT-3"):
            if rid in record.results:
                assert record.results[rid].status in ("NOT_APPLICABLE", "NOT_CLAIMED"), (record.check, rid)
    assert {r.check: r.status for r in records}["counting/validated"] == "PASS"  # AC-COUNT-1 judged
    outside = findings.not_applicable(records)["derived-flags"]
    assert [rid for rid, _ in outside] == ["AC-COUNT-2", "AC-COUNT-3"]


def test_the_guard_refuses_a_case_outside_the_contract():
    engine = OracleEngine()
    engine.profile = profiles.replace(engine.profile, contract=frozenset({"drafts-sampled-from-q"}))
    guarded = contract.guarded(engine)
    inside = rs.RejectionCase(np.zeros((2, 3)), [1], [1], [1.0], [[0.2, 0.5, 0.3]], seeds=[7], positions=[0])
    outside = rs.RejectionCase(np.zeros((2, 3)), [1], [1], [1.0], [[0.5, 0.0, 0.5]])
    assert np.asarray(guarded.rejection_sample(inside)[1]).tolist()[0] in (1, 2)
    with pytest.raises(contract.OutsideContract, match="q\\(draft\\) is 0"):
        guarded.rejection_sample(outside)


def _update(budget: int, prompt: list[int]) -> dict:
    """A step's update that adds one request at slot 0."""
    added = [{"index": 0, "budget": budget, "prompt_token_ids": prompt}]
    return {"batch_size": 1, "removed": [], "added": added, "moved": []}


def test_preconditions_are_read_off_the_case():
    assert contract.rejection_preconditions([1], [1], None) == set()
    assert contract.rejection_preconditions([1], [1], [[0.5, 0.0, 0.5]]) == {"draft-outside-q-support"}
    early = {
        "max_num_reqs": 1,
        "steps": [
            {
                "update": {
                    "batch_size": 1,
                    "removed": [],
                    "added": [{"index": 0, "budget": 3, "prompt_token_ids": [1]}],
                    "moved": [],
                },
                "num_draft_tokens": [1],
                "draft_token_ids": [4],
                "sampled_token_ids": [[4, 5]],
            }
        ],
    }
    assert contract.budget_preconditions(early) == {"drafts-before-output"}
    assert contract.budget_preconditions({"max_num_reqs": 2, "update": {"batch_size": 1, "removed": [1]}}) == {
        "invalid-batch-update"
    }
    assert contract.row_preconditions([[5, -1, 7]], 10) == {"malformed-row"}
    assert contract.row_preconditions([[5, 11, -1]], 10) == {"malformed-row"}
    assert contract.row_preconditions([[5, 6, -1]], 10) == set()


def test_an_unknown_contract_or_observable_is_an_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="drafts-from-q"):
        profiles.replace(profiles.canonical(), contract=frozenset({"drafts-from-q"}))
    with pytest.raises(ValueError, match="num_accepted"):
        profiles.replace(profiles.canonical(), derived=frozenset({"num_accepted"}))
    misspelt = tmp_path / "engine.yaml"
    misspelt.write_text("name: e\nscpoe: section\n")
    with pytest.raises(ValueError, match="unknown key 'scpoe'"):
        profiles.load_profile(str(misspelt))


def test_case_features_and_the_sequential_twin():
    vector = {
        "start_token_ids": [1],
        "end_token_ids": [2, 3],
        "scope": "request",
        "max_num_reqs": 1,
        "steps": [
            {
                "update": {
                    "batch_size": 1,
                    "removed": [],
                    "added": [{"index": 0, "budget": 4, "prompt_token_ids": [1, 1]}],
                    "moved": [],
                },
                "num_draft_tokens": [0],
                "draft_token_ids": [],
                "sampled_token_ids": [[5]],
            },
            {"update": None, "num_draft_tokens": [2], "draft_token_ids": [5, 6], "sampled_token_ids": [[5, 6, 7]]},
        ],
    }
    features = attribution.case_features(vector)
    assert features == {"multi-token-markers", "prompt-opened", "drafts", "misplaced-marker"}
    twin = attribution.sequential_twin(vector)
    assert [s["sampled_token_ids"] for s in twin["steps"]] == [[[5]], [[5]], [[6]], [[7]]]
    assert not any(s["num_draft_tokens"][0] for s in twin["steps"]) and twin["max_spec_len"] == 0


class _NamesItsOwnField(OracleEngine):
    """Refuses an empty start marker by the name its own configuration gives the field, as vLLM does."""

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0, **markers):
        if not start:
            raise ValueError("reasoning_start_str must be a non-empty string")
        return super().budget_state(start, end, max_num_reqs, scope, max_spec_len, **markers)


@pytest.mark.req("RUN-CONTRACT-3")
def test_a_demanded_error_may_name_the_engines_own_field():
    from specconform.harness.checks import by_name
    from specconform.harness.core import Context

    check = by_name()["vectors/thinking-budget/empty-start_token_ids"]
    engine = _NamesItsOwnField()
    assert check.run(engine, Context(engine.profile)).status == "FAIL"  # the spec's name is not in the error
    declared = profiles.replace(engine.profile, field_names=(("start_token_ids", ("reasoning_start_str",)),))
    assert check.run(engine, Context(declared)).status == "PASS"


@pytest.mark.req("RUN-FINDING-1")
def test_a_minimal_case_of_an_unclaimed_class_is_no_failure(tmp_path):
    """The zoo's section-scope spender fails TB-SCOPE-2 where the profile claims section scope (the control). Under
    a profile with the same variants that claims no scope class, the minimal cases that isolate TB-SCOPE-2 are no
    failure: no requirement of an unclaimed class reads FAIL or names a finding, and the checks that met them say
    why where no other case judged their requirement."""
    from specconform.harness import spec

    registry = spec.load_registry()
    claimed = ["tb.core", "tb.multitoken", "tb.prompt-opened", "tb.spec-decode", "tb.batch"]
    profile = tmp_path / "no-scope.yaml"
    profile.write_text(f"name: no-scope-claim\nbase: canonical-section\nclasses: [{', '.join(claimed)}]\n")
    checks = ("budget/sequential", "budget/spec-decode", "budget/multitoken")
    control = _run(tmp_path / "control", "zoo:section-scope-spends", *checks)
    assert "TB-SCOPE-2" in {rid for r in control for rid, res in r.results.items() if res.status == "FAIL"}

    records = _run(tmp_path / "unclaimed", "zoo:section-scope-spends", *checks, options=("--profile", str(profile)))
    failed = {rid for r in records for rid, res in r.results.items() if res.status == "FAIL"}
    assert "TB-SCOPE-2" not in failed and {registry[rid].cls for rid in failed} <= set(claimed)
    named = {res.finding or "" for r in records for res in r.results.values()}
    assert not [name for name in named if name.startswith("TB-SCOPE-2")]
