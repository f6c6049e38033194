"""Rejection-sampling checks, one module per kind: exact comparison with the oracle (``exact``: greedy rows, and
probabilistic rows under the reference draws), the input and output contract (``inputs``), seeded requests
(``seeded``), the sampled path exactly under the draw scheme an engine declares (``own_draws``), the acceptance rule
under the engine's own draws (``rule``) and calibrated distribution checks (``distribution``, specs/statistics.md);
``output`` reads an engine's output for all of them.

Generated cases come from the shared strategies (``specconform.harness.cases.rejection``, which documents why
each is reachable). Cases are independent, so a check judges every case after a mismatch too; each case counts for the
requirements it exercises, and a mismatch is blamed on the requirement of the first diverging request.
"""

from . import inputs, own_draws, rule, seeded  # noqa: F401  importing a module declares its checks
from .distribution import STATISTICAL, judge_report, run_distribution
from .exact import declare_exact, judge_exact
from .minimal import has_tie
from .output import output_problem, sample_output
from .rule import replay_rule

__all__ = [
    "STATISTICAL",
    "declare_exact",
    "has_tie",
    "judge_exact",
    "judge_report",
    "output_problem",
    "replay_rule",
    "run_distribution",
    "sample_output",
]
