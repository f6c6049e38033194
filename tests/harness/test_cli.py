"""The command line: every misuse is one line on stderr and exit 2 (never a traceback), every option
has help text with its default, a closed pipe ends it quietly, and diffs and engine names say only
what is so."""

import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from specconform.harness import cli
from specconform.harness.adapters import make_engine
from tests.harness.test_api_spec_counters import fake_vllm, route_clients
from tests.harness.test_reports import edited, make_record

ROOT = Path(__file__).resolve().parents[2]


def invoke(argv, capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``specconform *argv`` run in this process."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse's own errors and --help
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def run_folders(tmp_path):
    """Two run folders: ``old`` where every check passes, ``new`` where one fails with long evidence."""
    evidence = "ids " + str(list(range(200)))  # longer than any one-line cut
    old = [make_record("a", "PASS"), make_record("b", "PASS")]
    failed = edited(make_record("a", "FAIL"), "TB-FORCE-1", evidence=evidence)
    new = [failed, make_record("b", "PASS")]
    for name, records in (("old", old), ("new", new)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    return tmp_path / "old", tmp_path / "new", evidence


MISUSES = {
    "unknown engine": (
        ["run", "--engine", "foobar"],
        ["'foobar'", "embedded", "openai", "specconform.harness.adapters.vllm:make"],
    ),
    "unimportable factory": (["run", "--engine", "nosuch.mod:make"], ["'nosuch.mod'"]),
    "an adapter under the old import name": (
        ["run", "--engine", "harness.adapters.vllm:make"],
        ["'harness.adapters.vllm'", "'specconform.harness.adapters.vllm'"],
    ),
    "factory missing from its module": (["run", "--engine", "specconform.harness.cli:nosuch"], ["'nosuch'"]),
    "openai without a server": (["run", "--engine", "openai"], ["--base-url", "--model"]),
    "unknown mutant": (["run", "--engine", "zoo:nosuch"], ["'nosuch'", "the zoo holds"]),
    "unknown zoo mutant": (["zoo", "--mutant", "nosuch"], ["'nosuch'", "the zoo holds"]),
    "unknown profile": (["run", "--profile", "nosuch"], ["'nosuch'", "canonical"]),
    "no check matches": (["run", "--check", "nosuch*"], ["nosuch*", "specconform list"]),
    "missing expectations": (["run", "--expectations", "/nonexistent/known.yaml"], ["/nonexistent/known.yaml"]),
    "zero timeout": (["run", "--timeout", "0"], ["--timeout", "got 0"]),
    "negative timeout": (["run", "--timeout", "-5"], ["--timeout", "got -5"]),
    "alpha above one": (["run", "--alpha", "2"], ["--alpha", "(0, 1)", "got 2"]),
    "alpha not a number": (["run", "--alpha", "x"], ["--alpha", "'x'"]),
    "no trials": (["run", "--trials", "0"], ["--trials", "got 0"]),
    "unknown api profile": (["run", "--api-profile", "nosuch"], ["--api-profile", "'nosuch'", "vllm"]),
    "report on a missing folder": (["report", "/nonexistent/run"], ["'/nonexistent/run'"]),
    "report on a file": (["report", str(ROOT / "README.md")], ["README.md", "not a run folder"]),
    "diff on a missing folder": (["diff", "/nonexistent/a", "/nonexistent/b"], ["/nonexistent/a"]),
    "pin on a missing folder": (["pin", "/nonexistent/a", "--expectations", "/nonexistent/k.yaml"], ["/nonexistent/a"]),
    "summary on a missing folder": (["summary", "/nonexistent/a"], ["/nonexistent/a"]),
    "serve on port zero": (["serve", "--port", "0"], ["--port", "got 0"]),
    "unknown subcommand": (["nosuch"], ["'nosuch'"]),
    "unknown list": (["list", "nosuch"], ["'nosuch'", "checks", "requirements"]),
}


@pytest.mark.parametrize("argv, says", list(MISUSES.values()), ids=list(MISUSES))
def test_every_misuse_is_one_line_and_exit_2(argv, says, capsys, monkeypatch):
    # an engine process that is slow to boot says nothing here
    monkeypatch.setattr("specconform.harness.cli.progress.HEARTBEAT_S", 3600)
    status, out, err = invoke(argv, capsys)
    assert status == 2, err
    assert "Traceback" not in err and out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("specconform"), err
    for word in says:
        assert word in err, (word, err)


def _subparsers(parser):
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return action.choices


@pytest.mark.parametrize("command", list(_subparsers(cli.build_parser())))
def test_every_option_has_help_and_shows_its_default(command):
    sub = _subparsers(cli.build_parser())[command]
    for action in sub._actions:
        assert action.help, f"specconform {command} {action.option_strings or action.dest} has no help text"
    text = sub.format_help()
    for action in sub._actions:
        if action.default not in (None, False) and not isinstance(action.default, list) and action.dest != "help":
            assert f"(default: {action.default})" in " ".join(text.split()), (command, action.dest)


def test_serve_and_report_dir_help_show_their_defaults():
    subs = _subparsers(cli.build_parser())
    serve = " ".join(subs["serve"].format_help().split())
    for shown in ("(default: 127.0.0.1)", "(default: 8000)", "(default: 3)", "(default: cpu)"):
        assert shown in serve
    assert "(default: reports/runs)" in " ".join(subs["run"].format_help().split())


def _closed_pipe(argv) -> subprocess.CompletedProcess:
    """Run ``specconform *argv`` with its stdout a pipe whose reader has already gone (``| head`` that quit)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "specconform.harness.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return subprocess.CompletedProcess(argv, proc.wait(), "", err)


@pytest.mark.parametrize("what", ["list", "diff"])
def test_a_closed_pipe_ends_quietly(what, run_folders):
    old, new, _ = run_folders
    argv = ["list"] if what == "list" else ["diff", str(old), str(new)]
    done = _closed_pipe(argv)
    assert done.stderr == ""
    assert done.returncode == 128 + signal.SIGPIPE


def test_diff_leaves_out_empty_sections_and_keeps_evidence_whole(run_folders, capsys):
    old, new, evidence = run_folders
    status, out, err = invoke(["diff", str(old), str(new)], capsys)
    assert status == 1 and err == ""  # one new failure
    assert "## New failures" in out and evidence in out
    for empty in ("## Fixes", "## Changes in statistics", "## Other status changes"):
        assert empty not in out


def test_diff_of_identical_runs_says_nothing_changed(run_folders, capsys):
    old, _, _ = run_folders
    status, out, _ = invoke(["diff", str(old), str(old)], capsys)
    assert status == 0
    assert "##" not in out and "No change" in out


@pytest.mark.parametrize(
    "options, name",
    [
        ({}, "openai:tiny-think@think.test"),
        ({"api_profile": "vllm"}, "vllm:tiny-think@think.test"),
        ({"engine_name": "vllm-main"}, "vllm-main"),
    ],
    ids=["unnamed", "named-profile", "engine-name"],
)
def test_an_openai_engine_is_named_by_what_is_known(options, name, monkeypatch):
    route_clients(monkeypatch, fake_vllm(None, []))
    engine = make_engine("openai", {"base_url": "http://think.test/v1", "model": "tiny-think", **options})
    assert engine.name == name


class Terminal(io.StringIO):
    """stderr as a terminal (``tty``) or a CI log; ``said`` is set once ``waited_for`` was written."""

    def __init__(self, tty: bool, waited_for: str = "\0"):
        super().__init__()
        self.tty = tty
        self.waited_for = waited_for
        self.said = threading.Event()

    def isatty(self):
        return self.tty

    def write(self, text):
        if self.waited_for in text:
            self.said.set()
        return super().write(text)


PLAN = [("oracle", "rejection/greedy"), ("oracle", "rejection/distribution")]


def _finished(check, status="PASS"):
    """A record of a check that names no requirement: its progress line says no more than its status."""
    return edited(make_record(check, status, engine="oracle", reqs=()), duration_s=1.0, message="")


def test_a_log_gets_a_line_per_check_and_a_heartbeat_while_one_runs(monkeypatch):
    monkeypatch.setattr("specconform.harness.cli.progress.HEARTBEAT_S", 0.01)
    log = Terminal(tty=False, waited_for="still running oracle: rejection/distribution")
    with cli.Progress(PLAN, quiet=False, stream=log) as progress:
        progress(_finished("rejection/greedy"))
        assert log.said.wait(timeout=60)
        progress(_finished("rejection/distribution", "FAIL"))
    lines = log.getvalue().splitlines()
    assert "[1/2] PASS                oracle: rejection/greedy (1.0 s)" in lines
    assert lines[-1] == "[2/2] FAIL                oracle: rejection/distribution (1.0 s)"


def test_quiet_is_silent(monkeypatch):
    monkeypatch.setattr("specconform.harness.cli.progress.HEARTBEAT_S", 0.01)
    log = Terminal(tty=True)
    with cli.Progress(PLAN, quiet=True, stream=log) as progress:
        progress(_finished("rejection/greedy"))
        progress(_finished("rejection/distribution"))
    assert log.getvalue() == ""


@pytest.mark.parametrize("ci", [None, "true"], ids=["terminal", "terminal-in-ci"])
def test_a_terminal_gets_a_bar_naming_the_running_check_unless_in_ci(monkeypatch, ci):
    if ci:
        monkeypatch.setenv("CI", ci)
    else:
        monkeypatch.delenv("CI", raising=False)
    terminal = Terminal(tty=True)
    with cli.Progress(PLAN, quiet=False, stream=terminal) as progress:
        progress(_finished("rejection/greedy"))
        shown = terminal.getvalue()
        progress(_finished("rejection/distribution", "FAIL"))
    if ci:
        assert progress.bar is None and "[1/2] PASS" in shown
    else:
        assert "1/2" in shown and "oracle: rejection/distribution" in shown  # the bar and the running check
        assert "[1/2] PASS" not in terminal.getvalue()  # passes only move the bar
        assert "[2/2] FAIL                oracle: rejection/distribution" in terminal.getvalue()  # failures stay


def test_quiet_silences_third_party_chatter_in_engine_processes(monkeypatch):
    from transformers.utils import logging as transformers_logging

    for name in cli.QUIET_ENVIRONMENT:  # recorded, so that the test leaves the environment as it was
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    verbosity = transformers_logging.get_verbosity()
    try:
        cli.quiet_third_parties()
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ['HF_HUB_DISABLE_PROGRESS_BARS'])"],
            capture_output=True,
            text=True,
        )
        assert child.stdout.strip() == "1"
        assert not transformers_logging.is_progress_bar_enabled()
        assert transformers_logging.get_verbosity() == transformers_logging.ERROR
    finally:
        transformers_logging.enable_progress_bar()
        transformers_logging.set_verbosity(verbosity)


@pytest.mark.req("STAT-POWER-1")
def test_the_declared_deviation_is_the_engines_own_unless_given(tmp_path, capsys):
    # the oracle declares TV 0.05 (it samples one request at a time); the reference takes the default, 0.03
    def deviations(*extra):
        folder = tmp_path / str(len(extra))
        argv = ["run", "--engine", "oracle", "--engine", "reference", "--check", "rejection/invalid-ids"]
        assert invoke([*argv, "--quiet", "--report-dir", str(folder), *extra], capsys)[0] == 0
        (results,) = folder.glob("*/results.jsonl")
        records = [json.loads(line) for line in results.read_text().splitlines()]
        return {r["engine"]: r["reproduce"].split("--deviation ")[1].split()[0] for r in records}

    assert deviations() == {"oracle": "0.05", "reference": "0.03"}
    assert deviations("--deviation", "0.2") == {"oracle": "0.2", "reference": "0.2"}


def test_version_names_the_installed_distribution(capsys):
    import importlib.metadata

    status, out, err = invoke(["--version"], capsys)
    assert status == 0 and err == ""
    assert out == f"specconform {importlib.metadata.version('specconform')}\n"


def test_with_workers_the_heartbeat_names_every_check_running(monkeypatch):
    monkeypatch.setattr("specconform.harness.cli.progress.HEARTBEAT_S", 0.01)
    plan = [*PLAN, ("oracle", "rejection/invalid-ids")]
    log = Terminal(tty=False, waited_for="still running oracle: rejection/greedy, oracle: rejection/invalid-ids")
    with cli.Progress(plan, quiet=False, stream=log, workers=2) as progress:
        progress(_finished("rejection/distribution"))  # a later check finished first: the first and third still run
        assert log.said.wait(timeout=60)
