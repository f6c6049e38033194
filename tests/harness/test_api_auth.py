"""``--api-key`` and ``--header``: every request to a server (the client's chat requests and the raw ones to
/models, /tokenize and /metrics) carries them, and no report or reproduction command shows their values."""

import shlex

import httpx2
import pytest

from specconform.harness import cli
from specconform.harness.adapters import make_engine
from specconform.harness.config import RunConfig, words
from specconform.harness.core import Check
from tests.harness.test_api_spec_counters import fake_vllm, route_clients

KEY = "sk-team-secret"
TEAM = "blue-team-token"


def guarded_server(seen_headers: list):
    """The vLLM stand-in behind a gate: a request without the key and the team header is HTTP 401."""
    inner = fake_vllm(None, [])

    def handle(request: httpx2.Request) -> httpx2.Response:
        seen_headers.append((request.url.path, request.headers.get("authorization"), request.headers.get("x-team")))
        if request.headers.get("authorization") != f"Bearer {KEY}" or request.headers.get("x-team") != TEAM:
            return httpx2.Response(401, json={"error": "unauthorized"})
        return inner.handle_request(request)

    return httpx2.MockTransport(handle)


def test_every_request_carries_the_key_and_the_headers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = []
    route_clients(monkeypatch, guarded_server(seen))
    options = {"base_url": "http://think.test/v1", "model": "tiny-think", "api_key": KEY, "header": [f"X-Team:{TEAM}"]}
    engine = make_engine("openai", RunConfig.from_options(options).engine_api_options)
    assert {"token-ids", "marker-ids"} <= engine.profile.capabilities, engine.probe_problem
    paths = {path for path, _, _ in seen}
    assert {"/v1/models", "/v1/chat/completions", "/tokenize"} <= paths
    assert all(auth == f"Bearer {KEY}" and team == TEAM for _, auth, team in seen), seen


def test_without_the_key_the_server_refuses(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen = []
    route_clients(monkeypatch, guarded_server(seen))
    engine = make_engine("openai", {"base_url": "http://think.test/v1", "model": "tiny-think"})
    assert "token-ids" not in engine.profile.capabilities  # the gate held: the stand-in does check


def test_the_reproduction_command_names_no_secret():
    argv = ["--engine", "openai", "--base-url", "http://h/v1", "--model", "m", "--api-key", KEY]
    config = cli.run_config(cli.build_parser().parse_args(["run", *argv, "--header", f"X-Team:{TEAM}"]))
    assert config.api_options["api_key"] == KEY and config.api_options["header"] == (f"X-Team:{TEAM}",)
    check = Check("api/x", "api.budget", ("API-BUDGET-1",), (), "", lambda engine, ctx: None)
    for line in (config.reproduce("openai")(check, None), words(config.engine_options("openai"))):
        assert KEY not in line and TEAM not in line
        assert '--api-key "$OPENAI_API_KEY"' in line and "--header X-Team:…" in line.replace("'", "")
    # the shell hands the command line the key from the environment, and the header's name back
    again = shlex.split(config.reproduce("openai")(check, None).replace('"$OPENAI_API_KEY"', KEY))
    assert cli.run_config(cli.build_parser().parse_args(again[1:])).api_options["api_key"] == KEY


def test_the_pytest_reproduction_names_no_secret():
    config = RunConfig(engines=("openai",), api_options={"base_url": "http://h/v1", "model": "m", "api_key": KEY})
    check = Check("api/x", "api.budget", ("API-BUDGET-1",), (), "", lambda engine, ctx: None)
    line = config.reproduce("openai", prefix="pytest", option_prefix="--specconform-")(check, None)
    assert KEY not in line and '--specconform-api-key "$OPENAI_API_KEY"' in line


def test_the_config_file_holds_no_api_key(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text(f'[tool.specconform]\napi-key = "{KEY}"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--report-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "'api-key' is a secret" in err and "$OPENAI_API_KEY" in err
    assert KEY not in err and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("bad", ["no-colon", ":value", "two words:v"])
def test_a_malformed_header_is_one_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--engine", "openai", "--base-url", "http://h/v1", "--model", "m", "--header", bad])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--header" in err and repr(bad) in err
