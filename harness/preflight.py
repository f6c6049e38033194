"""The preflight: what a run needs of its engines, checked before any check runs or any report is written.

A user's mistake must never read as the engine's failure. So before a run (and alone, in ``specconform
doctor``) each engine is looked at from outside, cheaply:

- an OpenAI-compatible server (``--engine openai``): every server answers ``GET /models`` (a refusal for want
  of a key, or a wrong path, is named), and every model named (``--model``, ``--spec-model``,
  ``--plain-model``) is among those its server lists;
- a kernel engine on CUDA (``reference:cuda``): torch is installed and sees a CUDA device;
- an engine team's adapter (``module:factory``): its module defines the factory (its source read, or where the
  source does not show it, the module imported in a process of its own);
- a run's ``--profile``: every engine implements the protocol of each capability it claims (asked of the engine
  built in its own process, ``check_profile``).

A mistake raises ``UsageError`` naming the option, its value and what exists. ``doctor`` goes further: it asks
what the checks will find (token ids in a response, ``/tokenize``, speculative-decoding counters on
``/metrics``) and, from the engine's own profile, which checks will be judged and why the others will not.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from . import yaml_files
from .adapters.api_profile_files import ASK_FOR_IDS, api_profile, missing_fields, probe_request, shaped_like
from .adapters.http import ApiProfile
from .core import CAPABILITY_PROTOCOLS, UsageError
from .isolation import EngineFailure, EngineInfo, EngineProcess, EngineUsageError, module_factories
from .profiles import Profile

PROBE_TIMEOUT_S = 10  # how long a server may take to answer one preflight request


@dataclass(frozen=True)
class Server:
    """One server of an HTTP engine: the option that named it, its base URL, and the model judged on it."""

    option: str  # --base-url, --spec-base-url or --plain-base-url
    base_url: str
    model_option: str  # --model, --spec-model or --plain-model
    model: str


def servers(api_options: dict) -> list[Server]:
    """The servers ``--engine openai`` will judge, one per role that names a model."""
    base_url = api_options["base_url"].rstrip("/")
    found = [Server("--base-url", base_url, "--model", api_options["model"])]
    for role in ("spec", "plain"):
        model, url = api_options.get(f"{role}_model"), api_options.get(f"{role}_base_url")
        if url and not model:
            raise UsageError(f"--{role}-base-url {url!r} is given, but no --{role}-model is named")
        if model:
            option = f"--{role}-base-url" if url else "--base-url"
            found.append(Server(option, (url or base_url).rstrip("/"), f"--{role}-model", model))
    return found


def http_client(api_options: dict):
    """An ``httpx2`` client carrying the run's key and headers (``--api-key``, ``--header``)."""
    import os

    import httpx2

    from .adapters.http import auth_headers

    api_key = api_options.get("api_key") or os.environ.get("OPENAI_API_KEY")
    headers = api_options.get("headers") or {}  # parsed once, by RunConfig.engine_api_options
    return httpx2.Client(timeout=PROBE_TIMEOUT_S, headers=auth_headers(api_key, headers))


def served_models(client, server: Server) -> list[str] | None:
    """The models ``server`` lists at ``GET /models``; None when it answers without a readable list (a server
    need not serve the listing). Raises ``UsageError`` when nothing answers, when it wants a key, or when the
    path is wrong."""
    import httpx2

    where = f"{server.option} {server.base_url!r}"
    try:
        response = client.get(f"{server.base_url}/models")
    except httpx2.TransportError as error:
        raise UsageError(f"{where}: no server answers ({type(error).__name__}: {error})") from None
    if response.status_code in (401, 403):
        raise UsageError(
            f"{where}: GET /models answered HTTP {response.status_code}: the server wants a key "
            "(--api-key, or OPENAI_API_KEY in the environment)"
        )
    if response.status_code == 404:
        raise UsageError(f"{where}: GET /models answered HTTP 404: is the path right (servers usually end in /v1)?")
    try:
        return [str(model["id"]) for model in response.json()["data"]]
    except (ValueError, KeyError, TypeError):
        return None


def check_api_shape(client, server: Server, api_options: dict) -> str:
    """Raise ``UsageError`` when the main server's answer to one short chat request lacks the fields that the
    named API profile (``--api-profile``, default vLLM's) reads and holds those of another: every check would read
    the wrong field and FAIL the server for the user's choice. A line saying what was seen otherwise."""
    name, fields = api_profile(api_options.get("api_profile"))
    named = ApiProfile(name=name, model=server.model, **fields)
    request = probe_request(named, server.model)
    answer = _request(client, "POST", f"{server.base_url}/chat/completions", request)
    if not isinstance(answer, dict):
        return f"{server.base_url}: a chat request with API profile {name}'s fields: {_said(answer)}"
    missing = missing_fields(named, request, answer)
    other = shaped_like(request, answer, named) if missing else None
    if other is None:
        shape = f"lacks {', '.join(missing)}" if missing else "holds its fields"
        return f"{server.base_url}: its answer to a chat request in API profile {name}'s shape {shape}"
    given = api_options.get("api_profile")
    option = f"--api-profile {given}" if given else "no --api-profile"
    option += f" (API profile {name})" if given != name else ""
    raise UsageError(
        f"{option}: the answer of {server.base_url} to a chat request lacks {', '.join(missing)}; "
        f"the server answers in {other}'s shape; did you mean --api-profile {other}?"
    )


def check_http(api_options: dict) -> list[str]:
    """Raise ``UsageError`` unless every server answers and lists its model, and the main server answers in the
    named API profile's shape (``check_api_shape``); one line per server otherwise."""
    lines = []
    with http_client(api_options) as client:
        for index, server in enumerate(servers(api_options)):
            listed = served_models(client, server)
            if listed is None:
                lines.append(f"{server.base_url}: answers; GET /models gives no list, so {server.model!r} is unchecked")
            elif server.model not in listed:
                raise UsageError(
                    f"{server.model_option} {server.model!r} is not served at {server.base_url}; "
                    f"it serves: {', '.join(listed) or 'no model'}"
                )
            else:
                lines.append(f"{server.base_url}: answers; serves {server.model!r} ({len(listed)} listed)")
            if index == 0:
                lines.append(check_api_shape(client, server, api_options))
    return lines


def check_cuda(engine_spec: str) -> str:
    """Raise ``UsageError`` unless torch is installed and sees a CUDA device; what it sees otherwise."""
    if importlib.util.find_spec("torch") is None:
        raise UsageError(f"engine {engine_spec!r} needs torch, which is not installed here")
    import torch

    if not torch.cuda.is_available():
        why = "is a build without CUDA" if torch.version.cuda is None else "sees no CUDA device"
        raise UsageError(
            f"engine {engine_spec!r}: CUDA is not available (torch {torch.__version__} {why}); "
            "on this machine judge reference or reference:cpu"
        )
    return f"torch {torch.__version__} sees {torch.cuda.device_count()} CUDA device(s): {torch.cuda.get_device_name(0)}"


def _top_level_names(tree: ast.Module) -> tuple[set[str], list[str]] | None:
    """The names a module's source may bind at its top level (in any branch of an ``if``, ``try`` or ``with``),
    and of those the functions and classes it defines; None when it may bind others (``import *``, a module
    ``__getattr__``)."""
    names, defined = set(), []
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            defined.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for branch in ("body", "orelse", "finalbody"):
                pending += getattr(node, branch, [])
            for handler in getattr(node, "handlers", []):
                pending += handler.body
    return None if "__getattr__" in names else (names, defined)


def check_factory(engine_spec: str) -> str:
    """Raise ``UsageError`` when ``module:factory``'s module has no ``factory``; a line saying what was seen
    otherwise. Its source is read first (an adapter's imports may take long); where the source does not show the
    factory (bound in a loop, through ``globals()``, by a decorator), the module is imported in a process of its own
    and asked there, so that a valid engine is never refused."""
    module_name, _, factory = engine_spec.partition(":")
    found = importlib.util.find_spec(module_name)
    origin = getattr(found, "origin", None)
    if not origin or not origin.endswith(".py"):
        return f"module {module_name!r} is not Python source; {factory!r} is checked when the engine starts"
    with open(origin, encoding="utf-8") as source:
        bound = _top_level_names(ast.parse(source.read()))
    if bound is None or factory in bound[0]:
        return f"module {module_name!r} can provide {factory!r}"
    try:
        names, public = module_factories(module_name)
    except EngineFailure as failure:  # the engine's own process will say the same: the run records it
        return f"module {module_name!r} could not be imported here ({failure.message}); {factory!r} is checked then"
    if factory in names:
        return f"module {module_name!r} provides {factory!r} once imported"
    raise UsageError(
        f"engine {engine_spec!r}: module {module_name!r} defines no {factory!r}; its functions and classes: "
        + (", ".join(public) or "none")
    )


def check_engines(engine_specs: list[str], api_options: dict) -> dict[str, list[str]]:
    """Raise ``UsageError`` at the first mistake; per engine, what its preflight saw."""
    seen = {}
    for engine_spec in engine_specs:
        if engine_spec == "openai":
            seen[engine_spec] = check_http(api_options)
        elif engine_spec.startswith("reference:cuda"):
            seen[engine_spec] = [check_cuda(engine_spec)]
        elif ":" in engine_spec and not engine_spec.startswith(("embedded", "zoo:", "reference")):
            seen[engine_spec] = [check_factory(engine_spec)]
        else:
            seen[engine_spec] = []
    return seen


def profile_mismatch(profile_option: str, profile: Profile, engine_spec: str, info: EngineInfo) -> str | None:
    """What is wrong with judging ``engine_spec`` (built, described by ``info``) by the profile that ``--profile
    profile_option`` names: the capabilities it claims whose protocol the engine does not implement, each of whose
    checks would read ERROR as if the engine failed; None when it claims none such. The message names the profile
    file's line of ``capabilities`` (or of ``base``, whose capabilities it takes)."""
    lacking = sorted(c for c in profile.capabilities if c in CAPABILITY_PROTOCOLS and c not in info.implements)
    if not lacking:
        return None
    where = f"--profile {profile_option}"
    if Path(profile_option).is_file():
        file = yaml_files.read(profile_option)
        key = "capabilities" if "capabilities" in file.data else "base"
        where = f"{file.at(key)}: {key}"
    return (
        f"{where}: the profile claims {', '.join(lacking)}, which engine {engine_spec!r} ({info.name}) does not "
        f"implement (it implements: {', '.join(info.implements) or 'none of ' + ', '.join(CAPABILITY_PROTOCOLS)}); "
        f"leave {', '.join(lacking)} out of the profile's capabilities, or leave --profile out to judge it by its own "
        f"profile ({info.profile.name})"
    )


def check_profile(
    engine_specs: list[str], api_options: dict, profile_option: str, profile: Profile, timeout_s: float
) -> None:
    """Raise ``UsageError`` when the run's ``--profile profile_option`` (loaded: ``profile``) claims a capability
    that one of the engines lacks: each is built in its own process, as the run builds it, and asked which protocols
    it implements, before any check runs. An engine that cannot be built is left to the run, which records its
    failure."""
    for engine_spec in engine_specs:
        engine = EngineProcess(engine_spec, api_options)
        try:
            info = engine.start(timeout_s)
        except EngineUsageError as error:
            raise UsageError(str(error)) from None
        except EngineFailure:
            continue
        finally:
            engine.stop()
        mismatch = profile_mismatch(profile_option, profile, engine_spec, info)
        if mismatch:
            raise UsageError(mismatch)


def http_features(api_options: dict) -> tuple[list[str], dict[str, str]]:
    """What the API checks will find on the main server, one line each: token ids in a chat response (the API
    profile's field), ``/tokenize``, and the speculative-decoding counters on the spec model's ``/metrics``; and
    the requirements that cannot be judged for want of them, with why."""
    from .adapters.http import ids_from_logprobs, parse_spec_counters

    profile = api_profile(api_options.get("api_profile"))[1]
    main, *others = servers(api_options)
    root = main.base_url.rsplit("/v1", 1)[0]
    lines, unjudged = [], {}
    with http_client(api_options) as client:
        token_ids = profile.get("token_ids", "return_token_ids")
        if token_ids is None:
            lines.append("token ids: the API profile names no way to ask for them; checks needing token-ids: none run")
        else:
            field = ASK_FOR_IDS[token_ids]
            body = {"model": main.model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, **field}
            answer = _request(client, "POST", f"{main.base_url}/chat/completions", body)
            choice = (answer.get("choices") or [{}])[0] if isinstance(answer, dict) else {}
            has_ids = isinstance(answer, dict) and (
                "token_ids" in choice
                or "tokens" in (answer.get("__verbose") or {})
                or (token_ids == "logprobs" and ids_from_logprobs(body, choice) is not None)
            )
            lines.append(
                f"token ids ({token_ids}): "
                + (
                    "present"
                    if has_ids
                    else f"absent ({_said(answer)}); checks that need token-ids will be PRECONDITION_FAILED"
                )
            )
        field = profile.get("tokenize_field", "prompt")
        answer = _request(client, "POST", f"{root}/tokenize", {"model": main.model, field: "<think>"})
        has_tokenize = isinstance(answer, dict) and "tokens" in answer
        lines.append(
            f"{root}/tokenize: "
            + (
                "answers"
                if has_tokenize
                else f"absent ({_said(answer)}); checks that need marker-ids will be PRECONDITION_FAILED"
            )
        )
        spec = next((s for s in others if s.model_option == "--spec-model"), None)
        prefix = profile.get("spec_counters")
        if spec is None or prefix is None:
            why = "no --spec-model is named" if spec is None else "the API profile names no counters"
            lines.append(f"/metrics: not asked ({why}); API-SPEC-3 will be PRECONDITION_FAILED")
            unjudged["API-SPEC-3"] = f"/metrics not asked: {why}"
        else:
            where = f"{spec.base_url.rsplit('/v1', 1)[0]}/metrics"
            text = _request(client, "GET", where)
            counters = parse_spec_counters(text, prefix) if isinstance(text, str) else None
            if counters:
                lines.append(f"{where}: speculative-decoding counters present")
            else:
                lines.append(f"{where}: no {prefix}_* counters ({_said(text)}); API-SPEC-3 will be PRECONDITION_FAILED")
                unjudged["API-SPEC-3"] = f"no {prefix}_* counters at {where}"
    return lines, unjudged


def _request(client, method: str, url: str, body: dict | None = None):
    """The answer's JSON (or text, for ``/metrics``); a string ``"HTTP <status>"`` or the transport's error
    otherwise, for ``_said``."""
    import httpx2

    try:
        response = client.request(method, url, json=body)
    except httpx2.TransportError as error:
        return RuntimeError(f"{type(error).__name__}: {error}")
    if response.status_code != 200:
        return RuntimeError(f"HTTP {response.status_code}")
    if body is None:
        return response.text
    try:
        return response.json()
    except json.JSONDecodeError:
        return RuntimeError("not JSON")


def _said(answer) -> str:
    return str(answer) if isinstance(answer, Exception) else "not in the answer"


def doctor(
    engine_specs: list[str],
    api_options: dict,
    selected: list,
    profile=None,
    timeout_s: float = 600,
    profile_option: str | None = None,
) -> str:
    """The preflight of every engine, then, from each engine's own profile (or ``profile``, which ``--profile
    profile_option`` names), what each selected check will do: be judged, or be PRECONDITION_FAILED,
    NOT_APPLICABLE or NOT_CLAIMED, and why. Each engine is built in its own process, as a run builds it. Raises
    ``UsageError`` at the first mistake."""
    from collections import defaultdict

    from .runner import gate

    seen = check_engines(engine_specs, api_options)
    out = []
    for engine_spec in engine_specs:
        features, unjudged = http_features(api_options) if engine_spec == "openai" else ([], {})
        lines = seen[engine_spec] + features
        engine = EngineProcess(engine_spec, api_options)
        try:
            info = engine.start(timeout_s)
        except EngineUsageError as error:
            raise UsageError(str(error)) from None
        except EngineFailure as failure:
            out += [f"{engine_spec}: the engine could not be built: {failure.status}: {failure.message}", ""]
            continue
        finally:
            engine.stop()
        mismatch = profile and profile_mismatch(profile_option or profile.name, profile, engine_spec, info)
        if mismatch:
            raise UsageError(mismatch)
        judged_by = profile or info.profile
        out.append(
            f"{engine_spec} ({info.name}; version {info.version}; device {info.device}; profile {judged_by.name})"
        )
        out += [f"  {line}" for line in lines]
        unclaimed = defaultdict(list)
        plan = []
        for check in selected:
            status, why = gate(check, judged_by, info.probe_problem) or ("judged", "")
            if status == "judged" and all(rid in unjudged for rid in check.requirements):
                status, why = "PRECONDITION_FAILED", "; ".join(unjudged[rid] for rid in check.requirements)
            if status == "NOT_CLAIMED":
                unclaimed[check.cls].append(check.name)
            else:
                plan.append(f"  {status:19} {check.name} ({', '.join(check.requirements)}){': ' + why if why else ''}")
        judged = sum(line.split()[0] == "judged" for line in plan)
        out.append(
            f"  {judged} of {len(selected)} selected checks will be judged (a check may still find that a case of its "
            "own cannot be made, e.g. an end marker of one token):"
        )
        out += sorted(plan, key=lambda line: (line.split()[0] != "judged", line))
        if unclaimed:
            count = sum(map(len, unclaimed.values()))
            out.append(
                f"  {'NOT_CLAIMED':19} {count} checks of {len(unclaimed)} classes the profile does not claim: "
                + ", ".join(sorted(unclaimed))
            )
        out.append("")
    return "\n".join(out)
