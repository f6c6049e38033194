"""One typed run configuration, built alike by every front end: the command line, the pytest plugin and (through
the command line) the GitHub action.

A front end collects option values under the command line's names (``base_url``, ``check``, ``seed``; argparse's
``dest``) and calls ``RunConfig.from_options``; from then on only the ``RunConfig`` travels. The commands that
re-run a check or replay its reproduction are built from it as words (``engine_options``, ``check_options``), never
parsed back from a string.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

from . import stats
from .core import DEFAULT_SEED, Check, Context, UsageError
from .products import named

# the options that name an OpenAI-compatible server (``--engine openai``), by their command-line names
API_OPTION_NAMES = (
    "base_url",
    "model",
    "api_profile",
    "spec_model",
    "plain_model",
    "spec_base_url",
    "plain_base_url",
    "engine_name",
    "restart_command",
    "api_key",
    "header",
)
# the environment variable a reproduce line names in place of the API key (the variable the client reads)
API_KEY_VARIABLE = "OPENAI_API_KEY"
DEFAULT_ENGINES = ("reference", "oracle", "embedded:single", "embedded:multi")


def headers_of(pairs: Iterable[str]) -> dict[str, str]:
    """``{name: value}`` of ``NAME:VALUE`` strings (``--header``), the value stripped of surrounding spaces."""
    out = {}
    for pair in pairs:
        name, colon, value = pair.partition(":")
        if not colon or not name.strip():
            raise UsageError(f"--header {pair!r}: expected NAME:VALUE")
        out[name.strip()] = value.strip()
    return out


def select(checks: Iterable[Check], include: Iterable[str] = (), exclude: Iterable[str] = ()) -> list[Check]:
    """Checks whose name, class or requirement ids match any ``include`` glob and no ``exclude`` glob."""

    def matches(check: Check, patterns) -> bool:
        keys = [check.name, check.cls, *check.requirements]
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns for key in keys)

    include, exclude = list(include), list(exclude)
    return [c for c in checks if (not include or matches(c, include)) and not matches(c, exclude)]


@dataclass(frozen=True)
class Shard:
    """The ``index``-th of ``count`` parts (1-based) of the selected checks: every ``count``-th check from the
    ``index``-th on, in catalogue order, so the parts of one selection are disjoint and cover it."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"i/N"`` with ``1 <= i <= N``; a ``ValueError`` names the text otherwise."""
        index, slash, count = str(text).partition("/")
        try:
            shard = cls(int(index), int(count))
        except ValueError:
            raise ValueError(f"expected i/N (e.g. 1/4), got {text!r}") from None
        if not slash or not 1 <= shard.index <= shard.count:
            raise ValueError(f"expected i/N with 1 <= i <= N, got {text!r}")
        return shard

    def take(self, checks: list[Check]) -> list[Check]:
        return checks[self.index - 1 :: self.count]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class FromEnvironment:
    """An option value written as the environment variable that holds it (``"$NAME"``), never as itself: how a
    command line names a secret."""

    variable: str

    def __str__(self) -> str:
        return f'"${self.variable}"'


@dataclass(frozen=True)
class RunConfig:
    """What one ``specconform run`` (or one pytest session of the plugin) judges and how.

    ``checks`` and ``exclude`` are globs on a check's name, class or requirement ids; ``shard`` keeps one part of
    what they select; ``maxfail`` stops the run after that many checks with an unexpected bad result;
    ``last_failed`` keeps only what the newest run under ``report_dir`` failed (or never recorded); ``workers``
    engine processes of each engine run its checks side by side. ``deviation`` ``None`` is the engine's own.
    ``api_options`` holds strings, but ``header``: a tuple of ``NAME:VALUE`` strings."""

    engines: tuple[str, ...] = DEFAULT_ENGINES
    engines_defaulted: bool = True  # no engine was named: the defaults judge what they can claim of the selection
    api_options: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    profile: str | None = None
    checks: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    expectations: str | None = None
    report_dir: str = "reports/runs"
    seed: int = DEFAULT_SEED
    trials: int = stats.DEFAULT_MAX_TRIALS
    deviation: float | None = None
    power: float = stats.DEFAULT_POWER.power
    alpha: float = 1e-6
    timeout: float = 600
    quiet: bool = False
    shard: Shard | None = None
    maxfail: int | None = None
    last_failed: bool = False
    workers: int = 1

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> RunConfig:
        """The configuration of option values named as on the command line (absent or ``None``: the default).

        ``thorough`` sizes the statistical defaults for a GPU (``stats.THOROUGH_POWER``, ``THOROUGH_MAX_TRIALS``)
        where ``deviation``, ``power`` and ``trials`` are not given; ``exitfirst`` is ``maxfail`` 1; ``product``
        stands for its engines and expectations (``products.named.run_options``)."""
        given = {name: value for name, value in options.items() if value is not None}
        if given.get("product"):
            given = named.run_options(given)
        thorough = bool(given.get("thorough"))
        power, cap = (
            (stats.THOROUGH_POWER, stats.THOROUGH_MAX_TRIALS)
            if thorough
            else (stats.DEFAULT_POWER, stats.DEFAULT_MAX_TRIALS)
        )
        shard = given.get("shard")
        maxfail = 1 if given.get("exitfirst") else given.get("maxfail")
        return cls(
            engines=tuple(given.get("engine") or DEFAULT_ENGINES),
            engines_defaulted=not given.get("engine"),
            api_options={
                name: tuple(given[name]) if isinstance(given[name], list) else given[name]
                for name in API_OPTION_NAMES
                if given.get(name)
            },
            profile=given.get("profile") or None,
            checks=tuple(given.get("check") or ()),
            exclude=tuple(given.get("exclude") or ()),
            expectations=given.get("expectations") or None,
            report_dir=given.get("report_dir", cls.report_dir),
            seed=given.get("seed", cls.seed),
            trials=given.get("trials", cap),
            deviation=given.get("deviation", power.deviation if thorough else None),
            power=given.get("power", power.power),
            alpha=given.get("alpha", cls.alpha),
            timeout=given.get("timeout", cls.timeout),
            quiet=bool(given.get("quiet")),
            shard=Shard.parse(shard) if isinstance(shard, str) else shard,
            maxfail=maxfail,
            last_failed=bool(given.get("last_failed")),
            workers=given.get("workers", cls.workers),
        )

    @functools.cached_property
    def engine_api_options(self) -> dict[str, Any]:
        """``api_options`` as an engine and the preflight take them: each ``--header``'s ``NAME:VALUE`` parsed, once
        for the run, into ``headers`` (``{name: value}``); a malformed one is a ``UsageError`` naming it."""
        options: dict[str, Any] = {name: value for name, value in self.api_options.items() if name != "header"}
        headers = headers_of(self.api_options.get("header") or ())
        return {**options, "headers": headers} if headers else options

    def planned_engines(self, selected: Iterable[Check]) -> tuple[str, ...]:
        """The engines to judge ``selected`` on: those named, or of the default engines those whose profile can
        claim a selected check (the embedded servers claim API-level checks only, the reference and the oracle
        kernel-level ones only), so that a selection of one level starts no engine of the other."""
        if not self.engines_defaulted or self.engines != DEFAULT_ENGINES:
            return self.engines
        levels = {check.name.startswith("api/") for check in selected}
        chosen = tuple(engine for engine in self.engines if engine.startswith("embedded:") in levels)
        return chosen or self.engines

    def selected(self, catalogue: Iterable[Check]) -> list[Check]:
        """The checks this run judges, in catalogue order; a ``UsageError`` when none is left."""
        chosen = select(catalogue, self.checks, self.exclude)
        if not chosen:
            raise UsageError(
                f"no check matches --check {list(self.checks) or None} --exclude {list(self.exclude)} "
                "(see `specconform list`)"
            )
        if self.shard is None:
            return chosen
        part = self.shard.take(chosen)
        if not part:
            raise UsageError(f"--shard {self.shard} holds no check: the selection has {len(chosen)}")
        return part

    def context(self, info, profile=None) -> Context:
        """A check's context on the engine ``info`` describes (``isolation.EngineInfo``): ``profile`` (the one
        the run names, loaded) or the engine's own, and the engine's own deviation unless one is given."""
        return Context(
            profile=profile or info.profile,
            seed=self.seed,
            trials=self.trials,
            alpha=self.alpha,
            deviation=self.deviation or info.statistical_deviation or stats.DEFAULT_POWER.deviation,
            power=self.power,
        )

    def engine_options(self, engine_spec: str) -> list[tuple[str, str | FromEnvironment]]:
        """The options (name, value) that name ``engine_spec`` again, its server's options included. No secret is
        written: the API key reads ``$OPENAI_API_KEY`` and each header's value is elided (``X-Team:…``)."""
        options: list[tuple[str, str | FromEnvironment]] = [("engine", engine_spec)]
        if engine_spec != "openai":
            return options
        for name, value in self.api_options.items():
            if name == "api_key":
                options.append(("api-key", FromEnvironment(API_KEY_VARIABLE)))
            elif name == "header":
                options += [("header", header.partition(":")[0] + ":…") for header in value]
            elif isinstance(value, str):  # every option but header is one string (api_options)
                options.append((name.replace("_", "-"), value))
        return options

    def check_options(self, check: Check, ctx: Context | None) -> list[tuple[str, str]]:
        """The options (name, value) that re-run ``check`` with ``ctx``'s seed and statistics (and the run's
        profile). Without a context (the engine never started) they name the run's seed and leave the statistical
        options, which the engine's own profile would have set, to their defaults."""
        options = [("check", check.name), ("seed", str(self.seed if ctx is None else ctx.seed))]
        if ctx is not None:
            options += [("trials", str(ctx.trials)), ("deviation", str(ctx.deviation)), ("power", str(ctx.power))]
        return options + ([("profile", self.profile)] if self.profile else [])

    def reproduce(self, engine_spec: str, prefix: str = "specconform run", option_prefix: str = "--"):
        """A ``(check, ctx) -> str`` that writes the one-line command re-running a check (``ctx`` ``None``: the
        engine never started): ``specconform run``'s options, or another front end's (``prefix="pytest",
        option_prefix="--specconform-"``)."""

        def line(check: Check, ctx: Context | None) -> str:
            options = self.engine_options(engine_spec) + self.check_options(check, ctx)
            return f"{prefix} {words(options, option_prefix)}"

        return line


def words(options: Iterable[tuple[str, str | FromEnvironment]], option_prefix: str = "--") -> str:
    """``options`` as shell words: ``--name value`` each, quoted where the shell needs it; a ``FromEnvironment``
    value as its variable in double quotes, for the shell to expand."""
    return " ".join(
        f"{shlex.quote(option_prefix + name)} {value if isinstance(value, FromEnvironment) else shlex.quote(value)}"
        for name, value in options
    )


CONFIG_TABLE = "tool.specconform"
# run options a file does not set: how one invocation spreads and cuts itself short
INVOCATION_ONLY = frozenset({"workers", "maxfail", "exitfirst", "last_failed", "shard"})
# run options a file must not hold: a secret in pyproject.toml would be committed with it
SECRETS = {"api_key": f"set ${API_KEY_VARIABLE} (or pass --api-key) instead"}


def find_pyproject(start: Path) -> Path | None:
    """The ``pyproject.toml`` in ``start`` or the nearest folder above it, as pytest and ruff find theirs."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
    return None


def option_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``parser``'s options by their long name without dashes (``base-url``), help and aliases left out."""
    named = {}
    for action in parser._actions:  # argparse keeps its options there; it has no public list
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest != "help":
            named[max(longs, key=len)[2:]] = action
    return named


def file_options(path: Path | None, actions: Mapping[str, argparse.Action]) -> dict[str, Any]:
    """The run options ``[tool.specconform]`` of ``path`` sets, typed and checked as the command line checks them,
    by their ``dest``. Keys are the command line's long option names (``base-url = "http://..."``, ``check =
    ["api/*"]``, ``seed = 7``); an unknown key, a wrong type or a bad value is a ``UsageError`` that names it."""
    if path is None:
        return {}
    try:
        table = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from None
    for part in CONFIG_TABLE.split("."):
        table = table.get(part, {}) if isinstance(table, dict) else {}
    where = f"{path} [{CONFIG_TABLE}]"
    settable = {name: action for name, action in actions.items() if action.dest not in INVOCATION_ONLY}
    values = {}
    for key, value in table.items():
        if key in settable and settable[key].dest in SECRETS:
            why = SECRETS[settable[key].dest]
            raise UsageError(f"{where}: {key!r} is a secret, and pyproject.toml is committed: {why}")
        if key not in settable:
            raise UsageError(f"{where}: unknown key {key!r}; known keys: {', '.join(sorted(settable))}")
        values[settable[key].dest] = _typed(settable[key], value, f"{where} {key}")
    return values


def _typed(action: argparse.Action, value: Any, where: str) -> Any:
    """``value`` (from TOML) converted and checked as ``action`` converts and checks a command-line word."""
    if action.nargs == 0:  # a flag
        if not isinstance(value, bool):
            raise UsageError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise UsageError(f"{where}: expected a string or a list of strings, got {value!r}")
        return [_word(action, item, where) for item in items]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UsageError(f"{where}: expected a string or a number, got {value!r}")
    return _word(action, str(value), where)


def _word(action: argparse.Action, word: str, where: str) -> Any:
    try:
        value = action.type(word) if callable(action.type) else word
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise UsageError(f"{where}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(map(str, action.choices))}")
    return value
