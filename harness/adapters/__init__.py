"""Engine adapters: every engine the harness can judge, behind the protocols of ``specconform.harness.core``.

``make_engine(spec)`` builds one from its command-line name: ``oracle``, ``reference[:device[:backend]]``,
``zoo:<mutant>``, ``embedded[:single|multi]`` (the embedded engine over HTTP), ``openai`` (any server;
``api_options`` gives base_url, model, ..., and ``headers``: ``{name: value}``, as
``RunConfig.engine_api_options`` makes them), ``module:factory`` (an engine team's own adapter) or the name an
installed package registers its adapter under (entry-point group ``specconform.engines``: ``registered``).
The runner calls it inside the engine's own process (``specconform.harness.isolation``). The core install judges servers
(``openai``) and the oracle; the engines built on torch need an extra (``EXTRAS``), and naming one without it is a
usage error that says which extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
import urllib.parse

from .. import products
from ..core import UsageError, missing_methods
from . import registered

# Each engine's own adapter lives in its product's folder (``harness/products/<name>/<module>.py``) under the import
# name published runs give it, ``specconform.harness.adapters.<module>``: this package finds its modules there too.
__path__ += products.registry.adapter_folders()

# specconform's extras (pyproject.toml) and the modules each brings that the core install lacks
EXTRAS = {
    "reference": ("torch",),
    "serve": ("torch", "transformers", "tokenizers", "fastapi", "uvicorn"),
    "triton": ("torch", "triton"),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_extra(extra: str, what: str) -> None:
    """Raise a ``UsageError`` naming the extra to install when a module of specconform's ``extra`` cannot be
    imported; ``what`` names what needs it (an engine, a command)."""
    missing = [module for module in EXTRAS[extra] if not _importable(module)]
    if missing:
        raise UsageError(
            f"{what} needs {', '.join(missing)}, which this Python lacks: pip install 'specconform[{extra}]' "
            "(without it, judge a server with --engine openai --base-url URL --model NAME, or --engine oracle)"
        )


# the built-in adapters of other engines, which judge them in process: the engine's own package each imports (its
# product's record says it; lmdeploy's and SGLang's adapters stand in for the package root and name what is missing)
ENGINE_PACKAGES = {
    form.partition(":")[0]: product.record.imports
    for product in products.products().values()
    if product.record.imports
    for form in product.record.engines
}


def _require_engine(spec: str) -> None:
    """Raise a ``UsageError`` when the built-in engine ``spec`` needs an extra, or an engine package, that this
    Python lacks."""
    if extra := _engine_extra(spec):
        require_extra(extra, f"engine {spec!r}")
    package = ENGINE_PACKAGES.get(spec.partition(":")[0])
    if package and not _importable(package):
        raise UsageError(f"engine {spec!r} judges {package} in this process, and this Python has no {package}")


def _engine_extra(spec: str) -> str | None:
    """The extra that the built-in engine ``spec`` needs beyond the core install, or None."""
    if spec.partition(":")[0] in ENGINE_PACKAGES:
        return "reference"
    if spec == "embedded" or spec.startswith("embedded:"):
        return "serve"
    if spec == "reference" or spec.startswith("reference:"):
        return "triton" if spec.split(":")[2:] == ["triton"] else "reference"
    if spec.startswith("zoo:"):
        from .zoo import needs_torch

        return "reference" if needs_torch(spec[4:]) else None
    return None


_EMBEDDED: dict = {}


def embedded_server():
    """The embedded reference engine, started once per process on a free loopback port."""
    if "server" not in _EMBEDDED:
        from specconform.embedded import start

        _EMBEDDED["server"] = start()
    return _EMBEDDED["server"]


ENGINE_FORMS = (
    "oracle",
    "reference[:cpu|cuda[:torch|triton]]",
    "embedded[:single|multi]",
    "openai (with --base-url and --model)",
    "zoo:<mutant>",
    *products.adapter_forms(),  # the other engines' adapters, in process (`specconform list engines` says each)
    "module:factory (an engine team's own adapter)",
    f"<registered-name> (an installed package's adapter, entry points {registered.GROUP})",
)


def make_engine(spec: str, api_options: dict | None = None):
    _require_engine(spec)
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
        from .api_profile_files import api_profile
        from .http import ApiEngine, ApiProfile

        options = dict(api_options or {})
        if not options.get("base_url") or not options.get("model"):
            raise UsageError("--engine openai needs --base-url and --model")
        base_url = options.pop("base_url")
        named_profile = options.pop("api_profile", None)
        try:  # vLLM's request fields unless told otherwise
            profile_name, fields = api_profile(named_profile)
        except ValueError as error:
            raise UsageError(str(error)) from None
        # the name says only what is known: the API profile the user named (else plain "openai"), the model, the server
        name = options.pop("engine_name", None) or (
            f"{profile_name if named_profile else 'openai'}:{options['model']}"
            f"@{urllib.parse.urlsplit(base_url).netloc or base_url}"
        )
        restart_command = options.pop("restart_command", None)
        api_key = options.pop("api_key", None)
        headers = options.pop("headers", None) or {}  # parsed once, by RunConfig.engine_api_options
        profile = ApiProfile(name=profile_name, **fields, **options)
        return ApiEngine(
            base_url, profile, name=name, restart_command=restart_command, api_key=api_key, headers=headers
        )
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
    if entry := registered.engines().get(spec):
        return registered.build(entry)
    if ":" in spec:
        module_name, _, factory = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            raise UsageError(f"engine {spec!r}: cannot import {module_name!r} ({exc}){_moved(module_name)}") from None
        if not hasattr(module, factory):
            raise UsageError(f"engine {spec!r}: module {module_name!r} has no {factory!r}")
        return getattr(module, factory)()
    raise UsageError(f"unknown engine {spec!r}; engines are: {_known()}")


def _known() -> str:
    """The engine forms, and the names installed packages register (``registered``), for an unknown engine's error."""
    names = sorted(registered.engines())
    return ", ".join(ENGINE_FORMS) + (f" ({registered.GROUP} here: {', '.join(names)})" if names else "")


def _moved(module_name: str) -> str:
    """A hint for an engine spec written with the import names specconform had before ``specconform.`` (``harness.``,
    ``impl.``, ``embedded.``, ``specs.``), when the same module exists under the new name; else ``""``. There is no
    alias under the old names: a shim named ``harness`` would claim the generic name again (docs/install.md)."""
    if module_name.partition(".")[0] not in ("harness", "impl", "embedded", "specs"):
        return ""
    try:
        moved = importlib.util.find_spec(f"specconform.{module_name}") is not None
    except (ImportError, ValueError):
        moved = False
    return f"; specconform's modules are under 'specconform.' now: 'specconform.{module_name}'" if moved else ""


def check_engine_spec(spec: str, api_options: dict | None = None) -> None:
    """Validate an engine's name without building it (the engine runs only in its own process):
    a ``UsageError`` names what is wrong and lists what exists, or the extra that an engine needs."""
    _check_engine_name(spec, api_options)
    _require_engine(spec)


def _check_engine_name(spec: str, api_options: dict | None) -> None:
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
    if entry := registered.engines().get(spec):
        registered.check(entry)
        return
    if ":" in spec and not spec.startswith("embedded"):
        module_name = spec.partition(":")[0]
        try:
            found = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise UsageError(
                f"engine {spec!r}: no module named {module_name!r} on the Python path{_moved(module_name)}"
            )
        return
    raise UsageError(f"unknown engine {spec!r}; engines are: {_known()}")
