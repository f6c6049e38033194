"""The llamacpp API profile against a scripted stand-in for llama-server (httpx2.MockTransport).

llama-server returns generated ids only in ``__verbose.tokens`` (with ``--verbose``, asked for with
``return_tokens``), tokenizes ``content``, streams no ids, and re-arms its budget per section. The
stand-in speaks that dialect; one variant honours the budget, one lets a token through after it.
"""

import json

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, PASS, Context
from specconform.harness.profiles import canonical
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


def with_logprobs_and_timings(transport: httpx2.MockTransport) -> httpx2.MockTransport:
    """The stand-in's chat responses as llama-server writes them with ``logprobs``: per-token entries with
    their alternatives, ``completion_probabilities`` and timings in ``__verbose``, timings at the top.
    The second and third tokens split "é" (bytes 195, 169)."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        response = transport.handle_request(request)
        if request.url.path != "/v1/chat/completions":
            return response
        data = json.loads(response.read())
        pieces = [[116], [195], [169]] + [[97]] * (len(data["__verbose"]["tokens"]) - 3)
        entries = [
            {"id": token, "token": bytes(piece).decode(errors="replace"), "bytes": piece, "logprob": -0.25 * n}
            for n, (token, piece) in enumerate(zip(data["__verbose"]["tokens"], pieces, strict=True))
        ]
        alternatives = [{"id": 99, "token": "z", "bytes": [122], "logprob": -9.0}] * 20
        timings = {"prompt_ms": 1.5, "predicted_ms": 2.5}
        data["choices"][0]["logprobs"] = {"content": [{**e, "top_logprobs": alternatives} for e in entries]}
        data["timings"] = timings
        data["__verbose"] |= {"content": "<think>\nt", "timings": timings, "completion_probabilities": entries}
        return httpx2.Response(200, json=data)

    return httpx2.MockTransport(handle)


def test_the_exchange_log_keeps_ids_bytes_and_text_and_drops_alternatives_and_timings(monkeypatch):
    route_clients(monkeypatch, with_logprobs_and_timings(fake_llama_server(overrun=0, seen=[])))
    profile = api.ApiProfile(name="llamacpp", model="tiny", **api.API_PROFILES["llamacpp"])
    engine = api.ApiEngine("http://llama.test/v1", profile, name="llamacpp-test")
    returned = engine.complete("tiny", 3, max_tokens=6, temperature=1.0, seed=1, fields={"logprobs": True})
    logged = engine.exchanges[-1]["response"]

    served = returned["choices"][0]
    assert all(len(entry["top_logprobs"]) == 20 for entry in served["logprobs"]["content"])  # the check's view
    assert logged["choices"][0]["token_ids"] == [THINK, THINK, END, ANSWER, ANSWER, ANSWER]
    assert logged["prompt_token_ids"] == PROMPT_IDS
    assert logged["__verbose"] == {"tokens": served["token_ids"], "prompt": PROMPT, "content": "<think>\nt"}
    assert logged["choices"][0]["message"] == served["message"]
    assert logged["choices"][0]["finish_reason"] == "length"
    assert logged["usage"] == returned["usage"]
    kept = logged["choices"][0]["logprobs"]["content"]
    assert [entry["bytes"] for entry in kept] == [[116], [195], [169], [97], [97], [97]]
    assert [(e["id"], e["token"], e["logprob"]) for e in kept] == [
        (e["id"], e["token"], e["logprob"]) for e in served["logprobs"]["content"]
    ]
    assert all(set(entry) == {"id", "token", "bytes", "logprob"} for entry in kept)
    text = json.dumps(logged)
    assert "top_logprobs" not in text and "timings" not in text and "completion_probabilities" not in text
