"""The entry point: the parser assembled from each subcommand's ``add_*_parser``, parsing with the defaults of
``[tool.specconform]``, and ``main``."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import signal
import sys
from pathlib import Path

from ..config import file_options, find_pyproject, option_actions
from ..core import UsageError
from ..hunt.command import add_hunt_parser
from ..isolation import EngineUsageError
from ..run_options import Parser
from . import export, reproduce, results, run, tools


def _version() -> str:
    """The installed distribution's version (``unknown`` when run from a tree that was never installed)."""
    try:
        return importlib.metadata.version("specconform")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="specconform",
        description="Conformance harness for thinking budgets, "
        "speculative-decoding rejection sampling and accepted-token counting. Exit status: 0 conforming "
        "(or as expected), 1 an unexpected failure or a missing record, 2 a usage error.",
    )
    parser.add_argument("--version", action="version", version=f"specconform {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add_parser in (
        run.add_run_parser,
        run.add_doctor_parser,
        run.add_zoo_parser,
        reproduce.add_replay_parser,
        reproduce.add_prove_parser,
        export.add_export_parser,
        results.add_report_parser,
        results.add_summary_parser,
        results.add_diff_parser,
        results.add_bench_diff_parser,
        results.add_history_parser,
        results.add_matrix_parser,
        results.add_pin_parser,
        tools.add_vectors_parser,
        tools.add_schema_parser,
        tools.add_bench_parser,
        tools.add_serve_parser,
        tools.add_list_parser,
        add_hunt_parser,
    ):
        add_parser(sub)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices[command]


def parse(argv=None) -> argparse.Namespace:
    """``argv`` parsed; for ``run`` and ``doctor``, the options ``[tool.specconform]`` of the nearest
    ``pyproject.toml`` sets (``config.file_options``, those of ``run``; ``doctor`` takes the ones it has) are the
    defaults that the command line overrides (a repeatable option's list is replaced, not extended)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in ("run", "doctor"):
        return args
    command = _subparser(parser, args.command)
    try:
        from_file = file_options(find_pyproject(Path.cwd()), option_actions(_subparser(parser, "run")))
    except UsageError as exc:
        command.error(str(exc))
    own = {a.dest for a in command._actions}
    from_file = {dest: value for dest, value in from_file.items() if dest in own}
    lists = {a.dest for a in command._actions if isinstance(a, argparse._AppendAction)}
    command.set_defaults(**{dest: value for dest, value in from_file.items() if dest not in lists})
    args = parser.parse_args(argv)
    for dest in lists & set(from_file):
        if getattr(args, dest) is None:
            setattr(args, dest, from_file[dest])
    return args


def main(argv=None) -> int:
    args = parse(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`specconform list | head`): stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit must not fail again
        return 128 + signal.SIGPIPE
    except (UsageError, EngineUsageError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        print(f"specconform {args.command}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a profile, expectations file or argument the user gave is malformed
        print(f"specconform {args.command}: {exc}", file=sys.stderr)
        return 2
