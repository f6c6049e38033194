"""One ``Session`` for every front end (``specconform.harness.session``): the command line and the pytest plugin each
make one from the same ``RunConfig``, a run reads its profile and expectations once, and every default of a run has
one home, ``RunConfig``."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from specconform.harness import cli, run_options, yaml_files
from specconform.harness import config as config_module
from specconform.harness.config import RunConfig
from specconform.harness.core import Context
from specconform.harness.session import Session

pytest_plugins = ["pytester"]

CHECK = "rejection/greedy"  # one quick check of the oracle


@pytest.fixture
def sessions(monkeypatch) -> list[Session]:
    """Every ``Session`` made while the test runs, in order."""
    made: list[Session] = []
    build = Session.__init__

    def recorded(self, *args, **kwargs):
        build(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Session, "__init__", recorded)
    return made


def test_the_command_line_and_the_plugin_judge_through_one_session_of_one_config(tmp_path, pytester, sessions):
    runs = tmp_path / "runs"
    assert cli.main(["run", "--engine", "oracle", "--check", CHECK, "--seed", "7", "--report-dir", str(runs)]) == 0
    (from_cli,) = sessions
    result = pytester.runpytest_inprocess(
        "--specconform-engine", "oracle", "--specconform-check", CHECK, "--specconform-seed", "7", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=1)
    (_, from_plugin) = sessions
    # the same configuration but where each front end's own options differ: the report folder (none under pytest)
    assert dataclasses.replace(from_cli.config, report_dir=RunConfig.report_dir) == from_plugin.config
    assert [c.name for c in from_cli.selected] == [c.name for c in from_plugin.selected] == [CHECK]
    (record,) = from_cli.render(next(runs.iterdir()))  # what the command line recorded, read back
    assert record.seed == 7 and record.reproduce.startswith("specconform run --engine oracle")
    assert from_plugin.reproduce_prefix == "pytest" and from_plugin.option_prefix == "--specconform-"


def test_a_run_reads_its_profile_and_its_expectations_once(tmp_path, monkeypatch, capsys):
    profile, known = tmp_path / "mine.yaml", tmp_path / "known.yaml"
    profile.write_text("name: mine\nbase: canonical\n")
    known.write_text("engine: oracle\nexpectations: []\n")
    reads: Counter[Path] = Counter()
    read = yaml_files.read

    def counted(path):
        reads[Path(path)] += 1
        return read(path)

    monkeypatch.setattr(yaml_files, "read", counted)
    argv = ["run", "--engine", "oracle", "--check", CHECK, "--profile", str(profile), "--expectations", str(known)]
    assert cli.main([*argv, "--report-dir", str(tmp_path / "runs"), "--quiet"]) == 0, capsys.readouterr().err
    assert reads[profile] == 1 and reads[known] == 1, reads


def test_every_default_of_a_run_is_run_configs():
    """The options a front end parses with nothing given make ``RunConfig()``, and a check's context outside a run
    draws with a run's seed."""
    parsed = run_options.run_parser().parse_args([])
    assert RunConfig.from_options(vars(parsed)) == RunConfig()
    assert RunConfig.from_options({}) == RunConfig()
    assert Context(profile=None).seed == RunConfig().seed  # type: ignore[arg-type]


def test_a_runs_headers_are_parsed_once_and_a_malformed_one_is_refused_when_the_session_is_made(monkeypatch):
    parsed = []
    parse = config_module.headers_of
    monkeypatch.setattr(config_module, "headers_of", lambda pairs: parsed.append(pairs) or parse(pairs))
    options = {"engine": ["openai"], "base_url": "http://h.test/v1", "model": "m", "header": ["X-Team: a", "X-B:b"]}
    run = RunConfig.from_options(options)
    session = Session(run)
    assert session.api_options["headers"] == {"X-Team": "a", "X-B": "b"} and "header" not in session.api_options
    assert run.engine_api_options is session.api_options and len(parsed) == 1
    with pytest.raises(ValueError, match="--header ':x'"):
        Session(RunConfig.from_options({**options, "header": [":x"]}))


def test_a_mistake_is_found_when_the_session_is_made_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="nosuch"):
        Session(RunConfig(engines=("oracle",), engines_defaulted=False, profile=str(tmp_path / "nosuch.yaml")))
    with pytest.raises(ValueError, match="no check matches"):
        Session(RunConfig(engines=("oracle",), engines_defaulted=False, checks=("no-such-check",)))
    assert not list(tmp_path.iterdir())
