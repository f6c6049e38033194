"""The ``specconform`` command line: one module per group of subcommands (``run``: run, doctor, zoo;
``reproduce``: replay, prove; ``results``: report, summary, diff, bench-diff, history, pin; ``tools``: vectors,
schema, bench, serve, list), the options they share (``options``), progress on stderr (``progress``), and the
parser and ``main`` assembled from them (``entry``)."""

from .entry import build_parser, main, parse, run_parser
from .progress import QUIET_ENVIRONMENT, Progress, quiet_third_parties
from .run import run_config

__all__ = [
    "QUIET_ENVIRONMENT",
    "Progress",
    "build_parser",
    "main",
    "parse",
    "quiet_third_parties",
    "run_config",
    "run_parser",
]
