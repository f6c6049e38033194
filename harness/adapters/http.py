"""The adapter for engines judged through their OpenAI-compatible HTTP API (specs/openai-api.md).

An ``ApiEngine`` wraps a base URL and an ``ApiProfile`` that names the engine's request field for
the budget, its reasoning field, and its models. Every chat completion, streamed or not, goes through
the official ``openai`` client, as the engine's users reach it: the engine's own fields (token ids,
the reasoning field, the budget) travel as the client's extra fields, and a response the client
cannot parse is the server's failure (``UnparsableResponse``). Raw HTTP (``httpx2``, the client's own
transport) is used only for what the client cannot express: ``/tokenize``, ``/metrics``, ``/version``.
Token ids are observed as the engine returns them (vLLM's ``return_token_ids``, llama-server's
``__verbose`` field when it runs with ``--verbose``, or the ``id`` of each ``logprobs`` entry, MLX-LM's);
what the engine cannot show (no token ids, no spec-decode model, no model without markers) is
missing from its capabilities, and the checks (``specconform.harness.checks.api``) then say PRECONDITION_FAILED.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace

import httpx2
import yaml
from pydantic import model_validator

from .. import products, profiles, schemas, spec
from ..core import UnparsableResponse, UsageError
from ..schemas import Strict

PROBE_TIMEOUT_S = 10  # GET /models: how long a live server may take to answer it
RESTART_LIMIT_S = 600  # how long a restarted server may take to answer GET /models again

# ``openai`` is imported where it is used: it takes seconds to import, and every engine process and
# `specconform list` import this module.

# the parameters the client names; every other request field is sent as one of its extra fields
_CLIENT_PARAMETERS = (
    "model",
    "messages",
    "max_tokens",
    "temperature",
    "seed",
    "stream",
    "stream_options",
    "logit_bias",
    "n",
    "logprobs",
)


class ApiProfile(Strict):
    """What the harness must know of an OpenAI-compatible engine's API (a typed model: an unknown option is an error
    that names it)."""

    name: str
    model: str
    spec_model: str | None = None  # the same model with speculative decoding (API-SPEC-*)
    plain_model: str | None = None  # a model without reasoning markers (API-ERROR-2)
    # servers that serve one model each (vLLM): the base URL of each role's model; None: the main one
    spec_base_url: str | None = None
    plain_base_url: str | None = None
    # the name prefix of the engine's Prometheus speculative-decoding counters on /metrics beside /v1
    # (API-SPEC-3); None: the engine reports none
    spec_counters: str | None = None
    budget_field: str | None = "thinking_token_budget"  # dotted (custom_params.thinking_budget); None: no budget
    # where the generated ids come from (TOKEN_ID_SOURCES): "return_token_ids" (vLLM: the request field, then
    # choice.token_ids and prompt_token_ids), "verbose" (llama-server --verbose, asked with
    # return_tokens: __verbose.tokens, and the prompt ids by tokenizing __verbose.prompt; its streams
    # carry no ids, and its logprobs merge the ids of incomplete UTF-8 pieces), "logprobs" (MLX-LM: asked
    # with logprobs, the ``id`` of each choice.logprobs.content entry, one per generated token; no prompt
    # ids, no ids in streams, see ``ids_from_logprobs``), or None
    token_ids: str | None = "return_token_ids"
    tokenize_field: str = "prompt"  # the text field of the engine's /tokenize request
    scope: str = "request"  # the budget's scope: request (canonical) or section (TB-SCOPE-2)
    reasoning_field: str = "reasoning"
    start_text: str = "<think>"
    end_text: str = "</think>"
    spec_tolerance: float = 0.15  # API-SPEC-2: largest first-token TV accepted as equivalent
    # API-SPEC-4: sampling parameters the engine declares it does not apply with speculative decoding;
    # they are not sent, and reports list them
    unsupported_with_speculation: tuple[str, ...] = ()
    # API-LOGPROB-1: a forced token's logprob is the model's before the budget ("raw", vLLM's default
    # logprobs_mode raw_logprobs) or the processed distribution's, where it is certain ("processed": 0)
    forced_logprobs: str = "raw"
    # API-UTF-1: force where TB-FORCE-1 says ("force-immediately") or, after a token that ends inside a
    # UTF-8 character, up to 3 positions later once the character is complete ("complete-character")
    utf8_boundary: str = "force-immediately"
    # TB-END-1: the text the budget forces when it is not end_text alone (a transition phrase, then end_text:
    # vLLM's reasoning_end_str, llama.cpp's reasoning_budget_message before its end tag); None: end_text
    forced_end_text: str | None = None
    extra_body: dict = {}

    @model_validator(mode="after")
    def _known_variants(self):
        for name, allowed in (
            ("forced_logprobs", FORCED_LOGPROBS),
            ("utf8_boundary", UTF8_BOUNDARIES),
            ("token_ids", TOKEN_ID_SOURCES),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"API profile {self.name}: {name} must be one of "
                    f"{', '.join(str(value) for value in allowed)}; got {getattr(self, name)!r}"
                )
        return self


FORCED_LOGPROBS = ("raw", "processed")
UTF8_BOUNDARIES = ("force-immediately", "complete-character")
TOKEN_ID_SOURCES = ("return_token_ids", "verbose", "logprobs", None)


def ids_from_logprobs(request: dict, choice: dict) -> list[int] | None:
    """The generated ids of ``choice`` (a response choice as a dict) that its ``logprobs`` entries carry, one
    entry per token, each with its ``id`` (MLX-LM's ``mlx_lm/server.py``, lines 1473-1478: ``id`` and ``logprob``
    of each generated token); None where ``request`` (the chat request's body) asked for ``top_logprobs`` above 0,
    whose entries MLX-LM 0.32.2 fills with the first of the alternatives instead of the generated token
    (lines 1467-1472), or where the choice has no entries or an entry has no integer ``id``. The ids are the server's,
    read as it sent them."""
    if (request.get("top_logprobs") or 0) > 0:
        return None
    entries = (choice.get("logprobs") or {}).get("content")
    if not entries or not all(isinstance(entry, dict) and type(entry.get("id")) is int for entry in entries):
        return None
    return [entry["id"] for entry in entries]


def declared_api_profiles() -> dict[str, dict]:
    """The API profiles the products declare (``--api-profile``): name -> the fields its ``api-profile.yaml`` sets
    (harness/products/<product>/), each checked as an ``ApiProfile``: an unknown key is an error that names it."""
    declared = {}
    for product in products.products().values():
        if product.api_profile_path is not None:
            fields = yaml.safe_load(product.api_profile_path.read_text()) or {}
            where = f"API profile {str(product.api_profile_path)!r}"
            schemas.parse(ApiProfile, {"name": product.record.api_profile, "model": "", **fields}, where)
            declared[product.record.api_profile] = fields
    return declared


API_PROFILES = declared_api_profiles()


def embedded_profile(variant: str) -> ApiProfile:
    return ApiProfile(
        name=f"embedded-{variant}",
        model=f"tiny-think-{variant}",
        spec_model=f"tiny-think-{variant}-spec",
        plain_model=f"tiny-plain-{variant}",
    )


@dataclass(frozen=True)
class SpecCounters:
    """An engine's cumulative speculative-decoding counters, summed over their label sets.

    ``accepted_per_position[j]``: drafts whose first ``j + 1`` draft tokens were accepted."""

    drafts: int
    draft_tokens: int
    accepted: int
    accepted_per_position: tuple[int, ...]

    def __sub__(self, before: SpecCounters) -> SpecCounters:
        width = max(len(self.accepted_per_position), len(before.accepted_per_position))
        after_pos = self.accepted_per_position + (0,) * (width - len(self.accepted_per_position))
        before_pos = before.accepted_per_position + (0,) * (width - len(before.accepted_per_position))
        return SpecCounters(
            self.drafts - before.drafts,
            self.draft_tokens - before.draft_tokens,
            self.accepted - before.accepted,
            tuple(a - b for a, b in zip(after_pos, before_pos)),
        )


def parse_spec_counters(exposition: str, prefix: str) -> SpecCounters | None:
    """The counters ``{prefix}_num_drafts``, ``_num_draft_tokens``, ``_num_accepted_tokens`` and
    ``_num_accepted_tokens_per_pos{position}`` of a Prometheus text exposition (vLLM's names); None
    when it has no ``{prefix}_num_drafts`` counter."""
    from prometheus_client.parser import text_string_to_metric_families

    totals: Counter = Counter()
    per_position: Counter = Counter()
    found = False
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if not sample.name.startswith(prefix) or not sample.name.endswith("_total"):
                continue
            name = sample.name[len(prefix) : -len("_total")]
            if name == "_num_accepted_tokens_per_pos":
                per_position[int(sample.labels["position"])] += round(sample.value)
            else:
                totals[name] += round(sample.value)
                found |= name == "_num_drafts"
    if not found:
        return None
    width = max(per_position, default=-1) + 1
    return SpecCounters(
        totals["_num_drafts"],
        totals["_num_draft_tokens"],
        totals["_num_accepted_tokens"],
        tuple(per_position[j] for j in range(width)),
    )


def auth_headers(api_key: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    """The headers every raw request carries: ``headers``, and ``Authorization: Bearer <api_key>`` when a key is
    given (a header of that name among ``headers`` wins)."""
    return {**({"Authorization": f"Bearer {api_key}"} if api_key else {}), **(headers or {})}


def kept_for_reproduction(response: dict) -> dict:
    """What the exchange log (``ApiEngine.exchanges``, the ``requests`` of an API reproduction) keeps of a
    parsed chat response (``ChatCompletion.model_dump()``): what a person reading the reproduction needs
    to follow the check's judgement, without the rest of a llama-server response (about 50 KB with
    ``logprobs``: the alternatives of every token, timings, sampler settings). The checks judge the
    response ``complete`` returns, never this copy; ``response`` is left unchanged.

    Kept: each choice's ``index``, ``message``, ``finish_reason`` and ``token_ids``, and its ``logprobs``
    entries as ``id``, ``token``, ``bytes``, ``logprob`` (what the UTF-8 and forced-logprob checks read);
    ``usage``; ``prompt_token_ids``; of llama-server's ``__verbose``, ``tokens`` and ``prompt`` (where the
    ``verbose`` profile reads the ids) and ``content`` (the text before the reasoning parser split it).
    Dropped: ``top_logprobs``, ``__verbose``'s ``completion_probabilities``, settings and timings, and the
    envelope (``id``, ``created``, ``model``, ``timings``, ...)."""

    def entry_kept(entry: dict) -> dict:
        return {key: entry[key] for key in ("id", "token", "bytes", "logprob") if key in entry}

    def choice_kept(choice: dict) -> dict:
        kept = {key: choice[key] for key in ("index", "message", "finish_reason", "token_ids") if key in choice}
        if "logprobs" in choice:
            logprobs = choice["logprobs"]
            kept["logprobs"] = logprobs and {
                key: [entry_kept(entry) for entry in entries]
                for key, entries in logprobs.items()
                if isinstance(entries, list)
            }
        return kept

    kept = {"choices": [choice_kept(choice) for choice in response.get("choices") or ()]}
    kept |= {key: response[key] for key in ("usage", "prompt_token_ids") if key in response}
    if isinstance(response.get("__verbose"), dict):
        verbose = response["__verbose"]
        kept["__verbose"] = {key: verbose[key] for key in ("tokens", "prompt", "content") if key in verbose}
    return kept


class ServerDown(Exception):
    """A server the engine needs does not answer and could not be restarted."""


class ApiEngine:
    """An engine judged over HTTP: one server, or one server per role (``spec_base_url``,
    ``plain_base_url``) for engines that serve one model each.

    ``restart_command``: a shell command that restarts a server that stopped answering (a request
    that killed it, say). It runs with ``SPECCONFORM_BASE_URL`` set to that server's base URL; the
    adapter then waits up to ``RESTART_LIMIT_S`` for the server to answer ``GET /models``. Without
    one, a server that does not answer is reported (``ServerDown``), never restarted."""

    def __init__(
        self,
        base_url: str,
        api: ApiProfile,
        name: str | None = None,
        restart_command: str | None = None,
        api_key: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        import openai

        self.base_url = base_url.rstrip("/")
        self.restart_command = restart_command
        self._restarts: list[str] = []  # restarts not yet reported by ``revive``
        self.api = api
        self.name = name or f"http:{api.name}"
        self.base_urls = {api.model: self.base_url}
        for role, model, url in (
            ("spec", api.spec_model, api.spec_base_url),
            ("plain", api.plain_model, api.plain_base_url),
        ):
            if url and not model:
                raise UsageError(f"{role}_base_url {url!r} is given, but no {role}_model is named")
            if model:
                url = (url or base_url).rstrip("/")
                if self.base_urls.get(model, url) != url:  # requests go by model name: one name, one server
                    raise UsageError(
                        f"{role}_model {model!r} is also the model of {self.base_urls[model]}, but {role}_base_url is "
                        f"{url!r}: each server's model needs its own name (--served-model-name)"
                    )
                self.base_urls[model] = url
        servers = list(dict.fromkeys(self.base_urls.values()))
        self.device = " ".join(servers)
        # a server started with --api-key gets ``api_key``, else OPENAI_API_KEY, as the client reads it, on every
        # request (the raw ones to /models, /tokenize and /metrics too), with the user's own ``headers``
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        self.http = httpx2.Client(timeout=120, headers=auth_headers(api_key, headers))
        self.clients = {
            server: openai.OpenAI(
                base_url=server,
                api_key=api_key or "specconform",
                default_headers=headers or None,
                http_client=self.http,
                max_retries=0,
                timeout=120,
            )
            for server in servers
        }
        self._tokenized: dict[str, list[int]] = {}
        # every chat request and what came back (a parsed response as ``kept_for_reproduction`` keeps it), for a
        # failing API check's reproduction (cleared per check)
        self.exchanges: list[dict] = []
        self._restarts = self._restart_dead()
        listings = []
        for server in servers:
            listing = self.http.get(f"{server}/models")
            try:
                served = [m["id"] for m in listing.json().get("data", [])]
                # the models judged here (a server may serve others, e.g. another tokenizer variant); a model named
                # by its file (llama-server lists the path it loaded) by the file's name, no path of this machine
                judged = [m for m in served if m in self.base_urls] or served
                listings.append(",".join(os.path.basename(m) if os.path.isabs(m) else m for m in judged))
            except ValueError:  # /models is no requirement of this spec; some servers fail it
                listings.append(f"unknown (GET /models: HTTP {listing.status_code})")
        self.version = ",".join(listings)
        said = self._said_version()
        if said:
            self.version = f"{said} ({self.version})"
        api_classes = {c for c in spec.classes() if c.startswith("api.")}
        if api.budget_field is None:  # an engine without a budget claims neither it nor its errors
            api_classes -= {"api.budget", "api.errors"}
        self.profile = replace(
            profiles.canonical(api.scope),
            name=api.name,
            classes=frozenset(api_classes),
            capabilities=frozenset({"http"}) | self._probe(),
        )

    def _said_version(self) -> str | None:
        """The version the server says beside ``/v1``: ``/version`` (vLLM, SGLang), else ``/props``'s
        ``build_info`` (llama-server); None when it says neither."""
        root = self.base_url.rsplit("/v1", 1)[0]
        for path, key in (("/version", "version"), ("/props", "build_info")):
            try:
                said = self.http.get(f"{root}{path}").json().get(key)
            except (httpx2.HTTPError, ValueError, AttributeError):
                continue
            if said:
                return str(said)
        return None

    def _probe(self) -> set[str]:
        """The capabilities a first request shows; ``probe_problem`` says why one is missing."""
        import openai

        found = set()
        self.probe_problem = ""
        try:
            response = self.complete(self.api.model, budget=None, max_tokens=2, temperature=0)
            if "token_ids" in response["choices"][0]:
                found.add("token-ids")
            self.start_ids = self.tokenize(self.api.start_text)
            self.end_ids = self.tokenize(self.api.end_text)
            self.forced_ids = self.tokenize(self.api.forced_end_text) if self.api.forced_end_text else self.end_ids
            if "token-ids" in found and "prompt_token_ids" not in response:
                raise KeyError(f"its responses carry no prompt ids (token ids: {self.api.token_ids})")
            found.add("marker-ids")
        except (openai.APIError, httpx2.HTTPError, UnparsableResponse, KeyError, ValueError) as error:
            self.probe_problem = f"{type(error).__name__}: {error}"
        if self.api.spec_model:
            found.add("spec-model")
        if self.api.plain_model:
            found.add("plain-model")
        return found

    def dead_servers(self) -> dict[str, str]:
        """Each server that does not answer ``GET /models`` now, with the transport's error."""
        errors = {server: self._unanswered(server) for server in self.clients}
        return {server: error for server, error in errors.items() if error}

    def _unanswered(self, server: str) -> str:
        """Why ``server`` does not answer ``GET /models`` ("" when it answers, whatever its status)."""
        try:
            self.http.get(f"{server}/models", timeout=PROBE_TIMEOUT_S)
        except httpx2.TransportError as error:
            return f"{type(error).__name__}: {error}"
        return ""

    def revive(self) -> list[str]:
        """Restart every server that does not answer (``restart_command``); one line per restart made
        since the last call, the engine's construction included. Raises ``ServerDown`` naming the server
        when it cannot be restarted: no command, the command failed, or no answer in time."""
        restarts = self._restarts + self._restart_dead()
        self._restarts = []
        return restarts

    def _restart_dead(self) -> list[str]:
        restarts = []
        for server, error in self.dead_servers().items():
            if not self.restart_command:
                raise ServerDown(f"the server at {server} does not answer ({error}); no --restart-command was given")
            started = time.monotonic()
            with tempfile.TemporaryFile() as output:  # a file, not a pipe: a server the command starts may keep it open
                done = subprocess.run(
                    self.restart_command,
                    shell=True,
                    env={**os.environ, "SPECCONFORM_BASE_URL": server},
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
                output.seek(0)
                said = output.read().decode(errors="replace").strip()
            if done.returncode != 0:
                raise ServerDown(
                    f"the server at {server} does not answer ({error}); --restart-command {self.restart_command!r} "
                    f"exited with code {done.returncode}: {said[-500:]}"
                )
            while self._unanswered(server):
                if time.monotonic() - started > RESTART_LIMIT_S:
                    raise ServerDown(
                        f"the server at {server} does not answer ({error}), nor {RESTART_LIMIT_S} s after "
                        f"--restart-command {self.restart_command!r}"
                    )
                time.sleep(1)
            restarts.append(
                f"the server at {server} did not answer ({error}); restarted by --restart-command, "
                f"answering after {time.monotonic() - started:.0f} s"
            )
        return restarts

    def url_of(self, model: str) -> str:
        """The base URL of the server that serves ``model``."""
        return self.base_urls.get(model, self.base_url)

    def spec_counters(self) -> SpecCounters | None:
        """The speculative-decoding counters of the ``spec_model``'s server (``/metrics`` beside
        ``/v1``); None when the profile names none or the server exposes none."""
        if not self.api.spec_counters or not self.api.spec_model:
            return None
        root = self.url_of(self.api.spec_model).rsplit("/v1", 1)[0]
        response = self.http.get(f"{root}/metrics")
        if response.status_code != 200:
            return None
        return parse_spec_counters(response.text, self.api.spec_counters)

    def tokenize(self, text: str) -> list[int]:
        """The engine's own ids for ``text`` (its ``/tokenize`` endpoint, beside ``/v1``)."""
        if text not in self._tokenized:
            root = self.base_url.rsplit("/v1", 1)[0]
            response = self.http.post(f"{root}/tokenize", json={"model": self.api.model, self.api.tokenize_field: text})
            response.raise_for_status()
            self._tokenized[text] = response.json()["tokens"]
        return self._tokenized[text]

    def request_body(self, model, budget, max_tokens, temperature, seed=None, stream=False, messages=None, fields=None):
        """The chat request's body; ``fields``: further request fields (``n``, ``logprobs``, ...)."""
        body = {
            "model": model,
            "messages": messages or [{"role": "user", "content": "What is 12 times 7?"}],
            "max_tokens": max_tokens,
            "temperature": temperature,
            **self.api.extra_body,
            **(fields or {}),
        }
        if self.api.token_ids == "return_token_ids":
            body["return_token_ids"] = True
        elif self.api.token_ids == "verbose":
            body["return_tokens"] = True
        elif self.api.token_ids == "logprobs" and not stream:  # its streams carry no logprobs entries
            body.setdefault("logprobs", True)
        if seed is not None:
            body["seed"] = seed
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        if budget is not None and self.api.budget_field is not None:
            target = body
            *path, last = self.api.budget_field.split(".")
            for key in path:
                target = target.setdefault(key, {})
            target[last] = budget
        return body

    def _create(self, model, body: dict, raw: bool = False):
        """``chat.completions.create`` on ``model``'s server with ``body`` (``request_body``): the client's
        own parameters by name, the engine's fields as extra fields."""

        named = {key: body[key] for key in _CLIENT_PARAMETERS if key in body}
        extra = {key: value for key, value in body.items() if key not in _CLIENT_PARAMETERS}
        completions = self.clients[self.url_of(model)].chat.completions
        if raw:
            return completions.with_raw_response.create(**named, extra_body=extra)
        return completions.create(**named, extra_body=extra)

    def complete(self, model, budget, max_tokens, temperature, seed=None, raw=False, **kwargs):
        """The response as a dict (``ChatCompletion.model_dump()``: the client's fields and every extra
        field the engine sent). ``raw``: the HTTP response itself (``status_code``, ``text``), errors
        included. Raises ``UnparsableResponse`` when the client cannot read a successful response."""
        import openai

        body = self.request_body(model, budget, max_tokens, temperature, seed, **kwargs)
        if raw:
            try:
                response = self._create(model, body, raw=True).http_response
            except openai.APIStatusError as error:
                response = error.response
            self._log(model, body, {"status_code": response.status_code, "text": response.text})
            return response
        try:
            completion = self._create(model, body)
            if not isinstance(completion.choices, list):
                raise TypeError(f"choices is {completion.choices!r}, not a list of choices")
            data = completion.model_dump()
        except (openai.APIStatusError, openai.APIConnectionError):
            raise  # an HTTP error or no answer: not a matter of parsing
        except (openai.APIResponseValidationError, ValueError, TypeError, AttributeError) as error:
            raise UnparsableResponse(
                f"{model}: the openai client could not parse the response: {type(error).__name__}: {error}"
            ) from None
        verbose = data.get("__verbose")
        if self.api.token_ids == "verbose" and verbose and "tokens" in verbose and data.get("choices"):
            data["choices"][0]["token_ids"] = verbose["tokens"]
            data["prompt_token_ids"] = self.tokenize(verbose["prompt"])
        if self.api.token_ids == "logprobs":
            for choice in data.get("choices") or ():
                if (ids := ids_from_logprobs(body, choice)) is not None:
                    choice["token_ids"] = ids
        self._log(model, body, kept_for_reproduction(data))
        return data

    def _log(self, model: str, body: dict, response: dict) -> None:
        self.exchanges.append({"url": f"{self.url_of(model)}/chat/completions", "body": body, "response": response})

    def stream(self, model, budget, max_tokens, temperature, seed=None):
        """Concatenated stream, read chunk by chunk through the client: token ids (None where the engine
        streams none), reasoning, content, finish reason, usage (a dict, or None)."""
        import openai

        streams_ids = self.api.token_ids == "return_token_ids"
        out = {"token_ids": [] if streams_ids else None, "reasoning": "", "content": "", "finish_reason": None}
        out["usage"] = None
        body = self.request_body(model, budget, max_tokens, temperature, seed, stream=True)
        try:
            with self._create(model, body) as chunks:
                for chunk in chunks:
                    if chunk.usage:
                        out["usage"] = chunk.usage.model_dump()
                    for choice in chunk.choices or []:
                        if streams_ids:
                            out["token_ids"] += getattr(choice, "token_ids", None) or []
                        if choice.delta is not None:
                            out["reasoning"] += getattr(choice.delta, self.api.reasoning_field, None) or ""
                            out["content"] += choice.delta.content or ""
                        out["finish_reason"] = choice.finish_reason or out["finish_reason"]
        except (openai.APIStatusError, openai.APIConnectionError):
            raise
        except (openai.APIResponseValidationError, ValueError, TypeError, AttributeError) as error:
            raise UnparsableResponse(
                f"{model}: the openai client could not parse the stream: {type(error).__name__}: {error}"
            ) from None
        self._log(model, body, {"streamed": out})
        return out
