"""The command line: a run writes every report format as it goes and exits by its results."""

import json

import pytest

from specconform.harness import cli


@pytest.mark.req("RUN-RECORD-2")
def test_run_on_the_oracle_writes_reports_and_passes(tmp_path, capsys):
    assert (
        cli.main(["run", "--engine", "oracle", "--check", "vectors/*", "--report-dir", str(tmp_path), "--quiet"]) == 0
    )
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] in ("PASS", "NOT_CLAIMED") for r in records)
    assert sum(r["status"] == "PASS" for r in records) > 40
    assert all(r["requirements"] and r["reproduce"].startswith("specconform run") for r in records)
    assert "<testsuite" in (run_dir / "junit.xml").read_text()
    assert "PASS" in (run_dir / "summary.md").read_text()


def test_an_engine_plugged_in_as_module_factory_fails_the_run_naming_the_requirement(tmp_path, monkeypatch):
    argv = [
        "run",
        "--engine",
        "tests.unit.team_adapter:make",
        "--check",
        "TB-FORCE-4",
        "--report-dir",
        str(tmp_path),
        "--quiet",
    ]
    assert cli.main(argv) == 1
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert any(r["status"] == "FAIL" and "TB-FORCE-4" in r["requirements"] for r in records)


def test_vectors_command_reports_up_to_date(capsys):
    assert cli.main(["vectors"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_list_requirements_names_the_permissions_apart(capsys):
    assert cli.main(["list", "requirements"]) == 0
    requirements, permissions = capsys.readouterr().out.split("permissions (no requirements")
    assert "RS-INPUT-7" in requirements and "RS-LAYOUT-3" not in requirements
    assert "RS-LAYOUT-3" in permissions and "layout: padded" in permissions and "RS-INPUT-6" in permissions
