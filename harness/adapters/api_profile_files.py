"""What ``--api-profile`` names: a product's API profile by its name (``vllm``, ``sglang``, ...; ``http.API_PROFILES``)
or a YAML file of the user's own with the same fields (docs/profiles.md, "API profiles"), and the shape of a server's
answer that tells one API profile from another.

A file's mistakes are usage errors that name the file, the line and the key or value: an unknown key, a value that
is none of its key's values (``scope``, ``token_ids``, ``forced_logprobs``, ``utf8_boundary``), and a key that a
command-line option sets instead (``model``: ``--model``).
"""

from __future__ import annotations

from pathlib import Path

from .. import schemas, yaml_files
from ..profiles import SCOPE_CLASSES
from .http import API_PROFILES, FORCED_LOGPROBS, TOKEN_ID_SOURCES, UTF8_BOUNDARIES, ApiProfile, ids_from_logprobs

DEFAULT = "vllm"  # the API profile of a server named without --api-profile
# keys a file must not set: the command line's options name them (ApiProfile's field -> its option)
SET_BY_OPTIONS = {
    field: "--" + field.replace("_", "-")
    for field in ("model", "spec_model", "plain_model", "spec_base_url", "plain_base_url")
}
# the keys of an API profile file whose values are one of a fixed set
ONE_OF = {
    "scope": tuple(SCOPE_CLASSES),
    "token_ids": tuple(str(source) for source in TOKEN_ID_SOURCES if source),
    "forced_logprobs": FORCED_LOGPROBS,
    "utf8_boundary": UTF8_BOUNDARIES,
}


def api_profile(name_or_path: str | None) -> tuple[str, dict]:
    """The name and the fields (``ApiProfile``'s, but for the model options) of the API profile that ``--api-profile
    name_or_path`` names (``None``: the default, vLLM's); a ``ValueError`` names the mistake."""
    name = name_or_path or DEFAULT
    if name in API_PROFILES:
        return name, dict(API_PROFILES[name])
    path = Path(name)
    if not path.is_file():
        raise ValueError(
            f"--api-profile {name!r} is neither an API profile ({', '.join(API_PROFILES)}) nor a YAML file "
            "(docs/profiles.md shows one)"
        )
    file = yaml_files.read(path)
    for key, option in SET_BY_OPTIONS.items():
        if key in file.data:
            raise ValueError(f"{file.at(key)}: {key} is not an API profile's: the command line's {option} sets it")
    for key, allowed in ONE_OF.items():
        if file.data.get(key) is not None:
            yaml_files.one_of(file.data[key], allowed, file.at(key), key)
    fields = {key: value for key, value in file.data.items() if key != "name"}
    own_name = str(file.data.get("name") or path.stem)
    schemas.parse(ApiProfile, {"name": own_name, "model": "", **fields}, f"API profile {str(path)!r}", at=file.at)
    return own_name, fields


def option(text: str) -> str:
    """An argparse type for ``--api-profile``: ``text`` once it names an API profile or a valid file."""
    import argparse

    try:
        api_profile(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


# how each source of generated ids is asked for (ApiEngine.request_body asks so)
ASK_FOR_IDS = {
    "return_token_ids": {"return_token_ids": True},
    "verbose": {"return_tokens": True},
    "logprobs": {"logprobs": True},
}


def probe_request(profile: ApiProfile, model: str) -> dict:
    """A short chat request to ``model`` that asks for what ``profile`` reads (its token ids, its extra body)."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 2,
        "temperature": 0,
        **profile.extra_body,
        **ASK_FOR_IDS.get(profile.token_ids or "", {}),
    }


def missing_fields(profile: ApiProfile, request: dict, answer: dict) -> list[str]:
    """The fields that ``profile`` reads and ``answer`` (a chat completion, asked with ``request``: the body that
    ``profile`` builds) lacks: its reasoning field in the message, and the generated ids where it asks for them."""
    choice = (answer.get("choices") or [{}])[0]
    missing = []
    if profile.reasoning_field not in (choice.get("message") or {}):
        missing.append(f"message.{profile.reasoning_field}")
    found_ids = {
        "return_token_ids": "token_ids" in choice,
        "verbose": "tokens" in (answer.get("__verbose") or {}),
        "logprobs": ids_from_logprobs(request, choice) is not None,
    }
    if profile.token_ids and not found_ids[profile.token_ids]:
        missing.append(
            {"return_token_ids": "choice.token_ids", "verbose": "__verbose.tokens"}.get(
                profile.token_ids, "the ids of choice.logprobs"
            )
        )
    return missing


def shaped_like(request: dict, answer: dict, named: ApiProfile) -> str | None:
    """The product API profile that ``answer`` fits better than ``named``, which it does not fit: the one whose
    fields it holds, preferring one that asks for token ids as ``named`` did (so that they were seen); None when no
    other fits."""
    best, best_score = None, 0
    for name in sorted(API_PROFILES, key=lambda n: n != DEFAULT):  # the default first, where two fit alike
        other = ApiProfile(name=name, model="", **API_PROFILES[name])
        if name == named.name or other.reasoning_field == named.reasoning_field:
            continue
        seen = other.token_ids == named.token_ids  # its ids were asked for as it asks
        lacking = missing_fields(other if seen else other.model_copy(update={"token_ids": None}), request, answer)
        score = 0 if lacking else 1 + seen
        if score > best_score:
            best, best_score = name, score
    return best
