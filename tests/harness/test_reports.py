"""Reports: Markdown failures first, JUnit that parses, HTML with plots, diffs that count failures first."""

import xml.etree.ElementTree as ET

from harness import reports


def _record(check, status, engine="e", cls="tb.core", reqs=("TB-FORCE-1",), violated=(), p=None, plots=()):
    return {
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


def test_markdown_lists_failures_first_with_classes_requirements_and_uncovered():
    records = [_record("a", "PASS"), _record("b", "FAIL", violated=("TB-FORCE-1",)), _record("c", "NOT_CLAIMED")]
    text = reports.markdown(records, ["API-BUDGET-1"])
    assert text.index("`b`") < text.index("`c`") < text.index("`a`")  # FAIL, NOT_CLAIMED, PASS
    assert "## Per conformance class" in text and "## Per requirement" in text
    assert "| TB-FORCE-1 | MUST | FAIL (2) |"  # two checks exercised it, one failed in text
    assert "Not yet covered by any check** (1): API-BUDGET-1" in text


def test_junit_parses_and_counts():
    records = [_record("a", "PASS"), _record("b", "FAIL"), _record("c", "ERROR"), _record("d", "NOT_CLAIMED")]
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
        [_record("a", "PASS", p=0.3, plots=[plot, trace])],
        [],
        zoo_table=[{"mutant": "m", "description": "d", "breaks": "TB-FORCE-1", "caught": True, "caught_by": ["a"]}],
    )
    assert page.count("<svg") == 3 and "catch table" in page
    assert "<script" not in page and 'src="http' not in page and 'href="http' not in page  # nothing fetched


def test_diff_lists_new_failures_first_then_fixes_then_statistics():
    old = [_record("a", "PASS", p=0.5), _record("b", "FAIL"), _record("c", "PASS")]
    new = [_record("a", "FAIL", p=1e-9), _record("b", "PASS"), _record("c", "PASS")]
    text, new_failures = reports.diff(old, new)
    assert new_failures == 1
    assert text.index("## New failures") < text.index("`a`") < text.index("## Fixes") < text.index("`b`")
    assert "p 0.5 → 1e-09" in text
