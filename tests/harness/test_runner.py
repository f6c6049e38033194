"""The runner scores checks as specs/INTERPRETING.md says, and loses nothing on a crash."""

import json
import time

import pytest

from harness import cli, runner
from harness.checks import Check, Context, Outcome
from harness.engines import OracleEngine
from harness.profiles import canonical


def _check(name, cls="tb.core", needs=("budget",), run=None):
    return Check(name, cls, ("TB-FORCE-1",), needs, "test check", run or (lambda e, c: Outcome("PASS")))


def _sleep(engine, ctx):
    time.sleep(5)  # only ever interrupted by the runner's time limit
    return Outcome("PASS")


def _crash(engine, ctx):
    raise RuntimeError("engine exploded")


def _wrapped_sleep(engine, ctx):
    try:
        time.sleep(5)
    except BaseException as exc:  # an engine that wraps every error in its own type (as Triton's interpreter does)
        raise RuntimeError("interpreter error") from exc
    return Outcome("PASS")


@pytest.mark.req("RUN-STATUS-1", "RUN-PROFILE-2")
def test_every_status_is_reachable():
    engine = OracleEngine()
    profile = canonical()
    ctx = Context(profile=type(profile)(profile.name, profile.classes, capabilities=frozenset({"budget"})))
    checks = [
        _check("pass"),
        _check("fail", run=lambda e, c: Outcome("FAIL", "broken", ("TB-FORCE-1",))),
        _check("unclaimed", cls="tb.scope.section"),
        _check("precondition", needs=("budget", "counting")),
        _check("crash", run=_crash),
        _check("slow", run=_sleep),
        _check("slow-wrapped", run=_wrapped_sleep),
    ]
    records = runner.run_checks(engine, "oracle", checks, ctx, timeout_s=0.2)
    assert [r.status for r in records] == [
        "PASS",
        "FAIL",
        "NOT_CLAIMED",
        "PRECONDITION_FAILED",
        "ERROR",
        "TIMEOUT",
        "TIMEOUT",
    ]
    assert "engine exploded" in records[4].message
    assert records[1].violated == ["TB-FORCE-1"] and records[1].regression


@pytest.mark.req("RUN-EXPECT-1", "RUN-EXPECT-2")
def test_expectations_mark_known_failures_and_unexpected_passes(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text(
        "expectations:\n"
        "  - {check: fail, status: FAIL, reason: known bug, link: 'https://example.invalid/1'}\n"
        "  - {check: 'pas*', status: FAIL, reason: fixed since}\n"
    )
    expectations = runner.load_expectations(path)
    checks = [_check("pass"), _check("fail", run=lambda e, c: Outcome("FAIL", "broken", ("TB-FORCE-1",)))]
    records = runner.run_checks(
        OracleEngine(), "oracle", checks, Context(profile=canonical()), expectations=expectations
    )
    assert records[0].unexpected_pass and not records[0].regression
    assert not records[1].regression and records[1].expectation_link.endswith("/1")
    bad = tmp_path / "bad.yaml"
    bad.write_text("expectations:\n  - {check: x, status: BROKEN, reason: r}\n")
    with pytest.raises(ValueError, match="status"):
        runner.load_expectations(bad)


@pytest.mark.req("RUN-RECORD-1")
def test_records_are_written_as_they_arrive_and_survive_an_interrupt(tmp_path, monkeypatch):
    from harness import checks as checks_module

    def interrupted(engine, ctx):
        raise KeyboardInterrupt

    fake = [_check("first"), _check("second"), _check("interrupted", run=interrupted), _check("never")]
    monkeypatch.setattr(checks_module, "all_checks", lambda: fake)
    with pytest.raises(KeyboardInterrupt):
        cli.main(["run", "--engine", "oracle", "--report-dir", str(tmp_path), "--quiet"])
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [r["check"] for r in records] == ["first", "second"]
    assert all(r["reproduce"].startswith("specconform run --engine oracle --check") for r in records)
    for name in ("summary.md", "junit.xml", "report.html"):
        assert (run_dir / name).exists()


def test_select_matches_names_classes_and_requirements():
    checks = [_check("budget/a"), Check("rejection/b", "rs.greedy", ("RS-GREEDY-1",), (), "", None)]
    assert [c.name for c in runner.select(checks, ["rs.*"])] == ["rejection/b"]
    assert [c.name for c in runner.select(checks, ["TB-FORCE-*"])] == ["budget/a"]
    assert [c.name for c in runner.select(checks, [], ["budget/*"])] == ["rejection/b"]
