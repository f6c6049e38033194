"""Reports rendered from the JSON-lines record: Markdown, JUnit XML, self-contained HTML, run diffs."""

from __future__ import annotations

import html
import math
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from . import findings, spec
from .core import BAD, SEVERITY, worst

ORDER = SEVERITY


def _first_line(text: str, limit: int = 240) -> str:
    """The first line of ``text``, cut at a word boundary to at most ``limit`` characters ("…" marks a cut)."""
    line = (text or "").splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + " …"


def _is_regression(r: dict) -> bool:
    return bool(r.get("unexpected"))


def _sorted(records):
    return sorted(records, key=lambda r: (ORDER.get(r["status"], 9), r["engine"], r["check"]))


def requirement_status(records: list[dict]) -> dict[tuple[str, str], tuple[str, int]]:
    """``{(engine, requirement): (status, cases)}``, one status per requirement merged across the checks
    (``findings.merged_status``: FAIL only where a case violated it, PASS where cases exercised it and none
    violated it). A record of an earlier specification that names an id now an alias (``spec.load_aliases``)
    counts for the alias's first successor."""
    successor = {rid: alias.now[0] for rid, alias in spec.load_aliases().items()}
    renamed = [
        {**r, "results": {successor.get(rid, rid): result for rid, result in r["results"].items()}} for r in records
    ]
    return findings.requirement_statuses(renamed)


def _incomplete(missing: list[str]) -> list[str]:
    if not missing:
        return []
    shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return [f"**INCOMPLETE RUN: {len(missing)} selected checks have no record**: {shown}", ""]


# ---------------------------------------------------------------------------------------------
# The verdict: per engine, per claimed class, what a reader needs first


@dataclass
class ClassVerdict:
    """One engine's verdict on one conformance class.

    ``verdict`` is ``conforms`` (every requirement its checks cover PASS), ``fails`` (a failure no
    expectation covers), ``known failure`` (every failure expected), ``judged in part`` (no failure,
    but a requirement NOT_RUN or PRECONDITION_FAILED) or ``not claimed``; ``why`` says it in one line."""

    cls: str
    verdict: str
    status: str
    why: str


@dataclass
class EngineVerdict:
    """One engine's verdict: its identity, its checks counted by status, its class verdicts, and the
    (record, requirement or ``"check"``) pairs that no expectation covers."""

    engine: str
    version: str
    device: str
    profile: str
    counts: dict[str, int]
    classes: list[ClassVerdict]
    unexpected: list[tuple[dict, str]]
    known: list[tuple[dict, str]]
    unexpected_passes: list[dict]

    @property
    def claimed(self) -> list[ClassVerdict]:
        return [c for c in self.classes if c.verdict not in (NOT_CLAIMED_VERDICT, NOT_APPLICABLE_VERDICT)]

    @property
    def verdict(self) -> str:
        """``FAILS``, ``KNOWN FAILURES``, ``CONFORMS``, ``CONFORMS WHERE JUDGED`` or ``NOTHING CLAIMED``."""
        if self.unexpected:
            return "FAILS"
        if self.known:
            return "KNOWN FAILURES"
        if not self.claimed:
            return "NOTHING CLAIMED"
        return "CONFORMS" if all(c.verdict == "conforms" for c in self.claimed) else "CONFORMS WHERE JUDGED"

    @property
    def headline(self) -> str:
        conforming = sum(c.verdict == "conforms" for c in self.claimed)
        claimed = f"{conforming} of {len(self.claimed)} claimed classes conform"
        if self.unexpected:
            return f"**FAILS**: {_count(findings.distinct(self.unexpected), 'unexpected failure')}; {claimed}"
        if self.known:
            return f"**KNOWN FAILURES** only ({findings.distinct(self.known)}, all expected); {claimed}"
        if self.verdict == "CONFORMS WHERE JUDGED":
            partial = ", ".join(c.cls for c in self.claimed if c.verdict == "judged in part")
            return f"**CONFORMS WHERE JUDGED**: {claimed}; judged in part: {partial}"
        return f"**{self.verdict}**: {claimed}"


NOT_CLAIMED_VERDICT = "not claimed"
NOT_APPLICABLE_VERDICT = "not applicable"
_OUTSIDE = "outside the engine's contract or judged only on adapter-derived values (NOT_APPLICABLE)"


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{n} {noun if n == 1 else plural}"


def _bad_pairs(records: list[dict]) -> list[tuple[dict, str]]:
    """Every failed requirement and every check that ended in ERROR or TIMEOUT: (record, requirement
    or ``"check"``)."""
    out = []
    for r in _sorted(records):
        out += [(r, rid) for rid, result in r["results"].items() if result["status"] == "FAIL"]
        if r["status"] in ("ERROR", "TIMEOUT"):
            out.append((r, "check"))
    return out


def _evidence(record: dict, rid: str, limit: int = 240) -> str:
    result = record["results"].get(rid, {})
    return _first_line(result.get("evidence") or record["message"], limit)


def class_verdict(records: list[dict], cls: str) -> ClassVerdict:
    """The verdict of one engine's records of one class (see ``ClassVerdict``)."""
    judged = [r for r in records if r["status"] != "NOT_CLAIMED"]
    if not judged:
        return ClassVerdict(cls, NOT_CLAIMED_VERDICT, "NOT_CLAIMED", _first_line(records[0]["message"]))
    registry = spec.load_registry()

    def own(rid: str) -> bool:  # a failure found by a check of this class may be another class's finding
        return rid == "check" or rid not in registry or registry[rid].cls == cls

    merged = {rid: value for (_, rid), value in requirement_status(judged).items() if own(rid)}
    outside = sorted(rid for rid, (req_status, _) in merged.items() if req_status == "NOT_APPLICABLE")
    per_req = {rid: value for rid, value in merged.items() if rid not in outside}  # the verdict rests on these
    if outside and not per_req:
        return ClassVerdict(cls, NOT_APPLICABLE_VERDICT, "NOT_APPLICABLE", f"{', '.join(outside)}: {_OUTSIDE}")
    status = worst(
        [s for s, _ in per_req.values()]
        + [r["status"] for r in judged if not r["results"] and r["status"] != "NOT_APPLICABLE"]
    )
    bad = [(r, rid) for r, rid in _bad_pairs(judged) if own(rid)]
    if bad:
        unexpected = [(r, rid) for r, rid in bad if rid in r.get("unexpected", ())]
        record, rid = (unexpected or bad)[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        what = f"{record['status']} on {rid}" if rid != "check" else record["status"]
        return ClassVerdict(
            cls,
            "fails" if unexpected else "known failure",
            status,
            f"{what} in `{record['check']}`{more}: {_evidence(record, rid)}",
        )
    cases = sum(c for _, c in per_req.values())
    blocked = sorted(rid for rid, (req_status, _) in per_req.items() if req_status == "BLOCKED")
    if blocked:
        record = next(r for r in judged if r["results"].get(blocked[0], {}).get("status") == "BLOCKED")
        return ClassVerdict(cls, "blocked", "BLOCKED", f"{', '.join(blocked)} {_evidence(record, blocked[0])}")
    if status == "PASS":
        besides = f"; {', '.join(outside)} {_OUTSIDE}" if outside else ""
        return ClassVerdict(
            cls, "conforms", status, f"{_count(len(per_req), 'requirement')}, {_count(cases, 'case')}{besides}"
        )
    open_reqs = []
    for rid, (req_status, _) in sorted(per_req.items()):
        if req_status == "PASS":
            continue
        record = next(r for r in judged if rid in r["results"] and r["results"][rid]["status"] == req_status)
        open_reqs.append(f"{rid} {req_status} ({_evidence(record, rid)})")
    passed = sum(s == "PASS" for s, _ in per_req.values())
    return ClassVerdict(
        cls, "judged in part", status, f"{passed} of {len(per_req)} requirements PASS; " + "; ".join(open_reqs)
    )


def engine_verdicts(records: list[dict]) -> list[EngineVerdict]:
    """One verdict per engine, in name order."""
    out = []
    for engine in sorted({r["engine"] for r in records}):
        mine = [r for r in records if r["engine"] == engine]
        counts = {s: sum(r["status"] == s for r in mine) for s in ORDER}
        bad = _bad_pairs(mine)
        unexpected = [(r, rid) for r, rid in bad if rid in r.get("unexpected", ())]
        out.append(
            EngineVerdict(
                engine=engine,
                version=mine[0]["engine_version"],
                device=mine[0]["device"],
                profile=mine[0]["profile"],
                counts={s: n for s, n in counts.items() if n},
                classes=[
                    class_verdict([r for r in mine if r["cls"] == c], c) for c in sorted({r["cls"] for r in mine})
                ],
                unexpected=unexpected,
                known=[pair for pair in bad if pair not in unexpected],
                unexpected_passes=[r for r in mine if _unexpected_pass(r)],
            )
        )
    return out


def _unexpected_pass(r: dict) -> bool:
    return r["status"] == "PASS" and r.get("expected_status") not in (None, "PASS")


def run_verdict(verdicts: list[EngineVerdict], missing: list[str]) -> tuple[bool, str]:
    """(whether the run passes, one line): it passes iff no failure is unexpected and every selected
    check has a record (the exit status of ``specconform run``)."""
    unexpected = findings.distinct(pair for v in verdicts for pair in v.unexpected)
    known = findings.distinct(pair for v in verdicts for pair in v.known)
    passes = sum(len(v.unexpected_passes) for v in verdicts)
    failing = [v.engine for v in verdicts if v.unexpected]
    tail = f"{_count(known, 'known failure')} (expected), {_count(passes, 'unexpected pass')}"
    if missing:
        tail += f"; INCOMPLETE: {len(missing)} selected checks have no record"
    if unexpected:
        record, rid = next(pair for v in verdicts for pair in v.unexpected)
        first = f"`{record['check']}` on {rid}" if rid != "check" else f"`{record['check']}` {record['status']}"
        return False, f"{_count(unexpected, 'unexpected failure')} in {', '.join(failing)} (first: {first}); {tail}"
    conforming = sum(v.verdict == "CONFORMS" for v in verdicts)
    line = f"no unexpected failure; engines conforming in every claimed class: {conforming} of {len(verdicts)}; "
    return not missing, line + tail


def _not_claimed_line(verdict: EngineVerdict) -> list[str]:
    """The classes an engine's profile does not claim, in one line (none when it claims every class judged)."""
    classes = [c.cls for c in verdict.classes if c.verdict == NOT_CLAIMED_VERDICT]
    if not classes:
        return []
    return [f"not claimed by profile {verdict.profile} ({_count(len(classes), 'class')}): {', '.join(classes)}"]


def _status_counts(counts: dict[str, int]) -> str:
    return " · ".join(f"{status} {n}" for status, n in counts.items())


def _class_cells(records: list[dict], engines: list[str]) -> dict[tuple[str, str], ClassVerdict]:
    return {
        (cls, engine): class_verdict(mine, cls)
        for engine in engines
        for cls in {r["cls"] for r in records}
        if (mine := [r for r in records if r["engine"] == engine and r["cls"] == cls])
    }


def _class_table(records: list[dict], engines: list[str]) -> list[str]:
    """Rows: conformance classes; cells: each engine's verdict on the class (the worst status of the
    requirements its checks cover). A class judged in part is explained below the table."""
    cells = _class_cells(records, engines)
    lines = ["| class | " + " | ".join(engines) + " |", "| --- |" + " --- |" * len(engines)]
    notes = []
    for cls in sorted({r["cls"] for r in records}):
        row = []
        for engine in engines:
            verdict = cells.get((cls, engine))
            if verdict is None:
                row.append("-")
                continue
            text = {"conforms": "PASS", NOT_CLAIMED_VERDICT: "NOT_CLAIMED"}.get(verdict.verdict, verdict.status)
            if verdict.verdict in ("judged in part", "known failure", "blocked"):
                notes.append(f"{engine}, {cls}: {verdict.verdict}: {verdict.why}")
                text += f" ({verdict.verdict}, note {len(notes)})"
            row.append(text)
        lines.append(f"| {cls} | " + " | ".join(row) + " |")
    if notes:
        lines += [""] + [f"{i}. {note.replace('|', '/')}" for i, note in enumerate(notes, 1)]
    return lines


def _engine_requirements(registry) -> list[str]:
    """The requirements an engine is judged on: ``RUN-*`` ones bind the runner (the project's tests)."""
    return [rid for rid in registry if not rid.startswith("RUN-")]


def _requirement_rows(records: list[dict], engines: list[str], uncovered: list[str]):
    """``(requirement, level, class, rank, [cell per engine])`` rows, failures first. A cell is
    ``(status, cases, expected)``, ``None`` when no check of the run reached it for that engine, or
    ``"not covered"`` when no check covers it at all."""
    per_req = requirement_status(records)
    expected = {
        (r["engine"], rid)
        for r in records
        for rid, result in r["results"].items()
        if result["status"] == "FAIL" and rid not in r.get("unexpected", ())
    }
    registry = spec.load_registry()
    rows = []
    for rid in _engine_requirements(registry):
        cells = []
        for e in engines:
            if rid in uncovered:
                cells.append("not covered")
            elif (e, rid) in per_req:
                status, cases = per_req[(e, rid)]
                cells.append((status, cases, (e, rid) in expected))
            else:
                cells.append(None)
        rank = min((ORDER[c[0]] for c in cells if isinstance(c, tuple)), default=9)
        rows.append((rid, registry[rid].level, registry[rid].cls, rank, cells))
    return sorted(rows, key=lambda row: (row[3], row[0]))


def _cell_text(cell) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, str):
        return cell
    status, cases, expected = cell
    if status in ("PASS", "FAIL"):
        return f"{status} ({cases}{', expected' if expected else ''})"
    return status


def _requirement_table(records: list[dict], engines: list[str], uncovered: list[str]) -> list[str]:
    """Rows: the requirements an engine is judged on, failures first; cells: each engine's status with
    the cases that exercised it; ``not covered`` where no check covers it, ``-`` where none ran here."""
    lines = ["| requirement | level | " + " | ".join(engines) + " |", "| --- | --- |" + " --- |" * len(engines)]
    for rid, level, _, _, cells in _requirement_rows(records, engines, uncovered):
        lines.append(f"| {rid} | {level} | " + " | ".join(_cell_text(c) for c in cells) + " |")
    return lines


def _uncovered_lines(uncovered: list[str]) -> list[str]:
    runner_reqs = [rid for rid in spec.load_registry() if rid.startswith("RUN-")]
    lines = []
    if uncovered:
        lines += [f"**Not yet covered by any check** ({len(uncovered)}): " + ", ".join(uncovered), ""]
    lines.append(
        f"Runner requirements ({len(runner_reqs)}: {', '.join(runner_reqs)}) bind the runner, not an engine; "
        "the project's own tests judge them."
    )
    permissions = spec.load_permissions().values()
    lines += [
        "",
        "Permissions are no requirements: each is declared in the profile and honoured by the checks "
        "(specs/INTERPRETING.md, RUN-PROFILE-1): " + "; ".join(f"{p.id} ({p.declared_by})" for p in permissions) + ".",
    ]
    return lines


def _requirement_cells(r: dict) -> str:
    """Each requirement of a record with its own status: violated ones in bold."""
    out = []
    for rid in r["requirements"] + [x for x in r["results"] if x not in r["requirements"]]:
        result = r["results"].get(rid, {"status": r["status"], "cases": 0})
        text = f"{rid} {result['status']}" + (f" ({result['cases']})" if result["status"] in ("PASS", "FAIL") else "")
        out.append(f"**{text}**" if result["status"] == "FAIL" else text)
    return ", ".join(out)


def _check_status(r: dict) -> str:
    if _unexpected_pass(r):
        return "PASS (unexpected)"
    if r["status"] in BAD:
        return r["status"] + (" (unexpected)" if r.get("unexpected") else " (expected)")
    return r["status"]


def _own_reproduction(record: dict, rid: str) -> str:
    """The minimal reproduction of requirement ``rid`` of ``record`` ("" when it has none, or for ``"check"``)."""
    found = record["results"].get(rid, {}).get("reproduction") if rid != "check" else None
    return found if isinstance(found, str) else ""


def _failure_line(record: dict, rid: str) -> str:
    what = f"{record['status']} on {rid}" if rid != "check" else record["status"]
    own = _own_reproduction(record, rid)
    reproduction = f" Minimal case: `{own}`." if own else ""
    return (
        f"- **{record['engine']}** `{record['check']}` {what}: {_evidence(record, rid, 160).replace('|', '/')}."
        f"{reproduction} Reproduce: `{record['reproduce']}`"
    )


def _findings_lines(records: list[dict]) -> list[str]:
    """One entry per defect (``findings.findings``): unexpected ones first, each with the checks that saw it, what
    it blocked, its evidence, minimal case, reproduction command and, when known, its published cause."""
    lines = []
    found = findings.findings(records)
    operation = [f for f in found if not f.robustness]
    if operation:
        unexpected = sum(not f.expected for f in operation)
        lines += [f"## Findings ({_count(len(operation), 'defect')}, {unexpected} unexpected)", ""]
        lines += [_finding_line(f) for f in operation] + [""]
    robustness = [f for f in found if f.robustness]
    if robustness:
        unexpected = sum(not f.expected for f in robustness)
        lines += [
            f"## Robustness findings ({_count(len(robustness), 'defect')}, {unexpected} unexpected)",
            "",
            "Requirements on input that the engine's normal callers never give (`binds: robustness`), reported "
            "beside the findings of normal operation.",
            "",
        ]
        lines += [_finding_line(f) for f in robustness] + [""]
    return lines


def _finding_line(f: findings.Finding) -> str:
    """One finding: engine, name, the checks that saw it, evidence, minimal case, what it blocked, reproduction."""
    record, rid = f.first
    reproduction = record["results"][rid].get("reproduction")
    minimal = f" Minimal case: `{reproduction}`." if isinstance(reproduction, str) else ""
    blocked = (
        f" Blocked: {', '.join(sorted({f'{rid} in `{check}`' for check, rid in f.blocked}))}." if f.blocked else ""
    )
    return (
        f"- **{f.engine}** {'known' if f.expected else '**unexpected**'} finding **{f.name}** ({f.seen_by}: "
        f"{', '.join(f'`{c}`' for c in sorted(set(f.checks)))}{also_failing(f)}): "
        f"{_evidence(record, rid, 200).replace('|', '/')}.{minimal}{blocked} Reproduce: `{record['reproduce']}`"
        + (f" Cause: {_first_line(f.cause, 200)}" if f.cause else "")
    )


def also_failing(f: findings.Finding) -> str:
    """What else one defect fails, said beside its one name: ``; also failing TB-MARK-2, TB-MARK-3 (the same
    defect)`` or ""."""
    return f"; also failing {', '.join(f.also)} (the same defect)" if f.also else ""


def _not_applicable_lines(records: list[dict]) -> list[str]:
    """Per engine, the requirements outside its contract (or judged only on adapter-derived values), with why."""
    outside = findings.not_applicable(records)
    if not outside:
        return []
    lines = ["## Outside the engine's contract (NOT_APPLICABLE: neither PASS nor FAIL)", ""]
    for engine, pairs in sorted(outside.items()):
        lines += [f"- **{engine}** {rid}: {_first_line(why, 200)}" for rid, why in pairs]
    return lines + [""]


def markdown(records: list[dict], uncovered: list[str], missing: list[str] = ()) -> str:
    """The run's summary: the verdict and one row per engine first, then unexpected failures, then per
    engine its class verdicts (what was not claimed, one line per class), then the per-class and
    per-requirement tables, then the checks that were judged."""
    verdicts = engine_verdicts(records)
    engines = [v.engine for v in verdicts]
    passed, line = run_verdict(verdicts, list(missing))
    lines = [
        "# specconform conformance report",
        "",
        f"**Verdict: {'PASS' if passed else 'FAIL'}**: {line}.",
        "",
        "| engine | verdict | checks by status |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {v.engine} | {v.headline} | {_status_counts(v.counts)} |" for v in verdicts]
    lines.append("")
    lines += _findings_lines(records)
    lines += _incomplete(list(missing))
    errors = [(r, rid) for v in verdicts for r, rid in v.unexpected + v.known if rid == "check"]
    if errors:
        lines += ["## Checks that ended in ERROR or TIMEOUT", ""] + [_failure_line(r, rid) for r, rid in errors] + [""]
    lines += _not_applicable_lines(records)
    passes = [r for v in verdicts for r in v.unexpected_passes]
    if passes:
        lines += ["## Unexpected passes", ""]
        lines += [f"- **{r['engine']}** `{r['check']}` PASS, expected {r['expected_status']}" for r in passes]
        lines.append("")
    for v in verdicts:
        lines += [
            f"## {v.engine}",
            "",
            f"{v.headline}. Version {v.version}; device {v.device}; profile {v.profile}.",
            f"Checks: {_status_counts(v.counts)} · unexpected failures {findings.distinct(v.unexpected)} · "
            f"unexpected passes {len(v.unexpected_passes)}.",
            "",
        ]
        lines += [f"- {c.cls}: **{c.verdict}** ({c.why})" for c in v.claimed]
        lines += [f"- {line}" for line in _not_claimed_line(v)]
        lines.append("")
    lines += ["## Per conformance class", ""] + _class_table(records, engines)
    lines += ["", "## Per requirement", ""] + _requirement_table(records, engines, uncovered)
    lines += [""] + _uncovered_lines(uncovered)
    lines += ["", "## Checks judged", "", "NOT_CLAIMED checks are summed up per class above.", ""]
    lines += ["| status | engine | check | class | requirements | evidence |", "| --- | --- | --- | --- | --- | --- |"]
    for r in _sorted(records):
        if r["status"] == "NOT_CLAIMED":
            continue
        evidence = _first_line(r["message"]).replace("|", "/")
        lines.append(
            f"| {_check_status(r)} | {r['engine']} | `{r['check']}` | {r['cls']} | {_requirement_cells(r)} "
            f"| {evidence} |"
        )
    return "\n".join(lines) + "\n"


def junit(records: list[dict], missing: list[str] = ()) -> str:
    """One test case per (check, requirement): FAIL is a failure, ERROR and TIMEOUT errors, NOT_RUN,
    NOT_CLAIMED and PRECONDITION_FAILED skipped; a selected check without a record is an error."""
    cases = []
    counts = defaultdict(int)
    for r in records:
        for rid, result in r["results"].items() or [("check", {"status": r["status"], "evidence": r["message"]})]:
            status = result["status"]
            detail = result.get("evidence") or r["message"]
            body = ""
            if status == "FAIL":
                own = _own_reproduction(r, rid)
                text = escape(detail + (f"\nminimal reproduction: {own}" if own else "") + "\n" + r["reproduce"])
                body = f"<failure message={quoteattr(_first_line(detail))}>{text}</failure>"
                counts["failures"] += 1
            elif status in ("ERROR", "TIMEOUT"):
                body = f"<error message={quoteattr(status + ': ' + _first_line(detail))}>{escape(detail)}</error>"
                counts["errors"] += 1
            elif status != "PASS":
                body = f"<skipped message={quoteattr(status + ': ' + _first_line(detail))}/>"
                counts["skipped"] += 1
            cases.append(
                f"  <testcase classname={quoteattr(r['engine'] + '.' + r['check'])} name={quoteattr(rid)} "
                f'time="{r["duration_s"]:.4f}">{body}</testcase>'
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


# ---------------------------------------------------------------------------------------------
# HTML with inline SVG plots


def _bars(title: str, series: dict[str, list[float]], labels: list[str], width=560, height=180) -> str:
    colours = ["#4C78A8", "#F58518", "#54A24B"]
    n = len(labels)
    top = max((v for values in series.values() for v in values if v == v), default=1.0) or 1.0
    group = (width - 40) / max(n, 1)
    bar = group / (len(series) + 1)
    parts = [
        f'<svg width="{width}" height="{height + 40}" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>',
    ]
    for s, (name, values) in enumerate(series.items()):
        for i, v in enumerate(values):
            h = 0 if v != v else (v / top) * height
            x = 30 + i * group + s * bar
            parts.append(
                f'<rect x="{x:.1f}" y="{20 + height - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{colours[s % 3]}"><title>{html.escape(name)} {labels[i]}: {v:.4f}</title></rect>'
            )
        parts.append(
            f'<text x="{width - 150}" y="{14 + 14 * s}" font-size="11" fill="{colours[s % 3]}">'
            f"{html.escape(name)}</text>"
        )
    for i, label in enumerate(labels):
        if n <= 40 or i % math.ceil(n / 40) == 0:
            parts.append(f'<text x="{30 + i * group:.1f}" y="{height + 34}" font-size="9">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _trace(title: str, values: list[int], budget: int, forced: list[int], width=560, height=160) -> str:
    n = max(len(values), 1)
    top = max(max(values, default=1), budget, 1)
    pts = " ".join(
        f"{30 + i * (width - 40) / n:.1f},{20 + height - v / top * height:.1f}" for i, v in enumerate(values)
    )
    y_budget = 20 + height - budget / top * height
    marks = "".join(
        f'<circle cx="{30 + i * (width - 40) / n:.1f}" cy="{20 + height - values[i] / top * height:.1f}" '
        f'r="3" fill="#E45756"><title>forced at {i}</title></circle>'
        for i in forced
        if i < len(values)
    )
    return (
        f'<svg width="{width}" height="{height + 30}" xmlns="http://www.w3.org/2000/svg">'
        f'<text x="4" y="14" font-size="12">{html.escape(title)}</text>'
        f'<line x1="30" x2="{width - 10}" y1="{y_budget:.1f}" y2="{y_budget:.1f}" stroke="#999" '
        f'stroke-dasharray="4"/><polyline fill="none" stroke="#4C78A8" points="{pts}"/>{marks}</svg>'
    )


def _plots(record: dict) -> str:
    out = []
    for plot in record.get("plots") or []:
        if plot["kind"] == "distribution":
            for j, (target, seen) in enumerate(zip(plot["target"], plot["empirical"])):
                cells = sorted(range(len(target)), key=lambda x: -max(target[x], seen[x]))[:32]
                cells.sort()
                out.append(
                    _bars(
                        f"{plot['case']} position {j}: target vs empirical (p = {plot['positions'][j]['p_value']:.3g})",
                        {"target": [target[x] for x in cells], "empirical": [seen[x] for x in cells]},
                        [str(x) for x in cells],
                    )
                )
            out.append(
                _bars(
                    f"{plot['case']}: accepted length vs closed form",
                    {"closed form": plot["expected_lengths"], "observed": plot["lengths"]},
                    [str(a) for a in range(len(plot["lengths"]))],
                )
            )
        elif plot["kind"] == "budget-trace":
            out.append(_trace(plot["title"], plot["thinking"], plot["budget"], plot["forced"]))
    return "".join(out)


_COLOURS = {
    "PASS": "#d4edda",
    "FAIL": "#f8d7da",
    "ERROR": "#f5c6cb",
    "TIMEOUT": "#f5c6cb",
    "NOT_RUN": "#fde2c8",
    "NOT_CLAIMED": "#e2e3e5",
    "PRECONDITION_FAILED": "#fff3cd",
}
_REQUIREMENT_ITEM = re.compile(r"^- \*\*(?P<id>(?:TB|RS|AC|API|STAT|RUN)-[A-Z]+-\d+)\*\*")


def requirement_texts() -> dict[str, tuple[str, str]]:
    """``{requirement id: (document, its text)}``, the text being the requirement's list item in the
    normative Markdown (``specs/*.md``), continuation lines included."""
    out: dict[str, tuple[str, str]] = {}
    for document in spec.SPEC_DOCUMENTS:
        current = None
        for line in (spec.spec_dir() / document).read_text().splitlines():
            match = _REQUIREMENT_ITEM.match(line)
            if match:
                current = match["id"]
                out[current] = (document, line[2:])
            elif current and line.startswith("  ") and line.strip():
                out[current] = (document, out[current][1] + " " + line.strip())
            else:
                current = None
    return out


# Rows carry what they are about (``data-statuses``, ``data-cls``, ``data-engines``: lists between
# ``|``; ``data-reqs``: requirement ids); the filters hide the rows that do not match.
_FILTER_SCRIPT = """
function applyFilters() {
  var value = function (id) { return document.getElementById(id).value.trim().toUpperCase(); };
  var status = value('f-status'), cls = value('f-class'), engine = value('f-engine'), req = value('f-req');
  document.querySelectorAll('tr[data-statuses]').forEach(function (tr) {
    var has = function (key, wanted) {
      return !wanted || tr.getAttribute(key).toUpperCase().indexOf('|' + wanted + '|') >= 0;
    };
    var shown = has('data-statuses', status) && has('data-cls', cls) && has('data-engines', engine)
      && (!req || tr.getAttribute('data-reqs').toUpperCase().indexOf(req) >= 0);
    tr.style.display = shown ? '' : 'none';
  });
}
"""


def _data(statuses, classes, engines, requirements) -> str:
    def joined(values) -> str:
        return html.escape("|" + "|".join(dict.fromkeys(values)) + "|", quote=True)

    return (
        f' data-statuses="{joined(statuses)}" data-cls="{joined(classes)}" data-engines="{joined(engines)}"'
        f' data-reqs="{html.escape(" ".join(requirements), quote=True)}"'
    )


def _select(ident: str, label: str, options) -> str:
    items = "".join(f"<option>{html.escape(o)}</option>" for o in options)
    return (
        f"<label>{label} <select id='{ident}' onchange='applyFilters()'><option value=''>all</option>{items}"
        "</select></label> "
    )


def _req_links(requirements) -> str:
    return ", ".join(f"<a href='#spec-{html.escape(rid)}'>{html.escape(rid)}</a>" for rid in requirements)


def _html_failure(record: dict, rid: str, index: dict[int, int]) -> str:
    what = f"{record['status']} on <a href='#spec-{rid}'>{rid}</a>" if rid != "check" else record["status"]
    own = _own_reproduction(record, rid)
    reproduction = f" · <a href='{html.escape(own, quote=True)}'>minimal reproduction</a>" if own else ""
    return (
        f"<li><b>{html.escape(record['engine'])}</b> <code>{html.escape(record['check'])}</code> {what}: "
        f"{html.escape(_evidence(record, rid))} · <a href='#check-{index[id(record)]}'>evidence</a>{reproduction}"
        f"</li>"
    )


def html_report(
    records: list[dict],
    uncovered: list[str],
    missing: list[str] = (),
    zoo_table: list[dict] | None = None,
    spec_href: str = "specs",
) -> str:
    """A self-contained page (no external resource; inline SVG plots, a small inline script for the
    filters): the verdict, the failures with links to their evidence, minimal reproduction and spec
    text, then the class, requirement and check tables, which filter by status, class, engine and
    requirement. ``spec_href`` is the path from the page to ``specs/``."""
    verdicts = engine_verdicts(records)
    engines = [v.engine for v in verdicts]
    passed, line = run_verdict(verdicts, list(missing))
    ordered = _sorted(records)
    index = {id(r): i for i, r in enumerate(ordered)}
    texts = requirement_texts()
    esc = html.escape

    engine_rows = "".join(
        f"<tr><td>{esc(v.engine)}</td><td>{_md_bold(v.headline)}</td><td>{esc(_status_counts(v.counts))}</td>"
        f"<td>{esc(v.version)}; {esc(v.device)}; profile {esc(v.profile)}</td></tr>"
        for v in verdicts
    )
    parts = [
        f"<h1>specconform conformance report</h1><p class='verdict {'pass' if passed else 'fail'}'>"
        f"<b>Verdict: {'PASS' if passed else 'FAIL'}</b>: {esc(line)}.</p>",
        "<table><tr><th>engine</th><th>verdict</th><th>checks by status</th><th>version, device, profile</th></tr>"
        f"{engine_rows}</table>",
    ]
    parts += [f"<p style='color:#a00'>{esc(text)}</p>" for text in _incomplete(list(missing)) if text]
    found = findings.findings(records)
    if found:  # one entry per defect, as summary.md lists them (RUN-FINDING-2)
        items = "".join(
            f"<li><b>{esc(f.engine)}</b> {'known' if f.expected else '<b>unexpected</b>'} finding <b>{esc(f.name)}</b> "
            f"({esc(f.seen_by + also_failing(f))}): "
            f"<ul>{''.join(_html_failure(r, rid, index) for r, rid in f.records)}</ul>"
            + (f"Cause: {esc(_first_line(f.cause, 400))}" if f.cause else "")
            + "</li>"
            for f in found
        )
        parts.append(f"<h2>Findings ({esc(_count(len(found), 'defect'))})</h2><ul>{items}</ul>")
    errors = [(r, "check") for r in ordered if r["status"] in ("ERROR", "TIMEOUT")]
    if errors:
        parts.append(f"<h2>ERROR and TIMEOUT</h2><ul>{''.join(_html_failure(r, rid, index) for r, rid in errors)}</ul>")
    outside = findings.not_applicable(records)
    if outside:
        items = "".join(
            f"<li><b>{esc(engine)}</b> {esc(rid)}: {esc(_first_line(why, 300))}</li>"
            for engine, pairs in sorted(outside.items())
            for rid, why in pairs
        )
        parts.append(f"<h2>Outside the engine's contract (NOT_APPLICABLE)</h2><ul>{items}</ul>")
    passes = [r for v in verdicts for r in v.unexpected_passes]
    if passes:
        items = "".join(
            f"<li><b>{esc(r['engine'])}</b> <a href='#check-{index[id(r)]}'><code>{esc(r['check'])}</code></a> "
            f"PASS, expected {esc(r['expected_status'])}</li>"
            for r in passes
        )
        parts.append(f"<h2>Unexpected passes</h2><ul>{items}</ul>")
    for v in verdicts:
        claimed = "".join(f"<li>{esc(c.cls)}: <b>{esc(c.verdict)}</b> ({esc(c.why)})</li>" for c in v.claimed)
        unclaimed = "".join(f"<li>{esc(line)}</li>" for line in _not_claimed_line(v))
        parts.append(f"<h3>{esc(v.engine)}: {_md_bold(v.headline)}</h3><ul>{claimed}{unclaimed}</ul>")
    if zoo_table:
        zoo_rows = "".join(
            f'<tr style="background:{"#d4edda" if z["caught"] else "#f8d7da"}"><td>{esc(z["mutant"])}</td>'
            f"<td>{esc(z['description'])}</td><td>{z['breaks']}</td><td>{'yes' if z['caught'] else 'NO'}</td>"
            f"<td>{esc(', '.join(z['caught_by']))}</td></tr>"
            for z in zoo_table
        )
        parts.append(
            "<h2>Bug zoo: catch table</h2><table><tr><th>mutant</th><th>bug</th><th>breaks</th><th>caught</th>"
            f"<th>failing checks</th></tr>{zoo_rows}</table>"
        )

    classes = sorted({r["cls"] for r in records})
    parts.append(
        "<h2>Filter</h2><p>"
        + _select("f-status", "status", ORDER)
        + _select("f-class", "class", classes)
        + _select("f-engine", "engine", engines)
        + "<label>requirement <input id='f-req' oninput='applyFilters()' placeholder='e.g. TB-FORCE'></label></p>"
    )
    cells = _class_cells(records, engines)
    class_rows = []
    for cls in classes:
        found = [(e, cells[(cls, e)]) for e in engines if (cls, e) in cells]
        statuses = [c.status for _, c in found]
        tds = "".join(
            f"<td style='background:{_COLOURS.get(c.status, '#fff')}' title='{esc(c.why, quote=True)}'>"
            f"{esc(c.verdict)}</td>"
            if c
            else "<td>-</td>"
            for c in (cells.get((cls, e)) for e in engines)
        )
        reqs = sorted({rid for r in records if r["cls"] == cls for rid in r["results"]})
        class_rows.append(f"<tr{_data(statuses, [cls], engines, reqs)}><td>{esc(cls)}</td>{tds}</tr>")
    head = "".join(f"<th>{esc(e)}</th>" for e in engines)
    parts.append(
        "<h2>Per conformance class</h2><p>Hover a cell for the reason.</p>"
        f"<table><tr><th>class</th>{head}</tr>{''.join(class_rows)}</table>"
    )
    req_rows = []
    for rid, level, cls, _, row in _requirement_rows(records, engines, uncovered):
        statuses = [c[0] for c in row if isinstance(c, tuple)] or ["NOT_RUN"]
        tds = "".join(
            f"<td style='background:{_COLOURS.get(c[0], '#fff') if isinstance(c, tuple) else '#fff'}'>"
            f"{esc(_cell_text(c))}</td>"
            for c in row
        )
        req_rows.append(
            f"<tr{_data(statuses, [cls], engines, [rid])}><td><a href='#spec-{rid}'>{rid}</a></td><td>{level}</td>"
            f"{tds}</tr>"
        )
    parts.append(
        "<h2>Per requirement</h2>"
        f"<table><tr><th>requirement</th><th>level</th>{head}</tr>{''.join(req_rows)}</table>"
        + "".join(f"<p>{_md_bold(text)}</p>" for text in _uncovered_lines(uncovered) if text)
    )
    check_rows = []
    for i, r in enumerate(ordered):
        if r["status"] == "NOT_CLAIMED":  # summed up per class above
            continue
        plots = _plots(r)
        extra = f"<details><summary>plots</summary>{plots}</details>" if plots else ""
        stat = "" if r.get("p_value") is None else f"p = {r['p_value']:.3g}, α = {r['alpha']:.2g}, N = {r['trials']}"
        failed = "".join(
            f"<div><b>{rid}</b>: {esc(result.get('evidence', ''))}</div>"
            for rid, result in r["results"].items()
            if result["status"] == "FAIL"
        )
        reproduction = "".join(
            f"<div><a href='{esc(own, quote=True)}'>minimal reproduction of {esc(rid)}</a></div>"
            for rid in r["results"]
            if (own := _own_reproduction(r, rid))
        )
        statuses = [r["status"], *(result["status"] for result in r["results"].values())]
        check_rows.append(
            f"<tr id='check-{i}' style='background:{_COLOURS.get(r['status'], '#fff')}'"
            f"{_data(statuses, [r['cls']], [r['engine']], list(r['results']) or r['requirements'])}>"
            f"<td>{esc(_check_status(r))}</td><td>{esc(r['engine'])}</td><td><code>{esc(r['check'])}</code></td>"
            f"<td>{esc(r['cls'])}</td><td>{_req_links(r['results'] or r['requirements'])}</td>"
            f'<td><pre style="white-space:pre-wrap;margin:0">{esc(r["message"] or "")}</pre>{failed}{stat}{extra}'
            f'{reproduction}<div style="color:#666;font-size:11px">{esc(r["reproduce"])}</div></td></tr>'
        )
    parts.append(
        "<h2>Checks judged</h2><p>NOT_CLAIMED checks are summed up per class above.</p>"
        "<table><tr><th>status</th><th>engine</th><th>check</th><th>class</th><th>requirements</th>"
        f"<th>evidence</th></tr>{''.join(check_rows)}</table>"
    )
    cited = sorted({rid for r in records for rid in [*r["requirements"], *r["results"]]} | set(uncovered))
    spec_items = "".join(
        f"<dt id='spec-{rid}'><b>{rid}</b> (<a href='{esc(spec_href, quote=True)}/{texts[rid][0]}'>"
        f"specs/{texts[rid][0]}</a>)</dt><dd>{esc(texts[rid][1])}</dd>"
        for rid in cited
        if rid in texts
    )
    parts.append(f"<h2>Spec text</h2><dl>{spec_items}</dl>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specconform report</title><style>"
        "body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;width:100%;margin-bottom:12px}"
        "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;font-size:13px}"
        ".verdict{font-size:18px;padding:8px}.pass{background:#d4edda}.fail{background:#f8d7da}"
        f"dd{{margin-bottom:8px}}</style><script>{_FILTER_SCRIPT}</script></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )


def _md_bold(text: str) -> str:
    """Markdown ``**bold**`` (as in the verdict lines) as HTML, the rest escaped."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def write_all(
    run_dir: Path, records: list[dict], uncovered: list[str], missing: list[str] = (), zoo_table=None
) -> None:
    (run_dir / "summary.md").write_text(markdown(records, uncovered, missing))
    (run_dir / "junit.xml").write_text(junit(records, missing))
    spec_href = Path(os.path.relpath(spec.spec_dir(), run_dir)).as_posix()
    (run_dir / "report.html").write_text(html_report(records, uncovered, missing, zoo_table, spec_href))


# ---------------------------------------------------------------------------------------------
# Diff between two runs


def _bad_results(records: list[dict]) -> dict[tuple[str, str, str], dict]:
    """``{(engine, check, requirement or "check"): record}`` for every failed requirement and every
    check that ended in ERROR or TIMEOUT."""
    out = {}
    for r in records:
        for rid, result in r["results"].items():
            if result["status"] == "FAIL":
                out[(r["engine"], r["check"], rid)] = r
        if r["status"] in ("ERROR", "TIMEOUT"):
            out[(r["engine"], r["check"], "check")] = r
    return out


def diff(old: list[dict], new: list[dict]) -> tuple[str, int]:
    """New failures first (per requirement), then fixes, then changes in statistics; returns
    (Markdown, new failures)."""
    key = lambda r: (r["engine"], r["check"])  # noqa: E731
    before = {key(r): r for r in old}
    after = {key(r): r for r in new}
    bad_before, bad_after = _bad_results(old), _bad_results(new)
    new_failures = [(k, r) for k, r in bad_after.items() if k not in bad_before]
    fixes = [(k, r) for k, r in bad_before.items() if k not in bad_after and (k[0], k[1]) in after]
    changed = {(k[0], k[1]) for k, _ in new_failures + fixes}
    other = [
        (before[k], r)
        for k, r in after.items()
        if k in before and r["status"] != before[k]["status"] and k not in changed
    ]
    stats = [
        (before[k], r)
        for k, r in after.items()
        if k in before
        and r.get("p_value") is not None
        and before[k].get("p_value") is not None
        and r["p_value"] != before[k]["p_value"]
    ]
    gone = [r for k, r in before.items() if k not in after]
    sections = {
        "New failures": [
            # the whole first line of the evidence: a cut would end a list of ids mid-way
            f"- `{check}` {rid} ({engine}): {r['status']} "
            f"{((r['results'].get(rid, {}).get('evidence') or r['message'] or '').splitlines() or [''])[0]}"
            for (engine, check, rid), r in new_failures
        ],
        "Fixes": [
            f"- `{check}` {rid} ({engine}): now "
            f"{after[(engine, check)]['results'].get(rid, {}).get('status', after[(engine, check)]['status'])}"
            for (engine, check, rid), _ in fixes
        ],
        "Changes in statistics": [
            f"- `{r['check']}` ({r['engine']}): p {b['p_value']:.3g} → {r['p_value']:.3g}" for b, r in stats
        ],
        "Other status changes": [f"- `{r['check']}` ({r['engine']}): {b['status']} → {r['status']}" for b, r in other]
        + [f"- `{r['check']}` ({r['engine']}): no longer run" for r in gone],
    }
    lines = [f"# specconform diff: {len(new_failures)} new failures, {len(fixes)} fixes", ""]
    for title, entries in sections.items():  # a section with nothing in it is left out
        if entries:
            lines += [f"## {title}", "", *entries, ""]
    if not any(sections.values()):
        lines += ["No change in any status or statistic.", ""]
    return "\n".join(lines), len(new_failures)


def engines_summary(records: list[dict]) -> str:
    """The cross-engine table (rows: classes, then requirements; columns: engines), then every
    failure with its one-line reproduction and, where an expectation file traced it, the cause."""
    engines = sorted({r["engine"] for r in records})
    versions = {r["engine"]: r["engine_version"] for r in records}
    lines = ["# Engines judged by specconform", "", "| engine | version | profile |", "| --- | --- | --- |"]
    lines += [f"| {e} | {versions[e]} | {next(r['profile'] for r in records if r['engine'] == e)} |" for e in engines]
    lines += ["", "## Conformance classes (worst status of the class's checks)", ""] + _class_table(records, engines)
    lines += ["", "## Requirements", ""] + _requirement_table(records, engines, [])
    found = findings.findings(records)
    lines += ["", f"## Findings ({_count(len(found), 'defect')}, one per defect, whatever checks saw it)", ""]
    for f in found:
        record, rid = f.first
        result = record["results"][rid]
        link = f" ({result['expectation_link']})" if result.get("expectation_link") else ""
        proof = f" Proof: `{result['expectation_proof']}`." if result.get("expectation_proof") else ""
        lines.append(_finding_line(f) + f"{link}{proof}")
    errors = [r for r in _sorted(records) if r["status"] in ("ERROR", "TIMEOUT")]
    if errors:
        lines += ["", "## Checks that ended in ERROR or TIMEOUT", ""]
        lines += [f"- **{r['engine']}** `{r['check']}` {r['status']}: {_first_line(r['message'])}" for r in errors]
    return "\n".join(lines) + "\n"
