"""The embedded engine's continuous batching (issue 16): requests run together in one batch give exactly their solo
results and none crosses another; a fault fails only the requests it can be attributed to, and a fault that
cannot be attributed fails the batch with an error that says so while the engine goes on serving."""

import contextlib
import threading

import pytest

pytest.importorskip("transformers", reason="the embedded engine needs transformers")

from specconform import impl  # noqa: E402
from specconform.embedded import engine as engine_module  # noqa: E402
from specconform.embedded import model as tiny_model  # noqa: E402
from specconform.embedded.engine import Engine, Request  # noqa: E402

BUDGETS = (None, 0, 2, 5)
N = 8


@pytest.fixture(scope="module")
def tiny():
    return tiny_model.build("multi")


@pytest.fixture(scope="module", params=[0, 3], ids=["plain", "spec"])
def engine(request, tiny):
    return Engine(tiny, num_speculative_tokens=request.param, max_num_reqs=N)


def _requests(tiny) -> list[Request]:
    """N distinct requests: different prompts, budgets, lengths; greedy and seeded sampling."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny.path)
    requests = []
    for i in range(N):
        text = (
            f"<|im_start|>user\ncheck the sum {i} then the {'final ' * (i % 3)}value<|im_end|>\n<|im_start|>assistant\n"
        )
        prompt = tokenizer.encode(text + "<think>\n", add_special_tokens=False)
        temperature = 0.0 if i % 2 == 0 else 0.8
        requests.append(Request(prompt, 10 + 2 * i, temperature, 1000 + i, BUDGETS[i % len(BUDGETS)]))
    return requests


def _result(request: Request):
    return request.output, request.finish_reason, request.error


@contextlib.contextmanager
def held(engine):
    """Hold the engine before its next step until the gate opens; records the batch size after each step."""
    gate, step, sizes = threading.Event(), engine._step, []

    def gated():
        assert gate.wait(120), "the test never opened the gate"
        step()
        sizes.append(len(engine.slots))

    engine._step = gated
    try:
        yield gate, sizes
    finally:
        gate.set()
        del engine._step


def _solo(engine, tiny) -> list:
    results = []
    for request in _requests(tiny):
        engine.submit(request)
        assert request.done.wait(120)
        results.append(_result(request))
    return results


@pytest.fixture(scope="module")
def solo(engine, tiny):
    return _solo(engine, tiny)


def _together(engine, requests, inject=None):
    """Run ``requests`` in one batch: all are waiting before the engine's first step admits them."""
    with held(engine) as (gate, sizes), inject or contextlib.nullcontext():
        for request in requests:
            engine.submit(request)
        gate.set()
        for request in requests:
            assert request.done.wait(120), "a request never finished"
    return sizes


def test_requests_batched_together_give_their_solo_results(engine, tiny, solo):
    requests = _requests(tiny)
    sizes = _together(engine, requests)
    assert sizes[0] == N, sizes  # every request was in the first step's batch
    assert [_result(r) for r in requests] == solo
    assert all(r.error is None and r.finish_reason in ("stop", "length") for r in requests)


def test_a_forward_fault_of_one_request_fails_it_alone(engine, tiny, solo, monkeypatch):
    requests = _requests(tiny)
    victim = requests[3]
    forward = engine_module.forward

    def faulty(model, pool, rows, lengths, tokens):
        if victim.row in rows and len(victim.output) >= 2:
            raise RuntimeError("injected fault of one request")
        return forward(model, pool, rows, lengths, tokens)

    _together(engine, requests, inject=_patched(monkeypatch, engine_module, "forward", faulty))
    assert victim.finish_reason == "error" and len(victim.output) >= 2
    assert "failed alone" in victim.error and "injected fault of one request" in victim.error, victim.error
    others = [i for i in range(N) if requests[i] is not victim]
    assert [_result(requests[i]) for i in others] == [solo[i] for i in others]


def test_a_delivery_fault_of_one_request_fails_it_alone(engine, tiny, solo):
    requests = _requests(tiny)
    victim = requests[5]

    def broken_client(request):
        if not request.done.is_set():
            raise ConnectionError("injected: the client's callback broke")

    victim.on_tokens = broken_client
    _together(engine, requests)
    assert victim.finish_reason == "error" and "failed alone" in victim.error and "ConnectionError" in victim.error
    others = [i for i in range(N) if requests[i] is not victim]
    assert [_result(requests[i]) for i in others] == [solo[i] for i in others]


def test_an_unattributable_fault_fails_the_batch_clearly_and_the_engine_serves_on(engine, tiny, solo, monkeypatch):
    requests = _requests(tiny)
    sample, calls = impl.rejection_sample, []

    def faulty(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("injected batch-wide fault")
        return sample(*args, **kwargs)

    _together(engine, requests, inject=_patched(monkeypatch, impl, "rejection_sample", faulty))
    for request in requests:
        assert request.finish_reason == "error", _result(request)
        assert "not attributable to one request" in request.error and "rejection sampling" in request.error
        assert "injected batch-wide fault" in request.error and f"({N})" in request.error
    assert _solo(engine, tiny) == solo  # the engine started again from an empty batch


@contextlib.contextmanager
def _patched(monkeypatch, owner, name, value):
    with monkeypatch.context() as patch:
        patch.setattr(owner, name, value)
        yield
