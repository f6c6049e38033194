"""An embedded engine in a process of its own, so that engines and the HTTP server do not share one interpreter lock.

In one process the engines' step loops and the server's event loop take turns on Python's interpreter lock: the
server's work per request (HTTP, JSON, server-sent events) holds up every engine, and the engines hold up each
other. ``EngineProcess`` runs an ``Engine`` in a child process (a fresh interpreter, ``python -m
specconform.embedded.process``, which inherits nothing of the server's threads and imports nothing of the server's
program) and stands for it in the server: ``check`` and ``submit`` as ``Engine`` has them, on the
server's own ``Request`` objects. A pipe carries requests and cancellations to the child and, after each of its
steps, one message with every request's new tokens back; a reader thread applies them to the server's requests and
calls their ``on_tokens``, as the engine thread does in one process.

If the child process dies, every request it held fails with an error naming its exit code, and so does every
request submitted after.

``EngineReplicas`` serves one model from several such processes (on a machine with cores to spare): each request goes
to the live replica with the fewest requests in flight, so each batch stays smaller. A request's tokens do not depend
on its batch, so which replica serves it changes nothing of its response.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection

from .engine import Engine, Request, check_request
from .model import TinyModel


@dataclass(frozen=True)
class Update:
    """What one step of the child changed of one request: the tokens it appended to ``output`` (with their log
    probabilities) and, once the request is done, how it finished."""

    request_id: int
    tokens: list[int]
    logprobs: list[float]
    done: bool
    finish_reason: str | None
    error: str | None


def _serve(connection: Connection) -> None:
    """The child process: an ``Engine`` (of the model and options that arrive first on ``connection``) serving the
    requests that arrive after."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server ends its engines; a Ctrl-C is the server's to handle
    tiny, engine_options = connection.recv()
    engine = Engine(tiny, **engine_options)
    requests: dict[int, Request] = {}  # by the server's request id
    server_ids: dict[int, int] = {}  # the server's request id of each request here, by its id here
    sent: dict[int, int] = {}  # how many output tokens of each request (by its id here) the server has been sent
    updates: queue.SimpleQueue[Update] = queue.SimpleQueue()

    lock = threading.Lock()  # guards server_ids and sent, which the engine thread and this one both change

    def on_tokens(request: Request) -> None:  # on the engine thread, once per step and once when done
        done = request.done.is_set()
        with lock:
            start, sent[request.id] = sent[request.id], len(request.output)
            server_id = server_ids.pop(request.id) if done else server_ids[request.id]
            if done:
                del sent[request.id]
        finish = (request.finish_reason, request.error) if done else (None, None)
        updates.put(Update(server_id, request.output[start:], request.logprobs[start:], done, *finish))

    def send_updates() -> None:  # every update waiting goes out in one message: one per step, not one per request
        while True:
            batch = [updates.get()]
            while not updates.empty():
                batch.append(updates.get())
            connection.send(batch)

    threading.Thread(target=send_updates, name="specconform-engine-updates", daemon=True).start()
    connection.send("ready")
    while True:
        try:
            message = connection.recv()
        except EOFError:  # the server is gone: end at once. The interpreter's teardown (seconds with torch loaded,
            os._exit(0)  # longer with several engines on few cores) would keep the process alive for nothing
        if message[0] == "submit":
            _, request_id, prompt, max_tokens, temperature, seed, budget = message
            request = Request(prompt, max_tokens, temperature, seed, budget, on_tokens=on_tokens)
            with lock:
                requests[request_id], server_ids[request.id], sent[request.id] = request, request_id, 0
            try:
                engine.submit(request)
            except Exception as exc:  # the server checked it already; should its check ever differ, say so
                request.fail(f"the engine process refused the request: {type(exc).__name__}: {exc}")
        elif message[0] == "cancel" and message[1] in requests:
            requests[message[1]].cancel()
        for request_id in [i for i, r in requests.items() if r.done.is_set()]:
            del requests[request_id]


class EngineProcess:
    """An ``Engine`` of ``tiny`` (keyword ``engine_options`` as ``Engine`` takes them) in a child process, with the
    interface the server uses: ``tiny``, ``k``, ``context_length``, ``vocab_size``, ``check`` and ``submit``."""

    def __init__(self, tiny: TinyModel, **engine_options):
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(tiny.path)
        self.tiny = tiny
        self.k = engine_options.get("num_speculative_tokens", 0)
        self.context_length, self.vocab_size = config.max_position_embeddings, config.vocab_size
        ours, child = socket.socketpair()
        search_path = os.pathsep.join(filter(None, sys.path))  # the child finds every module as this process does
        self.process = subprocess.Popen(
            [sys.executable, "-m", "specconform.embedded.process", str(child.fileno())],
            pass_fds=[child.fileno()],
            env={**os.environ, "PYTHONPATH": search_path},
        )
        child.close()
        self.connection = Connection(ours.detach())
        self.connection.send((tiny, engine_options))
        self._lock = threading.Lock()  # one sender at a time; the requests in flight
        self._requests: dict[int, Request] = {}
        self._exit: str | None = None  # why the child is gone, once it is
        self._ready = threading.Event()
        threading.Thread(target=self._read, name="specconform-engine-reader", daemon=True).start()

    def wait_ready(self, timeout: float = 300) -> None:
        """Wait until the child has loaded its model; raise RuntimeError if it does not within ``timeout`` s."""
        if not self._ready.wait(timeout) or self._exit:
            raise RuntimeError(f"the engine process of {self.tiny.path} did not start: {self._exit or 'timed out'}")

    def check(self, request: Request) -> None:
        """Raise ValueError naming the field if ``request`` cannot run here (as ``Engine.check``)."""
        check_request(request, self.vocab_size, self.context_length, self.k)

    def load(self) -> tuple[bool, int]:
        """``(gone, requests in flight)``: whether the child process is gone, and how many requests it holds."""
        with self._lock:
            return self._exit is not None, len(self._requests)

    def submit(self, request: Request) -> Request:
        self.check(request)
        request.on_cancel = self._cancel
        message = ("submit", request.id, request.prompt_token_ids, request.max_tokens)
        with self._lock:
            if self._exit is None:
                self._requests[request.id] = request
                try:
                    self.connection.send((*message, request.temperature, request.seed, request.budget))
                    return request
                except OSError:  # the child is gone; the reader fails what it held, and says why
                    del self._requests[request.id]
            why = self._exit or "the engine process is gone; this request failed"
        request.fail(why)
        return request

    def _cancel(self, request: Request) -> None:
        """Tell the child to drop ``request``; it is done once the child says so (finish reason ``cancelled``)."""
        with self._lock, contextlib.suppress(OSError):  # a child that is gone generates nothing anyway
            if self._exit is None and request.id in self._requests:
                self.connection.send(("cancel", request.id))

    def _read(self) -> None:
        """Apply the child's updates to the server's requests, in order; fail them all if the child dies."""
        try:
            if self.connection.recv() != "ready":
                raise EOFError
            self._ready.set()
            while True:
                for update in self.connection.recv():
                    request = self._requests[update.request_id]
                    request.output.extend(update.tokens)
                    request.logprobs.extend(update.logprobs)
                    if update.done:
                        request.error, request.finish_reason = update.error, update.finish_reason
                        request.done.set()
                        with self._lock:
                            del self._requests[update.request_id]
                    with contextlib.suppress(Exception):  # a client that cannot be told sees ``done`` when it looks
                        request.on_tokens(request)
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(5)
            self._end(f"the engine process exited (exit code {self.process.returncode}); this request failed")
        except Exception as exc:  # a bug of this side: nothing more can be trusted of the child's updates
            self._end(f"the engine process's updates could not be applied ({type(exc).__name__}: {exc})")

    def _end(self, why: str) -> None:
        """Stop the child if it still runs and fail every request it held, and every later one, with ``why``."""
        self.process.kill()
        with self._lock:
            self._exit = why
            orphans, self._requests = list(self._requests.values()), {}
        self._ready.set()
        for request in orphans:
            request.fail(why)

    def stop(self) -> None:
        """End the child process."""
        self.process.terminate()
        self.process.wait(10)


class EngineReplicas:
    """``count`` ``EngineProcess`` es of ``tiny`` (keyword ``engine_options`` as ``Engine`` takes them) serving as one,
    with ``EngineProcess`` 's interface: each request goes to the live replica with the fewest requests in flight
    (the first of those on a tie)."""

    def __init__(self, tiny: TinyModel, count: int, **engine_options):
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be an integer of at least 1; got {count!r}")
        self.replicas = [EngineProcess(tiny, **engine_options) for _ in range(count)]
        first = self.replicas[0]
        self.tiny, self.k = first.tiny, first.k
        self.context_length, self.vocab_size = first.context_length, first.vocab_size

    def wait_ready(self, timeout: float = 300) -> None:
        """Wait until every replica has loaded its model (``EngineProcess.wait_ready``)."""
        for replica in self.replicas:
            replica.wait_ready(timeout)

    def check(self, request: Request) -> None:
        """Raise ValueError naming the field if ``request`` cannot run here (as ``Engine.check``)."""
        self.replicas[0].check(request)

    def submit(self, request: Request) -> Request:
        return min(self.replicas, key=EngineProcess.load).submit(request)

    def stop(self) -> None:
        """End every replica's process."""
        for replica in self.replicas:
            replica.stop()


if __name__ == "__main__":  # the child: python -m specconform.embedded.process FD (one end of a socket pair)
    from specconform.embedded.process import _serve as serve  # the module by its own name, so that its updates unpickle

    serve(Connection(int(sys.argv[1])))
