"""The API checks reach servers through the official openai client: every chat request carries its
signature, the engine's fields travel as extra fields, and a response the client cannot parse fails
the server with the client's error as evidence (a scripted stand-in for vLLM, httpx2.MockTransport)."""

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, PASS, Context
from specconform.harness.profiles import canonical
from tests.harness.test_api_spec_counters import fake_vllm, route_clients


def broken(answer: httpx2.MockTransport, body: str, streamed: bool, after: int):
    """``answer``, except that chat completions (streamed ones when ``streamed``, else the others) after
    the first ``after`` get ``body``."""
    chats = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        is_chat = request.url.path.endswith("/chat/completions")
        chats.extend([request] if is_chat else [])
        if is_chat and len(chats) > after and (b'"stream":true' in request.content.replace(b" ", b"")) == streamed:
            return httpx2.Response(200, text=body, headers={"content-type": "application/json"})
        return answer.handle_request(request)

    return httpx2.MockTransport(handle)


def engine_over(monkeypatch, transport) -> api.ApiEngine:
    route_clients(monkeypatch, transport)
    profile = api.ApiProfile(name="vllm", model="tiny-think", **api.API_PROFILES["vllm"])
    return api.ApiEngine("http://think.test/v1", profile, name="vllm-test")


def run(engine, name):
    check = next(c for c in checks.api_checks() if c.name == name)
    return check.run(engine, Context(canonical()))


def test_every_chat_request_goes_through_the_openai_client_with_the_engines_fields(monkeypatch):
    requests = []
    answer = fake_vllm(None, [])

    def record(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return answer.handle_request(request)

    engine = engine_over(monkeypatch, httpx2.MockTransport(record))
    engine.complete("tiny-think", 3, max_tokens=4, temperature=0)
    chats = [r for r in requests if r.url.path == "/v1/chat/completions"]
    assert chats and all(r.headers["user-agent"].startswith("OpenAI/Python") for r in chats)
    assert b'"thinking_token_budget":3' in chats[-1].content.replace(b" ", b"")
    assert b'"return_token_ids":true' in chats[-1].content.replace(b" ", b"")
    raw = [r for r in requests if r.url.path in ("/tokenize", "/version", "/v1/models")]
    assert raw and not any(r.headers.get("user-agent", "").startswith("OpenAI/Python") for r in raw)


@pytest.mark.parametrize(
    "check, body, streamed",
    [
        ("api/usage", "{not json", False),
        ("api/usage", '{"choices": "none"}', False),
        ("api/streaming-parity", 'data: {"choices": [\n\ndata: [DONE]\n\n', True),
    ],
    ids=["invalid-json", "choices-not-a-list", "broken-stream"],
)
def test_a_response_the_client_cannot_parse_fails_the_server(monkeypatch, check, body, streamed):
    engine = engine_over(monkeypatch, broken(fake_vllm(None, []), body, streamed, after=1))  # the probe is answered
    outcome = run(engine, check)
    assert outcome.status == FAIL
    for result in outcome.requirements.values():
        assert result.status == FAIL and "the openai client could not parse" in result.evidence
        assert result.fingerprint.endswith("/response-unparsable")


def test_an_unparsable_probe_is_named_in_the_failed_precondition(monkeypatch):
    engine = engine_over(monkeypatch, broken(fake_vllm(None, []), "{not json", streamed=False, after=0))
    outcome = run(engine, "api/usage")
    assert outcome.status == "PRECONDITION_FAILED" and "could not parse" in outcome.message


def test_a_well_formed_server_still_passes(monkeypatch):
    engine = engine_over(monkeypatch, fake_vllm(None, []))
    assert run(engine, "api/usage").requirements["API-USAGE-1"].status == PASS
