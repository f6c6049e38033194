"""The embedded engine's OpenAI-compatible HTTP API (FastAPI).

Endpoints: ``/v1/chat/completions`` (streaming and not), ``/v1/completions``, ``/v1/models``,
``/health``. Request field ``thinking_token_budget`` (-1 or absent = none); reasoning in
``message.reasoning`` (and ``reasoning_content`` when configured); usage with
``completion_tokens_details.reasoning_tokens``; ``return_token_ids`` returns ``prompt_token_ids``
and per-choice ``token_ids`` as vLLM does. Invalid requests get HTTP 400 naming the field.

Parsing a request (the chat template, the tokenizer) runs in a worker thread, never on the event loop, so
a large prompt does not hold up other clients; a prompt whose text alone is too long for the model's context
(no token spans more than ``ServedModel.max_token_bytes`` bytes) is refused before it is tokenized.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import weakref

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from .process import EngineProcess, EngineReplicas
from .reasoning import ReasoningSplit
from .served import BadRequest, ServedModel
from .validation import parse_request, served_model

DISCONNECT_POLL_S = 0.5  # how often a waiting non-streaming request checks that its client is still there


class LoopWakeups:
    """Hands items from the engine threads to ``asyncio.Queue`` s of one event loop, waking the loop once per burst.

    ``loop.call_soon_threadsafe`` writes to the loop's wake-up pipe on every call, so an engine step that delivers
    tokens to B requests would wake the loop B times. Items wait here under a lock instead; the first of a burst
    schedules one hand-over on the loop, which puts every item waiting by then into its queue, in order."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._waiting: list[tuple[asyncio.Queue, object]] = []

    def put(self, queue: asyncio.Queue, item) -> None:
        """Put ``item`` into ``queue`` on the loop (from any thread)."""
        with self._lock:
            self._waiting.append((queue, item))
            if len(self._waiting) > 1:  # a hand-over is already scheduled and will take this item too
                return
        self.loop.call_soon_threadsafe(self._hand_over)

    def _hand_over(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for queue, item in waiting:
            queue.put_nowait(item)


# One LoopWakeups per event loop that serves an app's requests (an app may be served from several loops in turn).
_LoopWakeupsByLoop = weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWakeups]


async def _body(http: Request):
    try:
        return await http.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest("body", "the request body is not valid JSON") from None


def _split(model, request) -> ReasoningSplit | None:
    """The reasoning split of ``request`` 's output (None where the model has no reasoning markers)."""
    if not model.reasoning:
        return None
    return ReasoningSplit(request.prompt_token_ids, model.engine.tiny.start_token_ids, model.engine.tiny.end_token_ids)


def _texts(model, request, split: ReasoningSplit | None, final):
    """``(reasoning text, content text, reasoning tokens, settled)`` of ``request`` 's output so far; ``split``
    (from ``_split``) reads only the output tokens it has not read in an earlier call."""
    if split is None:
        output = list(request.output)
        reasoning, content, settled = [], output, len(output)
    else:
        settled = split.update(request.output, final)
        reasoning, content = split.reasoning, split.content
    decode = model.tokenizer.decode
    return decode(reasoning), decode(content), len(reasoning), settled


def _usage(request, reasoning_tokens):
    return {
        "prompt_tokens": len(request.prompt_token_ids),
        "completion_tokens": len(request.output),
        "total_tokens": len(request.prompt_token_ids) + len(request.output),
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }


def _logprobs(model, request, top):
    return (
        {
            "content": [
                {
                    "token": model.tokenizer.decode([t]),
                    "logprob": lp,
                    "bytes": list(model.token_bytes[t]),
                    "top_logprobs": [],
                }
                for t, lp in zip(request.output, request.logprobs)
            ]
        }
        if top is not None
        else None
    )


def _submit(loop_wakeups: _LoopWakeupsByLoop, model, request, chat, stream: bool) -> asyncio.Queue:
    """Hand ``request`` to the engine; the queue receives an item after each of its steps (``stream``) or
    once it is done, through the ``LoopWakeups`` of the running loop in ``loop_wakeups``."""
    loop = asyncio.get_running_loop()
    wakeups = loop_wakeups.setdefault(loop, LoopWakeups(loop))
    updates: asyncio.Queue = asyncio.Queue()

    def on_tokens(r):
        if stream or r.done.is_set():
            wakeups.put(updates, len(r.output))

    request.on_tokens = on_tokens
    try:
        model.engine.submit(request)
    except ValueError as exc:  # the engine's own check; parse_request already covers it
        raise BadRequest("messages" if chat else "prompt", str(exc)) from None
    return updates


async def _finished(http: Request, request, updates) -> bool:
    """Wait until ``request`` is done; cancel it and return False if the client goes away first."""
    while not request.done.is_set():
        try:
            await asyncio.wait_for(updates.get(), timeout=DISCONNECT_POLL_S)
        except asyncio.TimeoutError:
            if await http.is_disconnected():
                request.cancel()
                return False
    return True


async def _complete(
    http: Request,
    chat: bool,
    served: dict[str, ServedModel],
    reasoning_fields: tuple[str, ...],
    loop_wakeups: _LoopWakeupsByLoop,
):
    """A chat (``chat``) or text completion of the request ``http`` on a model of ``served``: one JSON response,
    or a stream of server-sent events with ``stream: true``; the reasoning text goes in each of
    ``reasoning_fields``."""
    body = await _body(http)
    model, request, top = await asyncio.to_thread(parse_request, body, served, chat)  # tokenizing is heavy work
    want_ids = bool(body.get("return_token_ids"))
    want_logprobs = bool(body.get("logprobs"))
    updates = _submit(loop_wakeups, model, request, chat, bool(body.get("stream")))
    if body.get("stream"):
        return StreamingResponse(
            _stream(model, request, updates, chat, want_ids, body, reasoning_fields), media_type="text/event-stream"
        )
    if not await _finished(http, request, updates):
        return JSONResponse({"error": {"message": "client disconnected", "type": "cancelled"}}, status_code=499)
    if request.error:
        return JSONResponse({"error": {"message": request.error, "type": "server_error"}}, status_code=500)
    reasoning, content, reasoning_tokens, _ = _texts(model, request, _split(model, request), final=True)
    choice = {
        "index": 0,
        "finish_reason": request.finish_reason,
        "logprobs": _logprobs(model, request, top) if want_logprobs else None,
    }
    if chat:
        message = {"role": "assistant", "content": content}
        for field in reasoning_fields:
            message[field] = reasoning if model.reasoning else None
        choice["message"] = message
    else:
        choice["text"] = model.tokenizer.decode(request.output)
    if want_ids:
        choice["token_ids"] = list(request.output)
    response = {
        "id": f"cmpl-{request.id}",
        "object": "chat.completion" if chat else "text_completion",
        "created": int(time.time()),
        "model": model.name,
        "choices": [choice],
        "usage": _usage(request, reasoning_tokens),
    }
    if want_ids:
        response["prompt_token_ids"] = list(request.prompt_token_ids)
    return JSONResponse(response)  # plain JSON already: FastAPI's encoder need not walk it


async def _stream(model, request, updates, chat, want_ids, body, reasoning_fields: tuple[str, ...]):
    """The server-sent events of ``request`` as its engine steps arrive on ``updates``: a chunk of the text (and the
    token ids, with ``want_ids``) each gained since the last one, then the finish reason, the usage when asked for,
    and ``[DONE]``; a stream that ends early cancels the request."""
    sent_reasoning, sent_content, sent_ids = "", "", 0
    split = _split(model, request)
    kind = "chat.completion.chunk" if chat else "text_completion"

    def chunk(delta, finish=None):
        choice = {"index": 0, "finish_reason": finish}
        if "token_ids" in delta:
            choice["token_ids"] = delta.pop("token_ids")
        if chat:
            choice["delta"] = delta
        else:
            choice["text"] = delta.get("content", "") + delta.get(reasoning_fields[0], "")
        return (
            "data: "
            + json.dumps(
                {
                    "id": f"cmpl-{request.id}",
                    "object": kind,
                    "created": int(time.time()),
                    "model": model.name,
                    "choices": [choice],
                }
            )
            + "\n\n"
        )

    try:
        if chat:
            yield chunk({"role": "assistant", "content": ""})
        while True:
            await updates.get()
            while not updates.empty():  # steps delivered since the last chunk go out in this one
                updates.get_nowait()
            final = request.done.is_set()
            reasoning, content, reasoning_tokens, settled = _texts(model, request, split, final)
            if not final:  # hold back text that may still join a multi-byte character
                reasoning, content = reasoning.rstrip("\ufffd"), content.rstrip("\ufffd")
            delta = {}
            if model.reasoning and len(reasoning) > len(sent_reasoning):
                for field in reasoning_fields:
                    delta[field] = reasoning[len(sent_reasoning) :]
                sent_reasoning = reasoning
            if len(content) > len(sent_content):
                delta["content"] = content[len(sent_content) :]
                sent_content = content
            if want_ids and settled > sent_ids:
                delta["token_ids"] = request.output[sent_ids:settled]
                sent_ids = settled
            if delta:
                yield chunk(delta)
            if final:
                if request.error:
                    yield "data: " + json.dumps({"error": {"message": request.error}}) + "\n\n"
                yield chunk({}, request.finish_reason)
                if (body.get("stream_options") or {}).get("include_usage"):
                    yield (
                        "data: "
                        + json.dumps(
                            {
                                "id": f"cmpl-{request.id}",
                                "object": kind,
                                "choices": [],
                                "model": model.name,
                                "usage": _usage(request, reasoning_tokens),
                            }
                        )
                        + "\n\n"
                    )
                yield "data: [DONE]\n\n"
                return
    finally:  # the stream ended or its client went away: never generate for nobody
        if not request.done.is_set():
            request.cancel()


def create_app(served: dict[str, ServedModel], reasoning_fields: tuple[str, ...] = ("reasoning",)) -> FastAPI:
    """The app that serves the models of ``served`` (by name) on the endpoints of the module docstring; a message's
    reasoning text goes in each of ``reasoning_fields``."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        # the server is ending: its engine processes end with it, not when they next find the pipe closed
        for engine in {id(m.engine): m.engine for m in served.values()}.values():
            if isinstance(engine, (EngineProcess, EngineReplicas)):
                engine.stop()

    app = FastAPI(title="specconform embedded reference engine", lifespan=lifespan)
    app.state.served = served  # the engines behind the models, for tests and benchmarks
    loop_wakeups: _LoopWakeupsByLoop = weakref.WeakKeyDictionary()

    @app.exception_handler(BadRequest)
    async def bad_request(request, exc: BadRequest):
        return JSONResponse(
            {"error": {"message": exc.message, "type": "invalid_request_error", "param": exc.param, "code": None}},
            status_code=400,
        )

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/v1/models")
    async def list_models():
        return {
            "object": "list",
            "data": [{"id": n, "object": "model", "created": 0, "owned_by": "specconform"} for n in served],
        }

    @app.post("/tokenize")
    async def tokenize(http: Request):
        body = await _body(http)
        if not isinstance(body, dict):
            raise BadRequest("body", f"the request body must be a JSON object; got {body!r:.80}")
        model = served_model(body, served)
        if not isinstance(body.get("prompt"), str):
            raise BadRequest("prompt", f"prompt must be a string; got {body.get('prompt')!r:.80}")
        tokens = await asyncio.to_thread(model.tokenizer.encode, body["prompt"], add_special_tokens=False)
        return {"tokens": tokens, "count": len(tokens)}

    @app.post("/v1/chat/completions")
    async def chat_completions(http: Request):
        return await _complete(http, True, served, reasoning_fields, loop_wakeups)

    @app.post("/v1/completions")
    async def completions(http: Request):
        return await _complete(http, False, served, reasoning_fields, loop_wakeups)

    return app
