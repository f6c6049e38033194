"""The mlx-lm API profile against a scripted stand-in for MLX-LM 0.32.2's ``mlx_lm.server`` (httpx2.MockTransport).

mlx_lm.server returns generated ids only as the ``id`` of each ``logprobs`` entry (asked with ``logprobs``), fills
the entries with the first alternative when ``top_logprobs`` is asked, streams no ids, and has no ``/tokenize``
and no prompt ids. The stand-in speaks that dialect and records the ids it served; one variant serves its
speculating model's seeded requests differently on each repeat, as MLX-LM's prompt cache does.
"""

import json
import random
from dataclasses import replace

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import FAIL, PASS, PRECONDITION_FAILED, Context
from specconform.harness.profiles import canonical
from specconform.harness.runner import gate
from tests.harness.served_stand_in import served
from tests.harness.test_api_spec_counters import route_clients
from tests.harness.test_preflight import invoke

VOCAB = 300
FIRST_ALTERNATIVE = 7  # the id the stand-in puts in every entry when alternatives are asked, as MLX-LM does


def fake_mlx_server(served: list, drifting_spec: bool = False, usage_offset: int = 0):
    """``served``: the ids of each chat response, in order. ``drifting_spec``: the spec model's seeded requests
    draw differently on each send; ``usage_offset``: added to ``completion_tokens``."""
    sends = {}

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"object": "list", "data": [{"id": "tiny"}, {"id": "tiny-spec"}]})
        if request.url.path != "/v1/chat/completions":
            return httpx2.Response(404, json={"error": "Not found"})  # no /tokenize, /version, /props
        body = json.loads(request.content)
        key = (body["model"], body.get("seed"))
        sends[key] = sends.get(key, 0) + 1
        drift = sends[key] if drifting_spec and body["model"] == "tiny-spec" else 0
        draws = random.Random(repr((body.get("seed"), drift)))
        ids = [draws.randrange(VOCAB) for _ in range(body["max_tokens"])]
        served.append(ids)
        if body.get("stream"):
            chunks = [{"choices": [{"index": 0, "finish_reason": None, "delta": {"reasoning": "t" * len(ids)}}]}]
            chunks.append({"choices": [{"index": 0, "finish_reason": "length", "delta": {"role": "assistant"}}]})
            text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            return httpx2.Response(200, text=text)
        choice = {"index": 0, "finish_reason": "length"}
        choice["message"] = {"role": "assistant", "content": None, "reasoning": "t" * len(ids)}
        if body.get("top_logprobs", -1) > 0:
            first = {"id": FIRST_ALTERNATIVE, "token": "x", "logprob": -0.5}
            choice["logprobs"] = {"content": [dict(first, top_logprobs=[first]) for _ in ids]}
        elif body.get("logprobs"):
            choice["logprobs"] = {"content": [{"id": i, "logprob": -1.0} for i in ids]}
        usage = {"prompt_tokens": 33, "completion_tokens": len(ids) + usage_offset}
        usage["total_tokens"] = 33 + usage["completion_tokens"]
        return httpx2.Response(200, json={"object": "chat.completion", "choices": [choice], "usage": usage})

    return httpx2.MockTransport(handle)


@pytest.fixture
def mlx_engine(monkeypatch):
    def make(**variant):
        served = []
        route_clients(monkeypatch, fake_mlx_server(served, **variant))
        profile = api.ApiProfile(name="mlx-lm", model="tiny", spec_model="tiny-spec", **api.API_PROFILES["mlx-lm"])
        return api.ApiEngine("http://mlx.test/v1", profile, name="mlx-test"), served

    return make


def test_the_ids_read_are_the_ids_served_in_the_logprobs_entries(mlx_engine):
    engine, served = mlx_engine()
    assert "token-ids" in engine.profile.capabilities
    for seed in range(3):
        response = engine.complete("tiny", None, max_tokens=9, temperature=1.0, seed=seed)
        assert response["choices"][0]["token_ids"] == served[-1]
        body = engine.exchanges[-1]["body"]
        assert body["logprobs"] is True and "top_logprobs" not in body
        assert engine.exchanges[-1]["response"]["choices"][0]["token_ids"] == served[-1]  # the reproduction's copy


def test_entries_filled_with_alternatives_give_no_ids(mlx_engine):
    engine, served = mlx_engine()
    response = engine.complete("tiny", None, 5, 1.0, seed=1, fields={"logprobs": True, "top_logprobs": 1})
    entries = response["choices"][0]["logprobs"]["content"]
    assert [entry["id"] for entry in entries] == [FIRST_ALTERNATIVE] * 5 != served[-1]
    assert "token_ids" not in response["choices"][0]


def test_streams_carry_no_ids_and_ask_for_no_logprobs(mlx_engine):
    engine, _ = mlx_engine()
    assert engine.stream("tiny", None, max_tokens=4, temperature=0.0)["token_ids"] is None
    assert "logprobs" not in engine.exchanges[-1]["body"]


def test_without_tokenize_or_prompt_ids_the_marker_ids_are_missing_and_say_why(mlx_engine):
    engine, _ = mlx_engine()
    assert "marker-ids" not in engine.profile.capabilities
    assert "/tokenize" in engine.probe_problem and "404" in engine.probe_problem
    budget_check = next(c for c in checks.api_checks() if c.name == "api/budget-holds")
    claiming = replace(engine.profile, classes=engine.profile.classes | {budget_check.cls})  # budget: not claimed
    status, why = gate(budget_check, claiming, engine.probe_problem)
    assert status == PRECONDITION_FAILED and "marker-ids" in why and "token-ids" not in why


@pytest.mark.req("API-SEED-1")
@pytest.mark.parametrize("drifting_spec, status", [(False, PASS), (True, FAIL)], ids=["reproducible", "drifting"])
def test_seeded_reproducible_judges_the_served_ids(mlx_engine, drifting_spec, status):
    engine, _ = mlx_engine(drifting_spec=drifting_spec)
    check = next(c for c in checks.api_checks() if c.name == "api/seeded-reproducible")
    assert gate(check, engine.profile, engine.probe_problem) is None
    outcome = check.run(engine, Context(canonical("request")))
    assert outcome.status == status, outcome.message
    if status == FAIL:
        assert outcome.violated == ("API-SEED-1",) and "tiny-spec" in outcome.message


@pytest.mark.req("API-USAGE-1")
@pytest.mark.parametrize("usage_offset, status", [(0, PASS), (1, FAIL)], ids=["counted", "one-too-many"])
def test_usage_judges_completion_tokens_against_the_served_ids(mlx_engine, usage_offset, status):
    engine, _ = mlx_engine(usage_offset=usage_offset)
    check = next(c for c in checks.api_checks() if c.name == "api/usage")
    outcome = check.run(engine, Context(canonical("request")))
    assert outcome.status == status, outcome.message
    if status == FAIL:
        assert outcome.violated == ("API-USAGE-1",)


def test_doctor_finds_the_logprobs_ids_and_judges_the_checks_that_need_no_marker_ids(capsys):
    with served(fake_mlx_server([])) as url:
        argv = ["doctor", "--engine", "openai", "--api-profile", "mlx-lm", "--base-url", url, "--model", "tiny"]
        status, out, err = invoke(argv + ["--spec-model", "tiny-spec", "--timeout", "120"], capsys)
    assert status == 0, err
    assert "token ids (logprobs): present" in out
    assert "/tokenize: absent" in out
    judged = {line.split()[1] for line in out.splitlines() if line.split()[:1] == ["judged"]}
    assert {"api/seeded-reproducible", "api/usage", "api/greedy-spec-identity"} <= judged
