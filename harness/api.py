"""Judging engines through their OpenAI-compatible HTTP API (specs/openai-api.md).

An ``ApiEngine`` wraps a base URL and an ``ApiProfile`` that names the engine's request field for
the budget, its reasoning field, and its models. Checks observe token ids (vLLM's
``return_token_ids``, or llama-server's ``__verbose`` field when it runs with ``--verbose``) and
replay the oracle over prompt + output, so "the budget holds" is judged exactly: every position
the oracle forces must carry the forced token. Capabilities the engine cannot show (no token ids,
no spec-decode endpoint, no model without markers) make a check PRECONDITION_FAILED, not FAIL.
"""

from __future__ import annotations

import concurrent.futures
import math
from collections import Counter
from dataclasses import dataclass, field, replace

import httpx

from . import profiles, spec
from .checks import FAIL, PASS, PRECONDITION_FAILED, Check, Context, Outcome
from .oracle import budget as tb
from .oracle.naive import thinking_tokens


@dataclass(frozen=True)
class ApiProfile:
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
    # where the generated ids come from: "return_token_ids" (vLLM: the request field, then
    # choice.token_ids and prompt_token_ids), "verbose" (llama-server --verbose, asked with
    # return_tokens: __verbose.tokens, and the prompt ids by tokenizing __verbose.prompt; its streams
    # carry no ids, and its logprobs merge the ids of incomplete UTF-8 pieces), or None
    token_ids: str | None = "return_token_ids"
    tokenize_field: str = "prompt"  # the text field of the engine's /tokenize request
    scope: str = "request"  # the budget's scope: request (canonical) or section (TB-SCOPE-2)
    reasoning_field: str = "reasoning"
    start_text: str = "<think>"
    end_text: str = "</think>"
    spec_tolerance: float = 0.15  # API-SPEC-2: largest first-token TV accepted as equivalent
    extra_body: dict = field(default_factory=dict)


API_PROFILES = {
    "vllm": dict(budget_field="thinking_token_budget", reasoning_field="reasoning", spec_counters="vllm:spec_decode"),
    "sglang": dict(budget_field="custom_params.thinking_budget", reasoning_field="reasoning_content"),
    "llamacpp": dict(
        budget_field="reasoning_budget_tokens",  # thinking_budget_tokens is its alias
        reasoning_field="reasoning_content",
        token_ids="verbose",
        tokenize_field="content",
        scope="section",  # llama.cpp re-arms a fresh budget on each new start marker
    ),
    # no thinking budget and no token ids: budget classes are not claimed, id-based checks cannot run
    "transformers-serve": dict(budget_field=None, reasoning_field="reasoning_content", token_ids=None),
}


def embedded_profile(variant: str) -> ApiProfile:
    return ApiProfile(
        f"embedded-{variant}",
        f"tiny-think-{variant}",
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


class ApiEngine:
    """An engine judged over HTTP: one server, or one server per role (``spec_base_url``,
    ``plain_base_url``) for engines that serve one model each."""

    def __init__(self, base_url: str, api: ApiProfile, name: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.name = name or f"http:{api.name}"
        self.base_urls = {api.model: self.base_url}
        for role, model, url in (
            ("spec", api.spec_model, api.spec_base_url),
            ("plain", api.plain_model, api.plain_base_url),
        ):
            if url and not model:
                raise ValueError(f"{role}_base_url {url!r} is given, but no {role}_model is named")
            if model:
                self.base_urls[model] = (url or base_url).rstrip("/")
        servers = list(dict.fromkeys(self.base_urls.values()))
        self.device = " ".join(servers)
        self.http = httpx.Client(timeout=120)
        self._tokenized: dict[str, list[int]] = {}
        listings = []
        for server in servers:
            listing = self.http.get(f"{server}/models")
            try:
                listings.append(",".join(m["id"] for m in listing.json().get("data", [])))
            except ValueError:  # /models is no requirement of this spec; some servers fail it
                listings.append(f"unknown (GET /models: HTTP {listing.status_code})")
        self.version = ",".join(listings)
        try:  # vLLM and SGLang say their version at /version beside /v1
            said = self.http.get(f"{self.base_url.rsplit('/v1', 1)[0]}/version").json().get("version")
        except (httpx.HTTPError, ValueError, AttributeError):
            said = None
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

    def _probe(self) -> set[str]:
        found = set()
        try:
            response = self.complete(self.api.model, budget=None, max_tokens=2, temperature=0)
            if "token_ids" in response["choices"][0]:
                found.add("token-ids")
            self.start_ids = self.tokenize(self.api.start_text)
            self.end_ids = self.tokenize(self.api.end_text)
            found.add("marker-ids")
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        if self.api.spec_model:
            found.add("spec-model")
        if self.api.plain_model:
            found.add("plain-model")
        return found

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

    def request_body(self, model, budget, max_tokens, temperature, seed=None, stream=False, messages=None):
        body = {
            "model": model,
            "messages": messages or [{"role": "user", "content": "What is 12 times 7?"}],
            "max_tokens": max_tokens,
            "temperature": temperature,
            **self.api.extra_body,
        }
        if self.api.token_ids == "return_token_ids":
            body["return_token_ids"] = True
        elif self.api.token_ids == "verbose":
            body["return_tokens"] = True
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

    def complete(self, model, budget, max_tokens, temperature, seed=None, raw=False, **kwargs):
        response = self.http.post(
            f"{self.url_of(model)}/chat/completions",
            json=self.request_body(model, budget, max_tokens, temperature, seed, **kwargs),
        )
        if raw:
            return response
        response.raise_for_status()
        data = response.json()
        verbose = data.get("__verbose")
        if self.api.token_ids == "verbose" and verbose and "tokens" in verbose and data.get("choices"):
            data["choices"][0]["token_ids"] = verbose["tokens"]
            data["prompt_token_ids"] = self.tokenize(verbose["prompt"])
        return data

    def stream(self, model, budget, max_tokens, temperature, seed=None):
        """Concatenated stream: token ids (None where the engine streams none), reasoning, content,
        finish reason, usage."""
        import json

        streams_ids = self.api.token_ids == "return_token_ids"
        out = {"token_ids": [] if streams_ids else None, "reasoning": "", "content": "", "finish_reason": None}
        out["usage"] = None
        body = self.request_body(model, budget, max_tokens, temperature, seed, stream=True)
        with self.http.stream("POST", f"{self.url_of(model)}/chat/completions", json=body) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    out["usage"] = chunk["usage"]
                for choice in chunk.get("choices", []):
                    if streams_ids:
                        out["token_ids"] += choice.get("token_ids") or []
                    delta = choice.get("delta", {})
                    out["reasoning"] += delta.get(self.api.reasoning_field) or ""
                    out["content"] += delta.get("content") or ""
                    out["finish_reason"] = choice.get("finish_reason") or out["finish_reason"]
        return out


# ---------------------------------------------------------------------------------------------
# Judging one response


def _violations(engine: ApiEngine, prompt_ids, output_ids, budget) -> str:
    """Replay the oracle over prompt + output: every forced position must carry its token."""
    if budget is None:
        return ""
    state = tb.RequestBudget.from_prompt(
        tb.MarkerAutomaton(engine.start_ids),
        tb.MarkerAutomaton(engine.end_ids),
        budget,
        prompt_ids,
        scope=engine.api.scope,
    )
    for i, token in enumerate(output_ids):
        forced = state.forced_token()
        if forced != -1 and token != forced:
            return f"budget {budget}: output position {i} is {token}, the budget forces {forced}"
        state.feed(token)
    return ""


def _thinking(engine, prompt_ids, output_ids) -> tuple[int, int, bool]:
    """(thinking tokens, of them generated, closed) of the section open at the end of the prompt."""
    found = thinking_tokens(prompt_ids + output_ids, engine.start_ids, engine.end_ids, len(prompt_ids))
    return found[0] if found else (0, 0, False)


def _budget_requests(engine: ApiEngine, ctx: Context, model: str, budgets) -> Outcome:
    for budget in budgets:
        for seed in range(3):
            response = engine.complete(model, budget, max_tokens=budget + 12, temperature=1.0, seed=ctx.seed + seed)
            ids = response["choices"][0]["token_ids"]
            problem = _violations(engine, response["prompt_token_ids"], ids, budget)
            if problem:
                return Outcome(FAIL, f"{model}: {problem}", ("API-BUDGET-2",))
            thinking, generated, closed = _thinking(engine, response["prompt_token_ids"], ids)
            if closed and engine.api.end_text in (
                response["choices"][0]["message"].get(engine.api.reasoning_field) or ""
            ):
                return Outcome(FAIL, f"{model}: the end marker leaked into the reasoning", ("API-REASON-1",))
    return Outcome(PASS, f"{model}: budgets {list(budgets)} × 3 seeds: every forced position carries its token")


def _needs_ids(fn):
    def run(engine, ctx):
        if not {"token-ids", "marker-ids"} <= engine.profile.capabilities:
            return Outcome(PRECONDITION_FAILED, "the engine returns no token ids or marker ids")
        return fn(engine, ctx)

    return run


@_needs_ids
def _holds(engine, ctx):
    return _budget_requests(engine, ctx, engine.api.model, (2, 5, 9))


@_needs_ids
def _zero_and_one(engine, ctx):
    outcome = _budget_requests(engine, ctx, engine.api.model, (0, 1))
    if outcome.status == FAIL:
        outcome.violated = ("API-BUDGET-4",)
    return outcome


@_needs_ids
def _binds(engine, ctx):
    budget = 3
    response = engine.complete(engine.api.model, None, max_tokens=24, temperature=1.0, seed=ctx.seed)
    thinking, generated, closed = _thinking(engine, response["prompt_token_ids"], response["choices"][0]["token_ids"])
    if thinking <= budget:
        return Outcome(
            PRECONDITION_FAILED,
            f"the positive control thought only {thinking} tokens without a budget; "
            f"a budget of {budget} cannot be shown to bind",
        )
    bounded = engine.complete(engine.api.model, budget, max_tokens=24, temperature=1.0, seed=ctx.seed)
    t2, _, closed2 = _thinking(engine, bounded["prompt_token_ids"], bounded["choices"][0]["token_ids"])
    if t2 > budget or not closed2:
        return Outcome(FAIL, f"with budget {budget}: {t2} thinking tokens, closed {closed2}", ("API-BUDGET-3",))
    return Outcome(PASS, f"without a budget {thinking} thinking tokens; with budget {budget}: {t2}, then closed")


@_needs_ids
def _spec_budget(engine, ctx):
    if "spec-model" not in engine.profile.capabilities:
        return Outcome(PRECONDITION_FAILED, "the profile names no speculative-decoding model")
    outcome = _budget_requests(engine, ctx, engine.api.spec_model, (0, 1, 4, 9))
    if outcome.status == FAIL:
        outcome.violated = ("API-BUDGET-6",)
    return outcome


@_needs_ids
def _multitoken_end(engine, ctx):
    if len(engine.end_ids) < 2:
        return Outcome(PRECONDITION_FAILED, f"{engine.api.end_text!r} is one token for {engine.api.model}")
    for seed in range(4):
        response = engine.complete(engine.api.model, 3, max_tokens=20, temperature=1.0, seed=ctx.seed + seed)
        prompt, ids = response["prompt_token_ids"], response["choices"][0]["token_ids"]
        thinking, generated, closed = _thinking(engine, prompt, ids)
        if not closed:
            return Outcome(FAIL, f"seed {seed}: the section never closed: {ids}", ("API-BUDGET-7",))
        close_at = generated + len(engine.end_ids)  # in output coordinates
        if ids[close_at - len(engine.end_ids) : close_at] != list(engine.end_ids):
            return Outcome(FAIL, f"seed {seed}: the end marker is not contiguous: {ids}", ("API-BUDGET-7",))
    return Outcome(PASS, f"{engine.api.end_text!r} = {engine.end_ids} arrives whole and contiguous")


@_needs_ids
def _concurrent(engine, ctx):
    budgets = [None, 0, 1, 2, 3, 5, 8, None, 4, 0, 6, 2, None, 7, 1, 3]
    models = [engine.api.model] + ([engine.api.spec_model] if engine.api.spec_model else [])

    def one(i):
        model = models[i % len(models)]
        return model, budgets[i], engine.complete(model, budgets[i], max_tokens=16, temperature=1.0, seed=ctx.seed + i)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        results = list(pool.map(one, range(len(budgets))))
    for i, (model, budget, response) in enumerate(results):
        problem = _violations(engine, response["prompt_token_ids"], response["choices"][0]["token_ids"], budget)
        if problem:
            return Outcome(FAIL, f"request {i} ({model}): {problem}", ("API-BUDGET-5",))
        again = engine.complete(model, budget, max_tokens=16, temperature=1.0, seed=ctx.seed + i)
        if again["choices"][0]["token_ids"] != response["choices"][0]["token_ids"]:
            return Outcome(
                FAIL,
                f"request {i} ({model}): concurrent and sequential runs of the same seeded request differ",
                ("API-BUDGET-5",),
            )
    return Outcome(PASS, f"{len(budgets)} concurrent requests with mixed budgets each obey their own budget")


@_needs_ids
def _usage(engine, ctx):
    for budget in (None, 4):
        response = engine.complete(engine.api.model, budget, max_tokens=20, temperature=1.0, seed=ctx.seed)
        ids = response["choices"][0]["token_ids"]
        usage = response["usage"]
        if usage["completion_tokens"] != len(ids):
            return Outcome(
                FAIL, f"completion_tokens {usage['completion_tokens']} but {len(ids)} ids returned", ("API-USAGE-1",)
            )
        reported = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
        _, generated, _ = _thinking(engine, response["prompt_token_ids"], ids)
        if reported is not None and reported != generated:
            return Outcome(
                FAIL, f"reasoning_tokens {reported}, but {generated} reasoning tokens were generated", ("API-USAGE-2",)
            )
    return Outcome(PASS, "usage matches the returned ids, reasoning tokens included")


def _streaming(engine, ctx):
    budgets = ((None, 0.0), (3, 0.0), (4, 1.0)) if engine.api.budget_field else ((None, 0.0), (None, 1.0))
    for model in filter(None, (engine.api.model, engine.api.spec_model)):
        for budget, temperature in budgets:
            whole = engine.complete(model, budget, max_tokens=16, temperature=temperature, seed=ctx.seed)
            streamed = engine.stream(model, budget, max_tokens=16, temperature=temperature, seed=ctx.seed)
            choice = whole["choices"][0]
            pairs = [
                ("reasoning", choice["message"].get(engine.api.reasoning_field) or "", streamed["reasoning"]),
                ("content", choice["message"]["content"] or "", streamed["content"]),
                ("finish reason", choice["finish_reason"], streamed["finish_reason"]),
            ]
            if streamed["token_ids"] is not None:
                pairs.insert(0, ("token ids", choice.get("token_ids", []), streamed["token_ids"]))
            for what, a, b in pairs:
                if a != b:
                    return Outcome(
                        FAIL, f"{model} budget {budget}: {what} differ: {a!r} vs streamed {b!r}", ("API-STREAM-1",)
                    )
    ids = "ids, " if engine.api.token_ids == "return_token_ids" else "(the engine streams no ids) "
    return Outcome(PASS, f"streaming and non-streaming agree on {ids}reasoning, content and finish reason")


def _invalid_budget(engine, ctx):
    for value in (-2, 1.5, "7", True):
        response = engine.complete(engine.api.model, value, max_tokens=2, temperature=0, raw=True)
        if response.status_code != 400:
            return Outcome(FAIL, f"budget {value!r}: HTTP {response.status_code}", ("API-ERROR-1",))
        field_name = engine.api.budget_field.split(".")[-1]
        if field_name not in response.text:
            return Outcome(
                FAIL, f"budget {value!r}: the 400 does not name {field_name}: {response.text[:200]}", ("API-ERROR-1",)
            )
    return Outcome(PASS, "invalid budgets get HTTP 400 naming the field")


def _budget_without_markers(engine, ctx):
    if "plain-model" not in engine.profile.capabilities:
        return Outcome(PRECONDITION_FAILED, "the profile names no model without reasoning markers")
    response = engine.complete(engine.api.plain_model, 4, max_tokens=2, temperature=0, raw=True)
    if response.status_code != 400:
        return Outcome(FAIL, f"a budget on {engine.api.plain_model} got HTTP {response.status_code}", ("API-ERROR-2",))
    return Outcome(PASS, "a budget on a model without reasoning markers gets HTTP 400")


@_needs_ids
def _greedy_spec_identity(engine, ctx):
    if "spec-model" not in engine.profile.capabilities:
        return Outcome(PRECONDITION_FAILED, "the profile names no speculative-decoding model")
    for budget in (None, 2, 6):
        a = engine.complete(engine.api.model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        b = engine.complete(engine.api.spec_model, budget, max_tokens=24, temperature=0)["choices"][0]["token_ids"]
        if a != b:
            return Outcome(
                FAIL, f"budget {budget}: greedy output differs with speculation: {a} vs {b}", ("API-SPEC-1",)
            )
    return Outcome(PASS, "greedy output is identical with speculation on and off")


def _tv_upper(first: Counter, second: Counter, n: int, delta: float) -> tuple[float, float]:
    """Two-sample TV estimate and an upper bound on the true TV at confidence ``1 - delta``.

    The estimate's sampling bias is bounded cell by cell, ``½ Σ_x √((p1(1−p1) + p2(1−p2))/n)``, with the
    observed frequencies plugged in (a rare cell costs only what it can contribute); the estimate moves
    by at most 1/n per sample point, so McDiarmid over the 2n points adds ``√(ln(1/δ)/n)``."""
    cells = set(first) | set(second)
    p1 = {c: first[c] / n for c in cells}
    p2 = {c: second[c] / n for c in cells}
    tv = 0.5 * sum(abs(p1[c] - p2[c]) for c in cells)
    bias = 0.5 * sum(math.sqrt((p1[c] * (1 - p1[c]) + p2[c] * (1 - p2[c])) / n) for c in cells)
    return tv, tv + bias + math.sqrt(math.log(1 / delta) / n)


@_needs_ids
def _sampled_spec_equivalence(engine, ctx):
    if "spec-model" not in engine.profile.capabilities:
        return Outcome(PRECONDITION_FAILED, "the profile names no speculative-decoding model")
    n, delta = 1000, 1e-3
    requests = [(m, seed) for m in (engine.api.model, engine.api.spec_model) for seed in range(n)]

    def first_token(item):
        model, seed = item
        response = engine.complete(model, None, max_tokens=1, temperature=0.1, seed=ctx.seed + seed)
        ids = response["choices"][0]["token_ids"]
        return model, ids[0] if ids else "eos"

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        tokens = list(pool.map(first_token, requests))
    plain = Counter(t for m, t in tokens if m == engine.api.model)
    spec_decode = Counter(t for m, t in tokens if m == engine.api.spec_model)
    tv, upper = _tv_upper(plain, spec_decode, n, delta)
    message = (
        f"first-token TV {tv:.3f}, upper bound {upper:.3f} at confidence {1 - delta} (N = {n} per side, "
        f"tolerance {engine.api.spec_tolerance})"
    )
    if upper < engine.api.spec_tolerance:
        return Outcome(PASS, "equivalent: " + message, statistic=tv, trials=n)
    return Outcome(FAIL, "not shown equivalent: " + message, ("API-SPEC-2",), statistic=tv, trials=n)


# greedy requests repeat themselves (n-gram drafts get accepted), sampled ones rarely do; odd
# max_tokens end requests inside a run of accepted drafts
SPEC_COUNTER_WORKLOAD = tuple(
    (budget, temperature, max_tokens)
    for temperature in (0.0, 1.0)
    for budget in (None, 2, 5)
    for max_tokens in (8, 17, 30)
)


def _counter_problems(seen: SpecCounters, after_first: int) -> list[str]:
    """What API-SPEC-3 finds wrong in counter differences ``seen`` over requests that returned
    ``after_first`` tokens after each one's first (those a verified draft can commit)."""
    problems = []
    per_position = seen.accepted_per_position
    if seen.accepted > seen.draft_tokens:
        problems.append("more tokens accepted than drafted")
    if per_position:
        if any(later > earlier for earlier, later in zip(per_position, per_position[1:])):
            problems.append("per-position acceptances increase with the position")
        if sum(per_position) != seen.accepted:
            problems.append(f"per-position acceptances sum to {sum(per_position)}, not to the accepted count")
        if seen.draft_tokens > len(per_position) * seen.drafts:
            problems.append(f"more draft tokens than {len(per_position)} positions × drafts")
    if seen.drafts + seen.accepted > after_first:
        problems.append(
            f"verified drafts commit {seen.drafts + seen.accepted} tokens (one per draft plus the accepted), "
            f"more than the {after_first} the client received after the first"
        )
    return problems


def _describe(seen: SpecCounters) -> str:
    return (
        f"{seen.drafts} drafts, {seen.draft_tokens} draft tokens, {seen.accepted} accepted, "
        f"per position {list(seen.accepted_per_position)}"
    )


@_needs_ids
def _spec_counters_agree(engine, ctx):
    """API-SPEC-3 over a sequential workload on the speculative model: the counters' differences
    across each request, and across all, against the ids the client received (the server must have
    no other traffic)."""
    if "spec-model" not in engine.profile.capabilities:
        return Outcome(PRECONDITION_FAILED, "the profile names no speculative-decoding model")
    first = engine.spec_counters()
    if first is None:
        where = f"{engine.url_of(engine.api.spec_model).rsplit('/v1', 1)[0]}/metrics"
        return Outcome(
            PRECONDITION_FAILED,
            f"no speculative-decoding counters {engine.api.spec_counters}_* at {where}"
            if engine.api.spec_counters
            else "the API profile names no speculative-decoding counters",
        )
    before, total_after_first, failures = first, 0, []
    for i, (budget, temperature, max_tokens) in enumerate(SPEC_COUNTER_WORKLOAD):
        seed = ctx.seed + i
        response = engine.complete(engine.api.spec_model, budget, max_tokens, temperature, seed=seed)
        after_first = max(len(response["choices"][0]["token_ids"]) - 1, 0)
        after = engine.spec_counters()
        problems = _counter_problems(after - before, after_first)
        if problems:
            failures.append(
                f"request {i} (budget {budget}, temperature {temperature}, max_tokens {max_tokens}, seed {seed}, "
                f"finish {response['choices'][0]['finish_reason']}): {'; '.join(problems)} "
                f"(counters moved by {_describe(after - before)})"
            )
        before, total_after_first = after, total_after_first + after_first
    seen = before - first
    summary = (
        f"{len(SPEC_COUNTER_WORKLOAD)} requests, {total_after_first} tokens received after each request's first; "
        f"counters: {_describe(seen)}"
    )
    if seen.drafts == 0:
        return Outcome(PRECONDITION_FAILED, f"no draft was verified, nothing to compare: {summary}")
    failures += [f"all requests: {problem}" for problem in _counter_problems(seen, total_after_first)]
    if failures:
        return Outcome(
            FAIL,
            f"{len(failures)} disagreements, first: {failures[0]} ({summary})",
            ("API-SPEC-3",),
        )
    return Outcome(
        PASS,
        f"the counters agree with the client's tokens, request by request ({summary}; mean acceptance length "
        f"{1 + seen.accepted / seen.drafts:.3f})",
    )


def api_checks() -> list[Check]:
    http = ("http",)
    return [
        Check(
            "api/budget-holds",
            "api.budget",
            ("API-BUDGET-1", "API-BUDGET-2", "API-REASON-1"),
            http,
            "every position the budget forces carries the forced token (oracle replay over returned ids)",
            _holds,
        ),
        Check(
            "api/budget-binds",
            "api.budget",
            ("API-BUDGET-3",),
            http,
            "a positive control without a budget thinks longer than the budget",
            _binds,
        ),
        Check("api/budget-zero-and-one", "api.budget", ("API-BUDGET-4",), http, "budgets 0 and 1", _zero_and_one),
        Check(
            "api/concurrent-mixed-budgets",
            "api.budget",
            ("API-BUDGET-5",),
            http,
            "16 concurrent requests, mixed budgets and seeds, each equal to its sequential run",
            _concurrent,
        ),
        Check(
            "api/budget-with-speculation",
            "api.budget",
            ("API-BUDGET-6",),
            http,
            "the budget holds with speculative decoding on",
            _spec_budget,
        ),
        Check(
            "api/multi-token-end-marker",
            "api.budget",
            ("API-BUDGET-7",),
            http,
            "a multi-token end marker arrives whole and contiguous",
            _multitoken_end,
        ),
        Check(
            "api/usage",
            "api.usage",
            ("API-USAGE-1", "API-USAGE-2"),
            http,
            "usage equals the returned ids; reasoning_tokens equals the reasoning tokens",
            _usage,
        ),
        Check(
            "api/streaming-parity",
            "api.streaming",
            ("API-STREAM-1",),
            http,
            "streaming and non-streaming agree",
            _streaming,
        ),
        Check("api/invalid-budget", "api.errors", ("API-ERROR-1",), http, "invalid budgets get 400", _invalid_budget),
        Check(
            "api/budget-without-markers",
            "api.errors",
            ("API-ERROR-2",),
            http,
            "a budget on a model without markers gets 400",
            _budget_without_markers,
        ),
        Check(
            "api/greedy-spec-identity",
            "api.spec-decode",
            ("API-SPEC-1",),
            http,
            "greedy output identical with speculation on and off",
            _greedy_spec_identity,
        ),
        Check(
            "api/sampled-spec-equivalence",
            "api.spec-decode",
            ("API-SPEC-2",),
            http,
            "sampled first tokens equivalent with speculation on and off (TV upper bound)",
            _sampled_spec_equivalence,
        ),
        Check(
            "api/spec-counters-agree",
            "api.spec-decode",
            ("API-SPEC-3",),
            http,
            "the engine's speculative-decoding counters agree with the tokens the client received",
            _spec_counters_agree,
        ),
    ]
