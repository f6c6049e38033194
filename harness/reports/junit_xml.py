"""JUnit XML of a run (``junit.xml``), for CI systems that show test results.

Written by hand, not with a library: the published ``junit.xml`` files must re-render byte-identical, and
junitparser (5.0) writes through ElementTree, which gives another document for the same suite:
``<?xml version='1.0' ...?>`` in single quotes, ``name`` before ``classname``, a ``time`` on the suite,
``<testcase ... />`` and no line per test case. pytest's own JUnit XML comes from a pytest session, and
``specconform report`` renders a run folder without one. The format is small (one ``testsuite``, one
``testcase`` per check and requirement, ``failure``, ``error`` and ``skipped``); ``xml.sax.saxutils``
escapes every text and attribute."""

from __future__ import annotations

from collections import defaultdict
from xml.sax.saxutils import escape, quoteattr

from ..schemas import RequirementRecord, RunRecord

from .text import first_line, own_reproduction


def junit(records: list[RunRecord], missing: list[str] = ()) -> str:
    """One test case per (check, requirement): FAIL is a failure, ERROR and TIMEOUT errors, NOT_RUN,
    NOT_CLAIMED and PRECONDITION_FAILED skipped; a selected check without a record is an error."""
    cases = []
    counts = defaultdict(int)
    for r in records:
        own_result = RequirementRecord(status=r.status, cases=0, evidence=r.message, fingerprint="")
        for rid, result in r.results.items() or [("check", own_result)]:
            status = result.status
            detail = result.evidence or r.message
            body = ""
            if status == "FAIL":
                own = own_reproduction(r, rid)
                text = escape(detail + (f"\nminimal reproduction: {own}" if own else "") + "\n" + r.reproduce)
                body = f"<failure message={quoteattr(first_line(detail))}>{text}</failure>"
                counts["failures"] += 1
            elif status in ("ERROR", "TIMEOUT"):
                body = f"<error message={quoteattr(status + ': ' + first_line(detail))}>{escape(detail)}</error>"
                counts["errors"] += 1
            elif status != "PASS":
                body = f"<skipped message={quoteattr(status + ': ' + first_line(detail))}/>"
                counts["skipped"] += 1
            cases.append(
                f"  <testcase classname={quoteattr(r.engine + '.' + r.check)} name={quoteattr(rid)} "
                f'time="{r.duration_s:.4f}">{body}</testcase>'
            )
    for item in missing:
        cases.append(
            f'  <testcase classname={quoteattr(item)} name="record"><error message="no record: the run ended '
            f'before this check was judged"/></testcase>'
        )
        counts["errors"] += 1
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="specconform" tests="{len(cases)}" '
        f'failures="{counts["failures"]}" errors="{counts["errors"]}" skipped="{counts["skipped"]}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n"
    )
