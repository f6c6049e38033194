"""The mutation tester on a synthetic module: the mutants it generates, and the verdicts of the per-mutant
runner against a tiny engine judged by one fake check (no torch, so each verdict takes a few seconds)."""

from __future__ import annotations

import textwrap

import pytest

from specconform.harness import mutation

TARGET = textwrap.dedent(
    '''
    """A synthetic module: when is a thinking section forced closed?"""


    def forced(count, budget, tracked=True):
        """True when ``count`` thinking tokens have used up ``budget``."""
        if not tracked and count < 0:
            raise ValueError(f"count {count}")
        budget = budget * 1
        return count >= budget
    '''
)

ENGINE = textwrap.dedent(
    """
    import tiny_target
    from specconform.harness.profiles import Profile


    class TinyEngine:
        name, version, device = "tiny", "0", "cpu"
        profile = Profile("tiny", frozenset({"tb.core"}), capabilities=frozenset())

        def forced(self, count, budget):
            return tiny_target.forced(count, budget)


    def make():
        return TinyEngine()
    """
)

CHECKS = textwrap.dedent(
    """
    from specconform.harness.core import Check, Tally


    def _forced(engine, ctx):
        tally = Tally(("TB-FORCE-1",))
        for count in range(5):
            for budget in range(4):
                tally.exercised("TB-FORCE-1")
                if engine.forced(count, budget) != (count >= budget):  # the specification's rule
                    tally.violated("TB-FORCE-1", "wrong-forcing", f"count {count}, budget {budget}")
        return tally.outcome("20 cases")


    def checks():
        return [Check("tiny/forced", "tb.core", ("TB-FORCE-1",), (), "forced exactly at the budget", _forced)]
    """
)


def _changes(mutants):
    return sorted((m.operator, m.original, m.replacement) for m in mutants)


def test_the_mutator_generates_each_operator_once_per_site():
    mutants = mutation.mutants_of(TARGET, "tiny_target.py")
    assert _changes(mutants) == sorted(
        [
            ("constant", "True", "False"),  # the default
            ("unary", "not ", ""),
            ("boolean", "and", "or"),
            ("boundary", "<", "<="),
            ("negate-comparison", "<", ">="),
            ("constant", "0", "1"),
            ("constant", "0", "-1"),
            ("drop-statement", 'raise ValueError(f"count {count}")', "pass"),
            ("drop-statement", "budget = budget * 1", "pass"),  # a re-assignment of a bound name
            ("binary", "*", "/"),
            ("constant", "1", "2"),
            ("constant", "1", "0"),
            ("boundary", ">=", ">"),
            ("negate-comparison", ">=", "<"),
        ]
    )
    assert len({m.key for m in mutants}) == len(mutants)
    boundary = next(m for m in mutants if m.replacement == ">")
    assert boundary.line == 10 and boundary.function == "forced"
    assert boundary.apply(TARGET).splitlines()[9] == "    return count > budget"
    assert "-    return count >= budget\n+    return count > budget\n" in boundary.diff(TARGET)


def test_skipped_functions_and_the_triton_branch_are_left_alone():
    source = textwrap.dedent(
        """
        def kept(x, backend):
            if backend == "triton":
                return x + 1
            return x - 1


        def gpu_only(x):
            return x * 2
        """
    )
    changes = _changes(mutation.mutants_of(source, "m.py", skip=("gpu_only",)))
    assert ("binary", "-", "+") in changes  # the CPU branch
    assert ("negate-comparison", "==", "!=") in changes  # the branch's condition
    assert ("binary", "+", "-") not in changes and ("binary", "*", "/") not in changes


def _judge(tmp_path, mutant, limit_s=60):
    setup = mutation.Setup(tmp_path, catalogue="tiny_checks:checks", exclude=())
    job = mutation.Job("tiny_engine:make", mutant, ["tiny/forced"], {"tiny/forced": limit_s})
    (judged,) = mutation.judge([job], setup)
    return judged


def test_the_runner_kills_a_mutant_that_breaks_a_requirement_and_not_an_equivalent_one(tmp_path):
    for name, text in (("tiny_target.py", TARGET), ("tiny_engine.py", ENGINE), ("tiny_checks.py", CHECKS)):
        (tmp_path / name).write_text(text)
    mutants = {m.replacement: m for m in mutation.mutants_of(TARGET, "tiny_target.py")}

    killed = _judge(tmp_path, mutants[">"]).verdict  # forcing one token late breaks TB-FORCE-1
    assert (killed.status, killed.check, killed.check_status, killed.requirements) == (
        "KILLED",
        "tiny/forced",
        "FAIL",
        ["TB-FORCE-1"],
    )
    survived = _judge(tmp_path, mutants["/"])  # budget / 1 == budget * 1: equivalent
    assert (survived.verdict.status, survived.verdict.checks_run) == ("SURVIVED", 1)
    assert (tmp_path / "tiny_target.py").read_text() == TARGET  # the mutant lived only in its child


def test_a_mutant_that_hangs_is_a_timeout_and_one_that_exits_an_error(tmp_path):
    hanging = TARGET.replace("    return", "    while count >= 0:\n        pass\n    return")
    exiting = TARGET.replace("    return", "    import os\n    os._exit(3)\n    return")
    (tmp_path / "tiny_engine.py").write_text(ENGINE)
    (tmp_path / "tiny_checks.py").write_text(CHECKS)
    for text, status in ((hanging, "TIMEOUT"), (exiting, "ERROR")):
        (tmp_path / "tiny_target.py").write_text(text)
        unchanged = mutation.Mutant("tiny_target.py", "forced", 1, "none", "", "", 0, 0, "unchanged")
        verdict = _judge(tmp_path, unchanged, limit_s=2).verdict
        assert (verdict.status, verdict.check, verdict.check_status, verdict.requirements) == (
            "KILLED",
            "tiny/forced",
            status,
            ["TB-FORCE-1"],
        )


def test_the_baseline_records_the_lines_each_check_executes(tmp_path):
    pytest.importorskip("coverage", reason="the test extra installs coverage (pyproject.toml)")
    for name, text in (("tiny_target.py", TARGET), ("tiny_engine.py", ENGINE), ("tiny_checks.py", CHECKS)):
        (tmp_path / name).write_text(text)
    setup = mutation.Setup(tmp_path, catalogue="tiny_checks:checks", exclude=())
    (baseline,) = mutation.judge([mutation.Job("tiny_engine:make", trace=(str(tmp_path / "tiny_target.py"),))], setup)
    assert baseline.verdict.status == "SURVIVED" and list(baseline.plan) == ["tiny/forced"]
    lines = baseline.lines[str(tmp_path / "tiny_target.py")]
    assert 10 in lines["tiny/forced"] and 8 not in lines["tiny/forced"]  # the raise is never reached
    assert 5 in lines[mutation.IMPORT]  # the def line (and its default) runs at import
