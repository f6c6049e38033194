"""A new user's first run on an adapter with one bug reports one finding, under the requirement the bug breaks.
Each adapter is written as docs/engines.md ("Your own adapter") describes one: a factory whose engine
has a name, a version, a device, a profile of the classes it claims and the methods of its capabilities; each
wraps the reference and adds one bug an adapter author could make. The run is the documented one,
``specconform run --engine module:factory``, without the calibrated statistical checks: neither bug is
statistical, and those checks take minutes each on CI's two cores (the zoo's first runs leave them out for the
same reason: ``specconform.harness.zoo_findings``). Both run long, as the zoo's do: marked ``long``."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from specconform.harness import findings, runner, zoo_findings
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.profiles import Profile

ROOT = Path(__file__).resolve().parents[2]


class BudgetPlusOne:
    """A budget adapter that hands the reference each request's budget plus one: forcing starts a token late."""

    name, version, device = "budget-plus-one", "0.1", "cpu"
    profile = Profile(
        "budget-plus-one",
        classes=frozenset({"tb.core", "tb.multitoken", "tb.prompt-opened", "tb.scope.request", "tb.spec-decode"})
        | {"tb.batch", "tb.api"},
        capabilities=frozenset({"budget", "budget-logits"}),
    )

    def __init__(self):
        self.reference = ReferenceEngine()

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        handle = self.reference.budget_state(start, end, max_num_reqs, scope, max_spec_len)
        sync_batch = handle.sync_batch

        def sync_with_one_more(update):
            if update is None:  # a step that changes no slot
                return sync_batch(update)
            added = [dataclasses.replace(a, budget=a.budget + 1) if _a_count(a.budget) else a for a in update.added]
            sync_batch(dataclasses.replace(update, added=added))

        handle.sync_batch = sync_with_one_more
        return handle


def _a_count(budget) -> bool:
    """Whether ``budget`` is a number of tokens (not untracked, not an invalid value the reference must reject)."""
    return isinstance(budget, int) and not isinstance(budget, bool) and budget >= 0


class BonusDropped:
    """A rejection adapter that drops the bonus token: a request whose drafts were all accepted emits them alone."""

    name, version, device = "bonus-dropped", "0.1", "cpu"
    profile = Profile(
        "bonus-dropped",
        classes=frozenset({"rs.greedy", "rs.zero-draft", "rs.forced", "rs.input", "rs.layout", "rs.mixed"})
        | {"rs.seeded", "rs.probabilistic", "rs.one-hot"},
        capabilities=frozenset({"rejection", "reference-draws", "seeded", "mixed-seeding", "input-validation"}),
    )

    def __init__(self):
        self.reference = ReferenceEngine()

    def rejection_sample(self, case):
        tokens, num_emitted = self.reference.rejection_sample(case)
        tokens, num_emitted = np.array(tokens), np.array(num_emitted)
        drafts = np.asarray(case.num_draft_tokens)
        for row in np.flatnonzero(num_emitted == drafts + 1):
            tokens[row, drafts[row]] = -1
            num_emitted[row] -= 1
        return tokens, num_emitted


def _first_run(factory: str, tmp_path) -> list[findings.Finding]:
    """``specconform run --engine tests.harness.test_first_run_adapters:<factory>`` without the statistical checks,
    and the findings its report holds."""
    excluded = [arg for name in sorted(zoo_findings.STATISTICAL_CHECKS) for arg in ("--exclude", name)]
    result = subprocess.run(
        [sys.executable, "-m", "specconform.harness.cli", "run", "--quiet", "--report-dir", str(tmp_path / "runs")]
        + ["--engine", f"tests.harness.test_first_run_adapters:{factory}", *excluded],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=1200,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = runner.read_records(run_dir)
    broken = [(r.check, r.message[:200]) for r in records if r.status in ("ERROR", "TIMEOUT")]
    assert not broken, broken
    return findings.findings(records)


def budget_plus_one():
    return BudgetPlusOne()


def bonus_dropped():
    return BonusDropped()


@pytest.mark.long
@pytest.mark.parametrize(
    "factory,requirement",
    [("budget_plus_one", "TB-FORCE-1"), ("bonus_dropped", "RS-ZERO-1")],
    ids=["budget-plus-one", "bonus-dropped"],
)
def test_a_first_run_reports_the_adapters_bug_as_one_finding(factory, requirement, tmp_path):
    found = _first_run(factory, tmp_path)
    assert [zoo_findings.finding_requirement(f) for f in found] == [requirement], [
        (f.name, sorted(set(f.checks))) for f in found
    ]
