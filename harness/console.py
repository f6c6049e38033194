"""What ``specconform run`` says on the console: why each check that did not pass did not, and at the end a short
summary of the findings, counted as ``summary.md`` counts them, with one word, PASS or FAIL.

A CI log alone must tell an engine team which requirements failed and why: a check's line names the requirement
and gives the first line of its evidence; the closing lines list each finding (one defect, however many checks saw
it: ``specconform.harness.findings``) and each check that ended in ERROR or TIMEOUT, then each engine's verdict and the
run's.
"""

from __future__ import annotations

from . import findings, reports
from .core import FAIL, NOT_CLAIMED, PASS
from .schemas import RunRecord

EVIDENCE_CHARS = 200  # of the first line of evidence a console line shows


def why(record: RunRecord) -> str:
    """Why a check did not pass, in one line: the requirements it failed with the first one's evidence, or (ERROR,
    TIMEOUT, PRECONDITION_FAILED, ...) its requirements and message; "" for PASS and NOT_CLAIMED."""
    status, results = record.status, record.results
    if status in (PASS, NOT_CLAIMED):
        return ""
    failed = [rid for rid, result in results.items() if result.status == FAIL]
    if status == FAIL and failed:
        evidence = results[failed[0]].evidence or record.message
        named = failed[0] + (f" (and {', '.join(failed[1:])})" if failed[1:] else "")
        return f"{named}: {reports.first_line(evidence, EVIDENCE_CHARS)}"
    own = [rid for rid, result in results.items() if result.status == status]
    requirements = own or list(record.requirements)
    message = reports.first_line(record.message, EVIDENCE_CHARS)
    return ": ".join(part for part in (", ".join(requirements), message) if part)


def progress_line(record: RunRecord, done: int, total: int) -> str:
    """``[done/total] STATUS engine: check (seconds)``, then why when it did not pass."""
    line = f"[{done}/{total}] {record.status:19} {record.engine}: {record.check} ({record.duration_s:.1f} s)"
    reason = why(record)
    return f"{line}: {reason}" if reason else line


def closing(
    records: list[RunRecord], missing: list[str], run_dir, uncovered: list[str] = (), stopped_after: int | None = None
) -> tuple[bool, str]:
    """(whether the run passes, the closing lines): the findings, the checks that ended in ERROR or TIMEOUT, the
    selected checks with no record (and, with ``stopped_after``, that the run stopped after that many failing
    checks: ``--maxfail``), each engine's verdict with the classes it judged in part and what of them it did not
    judge, and a last line that starts with PASS or FAIL and counts the checks by status, the findings and the
    unexpected failures as ``summary.md`` does. The run passes as ``summary.md``'s verdict says; ``uncovered``: the
    requirements no check covers, as ``summary.md`` is given them."""
    verdicts = reports.engine_verdicts(records, uncovered)
    passed, verdict_line = reports.run_verdict(verdicts, list(missing))
    found = findings.findings(records)
    lines = []
    if found:
        unexpected = sum(not f.expected for f in found)
        lines.append(f"findings ({reports.count_of(len(found), 'defect')}, {unexpected} unexpected):")
        for f in found:
            record, rid = f.first
            checks = sorted(set(f.checks))
            seen = ", ".join(checks[:3]) + (f" and {len(checks) - 3} more" if len(checks) > 3 else "")
            requirement = "" if f.name.startswith(rid) else f"{rid}; "
            lines.append(
                f"  {'UNEXPECTED' if not f.expected else 'known':10} {f.engine}: {f.title} ({requirement}seen by "
                f"{seen}): {reports.evidence_of(record, rid, EVIDENCE_CHARS)}"
            )
    errors = [r for r in records if r.status in ("ERROR", "TIMEOUT")]
    if errors:
        lines.append(f"checks that ended in ERROR or TIMEOUT ({len(errors)}):")
        lines += [f"  {r.status:10} {r.engine}: {r.check}: {why(r)}" for r in errors]
    if missing:
        stopped = f"stopped after {stopped_after} failing checks (--maxfail): " if stopped_after else ""
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        lines.append(f"{stopped}{len(missing)} selected checks have NO record: {', '.join(missing[:10])}{more}")
    for v in verdicts:
        lines.append(f"{v.engine}: {v.headline.replace('**', '')}")
        lines += [f"  {c.cls} judged in part: {c.why}" for c in v.claimed if c.verdict == "judged in part"]
    counts = {status: sum(r.status == status for r in records) for status in reports.ORDER}
    lines.append(
        f"{'PASS' if passed else 'FAIL'}: "
        + " ".join(f"{status}={n}" for status, n in counts.items() if n)
        + f"; findings {len(found)}, {verdict_line}; reports in {run_dir}"
    )
    return passed, "\n".join(lines)
