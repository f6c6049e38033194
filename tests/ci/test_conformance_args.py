"""conformance.sh hands the action's `args` input to `specconform run` word for word, split as a shell splits
words without running anything in them, and the second and third servers' base URLs as their options. The run
itself is a stand-in that notes the words it was given."""

import sys

import pytest

from .conftest import ci_env, run_script, state

STAND_IN = """#!/usr/bin/env bash
# `$PYTHON -m specconform.harness.cli ...` notes its words, one a line; anything else is the real interpreter
if [ "$1" = -m ]; then printf '%s\\n' "${@:3}" >"$RUN_WORDS"; exit 0; fi
exec PYTHON "$@"
"""


@pytest.fixture
def words_of_the_run(tmp_path):
    """(environment whose PYTHON notes the run's words, a function that reads them)."""
    stand_in = tmp_path / "python"
    stand_in.write_text(STAND_IN.replace("PYTHON", sys.executable))
    stand_in.chmod(0o755)
    noted = tmp_path / "words"
    env = ci_env(tmp_path / "reports", PYTHON=str(stand_in), RUN_WORDS=str(noted))
    return env, lambda: noted.read_text().splitlines()


def test_args_reach_the_run_as_words_and_nothing_in_them_runs(words_of_the_run, tmp_path):
    env, words = words_of_the_run
    env.update(ENGINE="oracle", ARGS="--check 'api/x y' --seed 7 --shard 1/2 --exclude \"$(touch pwned)\"")
    run_script("conformance.sh", env)
    assert words()[:3] == ["run", "--engine", "oracle"]
    run = words()[3:]
    assert run[:8] == ["--check", "api/x y", "--seed", "7", "--shard", "1/2", "--exclude", "$(touch pwned)"]
    assert not (tmp_path / "pwned").exists()


def test_args_that_no_shell_could_split_are_a_usage_error(words_of_the_run, tmp_path):
    env, _ = words_of_the_run
    env.update(ENGINE="oracle", ARGS="--check 'unclosed")
    done = run_script("conformance.sh", env)
    assert done.returncode == 2
    assert state(tmp_path / "reports", "conformance.line").startswith("ARGS cannot be split into words")


def test_the_servers_base_urls_are_passed_as_their_options(words_of_the_run):
    env, words = words_of_the_run
    env.update(ENGINE="openai", BASE_URL="http://a/v1", MODEL="m", SPEC_BASE_URL="http://b/v1")
    env.update(PLAIN_BASE_URL="http://c/v1")
    run_script("conformance.sh", env)
    run = " ".join(words())
    for option in ("--base-url http://a/v1", "--spec-base-url http://b/v1", "--plain-base-url http://c/v1"):
        assert option in run, run
