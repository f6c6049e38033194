"""Streaming parity on a server that returns no token ids (`transformers serve`'s API profile): a sampled request whose
whole and streamed responses differ cannot be tried again by id, so the difference is the check's own FAIL, never an
ERROR of the attribution that would compare ids. The stand-in drops whitespace-only reasoning from the whole response
and streams it, as transformers 5.23's server does (reports/engines/transformers-5.23.0/README.md)."""

import json

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, Context
from specconform.harness.profiles import canonical
from tests.harness.test_api_spec_counters import route_clients

MODEL = "tiny-think"
REASONING = "\n" * 17


def whitespace_reasoning_dropped(request: httpx2.Request) -> httpx2.Response:
    if request.url.path == "/v1/models":
        return httpx2.Response(200, json={"data": [{"id": MODEL}]})
    body = json.loads(request.content)
    base = {"id": "x", "created": 0, "model": body["model"]}
    if body.get("stream"):
        chunks = [
            {"index": 0, "delta": {"role": "assistant", "reasoning_content": REASONING}, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": "length"},
        ]
        events = [{**base, "object": "chat.completion.chunk", "choices": [chunk]} for chunk in chunks]
        text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        return httpx2.Response(200, text=text, headers={"content-type": "text/event-stream"})
    choice = {"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "length"}
    usage = {"prompt_tokens": 33, "completion_tokens": 16, "total_tokens": 49}
    return httpx2.Response(200, json={**base, "object": "chat.completion", "choices": [choice], "usage": usage})


@pytest.mark.req("API-STREAM-1", "RUN-FINDING-1")
def test_a_difference_without_ids_is_the_checks_own_failure(monkeypatch):
    route_clients(monkeypatch, httpx2.MockTransport(whitespace_reasoning_dropped))
    profile = api.ApiProfile(name="transformers-serve", model=MODEL, **api.API_PROFILES["transformers-serve"])
    engine = api.ApiEngine("http://fake.test/v1", profile, name="fake")
    check = next(c for c in checks.api_checks() if c.name == "api/streaming-parity")
    outcome = check.run(engine, Context(canonical("section"), seed=20261121))
    result = outcome.requirements["API-STREAM-1"]
    assert result.status == FAIL, result
    assert "budget None: reasoning '' vs streamed" in result.evidence, result.evidence
    assert "API-SEED-1" not in outcome.requirements or outcome.requirements["API-SEED-1"].status != FAIL
