"""The perf gate of the CI recipe (scripts/ci/bench.sh) with two stored bench runs: the published H100 run
as the baseline, and this run's bench replaced by a copy slowed beyond or within the measured spread.
`specconform bench` needs CUDA, so a stand-in interpreter writes the stored run where the bench would and
hands every other command to this interpreter."""

import json
import stat
import sys

import pytest

from tests.harness.test_history import NOISY, SHAPE, baseline, slowed_copy  # noqa: F401 - the fixture

from .conftest import ci_env, run_script, state


def _stand_in(tmp_path, results: dict):
    """An interpreter for which `-m specconform.harness.cli bench --out DIR` writes ``results`` into DIR."""
    stored = tmp_path / "stored-bench.json"
    stored.write_text(json.dumps(results))
    python = tmp_path / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1 $2 $3 $4" = "-m specconform.harness.cli bench --out" ]; then\n'
        f'  cp {stored} "$5/bench-20260102-000000.json"; exit 0\n'
        "fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return python


def _bench(tmp_path, results, baseline_results=None):
    report_dir = tmp_path / "reports"
    env = ci_env(report_dir, PYTHON=str(_stand_in(tmp_path, results)), BASELINE_DIR=str(tmp_path / "baseline"))
    if baseline_results is not None:
        (tmp_path / "baseline" / "perf").mkdir(parents=True)
        (tmp_path / "baseline" / "perf" / "bench-20260101-000000.json").write_text(json.dumps(baseline_results))
    return run_script("bench.sh", env), report_dir


def test_a_regression_beyond_the_spread_fails_the_bench_step(tmp_path, baseline):  # noqa: F811
    done, report_dir = _bench(tmp_path, slowed_copy(baseline, 1.3), baseline)
    assert done.returncode == 1, done.stdout + done.stderr
    assert state(report_dir, "bench.line").startswith("1 regression, 0 improvements beyond the measured spread")
    assert f"| {SHAPE} | ours |" in state(report_dir, "bench.md")
    assert (report_dir / "baseline-next" / "perf" / "bench-20260102-000000.json").is_file()  # for later runs


def test_a_change_within_the_spread_passes(tmp_path, baseline):  # noqa: F811
    done, report_dir = _bench(tmp_path, slowed_copy(baseline, 1.3, "ours_eager", NOISY), baseline)  # spread 1.43
    assert done.returncode == 0, done.stdout + done.stderr
    assert state(report_dir, "bench.line").startswith("0 regressions")


@pytest.mark.parametrize("with_folder", [False, True])
def test_no_baseline_yet_is_said_plainly_and_passes(tmp_path, baseline, with_folder):  # noqa: F811
    if with_folder:
        (tmp_path / "baseline" / "perf").mkdir(parents=True)  # an artifact without a bench run
    done, report_dir = _bench(tmp_path, baseline)
    assert done.returncode == 0, done.stdout + done.stderr
    assert state(report_dir, "bench.line").startswith("No perf baseline yet")
