"""``--api-key`` and ``--header``: every request to a server (the client's chat requests and the raw ones to
/models, /tokenize and /metrics) carries them, and no report or reproduction command shows their values."""

import httpx2
import pytest

from harness import cli
from harness.adapters import make_engine
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
    engine = make_engine("openai", options)
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
    options = {"base_url": "http://h/v1", "model": "m", "api_key": KEY, "header": [f"X-Team:{TEAM}"]}
    line = cli._engine_args("openai", options)
    assert KEY not in line and TEAM not in line
    assert '--api-key "$OPENAI_API_KEY"' in line and "--header X-Team:…" in line.replace("'", "")


@pytest.mark.parametrize("bad", ["no-colon", ":value", "two words:v"])
def test_a_malformed_header_is_one_usage_error(bad, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["run", "--engine", "openai", "--base-url", "http://h/v1", "--model", "m", "--header", bad])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--header" in err and repr(bad) in err
