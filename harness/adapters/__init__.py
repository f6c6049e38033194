"""Engine adapters: every engine the harness can judge, behind the protocols of ``harness.core``.

``make_engine(spec)`` builds one from its command-line name: ``oracle``, ``reference[:device[:backend]]``,
``zoo:<mutant>``, ``embedded[:single|multi]`` (the embedded engine over HTTP), ``openai`` (any server;
``api_options`` gives base_url, model, ...) or ``module:factory`` (an engine team's own adapter).
The runner calls it inside the engine's own process (``harness.isolation``).
"""

from __future__ import annotations

import importlib
import urllib.parse

from ..core import missing_methods


class UsageError(ValueError):
    """A user's mistake in naming an engine: reported as one line, never as a traceback."""


_EMBEDDED: dict = {}


def embedded_server():
    """The embedded reference engine, started once per process on a free loopback port."""
    if "server" not in _EMBEDDED:
        from embedded import start

        _EMBEDDED["server"] = start()
    return _EMBEDDED["server"]


ENGINE_FORMS = (
    "oracle",
    "reference[:cpu|cuda[:torch|triton]]",
    "embedded[:single|multi]",
    "openai (with --base-url and --model)",
    "zoo:<mutant>",
    "harness.adapters.vllm:make (vLLM's legacy model runner, in process)",
    "harness.adapters.vllm_mrv2:make (vLLM's model runner v2, in process)",
    "harness.adapters.lmdeploy:make or :make_triton (lmdeploy's pure-torch or Triton verifier, in process)",
    "harness.adapters.sglang:make (SGLang's budget processor and Triton chain sampler, in process)",
    "module:factory (an engine team's own adapter)",
)


def make_engine(spec: str, api_options: dict | None = None):
    engine = _build(spec, api_options)
    missing = missing_methods(engine)
    if missing:
        raise UsageError(f"engine {spec!r}: its profile promises {missing} but it lacks the methods they need")
    return engine


def _build(spec: str, api_options: dict | None):
    if spec == "embedded" or spec.startswith("embedded:"):
        from .http import ApiEngine, embedded_profile

        variant = spec.partition(":")[2] or "single"
        if variant not in ("single", "multi"):
            raise UsageError(f"engine {spec!r}: the embedded engine's variants are single and multi")
        return ApiEngine(embedded_server().base_url, embedded_profile(variant), name=f"embedded:{variant}")
    if spec == "openai":
        from .http import API_PROFILES, ApiEngine, ApiProfile

        options = dict(api_options or {})
        if not options.get("base_url") or not options.get("model"):
            raise UsageError("--engine openai needs --base-url and --model")
        base_url = options.pop("base_url")
        named_profile = options.pop("api_profile", None)
        profile_name = named_profile or "vllm"  # vLLM's request fields unless told otherwise
        # the name says only what is known: the API profile the user named (else plain "openai"), the model, the server
        name = options.pop("engine_name", None) or (
            f"{named_profile or 'openai'}:{options['model']}@{urllib.parse.urlsplit(base_url).netloc or base_url}"
        )
        restart_command = options.pop("restart_command", None)
        profile = ApiProfile(name=profile_name, **API_PROFILES[profile_name], **options)
        return ApiEngine(base_url, profile, name=name, restart_command=restart_command)
    if spec == "oracle":
        from .oracle import OracleEngine

        return OracleEngine()
    if spec == "reference" or spec.startswith("reference:"):
        from .reference import ReferenceEngine

        check_engine_spec(spec)
        return ReferenceEngine(*spec.split(":")[1:])
    if spec.startswith("zoo:"):
        from . import zoo

        return zoo.make_mutant(spec.split(":", 1)[1])
    if ":" in spec:
        module_name, _, factory = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise UsageError(f"engine {spec!r}: cannot import {module_name!r} ({exc})") from None
        if not hasattr(module, factory):
            raise UsageError(f"engine {spec!r}: module {module_name!r} has no {factory!r}")
        return getattr(module, factory)()
    raise UsageError(f"unknown engine {spec!r}; engines are: {', '.join(ENGINE_FORMS)}")


def check_engine_spec(spec: str, api_options: dict | None = None) -> None:
    """Validate an engine's name without building it (the engine runs only in its own process):
    a ``UsageError`` names what is wrong and lists what exists."""
    import importlib.util

    if spec in ("oracle", "embedded", "embedded:single", "embedded:multi"):
        return
    if spec == "openai":
        if not (api_options or {}).get("base_url") or not (api_options or {}).get("model"):
            raise UsageError("--engine openai needs --base-url and --model")
        return
    if spec == "reference" or spec.startswith("reference:"):
        parts = spec.split(":")[1:]
        if (
            len(parts) <= 2
            and (not parts or parts[0] in ("cpu", "cuda"))
            and (len(parts) < 2 or parts[1] in ("auto", "torch", "triton"))
        ):
            return
        raise UsageError(f"engine {spec!r}: expected reference[:cpu|cuda[:auto|torch|triton]]")
    if spec.startswith("zoo:"):
        from .zoo import MUTANTS

        names = [m.name for m in MUTANTS]
        if spec[4:] not in names:
            raise UsageError(f"unknown mutant {spec[4:]!r}; the zoo holds: {', '.join(names)}")
        return
    if ":" in spec and not spec.startswith("embedded"):
        module_name = spec.partition(":")[0]
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise UsageError(f"engine {spec!r}: no module named {module_name!r} on the Python path")
        return
    raise UsageError(f"unknown engine {spec!r}; engines are: {', '.join(ENGINE_FORMS)}")
