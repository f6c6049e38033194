"""What the parent asks of a forked child (``Job``, under the run's ``Setup``) and what it concludes
(``Verdict``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from specconform.harness.config import RunConfig
from specconform.harness.mutation.mutator import Mutant
from specconform.harness.mutation.targets import FAST_EXCLUDE

KILLING = ("FAIL", "ERROR", "TIMEOUT")


@dataclass
class Verdict:
    """What the checks said of one mutant: KILLED (by ``check`` with ``status``, violating
    ``requirements``; ``requirements`` is the check's own list for ERROR and TIMEOUT) or SURVIVED.
    ``checks_run`` of the ``checks_planned`` that execute the mutated lines were run."""

    status: str
    check: str = ""
    check_status: str = ""
    requirements: list[str] = field(default_factory=list)
    message: str = ""
    checks_run: int = 0
    checks_planned: int = 0
    seconds: float = 0.0


@dataclass
class Job:
    """One judgement in a forked child: ``engine`` (a ``make_engine`` spec) with ``mutant`` applied (None:
    the unmutated code), running ``checks`` in this order until the first that is not passed (None: every
    check of the catalogue that the engine's profile can run, all of them), each within ``limits[check]``
    seconds (default ``Setup.check_limit_s``). ``trace``: files whose executed lines are recorded per check
    (``coverage``), and under ``IMPORT`` for the import and the engine's factory."""

    engine: str
    mutant: Mutant | None = None
    checks: list[str] | None = None
    limits: dict[str, float] = field(default_factory=dict)
    trace: tuple[str, ...] = ()
    verdict: Verdict | None = None
    plan: dict[str, list[str]] = field(default_factory=dict)  # check -> its requirements (the child's own plan)
    seconds: dict[str, float] = field(default_factory=dict)  # check -> seconds it ran
    lines: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # file -> context -> lines

    @property
    def judged(self) -> Verdict:
        """The verdict of a job the children have judged; a ValueError before that."""
        if self.verdict is None:
            raise ValueError(
                f"the job of {self.engine} ({self.mutant.key if self.mutant else 'unmutated'}) is unjudged"
            )
        return self.verdict

    @property
    def applied(self) -> Mutant:
        """The mutant of a mutant's job; a ValueError for the unmutated code's."""
        if self.mutant is None:
            raise ValueError(f"the job of {self.engine} judges the unmutated code: it applies no mutant")
        return self.mutant


@dataclass(frozen=True)
class Setup:
    """What every child of a run shares: the project's root (first on the path), the check catalogue
    (``module:function``), the checks left out, the cases' seed and the trials of a statistical check."""

    source_root: Path
    catalogue: str = "specconform.harness.checks:all_checks"
    exclude: tuple[str, ...] = FAST_EXCLUDE
    seed: int = RunConfig.seed
    trials: int = 2_000
    max_cases: int = 0  # each check draws at most this many of its generated cases (0: all of them)
    start_limit_s: float = 120  # importing the project and building the engine
    check_limit_s: float = 1_200  # a check that a job gives no limit of its own


IMPORT = "(import)"  # the coverage context of the project's import and the engine's factory
