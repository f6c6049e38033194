"""Data files have schemas (``specconform.harness.schemas``): a misspelt key in a profile, an expectation file or a run
record is a usage error (exit 2) that names it, every published run's records fit the record schema, and the JSON Schema
files under ``specs/schemas/`` are the models' own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specconform.harness import cli, runner, schemas, spec
from specconform.harness.expectations import load_expectations

from .test_reports import make_record

PUBLISHED = Path(__file__).resolve().parents[2] / "reports" / "engines"


def _usage_error(argv, capsys) -> str:
    assert cli.main(argv) == 2
    return capsys.readouterr().err


def test_a_misspelt_profile_key_is_a_usage_error_naming_it(tmp_path, capsys):
    profile = tmp_path / "engine.yaml"
    profile.write_text("name: e\nscpoe: section\n")
    err = _usage_error(["run", "--engine", "oracle", "--profile", str(profile)], capsys)
    assert "unknown key 'scpoe'" in err and "'scope'" in err


def test_a_misspelt_expectation_key_is_a_usage_error_naming_it_and_its_entry(tmp_path, capsys):
    expectations = tmp_path / "e.yaml"
    expectations.write_text(
        "expectations:\n"
        "  - {check: budget/api, status: FAIL, reason: r}\n"
        "  - {check: budget/api, status: FAIL, reason: r, requirment: TB-API-1}\n"
    )
    err = _usage_error(["run", "--engine", "oracle", "--expectations", str(expectations)], capsys)
    assert "expectation 1: unknown key 'requirment'" in err and "'requirement'" in err
    expectations.write_text("expectations:\n  - {check: budget/api, status: FAIL, reason: r, if: {engin: x}}\n")
    with pytest.raises(ValueError, match=r"unknown key 'if\.engin'; known keys: \['device', 'engine', 'engine_ver"):
        load_expectations(expectations)
    expectations.write_text("expectation:\n  - {check: budget/api, status: FAIL, reason: r}\n")
    with pytest.raises(ValueError, match="unknown key 'expectation'"):
        load_expectations(expectations)


def test_an_expectation_entry_with_a_bad_value_names_the_key(tmp_path):
    expectations = tmp_path / "e.yaml"
    expectations.write_text("expectations:\n  - {check: a, status: FAILED, reason: r}\n")
    with pytest.raises(ValueError, match="expectation 0: status: .*got 'FAILED'"):
        load_expectations(expectations)
    expectations.write_text("expectations:\n  - {check: a, status: FAIL, reason: r, fingerprint: TB-API-1/x}\n")
    with pytest.raises(ValueError, match="a fingerprint needs a requirement"):
        load_expectations(expectations)
    expectations.write_text("expectations:\n  - {check: a, status: FAIL}\n")
    with pytest.raises(ValueError, match="expectation 0: lacks 'reason'"):
        load_expectations(expectations)


def test_a_record_with_an_unknown_key_is_a_usage_error_naming_it_and_its_line(tmp_path, capsys):
    good, bad = make_record("a", "PASS"), make_record("b", "FAIL", violated=("TB-FORCE-1",))
    bad = bad.to_json()
    bad["results"]["TB-FORCE-1"]["fingrprint"] = ""
    (tmp_path / "results.jsonl").write_text(json.dumps(good.to_json()) + "\n" + json.dumps(bad) + "\n")
    err = _usage_error(["report", str(tmp_path)], capsys)
    assert "results.jsonl:2: unknown key 'results.TB-FORCE-1.fingrprint'" in err


def test_every_published_run_fits_the_record_schema():
    runs = sorted(path.parent for path in PUBLISHED.glob("**/results.jsonl"))
    assert runs, "no published run found"
    for run in runs:
        assert runner.read_records(run)  # raises naming the line and key that does not fit


def test_the_schema_files_are_the_models_own(tmp_path):
    written = schemas.write_schemas(tmp_path)
    committed = spec.spec_dir() / "schemas"
    assert sorted(p.name for p in committed.glob("*.json")) == sorted(p.name for p in written)
    for path in written:  # a model changed: `specconform schema` writes them again
        assert json.loads((committed / path.name).read_text()) == json.loads(path.read_text()), path.name
