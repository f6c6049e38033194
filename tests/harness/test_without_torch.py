"""The light install (issue 31): with torch, triton, transformers and the server stack unimportable, the command
line judges an OpenAI-compatible server, lists, reports and summarises; an engine or command that needs an extra
is one line naming the extra, and exit 2."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from specconform.harness import checks, runner
from specconform.harness.adapters import EXTRAS

ROOT = Path(__file__).resolve().parents[2]
WITHOUT_TORCH = Path(__file__).with_name("without_torch")  # its sitecustomize blocks the heavy packages
HEAVY = ("torch", "triton", "transformers", "tokenizers", "fastapi", "uvicorn")


# runs each command line of argv (a JSON list) in one process: their exit statuses, stdouts and stderrs, as JSON
RUN_EACH = """
import contextlib, io, json, sys
from specconform.harness import cli
results = []
for argv in json.loads(sys.argv[1]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
    results.append([status, stdout.getvalue(), stderr.getvalue()])
sys.stdout.write(json.dumps(results))
"""


def light_cli(argvs: list[list[str]], cwd: Path) -> list[tuple[int, str, str]]:
    """(exit status, stdout, stderr) of ``specconform *argv`` for each of ``argvs``, run one after the other in a
    process that cannot import any of ``HEAVY``."""
    done = light("-c", RUN_EACH, json.dumps(argvs), cwd=cwd)
    assert done.returncode == 0, done.stderr
    return [tuple(result) for result in json.loads(done.stdout)]


def light(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python *argv`` in a process (and its children) that cannot import any of ``HEAVY``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(WITHOUT_TORCH), str(ROOT)])}
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_blocker_makes_the_heavy_packages_unimportable(tmp_path):
    code = f"""
import importlib
for module in {HEAVY!r}:
    try:
        importlib.import_module(module)
        print(module)
    except ModuleNotFoundError:
        pass
"""
    done = light("-c", code, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.split() == [], done.stdout + done.stderr


def test_the_extras_table_matches_pyproject():
    """Each extra ``specconform.harness.adapters.EXTRAS`` names brings the modules it lists (as pyproject.toml
    declares), and none of them is a core dependency."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements):
        return {Requirement(requirement).name for requirement in requirements}

    optional = project["optional-dependencies"]
    assert {extra: set(modules) for extra, modules in EXTRAS.items()} == {
        extra: names(optional[extra]) for extra in EXTRAS
    }
    assert names(project["dependencies"]).isdisjoint(HEAVY)


def test_a_light_install_judges_a_server(tmp_path):
    """``specconform run --engine openai`` against the embedded engine's server (served from this process, which
    has torch), from a process that has none: every selected check is judged, as with torch."""
    pytest.importorskip("fastapi", reason="the embedded engine needs fastapi and uvicorn")
    from specconform.harness.adapters import embedded_server

    selected = ["api/usage", "api/budget-binds", "api/invalid-budget"]
    done = light(
        *("-m", "specconform.harness.cli", "run", "--engine", "openai", "--base-url", embedded_server().base_url),
        *("--model", "tiny-think-single", "--spec-model", "tiny-think-single-spec"),
        *("--plain-model", "tiny-plain-single", "--report-dir", str(tmp_path), "--quiet"),
        *[word for check in selected for word in ("--check", check)],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = tmp_path.iterdir()
    records = runner.read_records(run_dir)
    assert sorted((r.check, r.status) for r in records) == sorted((name, "PASS") for name in selected)
    (report, summary, listed) = light_cli([["report", str(run_dir)], ["summary", str(run_dir)], ["list"]], tmp_path)
    assert [report[0], summary[0], listed[0]] == [0, 0, 0], [report, summary, listed]
    assert (run_dir / "report.html").is_file() and "tiny-think-single" in summary[1]
    assert all(check.name in listed[1] for check in checks.all_checks())


# what needs an extra, and the extra
NEEDS_AN_EXTRA = [
    (["run"], "reference"),  # the default engines begin with the reference implementation
    (["run", "--engine", "reference:cpu:torch"], "reference"),
    (["run", "--engine", "reference:cpu:triton"], "triton"),
    (["run", "--engine", "embedded:multi"], "serve"),
    (["run", "--engine", "zoo:vocab-size-cast-to-int"], "reference"),
    (["zoo"], "reference"),  # the zoo holds mutants built on the reference implementation: said before any is judged
    (["run", "--engine", "specconform.harness.adapters.vllm:make"], "reference"),
    (["replay", "vector.json", "--engine", "embedded"], "serve"),
    (["serve"], "serve"),
    (["bench"], "triton"),
]


def test_what_needs_an_extra_names_it_and_exits_2(tmp_path):
    results = light_cli([argv for argv, _ in NEEDS_AN_EXTRA], tmp_path)
    wrong = [
        (argv, status, stderr)
        for (argv, extra), (status, _, stderr) in zip(NEEDS_AN_EXTRA, results)
        if not (status == 2 and len(stderr.splitlines()) == 1 and f"pip install 'specconform[{extra}]'" in stderr)
    ]
    assert wrong == []
    assert list(tmp_path.iterdir()) == []  # no run folder, no report


def test_the_oracle_runs_without_the_extras(tmp_path):
    """The oracle (numpy) needs no extra, as the usage errors above say."""
    done = light(
        *("-m", "specconform.harness.cli", "run", "--engine", "oracle"),
        *("--check", "vectors/thinking-budget/model-opened-budget-0", "--report-dir", str(tmp_path), "--quiet"),
        cwd=tmp_path,
    )
    records = [json.loads(line) for run in tmp_path.iterdir() for line in (run / "results.jsonl").open()]
    assert done.returncode == 0, done.stderr
    assert [(r["engine"], r["status"]) for r in records] == [("oracle", "PASS")]


def test_a_built_in_adapter_without_its_engine_is_a_usage_error(tmp_path, capsys):
    """With torch but without the engine it judges in process, a built-in adapter is one line naming the engine."""
    pytest.importorskip("torch")
    if importlib.util.find_spec("flashinfer") is not None:
        pytest.skip("FlashInfer is installed here")
    from specconform.harness import cli

    status = cli.main(
        ["run", "--engine", "specconform.harness.adapters.flashinfer_chain:make", "--report-dir", str(tmp_path)]
    )
    assert status == 2 and "this Python has no flashinfer" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
