"""The embedded engine's OpenAI-compatible HTTP API (FastAPI).

Endpoints: ``/v1/chat/completions`` (streaming and not), ``/v1/completions``, ``/v1/models``,
``/health``. Request field ``thinking_token_budget`` (-1 or absent = none); reasoning in
``message.reasoning`` (and ``reasoning_content`` when configured); usage with
``completion_tokens_details.reasoning_tokens``; ``return_token_ids`` returns ``prompt_token_ids``
and per-choice ``token_ids`` as vLLM does. Invalid requests get HTTP 400 naming the field.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

import impl

from .engine import Engine
from .engine import Request as EngineRequest


class BadRequest(Exception):
    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param
        self.message = message


@dataclass
class ServedModel:
    name: str
    engine: Engine
    tokenizer: object
    reasoning: bool  # has reasoning markers: budgets allowed, reasoning split out


def split_reasoning(prompt_ids, output_ids, start, end, final: bool) -> tuple[list[int], list[int], int]:
    """``(reasoning ids, content ids, settled)`` of ``output_ids``: markers removed, a trailing partial
    marker held back (unless ``final``); ``settled`` counts the output tokens classified so far.

    A marker may begin in the prompt and end in the output: only its output tokens are dropped.
    """
    matchers = {False: impl.MarkerMatcher(start), True: impl.MarkerMatcher(end)}  # keyed by "inside a section"
    inside, matched = False, 0
    for token in prompt_ids:
        matched = matchers[inside].step(matched, token)
        if matched == len(matchers[inside]):
            inside, matched = not inside, 0
    reasoning, content, pending = [], [], []  # pending: output tokens that may belong to a marker
    for token in output_ids:
        pending.append(token)
        matched = matchers[inside].step(matched, token)
        if matched == len(matchers[inside]):  # every pending token lies inside the completed marker
            pending, inside, matched = [], not inside, 0
            continue
        keep = min(matched, len(pending))
        (reasoning if inside else content).extend(pending[: len(pending) - keep])
        pending = pending[len(pending) - keep :]
    if final:
        (reasoning if inside else content).extend(pending)
        pending = []
    return reasoning, content, len(output_ids) - len(pending)


def _int(body, name, default, low=None, high=None):
    value = body.get(name, default)
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (low is not None and value < low)
        or (high is not None and value > high)
    ):
        raise BadRequest(name, f"{name} must be an integer in [{low}, {high}]; got {value!r}")
    return value


def _parse(body, served: dict[str, ServedModel], chat: bool):
    if not isinstance(body, dict):
        raise BadRequest("body", "the request body must be a JSON object")
    name = body.get("model")
    if name not in served:
        raise BadRequest("model", f"model {name!r} is not served; available: {sorted(served)}")
    model = served[name]
    tokenizer = model.tokenizer
    if chat:
        messages = body.get("messages")
        if (
            not isinstance(messages, list)
            or not messages
            or not all(
                isinstance(m, dict)
                and isinstance(m.get("content"), str)
                and m.get("role") in ("system", "user", "assistant")
                for m in messages
            )
        ):
            raise BadRequest("messages", "messages must be a non-empty list of {role, content} objects")
        kwargs = body.get("chat_template_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise BadRequest("chat_template_kwargs", "chat_template_kwargs must be an object")
        text = tokenizer.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=kwargs.get("enable_thinking", model.reasoning),
        )
        prompt_ids = tokenizer.encode(text, add_special_tokens=False)
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, str):
            prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
        elif (
            isinstance(prompt, list) and prompt and all(isinstance(t, int) and 0 <= t < len(tokenizer) for t in prompt)
        ):
            prompt_ids = list(prompt)
        else:
            raise BadRequest("prompt", "prompt must be a string or a non-empty list of token ids")
    max_tokens = _int(body, "max_completion_tokens", None, 1, 4096) or _int(body, "max_tokens", 64, 1, 4096)
    temperature = body.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 10:
        raise BadRequest("temperature", f"temperature must be a number in [0, 10]; got {temperature!r}")
    seed = _int(body, "seed", None, 0, 2**62)
    try:
        budget = impl.validate_budget(body.get("thinking_token_budget"), "thinking_token_budget")
    except ValueError as exc:
        raise BadRequest("thinking_token_budget", str(exc)) from None
    if budget is not None and not model.reasoning:
        raise BadRequest(
            "thinking_token_budget",
            f"thinking_token_budget is set but model {name!r} has no reasoning markers, so no budget can be enforced",
        )
    top = _int(body, "top_logprobs", 0, 0, 5)
    return (
        model,
        EngineRequest(
            prompt_ids, max_tokens, float(temperature), seed if seed is not None else secrets.randbits(62), budget
        ),
        top,
    )


def create_app(served: dict[str, ServedModel], reasoning_fields: tuple[str, ...] = ("reasoning",)) -> FastAPI:
    app = FastAPI(title="specconform embedded reference engine")

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

    async def _body(http: Request):
        try:
            return await http.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise BadRequest("body", "the request body is not valid JSON") from None

    def _texts(model, request, final):
        start, end = model.engine.tiny.start_token_ids, model.engine.tiny.end_token_ids
        if model.reasoning:
            reasoning, content, settled = split_reasoning(request.prompt_token_ids, request.output, start, end, final)
        else:
            reasoning, content, settled = [], list(request.output), len(request.output)
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
                    {"token": model.tokenizer.decode([t]), "logprob": lp, "top_logprobs": []}
                    for t, lp in zip(request.output, request.logprobs)
                ]
            }
            if top is not None
            else None
        )

    async def _run(model, request):
        loop = asyncio.get_running_loop()
        updates: asyncio.Queue = asyncio.Queue()
        request.on_tokens = lambda r: loop.call_soon_threadsafe(updates.put_nowait, len(r.output))
        model.engine.submit(request)
        return updates

    async def _complete(http: Request, chat: bool):
        body = await _body(http)
        model, request, top = _parse(body, served, chat)
        want_ids = bool(body.get("return_token_ids"))
        want_logprobs = bool(body.get("logprobs"))
        if body.get("stream"):
            updates = await _run(model, request)
            return StreamingResponse(
                _stream(model, request, updates, chat, want_ids, body), media_type="text/event-stream"
            )
        await asyncio.get_running_loop().run_in_executor(None, model.engine.submit(request).done.wait)
        if request.error:
            return JSONResponse({"error": {"message": request.error, "type": "server_error"}}, status_code=500)
        reasoning, content, reasoning_tokens, _ = _texts(model, request, final=True)
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
        return response

    async def _stream(model, request, updates, chat, want_ids, body):
        sent_reasoning, sent_content, sent_ids = "", "", 0
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

        if chat:
            yield chunk({"role": "assistant", "content": ""})
        while True:
            await updates.get()
            final = request.done.is_set()
            reasoning, content, reasoning_tokens, settled = _texts(model, request, final)
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

    @app.post("/tokenize")
    async def tokenize(http: Request):
        body = await _body(http)
        if not isinstance(body, dict) or body.get("model") not in served:
            raise BadRequest("model", f"model {body.get('model') if isinstance(body, dict) else None!r} is not served")
        if not isinstance(body.get("prompt"), str):
            raise BadRequest("prompt", "prompt must be a string")
        tokens = served[body["model"]].tokenizer.encode(body["prompt"], add_special_tokens=False)
        return {"tokens": tokens, "count": len(tokens)}

    @app.post("/v1/chat/completions")
    async def chat_completions(http: Request):
        return await _complete(http, chat=True)

    @app.post("/v1/completions")
    async def completions(http: Request):
        return await _complete(http, chat=False)

    return app
