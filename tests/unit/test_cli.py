"""The command line: a run writes every report format as it goes and exits by its results."""

import json

import pytest

from harness import cli


@pytest.mark.req("RUN-RECORD-2")
def test_run_on_the_oracle_writes_reports_and_passes(tmp_path, capsys):
    assert cli.main(["run", "--engine", "oracle", "--report-dir", str(tmp_path), "--quiet"]) == 0
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "PASS" for r in records)
    assert all(r["requirements"] and r["reproduce"].startswith("specconform run") for r in records)
    assert "<testsuite" in (run_dir / "junit.xml").read_text()
    assert "PASS" in (run_dir / "summary.md").read_text()


def test_a_broken_engine_fails_the_run_naming_the_requirement(tmp_path):
    from harness.engines import OracleEngine

    class ForgetsToForce(OracleEngine):
        def budget_state(self, *args, **kwargs):
            handle = super().budget_state(*args, **kwargs)

            def never_forced(num=None, drafts=None):
                return [-1] * (sum(num or []) + handle.batch.batch_size)

            handle.forced_tokens = never_forced
            return handle

    import harness.engines

    harness.engines.ForgetsToForce = ForgetsToForce
    code = cli.main(
        [
            "run",
            "--engine",
            "harness.engines:ForgetsToForce",
            "--report-dir",
            str(tmp_path),
            "--quiet",
            "--requirement",
            "TB-FORCE-4",
        ]
    )
    assert code == 1
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert any(r["status"] == "FAIL" and "TB-FORCE-4" in r["requirements"] for r in records)


def test_vectors_command_reports_up_to_date(capsys):
    assert cli.main(["vectors"]) == 0
    assert "up to date" in capsys.readouterr().out
