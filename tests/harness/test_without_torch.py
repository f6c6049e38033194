"""The light install (issue 31): with torch, triton, transformers and the server stack unimportable, the command
line judges an OpenAI-compatible server, lists, reports and summarises; an engine or command that needs an extra
is one line naming the extra, and exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import checks, runner
from harness.adapters import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_TORCH = Path(__file__).with_name("without_torch")  # its sitecustomize blocks the heavy packages
HEAVY = ("torch", "triton", "transformers", "tokenizers", "fastapi", "uvicorn")


def light(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python *argv`` in a process (and its children) that cannot import any of ``HEAVY``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WITHOUT_TORCH), str(ROOT)])}
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("module", HEAVY)
def test_the_blocker_makes_the_heavy_packages_unimportable(module, tmp_path):
    done = light("-c", f"import {module}", cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, done.stderr


def test_the_extras_table_matches_pyproject():
    """Each extra ``harness.adapters.EXTRAS`` names brings the modules it lists (as pyproject.toml declares), and
    none of them is a core dependency."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements):
        return {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in requirements}

    optional = project["optional-dependencies"]
    assert {extra: set(modules) for extra, modules in EXTRAS.items()} == {
        extra: names(optional[extra]) for extra in EXTRAS
    }
    assert names(project["dependencies"]).isdisjoint(HEAVY)


def test_a_light_install_judges_a_server(tmp_path):
    """``specconform run --engine openai`` against the embedded engine's server (served from this process, which
    has torch), from a process that has none: every selected check is judged, as with torch."""
    pytest.importorskip("fastapi", reason="the embedded engine needs fastapi and uvicorn")
    from harness.adapters import embedded_server

    selected = ["api/usage", "api/budget-binds", "api/invalid-budget"]
    done = light(
        *("-m", "harness.cli", "run", "--engine", "openai", "--base-url", embedded_server().base_url),
        *("--model", "tiny-think-single", "--spec-model", "tiny-think-single-spec"),
        *("--plain-model", "tiny-plain-single", "--report-dir", str(tmp_path), "--quiet"),
        *[word for check in selected for word in ("--check", check)],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = tmp_path.iterdir()
    records = runner.read_records(run_dir)
    assert sorted((r["check"], r["status"]) for r in records) == sorted((name, "PASS") for name in selected)
    for command in (["report", str(run_dir)], ["summary", str(run_dir)]):
        rendered = light("-m", "harness.cli", *command, cwd=tmp_path)
        assert rendered.returncode == 0, rendered.stderr
    assert (run_dir / "report.html").is_file() and "tiny-think-single" in rendered.stdout
    listed = light("-m", "harness.cli", "list", cwd=tmp_path)
    assert all(check.name in listed.stdout for check in checks.all_checks()), listed.stderr


@pytest.mark.parametrize(
    "argv, extra",
    [
        (["run"], "reference"),  # the default engines begin with the reference implementation
        (["run", "--engine", "reference:cpu:torch"], "reference"),
        (["run", "--engine", "reference:cpu:triton"], "triton"),
        (["run", "--engine", "embedded:multi"], "serve"),
        (["run", "--engine", "zoo:vocab-size-cast-to-int"], "reference"),
        (["replay", "vector.json", "--engine", "embedded"], "serve"),
        (["serve"], "serve"),
        (["bench"], "triton"),
    ],
)
def test_what_needs_an_extra_names_it_and_exits_2(argv, extra, tmp_path):
    done = light("-m", "harness.cli", *argv, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and f"pip install 'specconform[{extra}]'" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []  # no run folder, no report


def test_an_engine_of_the_core_install_runs_without_the_extras(tmp_path):
    """The oracle (numpy) and a zoo mutant built on it need no extra."""
    done = light(
        *("-m", "harness.cli", "run", "--engine", "oracle", "--engine", "zoo:budget-ignored"),
        *("--check", "vectors/thinking-budget/model-opened-budget-0", "--report-dir", str(tmp_path), "--quiet"),
        cwd=tmp_path,
    )
    records = [json.loads(line) for run in tmp_path.iterdir() for line in (run / "results.jsonl").open()]
    assert {r["engine"] for r in records} == {"oracle", "zoo:budget-ignored"}, done.stderr
    assert not [r for r in records if r["status"] == "ERROR"], done.stderr
