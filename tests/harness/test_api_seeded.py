"""API-SEED-1 and the attribution of API failures on seeded sampled requests (RUN-FINDING-1 over HTTP), judged
against a scripted stand-in for a vLLM-style server with a speculating model (httpx2.MockTransport).

The stand-in's seeded requests draw their thinking tokens from ``random.Random(seed)`` and honour the budget;
each mutation breaks one thing the way a server could: the speculating model ignoring the seed (vLLM 6038), the
speculating model ignoring the budget (a reproducible budget defect), the budget ignored for the requests that
arrive together. A check that meets a defect its minimal case shows without the check's own features must
publish it once, under the requirement that case isolates, and read BLOCKED on its own."""

import json
import random
import threading

import httpx2
import pytest

from specconform.harness import checks
from specconform.harness.adapters import http as api
from specconform.harness.core import BLOCKED, FAIL, PASS, Context
from specconform.harness.profiles import canonical
from tests.harness.test_api_spec_counters import route_clients

START, END, ANSWER = 50, 51, 8
THINKING = range(10, 20)
PROMPT = [1, 2, 3]
SPEC_MODEL = "tiny-think-spec"
TOGETHER = 16  # api/concurrent-mixed-budgets sends this many requests at once, before any other


class StandIn:
    """A thinking server: ``mutation`` is "", "unseeded-with-speculation", "budget-ignored-with-speculation",
    "budget-ignored-together" (the first ``TOGETHER`` chat requests it serves ignore their budget), or one of
    ``GREEDY_GLITCHES`` (greedy responses of one kind, the first only with "-once", start with another token)."""

    def __init__(self, mutation: str = ""):
        self.mutation = mutation
        self.served = 0
        self.glitched = 0  # greedy responses the glitch changed
        self.lock = threading.Lock()

    def glitch(self, body: dict) -> bool:
        """Whether this greedy response is one the mutation changes (counted)."""
        kind = self.mutation.removesuffix("-once")
        hit = body["temperature"] == 0 and (
            (kind == "greedy-stream-differs" and body.get("stream"))
            or (kind == "greedy-spec-differs" and body["model"] == SPEC_MODEL)
        )
        if not hit or (self.mutation.endswith("-once") and self.glitched):
            return False
        self.glitched += 1
        return True

    def generate(self, body: dict) -> list[int]:
        with self.lock:
            self.served += 1
            order = self.served
        spec, together = body["model"] == SPEC_MODEL, order <= TOGETHER
        temperature, seed, budget = body["temperature"], body.get("seed"), body.get("thinking_token_budget")
        unseeded = spec and self.mutation == "unseeded-with-speculation"
        # vLLM CPU's uninitialised temperatures, as the judge saw them: a budgeted request sent whole came back the
        # same, the streamed one and those without a budget did not
        unseeded |= (
            spec and self.mutation == "seeded-only-with-a-budget" and (budget is None or bool(body.get("stream")))
        )
        if self.mutation == "draws-depend-on-the-batch" and together and seed is not None:
            seed += 1000  # the requests served together draw from other streams
        draws = random.Random() if unseeded or seed is None else random.Random(seed)
        ignored = (spec and self.mutation == "budget-ignored-with-speculation") or (
            self.mutation == "budget-ignored-together" and together
        )
        ignored |= self.mutation == "budgets-0-and-5-ignored" and budget in (0, 5)  # two defects, wherever served
        if self.mutation == "budget-leaks-together" and together and budget is None:
            budget = 0  # another request's budget applied to one that has none
        thinking = [THINKING[0] if temperature == 0 else draws.choice(THINKING) for _ in range(30)]
        if self.glitch(body):
            thinking[0] = THINKING[1]
        if budget is not None and not ignored:
            thinking = thinking[:budget]
        return ([START, *thinking, END] + [ANSWER] * 30)[: body["max_tokens"]]

    def transport(self) -> httpx2.MockTransport:
        def handle(request: httpx2.Request) -> httpx2.Response:
            if request.url.path == "/v1/models":
                return httpx2.Response(200, json={"data": [{"id": "tiny-think"}, {"id": SPEC_MODEL}]})
            body = json.loads(request.content)
            if request.url.path == "/tokenize":
                return httpx2.Response(200, json={"tokens": {"<think>": [START], "</think>": [END]}[body["prompt"]]})
            ids = self.generate(body)
            closed = END in ids
            cut = ids.index(END) if closed else len(ids)
            reasoning, content = "t" * (cut - 1), "a" * (len(ids) - cut - 1) if closed else ""
            if body.get("stream"):
                return _streamed(body["model"], ids, reasoning, content)
            message = {"role": "assistant", "content": content, "reasoning": reasoning}
            choice = {"index": 0, "message": message, "finish_reason": "length", "token_ids": ids}
            return httpx2.Response(
                200,
                json={
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [choice],
                    "prompt_token_ids": PROMPT,
                    "usage": {"prompt_tokens": len(PROMPT), "completion_tokens": len(ids), "total_tokens": 0},
                },
            )

        return httpx2.MockTransport(handle)


def _streamed(model: str, ids: list[int], reasoning: str, content: str) -> httpx2.Response:
    """One server-sent event with the whole output, then the finish reason."""
    base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": model}
    delta = {"role": "assistant", "reasoning": reasoning, "content": content}
    events = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None, "token_ids": ids}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "length", "token_ids": []}]},
    ]
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return httpx2.Response(200, text=text, headers={"content-type": "text/event-stream"})


def judge(monkeypatch, check_name: str, mutation: str = "", spec_model: str | None = SPEC_MODEL):
    route_clients(monkeypatch, StandIn(mutation).transport())
    profile = api.ApiProfile(name="vllm", model="tiny-think", spec_model=spec_model, **api.API_PROFILES["vllm"])
    engine = api.ApiEngine("http://fake.test/v1", profile, name="fake")
    check = next(c for c in checks.api_checks() if c.name == check_name)
    return check.run(engine, Context(canonical()))


@pytest.mark.parametrize(
    "check_name",
    ["api/seeded-reproducible", "api/streaming-parity", "api/concurrent-mixed-budgets", "api/budget-with-speculation"],
)
def test_the_honest_server_passes(monkeypatch, check_name):
    outcome = judge(monkeypatch, check_name)
    assert outcome.status == PASS, outcome.message
    assert "API-SEED-1" not in outcome.requirements or outcome.requirements["API-SEED-1"].cases == 8


@pytest.mark.req("API-SEED-1")
def test_a_speculating_model_that_ignores_the_seed_fails_api_seed_1(monkeypatch):
    outcome = judge(monkeypatch, "api/seeded-reproducible", "unseeded-with-speculation")
    result = outcome.requirements["API-SEED-1"]
    assert result.status == FAIL and result.fingerprint == "API-SEED-1/seeded-request-not-reproducible"
    assert SPEC_MODEL in result.evidence and "sent 3 times alone" in result.evidence


@pytest.mark.req("API-SEED-1", "RUN-FINDING-1")
@pytest.mark.parametrize(
    "check_name, own", [("api/streaming-parity", "API-STREAM-1"), ("api/concurrent-mixed-budgets", "API-BUDGET-5")]
)
def test_comparisons_broken_by_an_ignored_seed_are_published_under_api_seed_1(monkeypatch, check_name, own):
    outcome = judge(monkeypatch, check_name, "unseeded-with-speculation")
    assert outcome.requirements[own].status == BLOCKED, outcome.requirements[own]
    assert outcome.requirements[own].finding == "API-SEED-1"
    seed = outcome.requirements["API-SEED-1"]
    assert seed.status == FAIL and seed.finding == "API-SEED-1"
    # its reproduction is the requests that showed it without the check's features: alone, no budget, not streamed
    requests = seed.reproduction["requests"]
    assert requests and all(r["body"].get("thinking_token_budget") is None for r in requests)
    assert all(not r["body"].get("stream") and r["body"]["model"] == SPEC_MODEL for r in requests)


@pytest.mark.req("API-BUDGET-6", "RUN-FINDING-1")
def test_a_budget_broken_alone_is_not_blamed_on_concurrency(monkeypatch):
    outcome = judge(monkeypatch, "api/concurrent-mixed-budgets", "budget-ignored-with-speculation")
    assert outcome.requirements["API-BUDGET-5"].status == BLOCKED
    owner = outcome.requirements["API-BUDGET-6"]
    assert owner.status == FAIL and owner.fingerprint == "API-BUDGET-6/forced-position-not-honoured"
    assert "sent alone" in owner.evidence and "API-SEED-1" not in outcome.requirements


@pytest.mark.req("API-BUDGET-6")
def test_a_reproducible_budget_failure_with_speculation_stays_api_budget_6(monkeypatch):
    outcome = judge(monkeypatch, "api/budget-with-speculation", "budget-ignored-with-speculation")
    assert outcome.requirements["API-BUDGET-6"].status == FAIL
    assert "API-SEED-1" not in outcome.requirements


@pytest.mark.req("API-BUDGET-5")
def test_a_budget_broken_only_beside_others_stays_api_budget_5(monkeypatch):
    outcome = judge(monkeypatch, "api/concurrent-mixed-budgets", "budget-ignored-together")
    result = outcome.requirements["API-BUDGET-5"]
    assert result.status == FAIL and "sent alone, it holds" in result.evidence
    assert set(outcome.requirements) == {"API-BUDGET-5"}


GREEDY_GLITCHES = [
    ("api/streaming-parity", "greedy-stream-differs", "API-STREAM-1"),
    ("api/greedy-spec-identity", "greedy-spec-differs", "API-SPEC-1"),
]


@pytest.mark.req("API-STREAM-1", "API-SPEC-1", "RUN-FINDING-1")
@pytest.mark.parametrize("check_name, mutation, own", GREEDY_GLITCHES)
def test_a_greedy_difference_that_recurs_fails_and_says_so(monkeypatch, check_name, mutation, own):
    """A greedy comparison that fails is made again: where the retries fail too, the failure stands."""
    outcome = judge(monkeypatch, check_name, mutation)
    result = outcome.requirements[own]
    assert result.status == FAIL, outcome.message
    assert "seen again in 2 of 2 retries" in result.evidence


@pytest.mark.req("API-STREAM-1", "API-SPEC-1", "RUN-FINDING-1")
@pytest.mark.parametrize("check_name, mutation, own", GREEDY_GLITCHES)
def test_a_greedy_one_off_is_no_finding(monkeypatch, check_name, mutation, own):
    """A greedy difference that no retry shows again is a one-off: named in the summary, not failed."""
    outcome = judge(monkeypatch, check_name, f"{mutation}-once")
    assert outcome.status == PASS, outcome.message
    assert outcome.requirements[own].status == PASS
    assert "one-offs that 2 retries did not show again (no finding)" in outcome.message
    assert f"[50, {THINKING[1]}," in outcome.message  # the one-off's own ids are named


@pytest.mark.req("API-SEED-1", "RUN-FINDING-1")
def test_a_concurrent_difference_no_budget_forced_is_the_seeds(monkeypatch):
    """Concurrent and sequential ids that part where no budget forces anything, on a token no budget forces, are
    the draws' (API-SEED-1: a seeded request draws from its own stream whatever else the engine serves): the
    diverging request needs no budget, and API-BUDGET-5 reads BLOCKED."""
    outcome = judge(monkeypatch, "api/concurrent-mixed-budgets", "draws-depend-on-the-batch")
    assert outcome.requirements["API-BUDGET-5"].status == BLOCKED, outcome.requirements["API-BUDGET-5"]
    seed = outcome.requirements["API-SEED-1"]
    assert seed.status == FAIL and seed.finding == "API-SEED-1", seed
    assert "budget None" in seed.evidence and "which no budget forces" in seed.evidence
    # the reproduction: the batch as it was sent together, then the diverging request alone
    requests = seed.reproduction["requests"]
    assert len(requests) == TOGETHER + 1 and requests[-1]["body"] in [r["body"] for r in requests[:TOGETHER]]


@pytest.mark.req("API-BUDGET-5")
def test_a_budget_leaking_into_an_unbudgeted_request_stays_api_budget_5(monkeypatch):
    """A concurrent request without a budget whose output is forced beside others parts on the end marker, a token
    a budget forces: it stays API-BUDGET-5's (no budget leaks to another request)."""
    outcome = judge(monkeypatch, "api/concurrent-mixed-budgets", "budget-leaks-together")
    result = outcome.requirements["API-BUDGET-5"]
    assert result.status == FAIL and result.fingerprint == "API-BUDGET-5/concurrent-differs-from-sequential"
    assert "API-SEED-1" not in outcome.requirements


@pytest.mark.req("API-SEED-1", "API-STREAM-1", "RUN-FINDING-1")
def test_a_stream_parting_before_the_budget_forces_is_judged_without_the_budget(monkeypatch):
    """vLLM CPU's case: the budgeted request sent whole is the same every time, the streamed one parts from it
    before the budget forces anything. The minimal case is the request without its budget, not streamed, which is
    not reproducible: API-SEED-1's, and API-STREAM-1 reads BLOCKED."""
    outcome = judge(monkeypatch, "api/streaming-parity", "seeded-only-with-a-budget")
    assert outcome.requirements["API-STREAM-1"].status == BLOCKED, outcome.requirements["API-STREAM-1"]
    seed = outcome.requirements["API-SEED-1"]
    assert seed.status == FAIL and "budget None" in seed.evidence, seed
    assert "up to output position" in seed.evidence
    requests = seed.reproduction["requests"]
    assert requests and all(not r["body"].get("stream") and r["body"]["model"] == SPEC_MODEL for r in requests)


@pytest.mark.req("API-BUDGET-4", "API-BUDGET-2", "API-BUDGET-5", "RUN-FINDING-1")
def test_budget_failures_of_a_concurrent_batch_go_to_the_budget_their_request_holds(monkeypatch):
    """llama.cpp single's case: two budget defects met in one concurrent batch, each recurring alone. Each is the
    budget requirement's of what its request holds, with its own request as the evidence: budget 0 API-BUDGET-4's,
    budget 5 API-BUDGET-2's; none is API-BUDGET-5's, which reads BLOCKED."""
    outcome = judge(monkeypatch, "api/concurrent-mixed-budgets", "budgets-0-and-5-ignored", spec_model=None)
    assert outcome.requirements["API-BUDGET-5"].status == BLOCKED, outcome.requirements["API-BUDGET-5"]
    zero, five = outcome.requirements["API-BUDGET-4"], outcome.requirements["API-BUDGET-2"]
    assert zero.status == FAIL and zero.finding == "API-BUDGET-4" and "budget 0," in zero.evidence, zero
    assert five.status == FAIL and five.finding == "API-BUDGET-2" and "budget 5," in five.evidence, five
    assert "sent alone" in zero.evidence and "sent alone" in five.evidence
