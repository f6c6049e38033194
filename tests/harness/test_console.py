"""The console says why: each check that did not pass names its requirement and the first line of its evidence,
and the run closes with its findings and one word, PASS or FAIL, counting as summary.md counts."""

import json
import re

import pytest

from specconform.harness import cli, console
from tests.harness.test_reports import edited, make_record


def test_a_failed_check_names_its_requirement_and_the_first_line_of_evidence():
    record = make_record("budget/x", "FAIL", reqs=("TB-FORCE-1", "TB-FORCE-2"), violated=("TB-FORCE-2",))
    record = edited(record, "TB-FORCE-2", evidence="position 3 carried 7, not the end marker 9\ncase: [...]")
    assert console.why(record) == "TB-FORCE-2: position 3 carried 7, not the end marker 9"


@pytest.mark.parametrize("status", ["ERROR", "TIMEOUT", "PRECONDITION_FAILED"])
def test_a_check_not_judged_names_its_requirements_and_why(status):
    record = make_record("api/x", status, reqs=("API-SPEC-1",))
    record = edited(record, message="the engine lacks spec-model\nmore")
    assert console.why(record) == "API-SPEC-1: the engine lacks spec-model"


@pytest.mark.parametrize("status", ["PASS", "NOT_CLAIMED"])
def test_a_pass_needs_no_reason(status):
    assert console.why(make_record("budget/x", status)) == ""


def summary_counts(summary: str) -> dict[str, int]:
    """The checks by status of summary.md's engine rows, summed over the engines."""
    counts: dict[str, int] = {}
    for row in re.findall(r"^\| [^|]+ \| \*\*[^|]+ \| ([^|]+) \|$", summary, re.MULTILINE):
        for status, n in re.findall(r"([A-Z_]+) (\d+)", row):
            counts[status] = counts.get(status, 0) + int(n)
    return counts


def test_a_run_says_why_on_the_console_and_ends_with_its_word(tmp_path, capsys):
    """An engine team's adapter that ignores the budget, judged on TB-FORCE-4 (as in tests/unit/test_cli.py)."""
    argv = ["run", "--engine", "tests.unit.team_adapter:make", "--check", "TB-FORCE-4", "--report-dir", str(tmp_path)]
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["status"] == "FAIL"]
    assert failed
    for record in failed:  # each FAIL line names the failed requirement and its evidence's first line
        rid = record["violated"][0]
        evidence = record["results"][rid]["evidence"].splitlines()[0][:80]
        (line,) = [line for line in err.splitlines() if "FAIL" in line and f": {record['check']} (" in line]
        assert f"{rid}" in line and evidence in line, line
    closing = out.strip().splitlines()
    assert closing[-1].startswith("FAIL: ")
    # a budget of 0 left unforced fails the forcing rule TB-FORCE-4 builds on: the finding is TB-FORCE-1's
    assert any("UNEXPECTED" in line and "TB-FORCE-1" in line for line in closing)
    shown = dict((s, int(n)) for s, n in re.findall(r"([A-Z_]+)=(\d+)", closing[-1]))
    summary = (run_dir / "summary.md").read_text()
    assert shown == summary_counts(summary)
    assert summary.count("**Verdict: FAIL**") == 1
    defects = re.search(r"findings (\d+)", closing[-1]).group(1)
    assert f"## Findings ({defects} defect" in summary


def test_a_log_leaves_out_the_checks_not_claimed():
    import io

    log = io.StringIO()
    plan = [("e", "a"), ("e", "b")]
    with cli.Progress(plan, quiet=False, stream=log) as progress:
        for check, status in (("a", "NOT_CLAIMED"), ("b", "PASS")):
            progress(edited(make_record(check, status), duration_s=0.0))
    assert [line for line in log.getvalue().splitlines() if "] " in line] == ["[2/2] PASS                e: b (0.0 s)"]
