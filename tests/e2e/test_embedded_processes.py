"""The embedded server with each engine in a process of its own (``specconform serve``, issue 16): every response
is the one the engines in the server's own process give, a cancellation reaches the engine process, and an engine
process that dies fails its requests with an error naming its exit code while the other engines serve on."""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the embedded engine needs fastapi and uvicorn")

from specconform.embedded import model as tiny_model  # noqa: E402
from specconform.embedded import start  # noqa: E402
from specconform.embedded.engine import Engine, Request  # noqa: E402
from specconform.embedded.process import EngineProcess, EngineReplicas  # noqa: E402
from specconform.harness.adapters import embedded_server  # noqa: E402

MODEL = "tiny-think-single"


@pytest.fixture(scope="module")
def processes():
    """A server whose engines run in processes of their own."""
    server = start(variants=("single",), engine_processes=True)
    yield server
    server.stop()  # its engine processes end with it (test_serve_ends_its_engine_processes_with_it)


def _ask(base_url, body):
    """``(token ids, finish reason)`` of one request, streamed or not."""
    if not body.get("stream"):
        response = httpx.post(f"{base_url}/chat/completions", json=body, timeout=300)
        assert response.status_code == 200, response.text[:300]
        choice = response.json()["choices"][0]
        return choice["token_ids"], choice["finish_reason"]
    ids, finish = [], None
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body, timeout=300) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choice = json.loads(line[len("data: ") :])["choices"][0]
                ids += choice.get("token_ids", [])
                finish = choice["finish_reason"] or finish
    return ids, finish


def test_concurrent_requests_get_the_responses_of_engines_in_the_server_process(processes):
    """Distinct greedy requests in flight together, streamed and not, on the plain and the speculative engine
    process: each client gets exactly the response the in-process engines give the same request alone."""
    bodies = [
        {
            "model": MODEL if i % 3 else f"{MODEL}-spec",
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
        results[i] = _ask(processes.base_url, bodies[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    in_process = embedded_server().base_url
    assert results == [_ask(in_process, body) for body in bodies]
    assert all(finish in ("stop", "length") for _, finish in results)


def _long_request(started: threading.Event) -> Request:
    """A greedy request of 900 tokens that sets ``started`` once its first tokens arrive."""
    request = Request([1, 87, 277, 84, 201, 1, 67, 85, 85, 291, 264, 86, 201], 900, 0.0, 1, None)
    request.on_tokens = lambda r: started.set()
    return request


def test_a_cancelled_request_is_dropped_by_its_engine_process(processes):
    engine = processes.server.config.app.state.served[MODEL].engine
    started = threading.Event()
    request = engine.submit(_long_request(started))
    assert started.wait(120)
    request.cancel()
    assert request.done.wait(120)  # done only once the engine process says it dropped the request
    assert request.finish_reason == "cancelled" and len(request.output) < 900


def test_an_engine_process_that_dies_fails_its_requests_naming_the_exit_code(processes):
    engine = EngineProcess(tiny_model.build("single"))
    engine.wait_ready()
    started = threading.Event()
    request = engine.submit(_long_request(started))
    assert started.wait(120)
    engine.process.kill()
    assert request.done.wait(120)
    assert request.finish_reason == "error" and "exit code -9" in request.error
    later = engine.submit(_long_request(threading.Event()))
    assert later.done.is_set() and later.error == request.error
    body = {"model": MODEL, "messages": [{"role": "user", "content": "so"}], "max_tokens": 3, "return_token_ids": True}
    assert len(_ask(processes.base_url, body)[0]) == 3  # the server's own engine processes serve on


def test_replicas_share_the_requests_give_the_same_tokens_and_pass_over_a_dead_one():
    """Each request goes to the live replica with the fewest requests in flight; the tokens are those of one engine
    in the server's own process; once a replica's process dies, its requests fail naming the exit code and the later
    ones go to the replica that lives."""
    tiny = tiny_model.build("single")
    replicas = EngineReplicas(tiny, 2, num_speculative_tokens=2)
    replicas.wait_ready()
    try:
        first, second = (replicas.submit(_long_request(threading.Event())) for _ in range(2))
        assert [replica.load() for replica in replicas.replicas] == [(False, 1), (False, 1)]
        prompts = [[1, 87, 277, 84, 201, 1, 67, 85, 85, 291, 264, 86, 201 + i] for i in range(6)]
        short = [replicas.submit(Request(prompt, 12, 0.0, 1, i % 3 or None)) for i, prompt in enumerate(prompts)]
        in_process = Engine(tiny, num_speculative_tokens=2)
        alone = [in_process.submit(Request(prompt, 12, 0.0, 1, i % 3 or None)) for i, prompt in enumerate(prompts)]
        for request in short + alone:
            assert request.done.wait(120)
        assert [r.output for r in short] == [r.output for r in alone]
        assert all(r.finish_reason in ("stop", "length") for r in short)
        second.cancel()
        assert second.done.wait(120)
        replicas.replicas[0].process.kill()
        assert first.done.wait(120)
        assert first.finish_reason == "error" and "exit code -9" in first.error
        later = replicas.submit(Request(prompts[0], 12, 0.0, 1, None))
        assert replicas.replicas[0].load() == (True, 0)
        assert later.done.wait(120) and later.output == alone[0].output
    finally:
        replicas.stop()


def _serve(tmp_path) -> tuple[subprocess.Popen, str, list[int]]:
    """``specconform serve`` as a user starts it, once it answers: its process, its URL, its engine processes' ids."""
    with socket.socket() as probe:  # a port free now; the server binds it a moment later
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "specconform.harness.cli", "serve", "--port", str(port)],
        cwd=tmp_path,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    while True:  # the engines load their models before the server answers
        assert server.poll() is None, f"specconform serve exited with {server.returncode}"
        try:
            httpx.get(f"{base_url}/models", timeout=5).raise_for_status()
            break
        except httpx.TransportError:
            _wait_exit(server.pid, 0.5)
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    assert len(children) == 4, children  # two variants, a plain and a speculative engine each
    return server, base_url, [int(pid) for pid in children]


def _wait_exit(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` has ended within ``timeout`` s (Linux's pidfd: no polling)."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([handle], [], [], timeout)[0])
    finally:
        os.close(handle)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["kill", "kill -9"])
def test_serve_ends_its_engine_processes_with_it(tmp_path, how):
    """As the README's ``kill %1`` says: once the server has ended, so have its engines (a terminated server stops
    them as it shuts down), and a server killed outright leaves none behind (each ends when its pipe closes,
    without the seconds of interpreter teardown that kept engines alive after their server)."""
    server, _, engines = _serve(tmp_path)
    server.send_signal(how)
    server.wait(30)
    if how == signal.SIGTERM:
        assert not [pid for pid in engines if Path(f"/proc/{pid}").exists()]
    else:
        assert all(_wait_exit(pid, 10) for pid in engines)
