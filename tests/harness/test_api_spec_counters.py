"""API-SPEC-3 and per-role servers against a scripted stand-in for vLLM (httpx2.MockTransport).

vLLM serves one model per server, so the stand-in is two hosts: ``think.test`` serves the model
without speculation and ``spec.test`` the same model with n-gram speculation and Prometheus
counters on ``/metrics`` (written with prometheus_client, as vLLM writes them). Every request's
output is generated in steps: the first token after the prefill, then steps that verify K = 3 draft
tokens, accept a prefix of them and commit it plus one token. The honest server counts what it
committed; each broken one miscounts as a real engine did.
"""

import json

import httpx2
import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, PASS, PRECONDITION_FAILED, Context, UsageError
from specconform.harness.profiles import canonical

START, END, WORD = 50, 51, 7
PROMPT_IDS = [1, 2, 3, START]
K = 3


class SpecServer:
    """Counters of a vLLM-like spec server; ``miscount`` names the broken variant (or None)."""

    def __init__(self, miscount: str | None, drafts: bool = True):
        self.miscount = miscount
        self.drafts = drafts
        self.registry = CollectorRegistry()
        self.num_drafts = Counter("vllm:spec_decode_num_drafts", "drafts", registry=self.registry)
        self.num_draft_tokens = Counter("vllm:spec_decode_num_draft_tokens", "draft tokens", registry=self.registry)
        self.num_accepted = Counter("vllm:spec_decode_num_accepted_tokens", "accepted", registry=self.registry)
        self.per_pos = Counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos", "per position", ["position"], registry=self.registry
        )
        for j in range(K):
            self.per_pos.labels(position=str(j))

    def generate(self, max_tokens: int, temperature: float) -> list[int]:
        """``max_tokens`` ids: one after the prefill, then verified drafts (greedy accepts 2 of 3)."""
        accepted_per_step = 2 if temperature == 0 else 0
        remaining = max_tokens - 1
        while remaining > 0 and self.drafts:
            committed = min(accepted_per_step + 1, remaining)
            counted = accepted_per_step if self.miscount == "past-max-tokens" else committed - 1
            matching = counted + (1 if self.miscount == "matches-not-prefix" else 0)
            self.num_drafts.inc()
            self.num_draft_tokens.inc(K)
            self.num_accepted.inc(min(matching, K))
            for j in range(counted):
                self.per_pos.labels(position=str(j)).inc()
            remaining -= committed
        return [WORD] * max_tokens


def fake_vllm(spec_server: SpecServer | None, seen: list):
    def handle(request: httpx2.Request) -> httpx2.Response:
        host, path = request.url.host, request.url.path
        model = "tiny-think-spec" if host == "spec.test" else "tiny-think"
        seen.append((host, path))
        if path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": model}]})
        if path == "/version":
            return httpx2.Response(200, json={"version": "0.32.0"})
        if path == "/metrics":
            if host != "spec.test" or spec_server is None:
                return httpx2.Response(404)
            return httpx2.Response(200, text=generate_latest(spec_server.registry).decode())
        body = json.loads(request.content)
        if path == "/tokenize":
            return httpx2.Response(200, json={"tokens": {"<think>": [START], "</think>": [END]}[body["prompt"]]})
        assert body["model"] == model, (host, body["model"])
        if host == "spec.test" and spec_server is not None:
            ids = spec_server.generate(body["max_tokens"], body["temperature"])
        else:
            ids = [WORD] * body["max_tokens"]
        message = {"role": "assistant", "content": "", "reasoning": "w" * len(ids)}
        return httpx2.Response(
            200,
            json={
                "choices": [{"index": 0, "message": message, "finish_reason": "length", "token_ids": ids}],
                "prompt_token_ids": PROMPT_IDS,
                "usage": {"prompt_tokens": len(PROMPT_IDS), "completion_tokens": len(ids)},
            },
        )

    return httpx2.MockTransport(handle)


_NETWORK_CLIENT = httpx2.Client


def route_clients(monkeypatch, transport: httpx2.BaseTransport) -> None:
    """Every ``httpx2`` client made from now on (the adapter's, which its openai clients share) talks to
    ``transport``."""

    class RoutedClient(_NETWORK_CLIENT):
        def __init__(self, **kwargs):
            super().__init__(transport=transport, **kwargs)

    monkeypatch.setattr(httpx2, "Client", RoutedClient)


@pytest.fixture
def vllm_engine(monkeypatch):
    def make(spec_server: SpecServer | None):
        seen = []
        transport = fake_vllm(spec_server, seen)
        route_clients(monkeypatch, transport)
        profile = api.ApiProfile(
            name="vllm",
            model="tiny-think",
            spec_model="tiny-think-spec",
            spec_base_url="http://spec.test/v1",
            **api.API_PROFILES["vllm"],
        )
        return api.ApiEngine("http://think.test/v1", profile, name="vllm-test"), seen

    return make


def run_check(engine):
    check = next(c for c in checks.api_checks() if c.name == "api/spec-counters-agree")
    return check.run(engine, Context(canonical()))


def test_each_role_is_sent_to_its_own_server(vllm_engine):
    engine, seen = vllm_engine(SpecServer(miscount=None))
    assert engine.version == "0.32.0 (tiny-think,tiny-think-spec)"
    engine.complete("tiny-think-spec", None, max_tokens=4, temperature=0)
    engine.complete("tiny-think", None, max_tokens=4, temperature=0)
    chats = [host for host, path in seen if path == "/v1/chat/completions"]
    assert chats[-2:] == ["spec.test", "think.test"]
    assert {host for host, path in seen if path == "/tokenize"} == {"think.test"}


def test_a_role_url_without_its_model_is_refused_naming_the_field():
    profile = api.ApiProfile(name="vllm", model="m", plain_base_url="http://plain.test/v1")
    with pytest.raises(UsageError, match="plain_base_url 'http://plain.test/v1'.*no plain_model"):
        api.ApiEngine("http://think.test/v1", profile)


def test_one_model_name_on_two_servers_is_refused_naming_the_field():
    """Requests go to a server by their model's name: a spec model named as the main model but served elsewhere
    would send every request of both to one server."""
    profile = api.ApiProfile(name="vllm", model="m", spec_model="m", spec_base_url="http://spec.test/v1")
    with pytest.raises(UsageError, match="spec_model 'm' is also the model of http://think.test/v1"):
        api.ApiEngine("http://think.test/v1", profile)


def test_counters_are_read_from_the_prometheus_exposition(vllm_engine):
    server = SpecServer(miscount=None)
    engine, _ = vllm_engine(server)
    before = engine.spec_counters()
    server.generate(max_tokens=8, temperature=0)  # after the prefill: steps of 3, 3 and 1 tokens
    seen = engine.spec_counters() - before
    assert seen == api.SpecCounters(drafts=3, draft_tokens=9, accepted=4, accepted_per_position=(2, 2, 0))


@pytest.mark.req("API-SPEC-3")
@pytest.mark.parametrize(
    "miscount, status, says",
    [
        (None, PASS, "agree"),
        ("past-max-tokens", FAIL, "more than the"),
        ("matches-not-prefix", FAIL, "per-position acceptances sum to"),
    ],
    ids=["honest", "counts-past-max-tokens", "counts-matches-not-prefix"],
)
def test_spec_counters_judged_against_the_received_tokens(vllm_engine, miscount, status, says):
    engine, _ = vllm_engine(SpecServer(miscount))
    outcome = run_check(engine)
    assert outcome.status == status, outcome.message
    assert says in outcome.message
    if status == FAIL:
        assert outcome.violated == ("API-SPEC-3",)


def test_spec_counters_without_metrics_or_drafts_are_a_failed_precondition(vllm_engine):
    engine, _ = vllm_engine(None)
    outcome = run_check(engine)
    assert outcome.status == PRECONDITION_FAILED and "no speculative-decoding counters" in outcome.message
    engine, _ = vllm_engine(SpecServer(miscount=None, drafts=False))
    outcome = run_check(engine)
    assert outcome.status == PRECONDITION_FAILED and "no draft was verified" in outcome.message
