"""API-SPEC-4 against scripted stand-ins for vLLM (httpx2.MockTransport): ``think.test`` serves the model
without speculation, ``spec.test`` the same model with it. The honest server applies ``top_k``, ``min_p``
and ``logit_bias`` with speculation as without; one drops ``min_p`` and ``logit_bias`` with speculation, as
vLLM 0.33 V1 does (vllm/v1/sample/logits_processor/__init__.py, lines 207-216); one refuses them with a
400 naming the parameter."""

import json

import httpx2
import numpy as np
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, PASS, Context
from specconform.harness.profiles import canonical

from .test_api_spec_counters import PROMPT_IDS, route_clients

START, END = 50, 51
GREEDY = [11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]


def generate(body: dict, applied: set[str]) -> list[int]:
    """The ids of a model whose argmax continuation is GREEDY: ``top_k = 1`` and ``min_p = 1`` leave the
    argmax, a large ``logit_bias`` its token, a temperature above 0 otherwise draws seeded ids."""
    n = body["max_tokens"]
    bias = body.get("logit_bias") if "logit_bias" in applied else None
    if bias:
        return [int(next(iter(bias)))] * n
    if body["temperature"] == 0 or ("top_k" in applied and body.get("top_k") == 1):
        return GREEDY[:n]
    if "min_p" in applied and body.get("min_p") == 1.0:
        return GREEDY[:n]
    return [int(t) for t in np.random.default_rng(body.get("seed", 0)).integers(30, 40, n)]


def fake_vllm(spec_behaviour: str):
    every = {"top_k", "min_p", "logit_bias"}

    def handle(request: httpx2.Request) -> httpx2.Response:
        host, path = request.url.host, request.url.path
        model = "tiny-think-spec" if host == "spec.test" else "tiny-think"
        if path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": model}]})
        if path == "/version":
            return httpx2.Response(200, json={"version": "0.33.0"})
        if path == "/metrics":
            return httpx2.Response(404)
        body = json.loads(request.content)
        if path == "/tokenize":
            return httpx2.Response(200, json={"tokens": {"<think>": [START], "</think>": [END]}[body["prompt"]]})
        applied = every
        if host == "spec.test" and spec_behaviour != "honest":
            unsupported = [p for p in ("min_p", "logit_bias") if p in body]
            if spec_behaviour == "refuses" and unsupported:
                message = f"{unsupported[0]} is not supported with speculative decoding"
                return httpx2.Response(400, json={"error": {"message": message, "type": "BadRequestError"}})
            applied = every - {"min_p", "logit_bias"}
        ids = generate(body, applied)
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


def judged(monkeypatch, spec_behaviour: str, **profile_fields):
    route_clients(monkeypatch, fake_vllm(spec_behaviour))
    fields = {**api.API_PROFILES["vllm"], **profile_fields}
    profile = api.ApiProfile(
        name="vllm", model="tiny-think", spec_model="tiny-think-spec", spec_base_url="http://spec.test/v1", **fields
    )
    engine = api.ApiEngine("http://think.test/v1", profile, name="vllm-test")
    check = checks.by_name()["api/sampling-params-with-speculation"]
    return check.run(engine, Context(canonical()))


@pytest.mark.req("API-SPEC-4")
@pytest.mark.parametrize(
    "behaviour, status, fingerprint",
    [("honest", PASS, ""), ("refuses", PASS, ""), ("drops", FAIL, "API-SPEC-4/min-p-not-applied-with-speculation")],
)
def test_sampling_parameters_hold_with_speculation_or_are_refused(monkeypatch, behaviour, status, fingerprint):
    outcome = judged(monkeypatch, behaviour)
    assert outcome.status == status, outcome.message
    assert outcome.requirements["API-SPEC-4"].fingerprint == fingerprint
    if status == PASS:
        assert outcome.requirements["API-SPEC-4"].cases == 3


@pytest.mark.req("API-SPEC-4")
def test_parameters_declared_unsupported_are_not_sent_and_are_listed(monkeypatch):
    outcome = judged(monkeypatch, "drops", unsupported_with_speculation=("min_p", "logit_bias"))
    assert outcome.status == PASS and outcome.requirements["API-SPEC-4"].cases == 1, outcome.message
    assert "not sent: min_p, logit_bias" in outcome.message
