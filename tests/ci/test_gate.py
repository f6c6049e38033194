"""The baseline gate and the verdict, exercised with two stored runs of one engine (an adapter at a good
commit and at one that broke accepted-token counting), judged for real by `specconform run`."""

import re
import shutil

import pytest

from .conftest import ci_env, run_script, state

CHECKS = "ac.*"  # the broken commit's bug shows in counting/validated (AC-COUNT-2)


def _judge(tmp_path_factory, factory: str):
    """A conformance run of ``tests.ci.two_commits:<factory>``: (report dir, its results as a baseline)."""
    report_dir = tmp_path_factory.mktemp(factory)
    done = run_script("conformance.sh", ci_env(report_dir, ENGINE=f"tests.ci.two_commits:{factory}", CHECKS=CHECKS))
    assert done.returncode == (0 if factory == "good" else 1), done.stderr
    return report_dir, report_dir / "baseline-next"


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    return _judge(tmp_path_factory, "good")


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory):
    return _judge(tmp_path_factory, "broken")


def _continue(run, tmp_path):
    """A fresh report dir whose conformance step is the stored run's (the gate only reads the state)."""
    report_dir = tmp_path / "reports"
    shutil.copytree(run[0], report_dir)
    return report_dir


def test_a_new_failure_fails_the_gate_and_the_verdict(good_run, broken_run, tmp_path):
    report_dir = _continue(broken_run, tmp_path)
    summary = tmp_path / "step-summary.md"
    env = ci_env(report_dir, BASELINE_DIR=str(good_run[1]), GITHUB_STEP_SUMMARY=str(summary))

    gate = run_script("gate.sh", env)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert state(report_dir, "gate.status") == "1"
    assert re.match(r"[1-9]\d* new failures", state(report_dir, "gate.line"))
    # the broken commit's bug is the zoo's count-non-placeholders, which breaks AC-COUNT-2
    assert re.search(r"- `counting/validated` AC-COUNT-2 \(team-engine\): FAIL", state(report_dir, "gate.md"))

    verdict = run_script("verdict.sh", env)
    assert verdict.returncode == 1
    text = summary.read_text()
    assert text.splitlines()[0] == "# specconform: FAIL"
    assert re.search(r"^- gate: \*\*failed\*\* \(exit 1\): [1-9]\d* new failures", text, re.MULTILINE)
    # the run's own summary line counts findings (defects), not failed checks: counting/validated and the counting
    # vectors `hole` and `out-of-vocab` failed
    assert re.search(r"FAIL: FAIL=[1-9]\d* .*; findings [1-9]\d*, [1-9]\d* unexpected failures? in team-engine", text)
    assert "## specconform conformance report" in text  # the run's summary.md follows the verdict


def test_no_new_failure_passes(good_run, tmp_path):
    report_dir = _continue(good_run, tmp_path)
    summary = tmp_path / "step-summary.md"
    env = ci_env(report_dir, BASELINE_DIR=str(good_run[1]), GITHUB_STEP_SUMMARY=str(summary))

    gate = run_script("gate.sh", env)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert state(report_dir, "gate.line").startswith("0 new failures")

    verdict = run_script("verdict.sh", env)
    assert verdict.returncode == 0, verdict.stdout
    assert summary.read_text().splitlines()[0] == "# specconform: PASS"


def test_a_failure_the_baseline_had_is_not_new_but_the_run_still_fails(broken_run, tmp_path):
    report_dir = _continue(broken_run, tmp_path)
    env = ci_env(report_dir, BASELINE_DIR=str(broken_run[1]))

    assert run_script("gate.sh", env).returncode == 0
    verdict = run_script("verdict.sh", env)
    assert verdict.returncode == 1
    assert verdict.stdout.splitlines()[0] == "# specconform: FAIL"
    assert "- conformance: **failed** (exit 1)" in verdict.stdout


def test_no_baseline_says_so_and_passes(good_run, tmp_path):
    report_dir = _continue(good_run, tmp_path)
    summary = tmp_path / "step-summary.md"
    env = ci_env(report_dir, BASELINE_DIR=str(tmp_path / "nothing-here"), GITHUB_STEP_SUMMARY=str(summary))

    gate = run_script("gate.sh", env)
    assert gate.returncode == 0
    assert state(report_dir, "gate.line").startswith("No baseline yet")

    assert run_script("verdict.sh", env).returncode == 0
    lines = summary.read_text().splitlines()
    assert lines[0] == "# specconform: PASS"
    assert any(line.startswith("- gate: passed: No baseline yet") for line in lines)


def test_the_gate_needs_a_conformance_run_first(tmp_path):
    env = ci_env(tmp_path / "reports", BASELINE_DIR=str(tmp_path))
    gate = run_script("gate.sh", env)
    assert gate.returncode == 2
    assert "run conformance.sh first" in gate.stderr


def test_verdict_fails_when_the_conformance_run_never_ran(tmp_path):
    verdict = run_script("verdict.sh", ci_env(tmp_path / "reports"))
    assert verdict.returncode == 1
    assert verdict.stdout.splitlines()[0] == "# specconform: FAIL"
    assert "- conformance: **did not run**" in verdict.stdout


def test_conformance_rejects_an_unknown_device(tmp_path):
    report_dir = tmp_path / "reports"
    done = run_script("conformance.sh", ci_env(report_dir, DEVICE="gpu"))
    assert done.returncode == 2
    assert state(report_dir, "conformance.line") == "DEVICE must be cuda or cpu, got 'gpu'"
    assert state(report_dir, "conformance.status") == "2"
