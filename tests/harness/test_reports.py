"""Reports: Markdown failures first, JUnit that parses, HTML with plots, diffs that count failures first."""

import html
import xml.etree.ElementTree as ET

from specconform.harness import reports, spec
from specconform.harness.schemas import RunRecord


def make_record(check, status, engine="e", cls="tb.core", reqs=("TB-FORCE-1",), violated=(), p=None, plots=()):
    return RunRecord.model_validate(
        {
            "check": check,
            "cls": cls,
            "requirements": list(reqs),
            "status": status,
            "message": f"{status} msg",
            "violated": list(violated),
            "results": {
                r: {
                    "status": ("FAIL" if r in violated or not violated else "NOT_RUN") if status == "FAIL" else status,
                    "cases": 1 if status in ("PASS", "FAIL") else 0,
                    "evidence": "",
                    "fingerprint": f"{r}/mode" if status == "FAIL" else "",
                }
                for r in reqs
            },
            "unexpected": [r for r in reqs if status == "FAIL"] + (["check"] if status in ("ERROR", "TIMEOUT") else []),
            "engine": engine,
            "engine_spec": engine,
            "engine_version": "1",
            "device": "cpu",
            "profile": "c",
            "seed": 1,
            "duration_s": 0.1,
            "reproduce": f"specconform run --check {check}",
            "statistic": None,
            "p_value": p,
            "alpha": None if p is None else 1e-6,
            "trials": None if p is None else 10,
            "expected_status": None,
            "expectation_reason": "",
            "expectation_link": "",
            "plots": list(plots),
        }
    )


def edited(record: RunRecord, rid: str = "", **fields) -> RunRecord:
    """``record`` with ``fields`` changed: its own, or with ``rid`` those of that requirement's result."""
    data = record.to_json()
    (data["results"][rid] if rid else data).update(fields)
    return RunRecord.model_validate(data)


def test_markdown_lists_checks_failures_first_with_classes_requirements_and_uncovered():
    records = [make_record("a", "PASS"), make_record("b", "FAIL", violated=("TB-FORCE-1",)), make_record("c", "ERROR")]
    text = reports.markdown(records, ["API-BUDGET-1"])
    checks = text.split("## Checks judged")[1]
    assert checks.index("`b`") < checks.index("`c`") < checks.index("`a`")  # FAIL, ERROR, PASS
    assert "## Per conformance class" in text and "## Per requirement" in text
    assert "| TB-FORCE-1 | MUST | FAIL (2) |" in text  # two checks judged a case of it (the ERROR none)
    assert "Not yet covered by any check** (1): API-BUDGET-1" in text


def _first_ten(records, missing=()) -> str:
    return "\n".join(reports.markdown(records, [], missing).splitlines()[:10])


def _whole_class(check, cls, engine="e") -> dict:
    """A passing record of a check that covers every requirement of ``cls`` (as the registry has them)."""
    return make_record(check, "PASS", engine=engine, cls=cls, reqs=spec.classes()[cls])


def test_the_first_ten_lines_of_a_passing_run_give_the_verdict_per_engine():
    records = [_whole_class("a", "tb.core"), _whole_class("b", "rs.greedy", engine="f")]
    records.append(make_record("c", "NOT_CLAIMED", engine="f"))
    head = _first_ten(records)
    assert "**Verdict: PASS**: no unexpected failure" in head
    assert "| e | **CONFORMS**: 1 of 1 claimed classes conform |" in head
    assert "| f | **CONFORMS**: 1 of 1 claimed classes conform |" in head  # tb.core not claimed by f


def test_the_first_ten_lines_of_a_failing_run_name_the_unexpected_failure():
    records = [
        make_record("a", "PASS"),
        make_record("b", "FAIL", violated=("TB-FORCE-1",)),
        _whole_class("c", "tb.core", "f"),
    ]
    head = _first_ten(records)
    assert "**Verdict: FAIL**: 1 unexpected failure in e (first: `b` on TB-FORCE-1);" in head
    assert "| e | **FAILS**: 1 unexpected failure; 0 of 1 claimed classes conform |" in head
    assert "| f | **CONFORMS**" in head
    text = reports.markdown(records, [])
    assert (
        text.index("## Findings (1 defect, 1 unexpected)")
        < text.index("- **e** **unexpected** finding **TB-FORCE-1** `mode` (1 defect, seen by 1 check: `b`): FAIL msg.")
        < text.index("## e")
    )  # the failure with its evidence, before any engine's details


def test_the_first_ten_lines_of_a_run_with_expected_failures_say_they_are_known():
    failed = make_record("b", "FAIL", violated=("TB-FORCE-1",))
    failed = edited(failed, unexpected=[], expected_status="FAIL", expectation_reason="the engine's design")
    head = _first_ten([make_record("a", "PASS"), failed])
    assert "**Verdict: PASS**: no unexpected failure" in head and "1 known failure (expected)" in head
    assert "| e | **KNOWN FAILURES** only (1, all expected); 0 of 1 claimed classes conform |" in head
    known = reports.markdown([make_record("a", "PASS"), failed], []).split("## Findings (1 defect, 0 unexpected)")[1]
    assert "known finding **TB-FORCE-1** `mode` (1 defect, seen by 1 check: `b`): FAIL msg." in known
    assert "Cause: the engine's design" in known


def test_an_incomplete_run_fails_its_verdict():
    assert "**Verdict: FAIL**" in _first_ten([make_record("a", "PASS")], missing=["e: b"])


def test_a_class_judged_in_part_says_why_and_not_claimed_classes_take_one_line_per_engine():
    blocked = make_record("b", "PRECONDITION_FAILED", cls="api.budget", reqs=("API-BUDGET-7",))
    blocked = edited(blocked, "API-BUDGET-7", evidence="'</think>' is one token")
    records = [make_record("a", "PASS", cls="api.budget", reqs=("API-BUDGET-1",)), blocked]
    records += [make_record(f"n{i}", "NOT_CLAIMED", cls="tb.core", reqs=(f"TB-FORCE-{i}",)) for i in (1, 2)]
    records += [make_record("r", "NOT_CLAIMED", cls="rs.greedy", reqs=("RS-GREEDY-1",))]
    text = reports.markdown(records, [])
    left_out = ", ".join(
        rid for rid in sorted(spec.classes()["api.budget"]) if rid not in ("API-BUDGET-1", "API-BUDGET-7")
    )
    assert (
        f"- api.budget: **judged in part** (1 of {len(spec.classes()['api.budget'])} requirements PASS; "
        f"{left_out} left out by --check; API-BUDGET-7 PRECONDITION_FAILED ('</think>' is one token))"
    ) in text
    assert "'</think>' is one token" in text.split("## Per conformance class")[1]  # the roll-up says why
    engine_section = text.split("## e\n")[1].split("## Per conformance class")[0]
    unclaimed = [line for line in engine_section.splitlines() if "not claimed" in line]
    assert unclaimed == ["- not claimed by profile c (2 classes): rs.greedy, tb.core"]  # one line, every class
    page = reports.html_report(records, [])
    assert page.count("not claimed by profile c (2 classes): rs.greedy, tb.core") == 1


def test_the_uncovered_count_agrees_with_the_requirement_table():
    uncovered = ["RS-INPUT-7", "TB-FORCE-6"]
    text = reports.markdown([make_record("a", "PASS")], uncovered)
    table = text.split("## Per requirement")[1].split("**Not yet covered")[0]
    assert sum("| not covered |" in line for line in table.splitlines()) == len(uncovered)
    assert f"Not yet covered by any check** ({len(uncovered)})" in text
    assert "| RUN-" not in table  # runner requirements bind the runner; they are named once, below


def test_junit_parses_and_counts():
    records = [
        make_record("a", "PASS"),
        make_record("b", "FAIL"),
        make_record("c", "ERROR"),
        make_record("d", "NOT_CLAIMED"),
    ]
    root = ET.fromstring(reports.junit(records))
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "1", "1")


def test_html_is_self_contained_with_plots():
    plot = {
        "kind": "distribution",
        "case": "c",
        "target": [[0.5, 0.5]],
        "empirical": [[0.4, 0.6]],
        "positions": [{"p_value": 0.3, "tv_upper": 0.1, "trials": 10}],
        "accepted_length": {},
        "lengths": [1.0],
        "expected_lengths": [1.0],
    }
    trace = {"kind": "budget-trace", "title": "t", "thinking": [0, 1, 2, 2], "budget": 2, "forced": [3]}
    page = reports.html_report(
        [make_record("a", "PASS", p=0.3, plots=[plot, trace])],
        [],
        zoo_table=[{"mutant": "m", "description": "d", "breaks": "TB-FORCE-1", "caught": True, "caught_by": ["a"]}],
    )
    assert page.count("<svg") == 3 and "catch table" in page
    assert "src=" not in page and "http" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched


def test_html_filters_and_links_each_failure_to_evidence_reproduction_and_spec_text():
    failed = make_record("b", "FAIL", violated=("TB-FORCE-1",))
    failed = edited(
        edited(failed, reproduction="repro/b-TB-FORCE-1.json"), "TB-FORCE-1", reproduction="repro/b-TB-FORCE-1.json"
    )
    page = reports.html_report([make_record("a", "PASS"), failed, make_record("c", "NOT_CLAIMED", cls="rs.greedy")], [])
    assert page.index("Verdict: FAIL") < page.index("<h2>Findings (1 defect)</h2>") < page.index("Per requirement")
    failures = page.split("<h2>Findings (1 defect)</h2>")[1].split("</ul>")[0]
    assert "<b>unexpected</b> finding <b>TB-FORCE-1</b>" in failures
    row = failures.split("href='#check-")[1].split("'")[0]
    assert f"<tr id='check-{row}'" in page and "<code>b</code>" in page.split(f"<tr id='check-{row}'")[1][:400]
    assert "href='repro/b-TB-FORCE-1.json'" in failures and "href='#spec-TB-FORCE-1'" in failures
    spec_text = page.split("<dt id='spec-TB-FORCE-1'>")[1].split("</dd>")[0]
    assert "specs/thinking-budget.md" in spec_text and "the only token allowed is" in spec_text
    for control in ("f-status", "f-class", "f-engine", "f-req"):
        assert f"id='{control}'" in page
    assert "function applyFilters()" in page
    assert 'data-statuses="|NOT_CLAIMED|" data-cls="|rs.greedy|"' in page  # what the filters match rows on


def test_html_escapes_text_as_the_published_pages_do_and_adds_no_line_break_of_its_own():
    """Text is escaped as ``html.escape`` escapes it (the published pages were written so: ``&#x27;``, ``&quot;``),
    also inside an attribute; the template's own layout adds no line break to the page, a message keeps its own."""
    message = 'it\'s <b>"bad"</b> & cut\nsecond line'
    failed = make_record("b", "FAIL", violated=("TB-FORCE-1",))
    failed = edited(edited(failed, message=message), "TB-FORCE-1", evidence=message)
    page = reports.html_report([failed], [])
    assert f'<pre style="white-space:pre-wrap;margin:0">{html.escape(message)}</pre>' in page
    assert f"title='FAIL on TB-FORCE-1 in `b`: {html.escape(message.splitlines()[0])}'" in page
    assert '<b>"bad"</b>' not in page
    body = page.split("</script>")[1]
    assert body.count("\n") == 3 and body.endswith("</html>\n")  # the message twice (pre, evidence), the end


def test_each_failed_requirement_links_its_own_reproduction():
    """A check that fails two requirements, each with its own minimal case (the record keeps the first's)."""
    failed = make_record("b", "FAIL", reqs=("TB-FORCE-1", "TB-COUNT-1"))
    for rid in ("TB-FORCE-1", "TB-COUNT-1"):
        failed = edited(failed, rid, reproduction=f"reproductions/e--b--{rid}.json")
    failed = edited(failed, reproduction="reproductions/e--b--TB-FORCE-1.json")
    page = reports.html_report([failed], [])
    findings_html = page.split("<h2>Findings")[1].split("<h2>")[0]
    for rid in ("TB-FORCE-1", "TB-COUNT-1"):
        (item,) = [li for li in findings_html.split("<li>") if f"FAIL on <a href='#spec-{rid}'>" in li]
        assert f"href='reproductions/e--b--{rid}.json'" in item, item
    text = reports.markdown([failed], [])
    for rid in ("TB-FORCE-1", "TB-COUNT-1"):
        (line,) = [line for line in text.splitlines() if f"finding **{rid}**" in line]
        assert f"Minimal case: `reproductions/e--b--{rid}.json`" in line, line
    junit = reports.junit([failed])
    for rid in ("TB-FORCE-1", "TB-COUNT-1"):
        case = junit.split(f'name="{rid}"')[1].split("</testcase>")[0]
        assert f"minimal reproduction: reproductions/e--b--{rid}.json" in case


def test_diff_lists_new_failures_first_then_fixes_then_statistics():
    old = [make_record("a", "PASS", p=0.5), make_record("b", "FAIL"), make_record("c", "PASS")]
    new = [make_record("a", "FAIL", p=1e-9), make_record("b", "PASS"), make_record("c", "PASS")]
    text, new_failures = reports.diff(old, new)
    assert new_failures == 1
    assert text.index("## New failures") < text.index("`a`") < text.index("## Fixes") < text.index("`b`")
    assert "p 0.5 → 1e-09" in text


def test_a_record_naming_an_alias_counts_for_its_successor():
    old = make_record("budget/whole-generations", "FAIL", reqs=("TB-FORCE-3",))  # a record of specification 0.1
    statuses = reports.requirement_status([old, make_record("budget/sequential", "PASS", reqs=("TB-FORCE-1",))])
    assert statuses == {("e", "TB-FORCE-1"): ("FAIL", 2)}


def test_the_report_names_the_permissions_and_how_they_are_declared():
    text = reports.markdown([make_record("a", "PASS")], [])
    assert "Permissions are no requirements" in text
    assert "RS-LAYOUT-3 (layout: padded)" in text
    assert "RS-INPUT-6 (capabilities without input-validation, with unvalidated-mode)" in text
    assert "| RS-LAYOUT-3 |" not in text  # not a row of the requirement table


def test_one_proof_patch_is_one_finding_under_one_name_with_what_else_it_fails():
    first = make_record("a", "FAIL", reqs=("TB-FORCE-2",), violated=("TB-FORCE-2",))
    second = make_record("b", "FAIL", reqs=("TB-MARK-2",), violated=("TB-MARK-2",))
    first = edited(first, "TB-FORCE-2", expectation_proof="proofs/e/restart.diff")
    second = edited(second, "TB-MARK-2", expectation_proof="proofs/e/restart.diff")
    text = reports.markdown([first, second], [])
    assert "## Findings (1 defect, 1 unexpected)" in text
    seen = "(1 defect, seen by 2 checks: `a`, `b`; also failing TB-MARK-2 (the same defect))"
    assert f"finding **TB-FORCE-2** `mode` {seen}" in text


def test_a_failure_a_combined_patch_proves_counts_under_each_defect_it_joins():
    single_a = make_record("a", "FAIL", reqs=("TB-FORCE-2",), violated=("TB-FORCE-2",))
    single_b = make_record("b", "FAIL", reqs=("TB-MARK-2",), violated=("TB-MARK-2",))
    both = make_record("c", "FAIL", reqs=("TB-FORCE-1",), violated=("TB-FORCE-1",))
    single_a = edited(single_a, "TB-FORCE-2", expectation_proof="proofs/e/a.diff")
    single_b = edited(single_b, "TB-MARK-2", expectation_proof="proofs/e/b.diff")
    both = edited(
        both,
        "TB-FORCE-1",
        expectation_proof="proofs/e/a-and-b.diff",
        expectation_defects=["proofs/e/a.diff", "proofs/e/b.diff"],
    )
    text = reports.markdown([single_a, single_b, both], [])
    assert "## Findings (2 defects, 2 unexpected)" in text
    assert "finding **TB-FORCE-2** `mode` (1 defect, seen by 2 checks: `a`, `c`; also failing TB-FORCE-1" in text
    assert "finding **TB-MARK-2** `mode` (1 defect, seen by 2 checks: `b`, `c`; also failing TB-FORCE-1" in text
    named_later = reports.markdown([both, single_a, single_b], [])  # a defect is named by a failure of its own
    assert "finding **TB-FORCE-2** `mode` (1 defect, seen by 2 checks: `a`, `c`; also failing TB-FORCE-1" in named_later
    both = edited(both, "TB-FORCE-1", finding="TB-FORCE-2")  # the same name: said once
    assert "seen by 2 checks: `a`, `c`)" in reports.markdown([both, single_a, single_b], [])


def test_two_defects_under_one_name_each_say_the_patch_that_fixes_it():
    first = make_record("a", "FAIL", reqs=("TB-MARK-1",), violated=("TB-MARK-1",))
    second = make_record("b", "FAIL", reqs=("TB-MARK-1",), violated=("TB-MARK-1",))
    first = edited(first, "TB-MARK-1", expectation_proof="proofs/e/stray-end-kept.diff")
    second = edited(second, "TB-MARK-1", expectation_proof="proofs/e/last-start-taken.diff")
    text = reports.markdown([first, second], [])
    assert "## Findings (2 defects, 2 unexpected)" in text
    assert "finding **TB-MARK-1 [stray-end-kept]** `mode` (1 defect, seen by 1 check: `a`)" in text
    assert "finding **TB-MARK-1 [last-start-taken]** `mode` (1 defect, seen by 1 check: `b`)" in text
