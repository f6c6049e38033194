"""Golden vectors: regenerating them changes nothing, and the oracle replays every one."""

import numpy as np
import pytest

from specconform.harness import spec, vectors
from specconform.harness.oracle import budget as tb
from specconform.harness.oracle import counting as ac
from specconform.harness.oracle import rejection as rs
from specconform.harness.vectors import schema
from specconform.specs.interface import BatchUpdate


def test_regenerating_the_vectors_changes_nothing():
    assert vectors.stale() == [], "run `specconform vectors --write` and review the diff"


def test_every_vector_names_registered_requirements():
    registry = spec.load_registry()
    for kind in vectors.GENERATORS:
        data = spec.load_vectors(kind)
        for entries in data.values():
            if not isinstance(entries, list):
                continue
            for entry in entries:
                assert entry["requirements"], (kind, entry["name"])
                assert set(entry["requirements"]) <= set(registry), (kind, entry["name"])


def _scenario_ids():
    return [s["name"] for s in spec.load_vectors("thinking-budget")["scenarios"]]


@pytest.mark.req("RUN-RECORD-2")
@pytest.mark.parametrize("name", _scenario_ids())
def test_budget_scenario_replays_in_the_oracle(name):
    data = spec.load_vectors("thinking-budget")
    scenario = next(s for s in data["scenarios"] if s["name"] == name)
    batch = tb.BudgetBatch(
        scenario["start_token_ids"],
        scenario["end_token_ids"],
        scenario["max_num_reqs"],
        scenario["scope"],
        scenario.get("forced_token_ids"),  # a forced transition phrase (TB-END-1)
        scenario.get("other_end_token_ids") or (),  # other accepted end markers (TB-END-3)
    )
    for step in scenario["steps"]:
        batch.apply(None if step["update"] is None else BatchUpdate.from_json(step["update"]))
        forced = batch.forced_rows(step["num_draft_tokens"], step["draft_token_ids"])
        # rows after a forced row that rejects its draft are discarded, recorded as None (TB-SPEC-1)
        assert [f if e is not None else None for f, e in zip(forced, step["expected_forced"])] == step[
            "expected_forced"
        ]
        assert len(forced) == len(step["expected_forced"])
        # Committed tokens obey every forced row they pass through (TB-SPEC-3).
        offset = 0
        for k, row in zip(step["num_draft_tokens"], step["sampled_token_ids"]):
            n = ac.num_emitted(row)
            for j in range(n):
                if forced[offset + j] != -1:
                    assert row[j] == forced[offset + j]
            offset += k + 1
        batch.commit(step["sampled_token_ids"])


@pytest.mark.parametrize("entry", spec.load_vectors("thinking-budget")["errors"], ids=lambda e: e["name"])
def test_budget_error_vectors_raise_naming_the_field(entry):
    with pytest.raises(ValueError, match=entry["expected_error_field"]):
        batch = tb.BudgetBatch(entry["start_token_ids"], entry["end_token_ids"], entry["max_num_reqs"])
        batch.apply(None if entry["update"] is None else BatchUpdate.from_json(entry["update"]))


@pytest.mark.parametrize("entry", spec.load_vectors("rejection")["exact"], ids=lambda e: e["name"])
def test_rejection_exact_vectors_replay(entry):
    tokens, num, _ = rs.sample_case(vectors.case_from_json(entry["case"]))
    assert tokens.tolist() == entry["expected_token_ids"]
    assert num.tolist() == entry["expected_num_emitted"]


@pytest.mark.parametrize("entry", spec.load_vectors("rejection")["errors"], ids=lambda e: e["name"])
def test_rejection_error_vectors_are_rejected_naming_the_field(entry):
    with pytest.raises(rs.InvalidCase, match=entry["expected_error_field"]):
        rs.sample_case(vectors.case_from_json(entry["case"]))


@pytest.mark.parametrize("entry", spec.load_vectors("rejection")["distributions"], ids=lambda e: e["name"])
def test_distribution_vectors_sum_to_one_and_exclude_zero_target_tokens(entry):
    dist = entry["expected_distribution"]
    assert sum(d["probability"] for d in dist) == pytest.approx(1.0, abs=1e-9)
    p = np.array(entry["p"], dtype=float)
    for d in dist:
        for j, token in enumerate(d["emitted"]):
            assert p[j][token] > 0, "RS-PROB-3: a token with p = 0 is never emitted"


@pytest.mark.parametrize("entry", spec.load_vectors("rejection")["sampled_drafts"], ids=lambda e: e["name"])
def test_sampled_draft_vectors_match_the_target_and_the_closed_form(entry):
    p = np.array(entry["p"], dtype=float)
    marginals = np.array(entry["expected_position_marginals"], dtype=float)
    lengths = np.array(entry["expected_accepted_length"], dtype=float)
    reach = np.concatenate([[1.0], 1.0 - np.cumsum(lengths)[:-1]])
    for j in range(len(p)):
        if reach[j] > 1e-12:
            np.testing.assert_allclose(marginals[j], p[j], atol=1e-9)
    np.testing.assert_allclose(lengths, entry["closed_form_accepted_length"], atol=1e-9)


def test_counting_vectors_replay():
    data = spec.load_vectors("counting")
    for entry in data["rows"]:
        assert ac.num_emitted(entry["row"]) == entry["expected_num_emitted"]
        kinds = sorted({p.kind for p in ac.validate_rows([entry["row"]], entry["vocab_size"])})
        assert kinds == entry["expected_problems"], entry["name"]
    for entry in data["metrics"]:
        metrics = ac.AcceptanceMetrics(max_positions=4)
        got = [
            metrics.observe(s["num_draft_tokens"], s["row"], entry["eos_token_ids"], s["commit_limit"])
            for s in entry["steps"]
        ]
        assert got == entry["expected_accepted_per_step"]
        expected = entry["expected"]
        assert metrics.num_accepted_tokens == expected["num_accepted_tokens"]
        assert metrics.mean_acceptance_length == pytest.approx(expected["mean_acceptance_length"])
        assert metrics.accepted_per_position == expected["accepted_per_position"]


def test_a_misspelt_key_in_a_golden_source_file_is_an_error_naming_the_key_and_the_file(tmp_path):
    source = schema.GOLDEN_DIR / "rejection" / "exact.yaml"
    (tmp_path / "rejection").mkdir()
    misspelt = tmp_path / "rejection" / "exact.yaml"
    misspelt.write_text(source.read_text().replace("    requirements:", "    requirments:", 1))
    with pytest.raises(ValueError, match=r"unknown key 'vectors\.0\.requirments'; known keys: \[.*'requirements'") as e:
        schema.read("rejection", "exact", schema.ExactFile, tmp_path)
    assert str(misspelt) in str(e.value)


def test_a_budget_scenario_source_names_a_bad_value_and_needs_steps_or_one_request(tmp_path):
    (tmp_path / "thinking-budget").mkdir()
    path = tmp_path / "thinking-budget" / "scenarios.yaml"
    scenario = "{name: s, requirements: [TB-FORCE-1], start_token_ids: [100], end_token_ids: [101]"
    path.write_text(f"vectors:\n  - {scenario}, scope: sectoin, prompt_token_ids: [1], budget: 1, proposals: [5]}}\n")
    with pytest.raises(ValueError, match=r"vectors\.0\.scope: .*got 'sectoin'"):
        schema.read("thinking-budget", "scenarios", schema.ScenarioFile, tmp_path)
    path.write_text(f"vectors:\n  - {scenario}, budget: 1}}\n")
    with pytest.raises(ValueError, match="a scenario needs steps, or prompt_token_ids, budget and proposals"):
        schema.read("thinking-budget", "scenarios", schema.ScenarioFile, tmp_path)
