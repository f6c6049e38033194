"""The runner scores checks per requirement as specs/INTERPRETING.md says, keeps the engine in its
own process, and leaves every selected check with a record whatever the engine does."""

import json
from xml.etree import ElementTree

import pytest

from specconform.harness import cli, reports, runner
from specconform.harness.config import select
from specconform.harness.core import Context
from specconform.harness.expectations import load_expectations
from specconform.harness.isolation import EngineProcess
from specconform.harness.profiles import canonical

from . import fake_checks

HOSTILE = "tests.harness.hostile_engines"


def _run(names, profile=None, timeout_s=30, expectations=()):
    engine = EngineProcess("oracle", catalogue="tests.harness.fake_checks:checks")
    selected = [c for c in fake_checks.checks() if c.name in names]
    try:
        return runner.run_checks(
            engine,
            selected,
            lambda info: Context(profile=profile or info.profile),
            timeout_s=timeout_s,
            expectations=expectations,
        )
    finally:
        engine.stop()


@pytest.mark.req("RUN-STATUS-1", "RUN-PROFILE-2")
def test_every_status_is_reachable_and_each_requirement_has_its_own():
    profile = canonical()
    profile = type(profile)(profile.name, profile.classes, capabilities=frozenset({"budget"}))
    records = _run(["pass", "fail", "unclaimed", "precondition", "crash", "slow"], profile, timeout_s=3)
    assert [r.status for r in records] == ["PASS", "FAIL", "NOT_CLAIMED", "PRECONDITION_FAILED", "ERROR", "TIMEOUT"]
    failed = records[1]
    assert failed.results["TB-FORCE-1"].status == "FAIL" and failed.violated == ["TB-FORCE-1"]
    assert failed.results["TB-FORCE-2"].model_dump(exclude_unset=True) == {
        "status": "NOT_RUN",
        "cases": 0,
        "evidence": "no case of this check exercised it",
        "fingerprint": "",
    }
    assert failed.results["TB-FORCE-1"].fingerprint == "TB-FORCE-1/left-a-forced-row-free"
    assert "engine exploded" in records[4].message
    assert records[1].regression and records[4].regression and records[5].regression


def test_a_check_that_records_an_id_outside_the_registry_errs_instead_of_failing_it():
    (record,) = _run(["misspelt"])
    assert record.status == "ERROR" and record.check == "misspelt" and not record.violated
    assert "Tally.violated names TB-FORSE-1, which is not a requirement" in record.message
    assert "did you mean TB-FORCE-1?" in record.message and "TB-FORSE-1" not in record.results


def _expectations(tmp_path, text):
    path = tmp_path / "known.yaml"
    path.write_text("expectations:\n" + text)
    return load_expectations(path)


@pytest.mark.req("RUN-EXPECT-1", "RUN-EXPECT-2")
def test_expectations_pin_a_failure_by_requirement_and_fingerprint(tmp_path):
    known = _expectations(
        tmp_path,
        "  - {check: fail, requirement: TB-FORCE-1, status: FAIL, fingerprint: TB-FORCE-1/left-a-forced-row-free,"
        " reason: known bug, link: 'https://example.invalid/1'}\n"
        "  - {check: 'pas*', status: FAIL, reason: fixed since}\n",
    )
    passed, failed = _run(["pass", "fail"], expectations=known)
    assert passed.unexpected_pass and not passed.regression
    assert not failed.regression and failed.results["TB-FORCE-1"].expectation_link.endswith("/1")
    other_mode = _expectations(
        tmp_path,
        "  - {check: fail, requirement: TB-FORCE-1, status: FAIL, fingerprint: TB-FORCE-1/forced-a-free-row,"
        " reason: an older bug}\n",
    )
    (failed,) = _run(["fail"], expectations=other_mode)
    assert failed.regression and failed.unexpected == ["TB-FORCE-1"]  # a new way of failing surfaces
    conditional = _expectations(
        tmp_path,
        "  - {check: fail, requirement: TB-FORCE-1, status: FAIL, reason: only on GPUs, if: {device: 'cuda*'}}\n",
    )
    (failed,) = _run(["fail"], expectations=conditional)
    assert failed.regression  # the condition does not hold on this CPU
    for bad, field in (
        (
            "  - {check: x, status: BROKEN, reason: r}\n",
            "status",
        ),
        ("  - {check: x, status: FAIL, reason: r, if: {gpu: a}}\n", "unknown key 'if.gpu'"),
    ):
        with pytest.raises(ValueError, match=field):
            _expectations(tmp_path, bad)


@pytest.mark.req("RUN-EXPECT-1")
def test_pinning_turns_check_level_expectations_into_fingerprints_and_never_moves_a_reason(tmp_path):
    known = _expectations(
        tmp_path, "  - {check: 'fai*', status: FAIL, reason: known bug, link: 'https://example.invalid/2'}\n"
    )
    records = _run(["pass", "fail"])
    (entry,) = runner.pin_expectations(records, known)
    assert entry == {
        "check": "fail",
        "requirement": "TB-FORCE-1",
        "status": "FAIL",
        "fingerprint": "TB-FORCE-1/left-a-forced-row-free",
        "reason": "known bug",
        "link": "https://example.invalid/2",
    }
    path = tmp_path / "pinned.yaml"
    path.write_text("expectations:\n" + "".join(f"  - {json.dumps(entry)}\n"))
    (failed,) = _run(["fail"], expectations=load_expectations(path))
    assert not failed.regression
    other_mode = _expectations(
        tmp_path,
        "  - {check: fail, requirement: TB-FORCE-1, status: FAIL, fingerprint: TB-FORCE-1/forced-a-free-row,"
        " reason: an older bug}\n",
    )
    with pytest.raises(ValueError, match="TB-FORCE-1/left-a-forced-row-free"):
        runner.pin_expectations(records, other_mode)  # that reason explains another failure
    with pytest.raises(ValueError, match="no expectation"):
        runner.pin_expectations(records, [])
    either_mode = _expectations(
        tmp_path,
        "  - {check: fail, requirement: TB-FORCE-1, status: FAIL, reason: two known ways,"
        " fingerprint: [TB-FORCE-1/forced-a-free-row, TB-FORCE-1/left-a-forced-row-free]}\n",
    )
    (failed,) = _run(["fail"], expectations=either_mode)
    assert not failed.regression


def _records(run_dir):
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.req("RUN-STATUS-1")
def test_a_check_cut_short_never_reports_an_unexercised_requirement_as_pass(tmp_path):
    argv = ["run", "--engine", f"{HOSTILE}:fails_at_first_step", "--check", "budget/spec-decode"]
    assert cli.main(argv + ["--check", "budget/sequential", "--report-dir", str(tmp_path), "--quiet"]) == 1
    (run_dir,) = tmp_path.iterdir()
    records = _records(run_dir)
    assert {r["status"] for r in records} == {"FAIL"}
    for r in records:
        for rid, result in r["results"].items():
            assert result["status"] in ("FAIL", "NOT_RUN", "BLOCKED"), (r["check"], rid, result)
            assert result["status"] != "NOT_RUN" or result["cases"] == 0
    not_run = {(r["check"], rid) for r in records for rid, x in r["results"].items() if x["status"] == "NOT_RUN"}
    assert not_run, "the engine fails at the first step: some requirements must stay unreached"
    summary = (run_dir / "summary.md").read_text().split("## Per requirement")[1]
    across_engines = (
        reports.engines_summary(runner.read_records(run_dir)).split("## Requirements")[1].split("## Failures")[0]
    )
    for table in (summary, across_engines):
        for rid in {rid for r in records for rid in r["results"]}:
            row = next(line for line in table.splitlines() if line.startswith(f"| {rid} |"))
            assert "PASS" not in row, row
    junit = ElementTree.parse(run_dir / "junit.xml").getroot()
    for case in junit.iter("testcase"):
        check = case.get("classname").split(".", 1)[1]
        if (check, case.get("name")) in not_run:
            assert case.find("skipped") is not None and "NOT_RUN" in case.find("skipped").get("message")
    html = (run_dir / "report.html").read_text()
    assert "NOT_RUN" in html


# An engine that dies is restarted for the next check, and its start counts against that check's deadline: the
# dying engines get a deadline a loaded machine cannot reach, so that only the hanging ones can read TIMEOUT.
@pytest.mark.parametrize(
    "factory,timeout,status,says",
    [
        ("exits_zero", "120", "ERROR", "SystemExit(0)"),
        ("hard_exit", "120", "ERROR", "exited with code 0"),
        ("segfaults", "120", "ERROR", "SIGSEGV"),
        ("hangs_in_c", "3", "TIMEOUT", "ran past"),
        ("factory_hangs", "3", "TIMEOUT", "factory"),
    ],
)
def test_an_engine_that_exits_crashes_or_hangs_leaves_every_check_recorded(tmp_path, factory, timeout, status, says):
    checks = ["budget/sequential", "budget/multitoken", "budget/batch", "budget/api"]  # in catalogue order
    argv = ["run", "--engine", f"{HOSTILE}:{factory}", "--timeout", timeout, "--report-dir", str(tmp_path), "--quiet"]
    assert cli.main(argv + [x for name in checks for x in ("--check", name)]) == 1
    (run_dir,) = tmp_path.iterdir()
    records = _records(run_dir)
    assert [r["check"] for r in records] == checks
    assert [r["status"] for r in records[:3]] == [status] * 3 and says in records[0]["message"]
    assert records[3]["status"] == "ERROR" and "given up" in records[3]["message"]
    assert all(result["status"] == r["status"] for r in records for result in r["results"].values())
    for name in ("summary.md", "junit.xml", "report.html"):
        assert (run_dir / name).is_file()
    assert "INCOMPLETE" not in (run_dir / "summary.md").read_text()


@pytest.mark.req("RUN-RECORD-1")
def test_a_run_cut_short_says_so_in_every_report(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    selected = [c for c in fake_checks.checks() if c.name in ("pass", "fail", "crash")]
    runner.write_manifest(run_dir, ["oracle"], selected)
    engine = EngineProcess("oracle", catalogue="tests.harness.fake_checks:checks")
    writer = runner.RecordWriter(run_dir / "results.jsonl")
    try:
        runner.run_checks(engine, selected[:1], lambda info: Context(profile=info.profile), on_record=writer)
    finally:
        writer.close()
        engine.stop()
    assert cli.main(["report", str(run_dir)]) == 0
    assert "INCOMPLETE RUN: 2 selected checks have no record" in (run_dir / "summary.md").read_text()
    assert 'name="record"><error' in (run_dir / "junit.xml").read_text()
    assert "INCOMPLETE" in (run_dir / "report.html").read_text()


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--trials", "0"],
        ["run", "--trials", "-1"],
        ["run", "--alpha", "2"],
        ["run", "--timeout", "0"],
    ],
)
def test_arguments_that_would_make_a_vacuous_run_are_usage_errors(tmp_path, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv + ["--report-dir", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "must be in" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv,says",
    [
        (["run", "--engine", "foobar"], "embedded"),
        (["run", "--engine", "nosuch.module:make"], "no module named 'nosuch.module'"),
        (["run", "--engine", "zoo:nope"], "budget-ignored"),
        (["zoo", "--mutant", "nope"], "budget-ignored"),
        (["run", "--engine", "oracle", "--profile", "nosuch"], "canonical"),
        (["run", "--engine", "oracle", "--check", "nothing-matches"], "no check matches"),
        (["report", "/nonexistent/run"], "not a run folder"),
    ],
)
def test_usage_errors_are_one_line_and_write_nothing(tmp_path, argv, says, capsys):
    code = cli.main(argv + (["--report-dir", str(tmp_path)] if argv[0] in ("run", "zoo") else []))
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_select_matches_names_classes_and_requirements():
    checks = fake_checks.checks()
    assert [c.name for c in select(checks, ["tb.scope.*"])] == ["unclaimed"]
    assert [c.name for c in select(checks, ["TB-FORCE-2"])] == ["fail"]
    assert "pass" not in [c.name for c in select(checks, [], ["pass"])]
