"""The llamacpp API profile against a scripted stand-in for llama-server (httpx2.MockTransport).

llama-server returns generated ids only in ``__verbose.tokens`` (with ``--verbose``, asked for with
``return_tokens``), tokenizes ``content``, streams no ids, and re-arms its budget per section. The
stand-in speaks that dialect; one variant honours the budget, one lets a token through after it.
"""

import json

import httpx2
import pytest

from harness import checks
from harness.adapters import http as api
from harness.core import FAIL, PASS, Context
from harness.profiles import canonical
from tests.harness.test_api_spec_counters import route_clients

START, END, NEWLINE, THINK, ANSWER = 50, 51, 9, 7, 8
PROMPT = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n"
PROMPT_IDS = [1, 2, 3, START, NEWLINE]  # the newline after the start marker spends one budget token
TOKENS = {"<think>": [START], "</think>": [END], PROMPT: PROMPT_IDS}
BUILD = "b1-0c1e570"  # what /props says in build_info


def fake_llama_server(overrun: int, seen: list):
    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": "tiny"}]})
        if request.url.path == "/props":
            return httpx2.Response(200, json={"build_info": BUILD})
        if request.method == "GET":
            return httpx2.Response(404, json={"error": {"code": 404, "message": "File Not Found"}})
        body = json.loads(request.content)
        seen.append((request.url.path, body))
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": TOKENS[body["content"]]})
        budget, n = body.get("reasoning_budget_tokens", -1), body["max_tokens"]
        thinking = n if budget == -1 else max(budget - 1, 0) + overrun
        ids = ([THINK] * thinking + [END] + [ANSWER] * n)[:n]
        if body.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": "t" * min(thinking, n)}}]}]
            chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return httpx2.Response(200, text=text)
        message = {"role": "assistant", "content": "", "reasoning_content": "t" * min(thinking, n)}
        return httpx2.Response(
            200,
            json={
                "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(PROMPT_IDS), "completion_tokens": n},
                "__verbose": {"tokens": ids if body.get("return_tokens") else [], "prompt": PROMPT},
            },
        )

    return httpx2.MockTransport(handle)


@pytest.fixture
def llamacpp_engine(monkeypatch):
    def make(overrun: int):
        seen = []
        transport = fake_llama_server(overrun, seen)
        route_clients(monkeypatch, transport)
        profile = api.ApiProfile(name="llamacpp", model="tiny", **api.API_PROFILES["llamacpp"])
        return api.ApiEngine("http://llama.test/v1", profile, name="llamacpp-test"), seen

    return make


def test_ids_come_from_the_verbose_field_and_the_prompt_from_tokenize(llamacpp_engine):
    engine, seen = llamacpp_engine(overrun=0)
    assert {"token-ids", "marker-ids"} <= engine.profile.capabilities
    assert (engine.start_ids, engine.end_ids) == ([START], [END])
    response = engine.complete("tiny", 3, max_tokens=6, temperature=1.0, seed=1)
    assert response["prompt_token_ids"] == PROMPT_IDS
    assert response["choices"][0]["token_ids"] == [THINK, THINK, END, ANSWER, ANSWER, ANSWER]
    chat = [body for path, body in seen if path == "/v1/chat/completions"][-1]
    assert chat["return_tokens"] is True and chat["reasoning_budget_tokens"] == 3
    assert "return_token_ids" not in chat
    assert engine.profile.scope == "section"
    assert engine.stream("tiny", 3, max_tokens=6, temperature=1.0)["token_ids"] is None


def test_the_version_is_the_build_props_says_and_the_model_name(llamacpp_engine):
    """llama-server has no /version; its build is /props' build_info (no machine path: #31)."""
    engine, _ = llamacpp_engine(overrun=0)
    assert engine.version == f"{BUILD} (tiny)"


@pytest.mark.req("API-BUDGET-2")
@pytest.mark.parametrize("overrun, status", [(0, PASS), (1, FAIL)], ids=["honours-budget", "one-token-over"])
def test_budget_holds_judges_the_verbose_ids(llamacpp_engine, overrun, status):
    engine, _ = llamacpp_engine(overrun)
    check = next(c for c in checks.api_checks() if c.name == "api/budget-holds")
    outcome = check.run(engine, Context(canonical("section")))
    assert outcome.status == status, outcome.message
    if status == FAIL:
        assert outcome.violated == ("API-BUDGET-2",)


def test_streaming_parity_without_streamed_ids_compares_text_and_says_so(llamacpp_engine):
    engine, _ = llamacpp_engine(overrun=0)
    check = next(c for c in checks.api_checks() if c.name == "api/streaming-parity")
    outcome = check.run(engine, Context(canonical("section")))
    assert outcome.status == PASS, outcome.message
    assert "streams no ids" in outcome.message
