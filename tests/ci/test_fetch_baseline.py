"""fetch-baseline.sh against a stand-in for the GitHub CLI: the stand-in answers `gh` as the GitHub API
would (JSON filtered by the script's own --jq expression, with jq) and serves a stored run's artifact."""

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from .conftest import ci_env, run_script, state

FAKE_GH = r"""#!/usr/bin/env bash
# `gh` as far as fetch-baseline.sh uses it; every call is logged to $FAKE_GH_LOG.
echo "$*" >>"$FAKE_GH_LOG"
args=("$@"); expr=.; dir=.
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in --jq) expr=${args[i + 1]} ;; --dir) dir=${args[i + 1]} ;; esac
done
case "$1 $2" in
  "repo view") json='{"defaultBranchRef": {"name": "main"}}' ;;
  "run list") json=$FAKE_GH_RUNS ;;
  "run download") cp -R "$FAKE_GH_ARTIFACT/." "$dir"; exit 0 ;;
  api\ *) json=$FAKE_GH_ARTIFACTS ;;
  *) echo "fake gh: unexpected call: $*" >&2; exit 64 ;;
esac
printf '%s' "$json" | jq -r "$expr"
"""


@pytest.fixture
def fake_gh(tmp_path):
    """(environment with the stand-in first on PATH, its call log, the stored artifact's folder)."""
    if shutil.which("jq") is None:
        pytest.fail("these tests need jq (the stand-in applies the script's --jq expressions with it)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH)
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    (artifact / "results.jsonl").write_text(json.dumps({"engine": "e", "check": "c", "status": "PASS"}) + "\n")
    log = tmp_path / "gh.log"
    env = ci_env(
        tmp_path / "reports",
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        GITHUB_REPOSITORY="team/engine",
        GITHUB_WORKFLOW_REF="team/engine/.github/workflows/gpu.yml@refs/pull/7/merge",
        FAKE_GH_LOG=str(log),
        FAKE_GH_ARTIFACT=str(artifact),
        FAKE_GH_RUNS='[{"databaseId": 4242}]',
        FAKE_GH_ARTIFACTS=json.dumps(
            {"total_count": 1, "artifacts": [{"id": 9, "name": "specconform-baseline", "expired": False}]}
        ),
    )
    return env, log


def test_fetches_the_last_successful_run_on_the_default_branch(fake_gh, tmp_path):
    env, log = fake_gh
    done = run_script("fetch-baseline.sh", env)
    assert done.returncode == 0, done.stderr
    baseline = tmp_path / "reports" / "baseline"
    assert (baseline / "results.jsonl").read_text() == (Path(env["FAKE_GH_ARTIFACT"]) / "results.jsonl").read_text()
    assert "run 4242 of gpu.yml on main" in (baseline / "SOURCE").read_text()
    calls = log.read_text().splitlines()
    assert any(
        c.startswith("run list --repo team/engine --workflow gpu.yml --branch main --status success --limit 1")
        for c in calls
    )
    assert "run download 4242 --repo team/engine --name specconform-baseline --dir " + str(baseline) in calls


def test_no_successful_run_is_no_baseline(fake_gh, tmp_path):
    env, _ = fake_gh
    env["FAKE_GH_RUNS"] = "[]"
    done = run_script("fetch-baseline.sh", env)
    assert done.returncode == 0
    report_dir = tmp_path / "reports"
    assert state(report_dir, "fetch-baseline.line") == "No baseline: gpu.yml has no successful run on main yet"
    assert not (report_dir / "baseline" / "results.jsonl").exists()


def test_an_expired_artifact_is_no_baseline(fake_gh, tmp_path):
    env, log = fake_gh
    env["FAKE_GH_ARTIFACTS"] = '{"total_count": 1, "artifacts": [{"id": 9, "name": "x", "expired": true}]}'
    done = run_script("fetch-baseline.sh", env)
    assert done.returncode == 0
    assert "kept no artifact named specconform-baseline" in state(tmp_path / "reports", "fetch-baseline.line")
    assert not any(c.startswith("run download") for c in log.read_text().splitlines())


def test_branch_and_workflow_can_be_named(fake_gh):
    env, log = fake_gh
    env.update(BASELINE_BRANCH="release", BASELINE_WORKFLOW="nightly.yml")
    assert run_script("fetch-baseline.sh", env).returncode == 0
    calls = log.read_text().splitlines()
    assert not any(c.startswith("repo view") for c in calls)
    assert any("--workflow nightly.yml --branch release" in c for c in calls)


def test_without_gh_there_is_no_baseline_and_it_says_why(fake_gh, tmp_path):
    env, _ = fake_gh
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)[1:] if not (Path(p) / "gh").exists())
    done = run_script("fetch-baseline.sh", env)
    assert done.returncode == 0
    line = state(tmp_path / "reports", "fetch-baseline.line")
    assert line.startswith("No baseline: the GitHub CLI (gh) is not installed")
    verdict = run_script("verdict.sh", env)
    assert "fetch-baseline: **failed**" not in verdict.stdout
