"""Validating a request body of the embedded engine's API: every field is checked, and a bad one is refused with
``BadRequest`` naming it (HTTP 400); a valid body becomes the engine's request (``parse_request``)."""

from __future__ import annotations

import secrets

from specconform import impl

from .engine import Request as EngineRequest
from .served import BadRequest, ServedModel


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
        raise BadRequest(name, f"{name} must be an integer in [{low}, {high}]; got {value!r:.80}")
    return value


def _flag(body, name) -> bool:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise BadRequest(name, f"{name} must be true or false; got {value!r:.80}")
    return bool(value)


def served_model(body, served: dict[str, ServedModel]) -> ServedModel:
    """The model of ``served`` that the body's ``model`` names."""
    name = body.get("model")
    if not isinstance(name, str) or name not in served:
        raise BadRequest(
            "model", f"model must be the name of a served model, one of {sorted(served)}; got {name!r:.80}"
        )
    return served[name]


def _message_text(index: int, message) -> str:
    """The text of ``messages[index]``: its ``content`` string, or its text parts joined."""
    where = f"messages[{index}]"
    if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
        raise BadRequest(
            "messages", f"{where} must be an object with role system, user or assistant; got {message!r:.80}"
        )
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequest(
                    "messages",
                    f"{where}.content[{j}] must be a text part {{'type': 'text', 'text': str}} (the only kind this "
                    f"model reads); got {part!r:.80}",
                )
            texts.append(part["text"])
        return "".join(texts)
    raise BadRequest(
        "messages", f"{where}.content must be a string or a non-empty list of text parts; got {content!r:.80}"
    )


def _prompt_ids(body, model: ServedModel, chat: bool) -> list[int]:
    tokenizer = model.tokenizer
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest(
                "messages", f"messages must be a non-empty list of {{role, content}} objects; got {messages!r:.80}"
            )
        texts = [_message_text(i, m) for i, m in enumerate(messages)]
        model.check_text_length("messages", sum(len(text.encode()) for text in texts))
        kwargs = body.get("chat_template_kwargs") or {}
        if not isinstance(kwargs, dict):
            raise BadRequest("chat_template_kwargs", f"chat_template_kwargs must be an object; got {kwargs!r:.80}")
        thinking = kwargs.get("enable_thinking", model.reasoning)
        if not isinstance(thinking, bool):
            raise BadRequest(
                "chat_template_kwargs",
                f"chat_template_kwargs.enable_thinking must be true or false; got {thinking!r:.80}",
            )
        text = tokenizer.apply_chat_template(
            [{**m, "content": t} for m, t in zip(messages, texts)],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=thinking,
        )
        return tokenizer.encode(text, add_special_tokens=False)
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        model.check_text_length("prompt", len(prompt.encode()))
        prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
        if not prompt_ids:
            raise BadRequest("prompt", "prompt must hold at least one token; got an empty string")
        return prompt_ids
    if (
        isinstance(prompt, list)
        and prompt
        and all(not isinstance(t, bool) and isinstance(t, int) and 0 <= t < len(tokenizer) for t in prompt)
    ):
        return list(prompt)
    raise BadRequest(
        "prompt",
        f"prompt must be a string or a non-empty list of token ids in [0, {len(tokenizer)}); got {prompt!r:.80}",
    )


# Sampling parameters this engine does not apply, with the values that leave sampling unchanged: any other
# value is refused naming the field, never dropped silently (specs/openai-api.md, API-SPEC-4).
_UNSUPPORTED_SAMPLING = {
    "top_k": (-1, 0),
    "top_p": (1,),
    "min_p": (0,),
    "logit_bias": ({},),
    "presence_penalty": (0,),
    "frequency_penalty": (0,),
    "repetition_penalty": (1,),
}


def parse_request(body, served: dict[str, ServedModel], chat: bool):
    """Validate every field of a request body; returns ``(model, engine request, top_logprobs)``."""
    if not isinstance(body, dict):
        raise BadRequest("body", f"the request body must be a JSON object; got {body!r:.80}")
    model = served_model(body, served)
    n = body.get("n")
    if n is not None and (isinstance(n, bool) or n != 1):
        raise BadRequest("n", f"n must be 1 (this engine returns one choice per request); got {n!r:.80}")
    stream = _flag(body, "stream")
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise BadRequest("stream_options", "stream_options is only allowed with stream: true")
        if not isinstance(options, dict) or set(options) - {"include_usage"}:
            raise BadRequest(
                "stream_options", f"stream_options must be an object {{include_usage: bool}}; got {options!r:.80}"
            )
        if not isinstance(options.get("include_usage", False), bool):
            raise BadRequest(
                "stream_options", f"stream_options.include_usage must be true or false; got {options!r:.80}"
            )
    for name in ("return_token_ids", "logprobs"):
        _flag(body, name)
    response_format = body.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise BadRequest(
            "response_format",
            f"response_format must be absent or {{type: text}}: this engine has no structured output; "
            f"got {response_format!r:.80}",
        )
    prompt_ids = _prompt_ids(body, model, chat)
    length_field = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    max_tokens = _int(body, "max_completion_tokens", None, 1, 4096) or _int(body, "max_tokens", 64, 1, 4096)
    positions = model.engine.context_length - model.engine.k
    if len(prompt_ids) + max_tokens > positions:
        prompt_field = "messages" if chat else "prompt"
        raise BadRequest(
            prompt_field if len(prompt_ids) >= positions else length_field,
            f"{prompt_field} ({len(prompt_ids)} tokens) plus {length_field} = {max_tokens} need "
            f"{len(prompt_ids) + max_tokens} positions; this model's context holds {positions}",
        )
    temperature = body.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 10:
        raise BadRequest("temperature", f"temperature must be a number in [0, 10]; got {temperature!r:.80}")
    seed = _int(body, "seed", None, 0, 2**62)
    for name, neutral in _UNSUPPORTED_SAMPLING.items():
        if body.get(name) is not None and body[name] not in neutral:
            raise BadRequest(
                name, f"{name} is not supported (this engine samples softmax(logits / T)); got {body[name]!r:.80}"
            )
    try:
        budget = impl.validate_budget(body.get("thinking_token_budget"), "thinking_token_budget")
    except ValueError as exc:
        raise BadRequest("thinking_token_budget", str(exc)) from None
    if budget is not None and not model.reasoning:
        raise BadRequest(
            "thinking_token_budget",
            f"thinking_token_budget is set but model {model.name!r} has no reasoning markers, so no budget can be "
            "enforced",
        )
    top = _int(body, "top_logprobs", 0, 0, 5)
    return (
        model,
        EngineRequest(
            prompt_ids, max_tokens, float(temperature), seed if seed is not None else secrets.randbits(62), budget
        ),
        top,
    )
