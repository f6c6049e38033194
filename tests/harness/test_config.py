"""The typed run configuration every front end builds: the command line's options become one ``RunConfig``,
and the commands that re-run a check are written from it as words."""

import shlex

import pytest

from specconform.harness import checks, cli, stats
from specconform.harness.config import DEFAULT_ENGINES, RunConfig, Shard
from specconform.harness.core import Check, Context
from specconform.harness.profiles import canonical


def _config(*argv) -> RunConfig:
    return cli.run_config(cli.build_parser().parse_args(["run", *argv]))


def test_the_command_line_builds_the_config_with_its_defaults():
    config = _config()
    assert config == RunConfig()
    assert config.engines == DEFAULT_ENGINES
    assert (config.seed, config.trials, config.deviation, config.power, config.alpha, config.timeout) == (
        20261121,
        stats.DEFAULT_MAX_TRIALS,
        None,
        stats.DEFAULT_POWER.power,
        1e-6,
        600,
    )


def test_options_land_in_their_fields_and_server_options_stay_together():
    config = _config(
        *("--engine", "openai", "--base-url", "http://h:1/v1", "--model", "m", "--check", "api/*"),
        *("--exclude", "api/x", "--seed", "7", "--timeout", "30", "--quiet", "--spec-base-url", "http://h:2/v1"),
    )
    assert config.engines == ("openai",)
    assert dict(config.api_options) == {"base_url": "http://h:1/v1", "model": "m", "spec_base_url": "http://h:2/v1"}
    assert (config.checks, config.exclude, config.seed, config.timeout, config.quiet) == (
        ("api/*",),
        ("api/x",),
        7,
        30,
        True,
    )


def test_thorough_sizes_only_what_is_not_given():
    thorough = _config("--thorough")
    assert (thorough.deviation, thorough.trials) == (stats.THOROUGH_POWER.deviation, stats.THOROUGH_MAX_TRIALS)
    given = _config("--thorough", "--deviation", "0.01", "--trials", "5")
    assert (given.deviation, given.trials) == (0.01, 5)


def test_the_reproduce_line_names_the_server_and_quotes_for_the_shell():
    config = _config("--engine", "openai", "--base-url", "http://h:1/v1", "--model", "a model", "--profile", "p.yaml")
    ctx = Context(profile=canonical(), seed=3, trials=10, deviation=0.05, power=0.9)
    check = Check("api/x y", "api.budget", ("API-BUDGET-1",), (), "", lambda engine, ctx: None)
    line = config.reproduce("openai")(check, ctx)
    assert line == (
        "specconform run --engine openai --base-url http://h:1/v1 --model 'a model' --check 'api/x y' --seed 3 "
        "--trials 10 --deviation 0.05 --power 0.9 --profile p.yaml"
    )
    words = shlex.split(line)[2:]  # what the shell hands the command line back
    again = cli.run_config(cli.build_parser().parse_args(["run", *words]))
    assert again.api_options == config.api_options and again.checks == ("api/x y",) and again.seed == 3
    pytest_line = config.reproduce("openai", prefix="pytest", option_prefix="--specconform-")(check, ctx)
    assert pytest_line.startswith("pytest --specconform-engine openai --specconform-base-url http://h:1/v1 ")


def test_a_kernel_engine_is_named_without_server_options():
    config = _config("--base-url", "http://h:1/v1", "--model", "m")
    assert config.engine_options("oracle") == [("engine", "oracle")]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"])
def test_a_bad_shard_names_the_text(text):
    with pytest.raises(ValueError, match=repr(text).replace("/", ".")):
        Shard.parse(text)


def _pyproject(folder, table: str) -> None:
    (folder / "pyproject.toml").write_text(f'[project]\nname = "team-engine"\n\n[tool.specconform]\n{table}')


def test_the_config_file_sets_defaults_that_the_command_line_overrides(tmp_path, monkeypatch):
    _pyproject(
        tmp_path,
        'engine = ["openai"]\nbase-url = "http://h:1/v1"\nmodel = "m"\ncheck = ["api/*", "rejection/*"]\n'
        "seed = 7\ntimeout = 30\nthorough = true\n",
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # the nearest pyproject.toml above counts
    config = cli.run_config(cli.parse(["run"]))
    assert (config.engines, config.checks, config.seed, config.timeout) == (
        ("openai",),
        ("api/*", "rejection/*"),
        7,
        30,
    )
    assert dict(config.api_options) == {"base_url": "http://h:1/v1", "model": "m"}
    assert config.trials == stats.THOROUGH_MAX_TRIALS
    given = cli.run_config(cli.parse(["run", "--seed", "8", "--check", "api/x", "--model", "n"]))
    assert (given.seed, given.checks, given.api_options["model"]) == (8, ("api/x",), "n")  # a list is replaced


BAD_FILES = {
    "unknown key": ("sed = 7\n", ["'sed'", "known keys", "seed"]),
    "a key of another command": ('mutant = ["x"]\n', ["'mutant'"]),
    "an invocation's own option": ("workers = 2\n", ["'workers'"]),
    "a bad value": ("seed = -1\n", ["seed", "got -1"]),
    "a wrong type": ('thorough = "yes"\n', ["thorough", "true or false"]),
    "an unknown choice": ('api-profile = "nosuch"\n', ["api-profile", "'nosuch'", "vllm"]),
    "not a list of strings": ("check = [1]\n", ["check", "list of strings"]),
    "not TOML": ("seed = \n", ["not valid TOML"]),
}


@pytest.mark.parametrize("table, says", list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_a_mistake_in_the_config_file_is_one_usage_line_naming_it(tmp_path, monkeypatch, capsys, table, says):
    _pyproject(tmp_path, table)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--report-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("specconform run: ") and "pyproject.toml" in err
    for word in says:
        assert word in err, (word, err)
    assert not (tmp_path / "runs").exists()


def test_other_commands_do_not_read_the_config_file(tmp_path, monkeypatch, capsys):
    _pyproject(tmp_path, "sed = 7\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["list", "profiles"]) == 0


@pytest.mark.parametrize(
    "patterns, engines",
    [
        (["budget/*"], ("reference", "oracle")),
        (["api/*"], ("embedded:single", "embedded:multi")),
        (["budget/sequential", "api/usage"], DEFAULT_ENGINES),
    ],
)
def test_default_engines_judge_only_the_level_they_can_claim(patterns, engines):
    config = RunConfig.from_options({"check": patterns})
    assert config.planned_engines(config.selected(checks.all_checks())) == engines


def test_named_engines_are_judged_whatever_the_selection():
    config = RunConfig.from_options({"check": ["budget/*"], "engine": ["embedded:single"]})
    assert config.planned_engines(config.selected(checks.all_checks())) == ("embedded:single",)
