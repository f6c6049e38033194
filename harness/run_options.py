"""The options of a run, as every front end takes them (``specconform run``'s and, as ``--specconform-<option>``,
the pytest plugin's), and what the command line's other subcommands share of them: the parser class, argparse
types, and the groups of options. Each default is ``RunConfig``'s: an option's default here only shows it."""

from __future__ import annotations

import argparse

from .adapters import ENGINE_FORMS, api_profile_files
from .adapters.http import API_PROFILES
from .config import RunConfig, Shard
from .core import UsageError
from .products import named, products


def bounded(kind, low, high, open_interval=False):
    """An argparse type: a ``kind`` in ``[low, high]`` (``(low, high)`` when ``open_interval``)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        inside = low < value < high if open_interval else low <= value <= high
        if not inside or value != value:
            bounds = f"({low}, {high})" if open_interval else f"[{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be in {bounds}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _header(text: str) -> str:
    """An argparse type: ``NAME:VALUE``, a non-empty header name without spaces."""
    name, colon, _ = text.partition(":")
    if not colon or not name.strip() or any(c.isspace() for c in name):
        raise argparse.ArgumentTypeError(f"expected NAME:VALUE, got {text!r}")
    return text


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one (not for flags and options that default to nothing)."""

    def _get_help_string(self, action):
        if action.default in (None, False) or isinstance(action.default, list):
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``specconform run: ...``) and exit 2, and
    whose help shows every option's default."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _product(text: str) -> str:
    """An argparse type: a product's name (``harness/products/<name>/``)."""
    try:
        return named.product_name(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_product_option(parser) -> None:
    """``--product NAME``: a product judged as its folder says (``products.named``)."""
    parser.add_argument(
        "--product",
        type=_product,
        help=f"one of {', '.join(products())}: judge that product as its folder harness/products/NAME/ says (its "
        "adapter's engines, or with --base-url its server with its API profile; its profile; its expectations, the "
        "installed release's where it has several), instead of --engine (docs/engines.md)",
    )


def add_api_options(parser) -> None:
    """The options that name an OpenAI-compatible server (``--engine openai``)."""
    parser.add_argument("--base-url", help="with --engine openai: the server's base URL, e.g. http://host:8000/v1")
    parser.add_argument("--model", help="with --engine openai: the model to judge")
    parser.add_argument("--spec-model", help="with --engine openai: the same model served with speculative decoding")
    parser.add_argument("--plain-model", help="with --engine openai: a model without reasoning markers")
    parser.add_argument(
        "--spec-base-url", help="with --engine openai: the base URL of the --spec-model's server (default: --base-url)"
    )
    parser.add_argument(
        "--plain-base-url",
        help="with --engine openai: the base URL of the --plain-model's server (default: --base-url)",
    )
    parser.add_argument(
        "--restart-command",
        help="with --engine openai: a shell command that restarts a server that stopped answering (a check killed "
        "it), run with SPECCONFORM_BASE_URL set to that server's base URL; the check that killed it stays ERROR, the "
        "next check runs once the server answers GET /models again (without it, later checks on that server ERROR)",
    )
    parser.add_argument(
        "--engine-name",
        help="with --engine openai: the engine's name in reports (default: <api profile>:<model>@<host:port>, "
        "or openai:<model>@<host:port> without --api-profile)",
    )
    parser.add_argument(
        "--api-profile",
        type=api_profile_files.option,
        help=f"with --engine openai: the engine's request and reasoning fields: {', '.join(API_PROFILES)}, or a YAML "
        "file of your own with the same fields (docs/profiles.md, API profiles; default: vLLM's fields)",
    )
    parser.add_argument(
        "--api-key",
        help="with --engine openai: the bearer token every request carries (default: $OPENAI_API_KEY); never written "
        "to reports",
    )
    parser.add_argument(
        "--header",
        action="append",
        type=_header,
        help="with --engine openai: NAME:VALUE, a header every request carries (repeatable); its value is never "
        "written to reports",
    )


def add_run_options(parser) -> None:
    parser.add_argument(
        "--seed", type=bounded(int, 0, 2**63 - 1), default=RunConfig.seed, help="seed of every generated case"
    )
    parser.add_argument(
        "--trials",
        type=bounded(int, 1, 10**10),
        default=None,
        help="the most trials one case of a statistical check may run (default 1,000,000; --thorough 40,000,000); "
        "positions it leaves short of the declared deviation are NOT_RUN, naming the --trials that would certify them",
    )
    parser.add_argument(
        "--deviation",
        type=bounded(float, 0, 1, open_interval=True),
        default=None,
        help="the total-variation deviation every counted statistical test must detect and certify "
        "(default 0.03, or the engine's own where it declares one: oracle 0.05; --thorough 0.003)",
    )
    parser.add_argument(
        "--power",
        type=bounded(float, 0, 1, open_interval=True),
        default=None,
        help="probability of detecting --deviation, and of a conforming engine certifying it (default 0.9)",
    )
    parser.add_argument(
        "--thorough",
        action="store_true",
        help="for GPUs: statistical checks sized for TV 0.003 with up to 40,000,000 trials per case",
    )
    parser.add_argument(
        "--alpha",
        type=bounded(float, 0, 1, open_interval=True),
        default=RunConfig.alpha,
        help="family-wise α of each statistical check, in (0, 1)",
    )
    parser.add_argument(
        "--timeout",
        type=bounded(float, 0, 7 * 86400, open_interval=True),
        default=RunConfig.timeout,
        help="seconds per check before TIMEOUT, in (0, 604800): there is no 'no limit'",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr and no third-party chatter (progress is a bar on a terminal, "
        "one line per check otherwise)",
    )


def _shard(text: str) -> Shard:
    """An argparse type: ``i/N``."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_selection_options(parser) -> None:
    """What ``run`` and ``list checks`` select: globs, and one shard of what they match."""
    parser.add_argument(
        "--check",
        action="append",
        help="only checks whose name, class or requirement id "
        "matches this glob (repeatable), e.g. 'rs.*' or 'TB-FORCE-*' (default: every check)",
    )
    parser.add_argument("--exclude", action="append", help="skip checks matching this glob (repeatable)")
    parser.add_argument(
        "--shard",
        type=_shard,
        help="only the i-th of N parts of the selected checks, e.g. 1/4: every N-th check from the i-th on, in "
        "catalogue order, so that N jobs with 1/N .. N/N judge every selected check once (merge their runs with "
        "`specconform summary`)",
    )


def add_distribution_options(parser) -> None:
    """How ``run`` spreads its checks and when it stops early."""
    parser.add_argument(
        "-n",
        "--workers",
        type=bounded(int, 1, 256),
        default=RunConfig.workers,
        help="engine processes of each engine that run its checks side by side (each check still runs once)",
    )
    parser.add_argument(
        "--maxfail",
        type=bounded(int, 1, 10**9),
        help="start no further check once this many checks failed unexpectedly (the rest are reported as having "
        "no record)",
    )
    parser.add_argument("-x", "--exitfirst", action="store_true", help="--maxfail 1: stop at the first failing check")
    parser.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="only the selected checks that the newest run under --report-dir failed unexpectedly (FAIL, ERROR, "
        "TIMEOUT) or never recorded; nothing to re-run is said so, with exit 0",
    )


ENGINE_HELP = "(repeatable; default: reference, oracle and the embedded engine with both tokenizer variants)"


def add_run_arguments(parser) -> None:
    """Every option of a run: the engines and their server, the profile, the selection, the expectations, the report
    folder, the statistics and how the checks are spread."""
    parser.add_argument("--engine", action="append", help=f"{', '.join(ENGINE_FORMS)} {ENGINE_HELP}")
    add_product_option(parser)
    add_api_options(parser)
    parser.add_argument("--profile", help="a built-in profile name or a YAML file (default: the engine's own)")
    add_selection_options(parser)
    parser.add_argument("--expectations", help="YAML file of known failures (RUN-EXPECT-1)")
    parser.add_argument(
        "--report-dir",
        default=RunConfig.report_dir,
        help="where each run's folder (results.jsonl, summary.md, junit.xml, report.html) is made",
    )
    add_run_options(parser)
    add_distribution_options(parser)


def run_parser() -> Parser:
    """A parser of a run's options alone (``specconform run``'s; the pytest plugin takes the same)."""
    parser = Parser(prog="specconform run")
    add_run_arguments(parser)
    return parser
