"""Markdown: a run's ``summary.md`` (the verdict and findings first) and the cross-engine summary
(``specconform summary``, ``reports/engines/README.md``)."""

from __future__ import annotations

from .. import findings
from ..schemas import RunRecord
from .tables import class_table, requirement_table, uncovered_lines
from .text import (
    check_status_text,
    count_of,
    evidence_of,
    first_line,
    incomplete_lines,
    own_reproduction,
    sorted_records,
    status_counts_text,
    also_failing,
)
from .verdicts import not_claimed_line, engine_verdicts, run_verdict


def _requirement_cells(r: RunRecord) -> str:
    """Each requirement of a record with its own status: violated ones in bold."""
    out = []
    for rid in r.requirements + [x for x in r.results if x not in r.requirements]:
        result = r.results.get(rid)
        status, cases = (result.status, result.cases) if result else (r.status, 0)
        text = f"{rid} {status}" + (f" ({cases})" if status in ("PASS", "FAIL") else "")
        out.append(f"**{text}**" if status == "FAIL" else text)
    return ", ".join(out)


def _failure_line(record: RunRecord, rid: str) -> str:
    what = f"{record.status} on {rid}" if rid != "check" else record.status
    own = own_reproduction(record, rid)
    reproduction = f" Minimal case: `{own}`." if own else ""
    return (
        f"- **{record.engine}** `{record.check}` {what}: {evidence_of(record, rid, 160).replace('|', '/')}."
        f"{reproduction} Reproduce: `{record.reproduce}`"
    )


def _findings_lines(records: list[RunRecord]) -> list[str]:
    """One entry per defect (``findings.findings``): unexpected ones first, each with the checks that saw it, what
    it blocked, its evidence, minimal case, reproduction command and, when known, its published cause."""
    lines = []
    found = findings.findings(records)
    operation = [f for f in found if not f.robustness]
    if operation:
        unexpected = sum(not f.expected for f in operation)
        lines += [f"## Findings ({count_of(len(operation), 'defect')}, {unexpected} unexpected)", ""]
        lines += [_finding_line(f) for f in operation] + [""]
    robustness = [f for f in found if f.robustness]
    if robustness:
        unexpected = sum(not f.expected for f in robustness)
        lines += [
            f"## Robustness findings ({count_of(len(robustness), 'defect')}, {unexpected} unexpected)",
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
    reproduction = record.results[rid].reproduction
    minimal = f" Minimal case: `{reproduction}`." if isinstance(reproduction, str) else ""
    blocked = (
        f" Blocked: {', '.join(sorted({f'{rid} in `{check}`' for check, rid in f.blocked}))}." if f.blocked else ""
    )
    return (
        f"- **{f.engine}** {'known' if f.expected else '**unexpected**'} finding **{f.name}**{f' `{f.mode}`' if f.mode else ''} ({f.seen_by}: "
        f"{', '.join(f'`{c}`' for c in sorted(set(f.checks)))}{also_failing(f)}): "
        f"{evidence_of(record, rid, 200).replace('|', '/')}.{minimal}{blocked} Reproduce: `{record.reproduce}`"
        + (f" Cause: {first_line(f.cause, 200)}" if f.cause else "")
    )


def _not_applicable_lines(records: list[RunRecord]) -> list[str]:
    """Per engine, the requirements outside its contract (or judged only on adapter-derived values), with why."""
    outside = findings.not_applicable(records)
    if not outside:
        return []
    lines = ["## Outside the engine's contract (NOT_APPLICABLE: neither PASS nor FAIL)", ""]
    for engine, pairs in sorted(outside.items()):
        lines += [f"- **{engine}** {rid}: {first_line(why, 200)}" for rid, why in pairs]
    return lines + [""]


def markdown(records: list[RunRecord], uncovered: list[str], missing: list[str] = ()) -> str:
    """The run's summary: the verdict and one row per engine first, then unexpected failures, then per
    engine its class verdicts (what was not claimed, one line per class), then the per-class and
    per-requirement tables, then the checks that were judged."""
    verdicts = engine_verdicts(records, uncovered)
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
    lines += [f"| {v.engine} | {v.headline} | {status_counts_text(v.counts)} |" for v in verdicts]
    lines.append("")
    lines += _findings_lines(records)
    lines += incomplete_lines(list(missing))
    errors = [(r, rid) for v in verdicts for r, rid in v.unexpected + v.known if rid == "check"]
    if errors:
        lines += ["## Checks that ended in ERROR or TIMEOUT", ""] + [_failure_line(r, rid) for r, rid in errors] + [""]
    lines += _not_applicable_lines(records)
    passes = [r for v in verdicts for r in v.unexpected_passes]
    if passes:
        lines += ["## Unexpected passes", ""]
        lines += [f"- **{r.engine}** `{r.check}` PASS, expected {r.expected_status}" for r in passes]
        lines.append("")
    for v in verdicts:
        lines += [
            f"## {v.engine}",
            "",
            f"{v.headline}. Version {v.version}; device {v.device}; profile {v.profile}.",
            f"Checks: {status_counts_text(v.counts)} · unexpected failures {findings.distinct(v.unexpected)} · "
            f"unexpected passes {len(v.unexpected_passes)}.",
            "",
        ]
        lines += [f"- {c.cls}: **{c.verdict}** ({c.why})" for c in v.claimed]
        lines += [f"- {line}" for line in not_claimed_line(v)]
        lines.append("")
    lines += ["## Per conformance class", ""] + class_table(records, engines, uncovered)
    lines += ["", "## Per requirement", ""] + requirement_table(records, engines, uncovered)
    lines += [""] + uncovered_lines(uncovered)
    lines += ["", "## Checks judged", "", "NOT_CLAIMED checks are summed up per class above.", ""]
    lines += ["| status | engine | check | class | requirements | evidence |", "| --- | --- | --- | --- | --- | --- |"]
    for r in sorted_records(records):
        if r.status == "NOT_CLAIMED":
            continue
        evidence = first_line(r.message).replace("|", "/")
        lines.append(
            f"| {check_status_text(r)} | {r.engine} | `{r.check}` | {r.cls} | {_requirement_cells(r)} "
            f"| {evidence} |"
        )
    return "\n".join(lines) + "\n"


def engines_summary(records: list[RunRecord]) -> str:
    """The cross-engine table (rows: classes, then requirements; columns: engines), then every
    failure with its one-line reproduction and, where an expectation file traced it, the cause."""
    engines = sorted({r.engine for r in records})
    versions = {r.engine: r.engine_version for r in records}
    lines = ["# Engines judged by specconform", "", "| engine | version | profile |", "| --- | --- | --- |"]
    lines += [f"| {e} | {versions[e]} | {next(r.profile for r in records if r.engine == e)} |" for e in engines]
    lines += ["", "## Conformance classes (worst status of the class's checks)", ""] + class_table(records, engines)
    lines += ["", "## Requirements", ""] + requirement_table(records, engines, [])
    found = findings.findings(records)
    lines += ["", f"## Findings ({count_of(len(found), 'defect')}, one per defect, whatever checks saw it)", ""]
    for f in found:
        record, rid = f.first
        result = record.results[rid]
        link = f" ({result.expectation_link})" if result.expectation_link else ""
        proof = f" Proof: `{result.expectation_proof}`." if result.expectation_proof else ""
        lines.append(_finding_line(f) + f"{link}{proof}")
    errors = [r for r in sorted_records(records) if r.status in ("ERROR", "TIMEOUT")]
    if errors:
        lines += ["", "## Checks that ended in ERROR or TIMEOUT", ""]
        lines += [f"- **{r.engine}** `{r.check}` {r.status}: {first_line(r.message)}" for r in errors]
    return "\n".join(lines) + "\n"
