"""Mutation testing of the reference implementation and the oracle-backed engine, judged by the harness.

Each mutant is one small change to one source file: an operator (``+`` for ``-``, ``and`` for ``or``, a
dropped ``not``), a comparison (a boundary ``<`` for ``<=``, or its negation), a constant (``n`` for
``n + 1`` and ``n - 1``, ``True`` for ``False``) or a dropped statement (a call, a ``raise``, an
augmented assignment, a write into a tensor or attribute, a re-assignment of a bound name). The mutant is
judged by the conformance checks, not by the project's unit tests. What makes judging ~1,000 mutants cheap:

- The unmutated code is judged first by every check with its lines traced (``coverage``, one context per
  check): a check that never executes a mutant's lines runs exactly as on the original, so only the checks
  that do are run (all of them when the import or the engine's factory executes the line).
- The parent imports the project and its libraries once and forks a child per mutant; the child gives the
  enclosing function the mutated code in place (``__code__``), or, for module-level code and default
  arguments, imports the project again with the mutated file served by an import hook.
- The checks run in the child in one process, the mutated code's own requirement area first, each group
  cheapest first, until the first that is not passed; each draws at most ``--cases`` of its generated
  cases (a prefix of its seeded sequence, the simplest first) and runs ``--trials`` per statistical case.
- The parent kills a child whose check runs past ``--timeout + --timeout-factor ×`` its baseline seconds
  (TIMEOUT) and re-judges every TIMEOUT with ``--rejudge`` times the limits, so that a loaded machine does
  not turn a survivor into a kill; a child that dies is an ERROR of the check it was running.

A mutant that some check fails (FAIL, ERROR or TIMEOUT) is KILLED; one that every check passes SURVIVED.

``python -m specconform.harness.mutation run`` writes ``reports/mutation/<date>/``: ``mutants.jsonl`` (per mutant:
file, line, operator, diff, status, the killing check and requirements, seconds) and ``summary.md``, with
each survivor's classification from ``expectations/mutation-equivalent.yaml``.

The modules: ``mutator`` (the mutants of a file, and why the mutator is our own), ``targets`` (what is
mutated, and the checks that judge it), ``jobs`` (a judgement asked of a child, and its verdict), ``apply``
(the mutant in the child: in place, or through an import hook), ``child`` (the checks run and traced in the
child), ``pool`` (the forked children, their limits, and why the pool is our own), ``run`` (a whole run),
``summary`` (``summary.md``) and ``cli``.
"""

from specconform.harness.mutation.jobs import IMPORT, Job, Setup
from specconform.harness.mutation.mutator import Mutant, mutants_of
from specconform.harness.mutation.pool import judge

__all__ = ["IMPORT", "Job", "Mutant", "Setup", "judge", "mutants_of"]
