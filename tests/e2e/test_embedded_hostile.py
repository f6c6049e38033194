"""The embedded server under hostile clients (issue 16): a bad request fails alone with a 400 naming the
field, neighbours in flight are untouched, abandoned requests stop generating."""

import json
import queue
import threading

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastapi", reason="the embedded engine needs fastapi and uvicorn")

from specconform.harness.adapters import embedded_server  # noqa: E402

MODEL = "tiny-think-single"
USER = [{"role": "user", "content": "so the answer"}]


@pytest.fixture(scope="module")
def server():
    return embedded_server()


@pytest.fixture(scope="module")
def base_url(server):
    return server.base_url


def _engine(server, model=MODEL):
    return server.server.config.app.state.served[model].engine


@pytest.fixture
def submitted(server):
    """A queue of the engine requests of MODEL submitted while the test runs (the engine is unchanged)."""
    engine, requests = _engine(server), queue.Queue()
    submit = engine.submit

    def recording(request):
        handle = submit(request)
        requests.put(request)  # only once the engine holds it: a step released on this signal must see it
        return handle

    engine.submit = recording
    yield requests
    del engine.submit


@pytest.fixture
def steps(server):
    """Hold the engine of MODEL between steps: it runs one step per ``steps.release()``."""
    engine = _engine(server)
    permits, step = threading.Semaphore(0), engine._step

    def gated():
        assert permits.acquire(timeout=300), "the test never let the engine step"
        step()

    engine._step = gated
    yield permits
    del engine._step
    permits.release(10_000)  # a step already waiting runs free


def _stream(base_url, body, started=None):
    """Token ids and finish reason of a streamed chat request; ``started`` is set at its first token."""
    ids, finish = [], None
    with httpx.stream("POST", f"{base_url}/chat/completions", json={**body, "stream": True}, timeout=300) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[len("data: ") :])
            assert "error" not in event, event
            choice = event["choices"][0]
            ids += choice.get("token_ids", [])
            finish = choice["finish_reason"] or finish
            if ids and started is not None:
                started.set()
    return ids, finish


class Neighbour:
    """A greedy streamed request running in a thread while hostile requests arrive."""

    BODY = {"model": MODEL, "messages": USER, "max_tokens": 48, "temperature": 0, "return_token_ids": True}

    def __init__(self, base_url):
        self.base_url, self.started, self.result, self.error = base_url, threading.Event(), None, None
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        try:
            self.result = _stream(self.base_url, self.BODY, self.started)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def __enter__(self):
        self.thread.start()
        assert self.started.wait(120), "the neighbour never produced a token"
        return self

    def __exit__(self, *exc):
        self.thread.join(300)

    def finish(self):
        self.thread.join(300)
        assert self.error is None, self.error
        alone = _stream(self.base_url, self.BODY)
        assert self.result == alone and self.result[1] in ("stop", "length")


HOSTILE = [
    ("chat/completions", {"model": ["tiny-think-single"], "messages": USER}, "model"),
    ("chat/completions", {"model": {"name": "tiny-think-single"}, "messages": USER}, "model"),
    ("tokenize", {"model": ["tiny-think-single"], "prompt": "so"}, "model"),
    ("chat/completions", {"model": MODEL, "messages": USER, "stream": True, "stream_options": 5}, "stream_options"),
    (
        "chat/completions",
        {"model": MODEL, "messages": USER, "stream_options": {"include_usage": True}},
        "stream_options",
    ),
    ("chat/completions", {"model": MODEL, "messages": USER, "n": 3}, "n"),
    ("chat/completions", {"model": MODEL, "messages": USER, "stream": "yes"}, "stream"),
    ("chat/completions", {"model": MODEL, "messages": [{"role": "user", "content": "the " * 50_000}]}, "messages"),
    ("chat/completions", {"model": MODEL, "messages": USER, "max_tokens": 1020}, "max_tokens"),
    (
        "chat/completions",
        {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
        "messages",
    ),
    (
        "chat/completions",
        {"model": MODEL, "messages": USER, "chat_template_kwargs": {"enable_thinking": 1}},
        "chat_template_kwargs",
    ),
    ("chat/completions", {"model": MODEL, "messages": USER, "thinking_token_budget": 2.5}, "thinking_token_budget"),
    ("chat/completions", {"model": MODEL, "messages": USER, "top_k": 1}, "top_k"),
    ("chat/completions", {"model": MODEL, "messages": USER, "min_p": 1.0}, "min_p"),
    ("chat/completions", {"model": MODEL, "messages": USER, "logit_bias": {"7": 100}}, "logit_bias"),
    ("completions", {"model": MODEL, "prompt": ""}, "prompt"),
    ("completions", {"model": MODEL, "prompt": [1, 10**9]}, "prompt"),
]


@pytest.mark.req("API-ERROR-1", "API-ERROR-2")
def test_hostile_requests_fail_alone_with_a_400_naming_the_field(base_url, submitted, steps):
    root = base_url.rsplit("/v1", 1)[0]
    neighbour = Neighbour(base_url)
    neighbour.thread.start()
    submitted.get(timeout=120)  # the neighbour waits in the engine
    steps.release()  # one step admits it and makes its first token; it stays in flight until released
    assert neighbour.started.wait(120), "the neighbour never produced a token"
    for path, body, field in HOSTILE:
        url = f"{root}/tokenize" if path == "tokenize" else f"{base_url}/{path}"
        response = httpx.post(url, json=body, timeout=60)
        assert response.status_code == 400, (path, body, response.text[:300])
        error = response.json()["error"]
        assert error["param"] == field and field.split("_")[0] in error["message"], error
    assert neighbour.thread.is_alive()
    steps.release(10_000)
    neighbour.finish()


@pytest.mark.req("API-BUDGET-1", "TB-API-1")
@pytest.mark.parametrize("budget", [2**31 - 1, 2**31, 10**30])
def test_budgets_beyond_int32_are_served_beside_a_neighbour(base_url, budget):
    body = {"model": MODEL, "messages": USER, "max_tokens": 8, "temperature": 0, "return_token_ids": True}
    unbounded = httpx.post(f"{base_url}/chat/completions", json=body, timeout=120).json()
    with Neighbour(base_url) as neighbour:
        huge = httpx.post(f"{base_url}/chat/completions", json={**body, "thinking_token_budget": budget}, timeout=120)
    neighbour.finish()
    assert huge.status_code == 200, huge.text[:300]
    # no generation of 8 tokens can reach such a budget: the same tokens as without one
    assert huge.json()["choices"][0]["token_ids"] == unbounded["choices"][0]["token_ids"]


def test_text_content_parts_read_as_their_joined_text(base_url):
    body = {"model": MODEL, "max_tokens": 6, "temperature": 0, "return_token_ids": True}
    as_string = httpx.post(
        f"{base_url}/chat/completions", json={**body, "messages": [{"role": "user", "content": "so the answer"}]}
    ).json()
    parts = [{"type": "text", "text": "so the"}, {"type": "text", "text": " answer"}]
    as_parts = httpx.post(
        f"{base_url}/chat/completions", json={**body, "messages": [{"role": "user", "content": parts}]}
    ).json()
    assert as_parts["prompt_token_ids"] == as_string["prompt_token_ids"]
    assert as_parts["choices"][0]["token_ids"] == as_string["choices"][0]["token_ids"]


LONG = {"model": MODEL, "messages": USER, "max_tokens": 900, "temperature": 0, "return_token_ids": True}


def test_an_abandoned_stream_stops_generating(base_url, submitted, steps):
    with httpx.stream("POST", f"{base_url}/chat/completions", json={**LONG, "stream": True}, timeout=120) as response:
        request = submitted.get(timeout=120)
        steps.release()  # one step: the first token
        for line in response.iter_lines():
            if '"token_ids"' in line:  # a generated token arrived; now walk away
                break
    assert request.cancelled.wait(60), "closing the stream did not cancel the request"
    steps.release(10_000)
    assert request.done.wait(120), "the cancelled request was never dropped"
    assert request.finish_reason == "cancelled" and len(request.output) == 1


def test_an_abandoned_non_streaming_request_stops_generating(base_url, submitted, steps):
    with pytest.raises(httpx.ReadTimeout):  # the engine is held: no answer can come; the client gives up
        httpx.post(f"{base_url}/chat/completions", json=LONG, timeout=httpx.Timeout(120, read=1))
    request = submitted.get(timeout=60)
    assert request.cancelled.wait(60), "the server never noticed that its client left"
    steps.release(10_000)
    assert request.done.wait(120), "the cancelled request was never dropped"
    assert request.finish_reason == "cancelled" and request.output == []


# -- fuzz: Hypothesis over the HTTP request body ----------------------------------------------------

HOSTILE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**31, 2**63, 10**30, -(2**63)]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=4),
    st.lists(st.integers(-1, 3), max_size=2),
    st.dictionaries(st.sampled_from(["include_usage", "type", "enable_thinking", "x"]), st.booleans(), max_size=2),
)
MESSAGES = st.one_of(
    st.just(USER),
    st.lists(
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "system", "assistant", "tool"]),
                "content": st.one_of(
                    st.text(max_size=12),
                    st.lists(
                        st.fixed_dictionaries(
                            {"type": st.sampled_from(["text", "image_url"]), "text": st.text(max_size=6)}
                        ),
                        max_size=2,
                    ),
                    HOSTILE_VALUES,
                ),
            }
        ),
        max_size=2,
    ),
    HOSTILE_VALUES,
)
BODIES = st.fixed_dictionaries(
    {
        "model": st.one_of(st.sampled_from([MODEL, "tiny-think-multi-spec", "tiny-plain-single"]), HOSTILE_VALUES),
        "messages": MESSAGES,
        "max_tokens": st.one_of(st.integers(1, 3), HOSTILE_VALUES),
    },
    optional={
        name: st.one_of(valid, HOSTILE_VALUES)
        for name, valid in {
            "thinking_token_budget": st.integers(-1, 4),
            "temperature": st.sampled_from([0, 0.7, 1.0]),
            "seed": st.integers(0, 2**62),
            "n": st.just(1),
            "stream": st.booleans(),
            "stream_options": st.just({"include_usage": True}),
            "return_token_ids": st.booleans(),
            "logprobs": st.booleans(),
            "top_logprobs": st.integers(0, 5),
            "chat_template_kwargs": st.just({"enable_thinking": False}),
        }.items()
    },
)


class NeighbourLoop:
    """Greedy neighbours run one after another in a thread for the whole fuzz run; each must equal its solo run."""

    def __init__(self, base_url):
        self.base_url, self.expected = base_url, _stream(base_url, Neighbour.BODY)
        self.stop, self.runs, self.failures = threading.Event(), 0, []
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        while not self.stop.is_set():
            try:
                got = _stream(self.base_url, Neighbour.BODY)
            except BaseException as exc:  # reported by the test
                got = exc
            self.runs += 1
            if got != self.expected:
                self.failures.append(got)


@pytest.mark.req("API-ERROR-1", "API-ERROR-2")
def test_fuzz_request_bodies_never_500_never_harm_a_neighbour(base_url):
    neighbours = NeighbourLoop(base_url)
    neighbours.thread.start()

    @given(BODIES)
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    def one(body):
        response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=120)
        assert response.status_code in (200, 400), (body, response.status_code, response.text[:300])
        if response.status_code == 400:
            error = response.json()["error"]
            assert error["param"] in set(body) | {"body"} and error["message"], (body, error)
        elif body.get("stream") is True:
            events = [line for line in response.text.splitlines() if line.startswith("data: ")]
            assert events[-1] == "data: [DONE]" and not any('"error"' in e for e in events), response.text[-300:]
        else:
            assert response.json()["choices"][0]["finish_reason"] in ("stop", "length"), response.text[:300]

    try:
        one()
    finally:
        neighbours.stop.set()
        neighbours.thread.join(300)
    assert neighbours.runs >= 1 and neighbours.failures == []


# -- concurrency: no crossed responses; heavy parsing off the event loop --------------------------------------


def _ask(base_url, body):
    if body.get("stream"):
        return _stream(base_url, body)
    response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=300)
    assert response.status_code == 200, response.text[:300]
    choice = response.json()["choices"][0]
    return choice["token_ids"], choice["finish_reason"]


def test_concurrent_greedy_requests_get_their_solo_responses(base_url, submitted, steps):
    """Distinct greedy requests in flight together (those of MODEL all in its engine's first step), streamed
    and not, on the plain and the speculative engine: each client gets exactly its own solo response."""
    bodies = [
        {
            "model": MODEL if i % 3 else "tiny-think-single-spec",
            "messages": [{"role": "user", "content": f"check the sum {i} then the final value"}],
            "max_tokens": 6 + i,
            "temperature": 0,
            "return_token_ids": True,
            "stream": i % 2 == 1,
            **({"thinking_token_budget": i % 4} if i % 5 else {}),
        }
        for i in range(12)
    ]
    results = [None] * len(bodies)

    def run(i):
        results[i] = _ask(base_url, bodies[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for _ in range(sum(body["model"] == MODEL for body in bodies)):
        submitted.get(timeout=120)
    steps.release(10_000)
    for thread in threads:
        thread.join(300)
    alone = [_ask(base_url, body) for body in bodies]
    assert results == alone
    assert all(finish in ("stop", "length") for _, finish in results)


class GatedTokenizer:
    """The served tokenizer, but a chat whose text holds GATED waits inside the chat template until released."""

    def __init__(self, inner):
        self.inner, self.entered, self.release = inner, threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __len__(self):
        return len(self.inner)

    def apply_chat_template(self, messages, **kwargs):
        if any("GATED" in message["content"] for message in messages):
            self.entered.set()
            assert self.release.wait(120), "the test never released the gated request"
        return self.inner.apply_chat_template(messages, **kwargs)


def test_a_large_prompt_is_parsed_off_the_event_loop(server, base_url, monkeypatch):
    """While one request's prompt is inside the tokenizer, another client is served from start to end: parsing
    runs in a worker thread (on the event loop, the short request could not be answered until the gate opens)."""
    model = server.server.config.app.state.served[MODEL]
    gated = GatedTokenizer(model.tokenizer)
    monkeypatch.setattr(model, "tokenizer", gated)
    large = {"model": MODEL, "messages": [{"role": "user", "content": "GATED " + "so the answer " * 100}]}
    responses = {}
    thread = threading.Thread(
        target=lambda: responses.update(
            large=httpx.post(f"{base_url}/chat/completions", json={**large, "max_tokens": 4}, timeout=300)
        )
    )
    thread.start()
    assert gated.entered.wait(120), "the large request never reached the tokenizer"
    short = httpx.post(
        f"{base_url}/chat/completions", json={"model": MODEL, "messages": USER, "max_tokens": 4}, timeout=60
    )
    assert short.status_code == 200 and thread.is_alive() and "large" not in responses  # served meanwhile
    gated.release.set()
    thread.join(300)
    assert responses["large"].status_code == 200, responses["large"].text[:300]


class CountingTokenizer(GatedTokenizer):
    """Counts the texts of more than 100 kB that reach the chat template or the encoder."""

    def __init__(self, inner):
        super().__init__(inner)
        self.large = 0

    def apply_chat_template(self, messages, **kwargs):
        self.large += sum(len(message["content"]) > 100_000 for message in messages)
        return self.inner.apply_chat_template(messages, **kwargs)

    def encode(self, text, **kwargs):
        self.large += len(text) > 100_000
        return self.inner.encode(text, **kwargs)


@pytest.mark.parametrize("path,field", [("chat/completions", "messages"), ("completions", "prompt")])
def test_a_prompt_too_long_for_the_context_is_refused_before_tokenizing(server, base_url, monkeypatch, path, field):
    model = server.server.config.app.state.served[MODEL]
    counting = CountingTokenizer(model.tokenizer)
    monkeypatch.setattr(model, "tokenizer", counting)
    text = "so the answer " * 15_000  # 210 kB
    body = {"model": MODEL, "max_tokens": 4}
    body.update({"messages": [{"role": "user", "content": text}]} if field == "messages" else {"prompt": text})
    response = httpx.post(f"{base_url}/{path}", json=body, timeout=60)
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert error["param"] == field and "210000 bytes" in error["message"] and "context holds" in error["message"]
    assert counting.large == 0
