"""The ``specconform`` command line: one module per group of subcommands (``run``: run, doctor, zoo;
``reproduce``: replay, prove; ``results``: report, summary, diff, bench-diff, history, pin; ``tools``: vectors,
schema, bench, serve, list), progress on stderr (``progress``), and the parser and ``main`` assembled from them
(``entry``). The options they share are a run's (``specconform.harness.run_options``, which the pytest plugin takes
too), and a run itself is a ``specconform.harness.session.Session``."""

from .entry import build_parser, main, parse
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
]
