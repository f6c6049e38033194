"""Verdicts never over-claim: a class conforms only when every requirement of it that the profile claims was judged
and passed in the run, counted against every class the profile claims; what a run did not judge is named, with why,
alike on the console, in ``summary.md`` and in ``report.html``, and the exit status still says only whether something
failed unexpectedly."""

import pytest

from specconform.harness import adapters, checks, cli, reports, spec
from specconform.harness.schemas import RunRecord

from .test_reports import edited, make_record


def _engine_classes(classes) -> list[str]:
    """Of ``classes``, those an engine conforms to: a class of runner requirements alone binds the runner."""
    return sorted(c for c in classes if any(not rid.startswith("RUN-") for rid in spec.classes()[c]))


def _covered(*check_names: str) -> set[str]:
    return {rid for c in checks.all_checks() if c.name in check_names for rid in c.requirements}


def _run(tmp_path, capsys, check_names) -> tuple[int, list[str], str, str]:
    """``specconform run --engine reference`` on ``check_names``: (exit status, console lines, summary.md,
    report.html)."""
    argv = ["run", "--engine", "reference", "--report-dir", str(tmp_path), "--quiet"]
    for name in check_names:
        argv += ["--check", name]
    status = cli.main(argv)
    out = capsys.readouterr().out
    (run_dir,) = tmp_path.iterdir()
    return status, out.splitlines(), (run_dir / "summary.md").read_text(), (run_dir / "report.html").read_text()


@pytest.fixture(scope="module")
def reference_classes() -> list[str]:
    return _engine_classes(adapters.make_engine("reference").profile.classes)


def test_one_check_of_a_class_conforms_where_judged_naming_what_it_left_out(tmp_path, capsys, reference_classes):
    status, console, summary, page = _run(tmp_path, capsys, ["budget/whole-generations"])
    assert status == 0  # nothing failed: only the verdict's words say what was not judged
    others = [c for c in reference_classes if c != "tb.core"]
    headline = (
        f"**CONFORMS WHERE JUDGED**: nothing failed; 0 of {len(reference_classes)} claimed classes judged in full; "
        f"judged in part: tb.core; not judged: {', '.join(others)}"
    )
    assert f"reference: {headline.replace('**', '')}" in console
    assert f"| reference | {headline} |" in summary
    assert headline.replace("**CONFORMS WHERE JUDGED**", "<b>CONFORMS WHERE JUDGED</b>") in page
    tb_core = spec.classes()["tb.core"]
    judged = _covered("budget/whole-generations")
    left_out = ", ".join(sorted(set(tb_core) - judged))
    why = f"{len(judged)} of {len(tb_core)} requirements PASS; {left_out} left out by --check"
    assert f"  tb.core judged in part: {why}" in console
    assert f"- tb.core: **judged in part** ({why})" in summary
    for cls in others:  # a class no check of the run judged is named, every requirement of it with why
        requirements = sorted(spec.classes()[cls])
        line = f"- {cls}: **not judged** (0 of {len(requirements)} requirements PASS; {', '.join(requirements)} left"
        assert line in summary, cls
    assert console[-1].startswith("PASS: ")


def test_every_check_of_a_class_makes_the_class_conform(tmp_path, capsys, reference_classes):
    names = [c.name for c in checks.all_checks() if c.cls == "tb.core"]
    status, console, summary, _ = _run(tmp_path, capsys, names)
    assert status == 0
    assert "- tb.core: **conforms** (" in summary
    (engine_line,) = [line for line in console if line.startswith("reference: ")]
    assert f"1 of {len(reference_classes)} claimed classes judged in full" in engine_line
    assert engine_line.startswith("reference: CONFORMS WHERE JUDGED")  # the other classes were left out


def _claiming(records: list[RunRecord], classes: list[str]) -> list[RunRecord]:
    return [edited(r, claimed_classes=classes) for r in records]


def test_a_claimed_class_without_any_record_is_not_judged_and_counted():
    judged = [make_record("a", "PASS", reqs=spec.classes()["tb.core"])]
    (alone,) = reports.engine_verdicts(_claiming(judged, ["tb.core"]))
    assert alone.verdict == "CONFORMS" and alone.headline == "**CONFORMS**: 1 of 1 claimed classes conform"
    (verdict,) = reports.engine_verdicts(_claiming(judged, ["rs.greedy", "tb.core"]))
    assert verdict.verdict == "CONFORMS WHERE JUDGED"
    assert verdict.headline.endswith("1 of 2 claimed classes judged in full; not judged: rs.greedy")
    (greedy,) = [c for c in verdict.classes if c.cls == "rs.greedy"]
    requirements = sorted(spec.classes()["rs.greedy"])
    assert greedy.verdict == "not judged" and greedy.why.endswith(f"{', '.join(requirements)} left out by --check")


def test_a_requirement_no_check_covers_is_named_so_and_denies_conforms():
    tb_core = spec.classes()["tb.core"]
    judged = [make_record("a", "PASS", reqs=tb_core[1:])]
    (verdict,) = reports.engine_verdicts(_claiming(judged, ["tb.core"]), uncovered=[tb_core[0]])
    assert verdict.verdict == "CONFORMS WHERE JUDGED"
    assert verdict.classes[0].why.endswith(f"; {tb_core[0]} no check covers it")


def test_a_requirement_of_a_variant_the_profile_does_not_declare_is_not_claimed():
    """A check that covers both variants' requirements reports the declared one's (TB-FORCE-5 or TB-FORCE-6): the
    other is no requirement of this engine, and does not hold back its class."""
    tb_core = spec.classes()["tb.core"]
    covered = sorted(_covered("budget/forced-logits"))
    record = make_record("budget/forced-logits", "PASS", reqs=covered)
    results = {rid: result for rid, result in record.results.items() if rid != "TB-FORCE-6"}
    record = record.model_copy(update={"results": results})  # a one-hot engine's: TB-FORCE-5 judged instead
    rest = make_record("b", "PASS", reqs=[rid for rid in tb_core if rid not in covered])
    (verdict,) = reports.engine_verdicts(_claiming([record, rest], ["tb.core"]))
    assert verdict.verdict == "CONFORMS", verdict.classes[0].why


def test_a_record_of_another_class_judges_a_requirement_of_this_one():
    """A requirement has one status per engine, merged across checks (RUN-STATUS-4): a class conforms on what any
    check of the run judged of it."""
    tb_core = spec.classes()["tb.core"]
    own = make_record("a", "PASS", reqs=tb_core[1:])
    other = make_record("b", "PASS", cls="tb.spec-decode", reqs=[tb_core[0]])
    (verdict,) = reports.engine_verdicts(_claiming([own, other], ["tb.core"]))
    assert verdict.classes[0].verdict == "conforms"


def test_a_class_the_registry_no_longer_names_is_not_judged():
    """A record of an earlier specification's class shows nothing the registry requires as passed."""
    (verdict,) = reports.engine_verdicts([make_record("a", "PASS", cls="tb.gone", reqs=("TB-GONE-1",))])
    assert [(c.cls, c.verdict) for c in verdict.classes] == [("tb.gone", "not judged")]
    assert verdict.verdict == "CONFORMS WHERE JUDGED"
