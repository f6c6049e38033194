"""Findings: one defect, however many checks saw it, and one status per requirement, merged across checks.

An engine team reads a report from its findings. A finding groups the failed requirements of every check
of one engine that show the same defect: the same finding name (``specconform.harness.checks.attribution.finding_key``:
the requirement a minimal case isolates), or, for failures without one, the same requirement. Each finding
carries the checks that saw it, its first evidence, minimal case, reproduction command and, where an
expectation covers it, its published cause and proof. The console, ``summary.md`` and the cross-engine
table count findings, so they say the same thing.

A requirement's status across checks (``merged_status``): FAIL only if a case violated it; BLOCKED if a
check met another requirement's finding before it could certify this one; PASS if cases exercised it and
none violated it; otherwise the most telling of the statuses of the checks that could not exercise it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import finding_chains, requirement_order, spec
from .core import BLOCKED, ERROR, FAIL, NOT_APPLICABLE, NOT_CLAIMED, NOT_RUN, PASS, PRECONDITION_FAILED, TIMEOUT
from .schemas import RequirementRecord, RunRecord

# of the statuses that say a requirement was not judged, the most telling first
_NOT_JUDGED = (ERROR, TIMEOUT, NOT_RUN, PRECONDITION_FAILED, NOT_APPLICABLE, NOT_CLAIMED)


def merged_status(statuses: Iterable[str], cases: int) -> str:
    """One requirement's status from its results in several checks (``cases``: how many cases exercised it)."""
    found = set(statuses)
    if FAIL in found:
        return FAIL
    if BLOCKED in found:
        return BLOCKED
    if cases and PASS in found:
        return PASS
    return next((s for s in _NOT_JUDGED if s in found), NOT_RUN)


@dataclass
class Finding:
    """One defect of one engine: ``name`` (the requirement it belongs to, with its case feature), the checks
    that saw it, and the first record's evidence, minimal case and reproduction."""

    engine: str
    name: str
    requirement: str
    checks: list[str] = field(default_factory=list)
    records: list[tuple[RunRecord, str]] = field(default_factory=list)  # (record, requirement) per sighting
    # the other names the same defect fails under (one proof patch makes every minimal case pass): one defect is
    # published under one name, the first sighting's, and these are said beside it
    also: list[str] = field(default_factory=list)
    named_by_combined: bool = False  # named by a failure that a combined patch proves, until one of its own shows
    defect: str = ""  # what groups its failures: the proof patch that fixes them, else the finding name
    blocked: list[tuple[str, str]] = field(default_factory=list)  # (check, requirement) this finding blocked

    @property
    def expected(self) -> bool:
        """Whether every sighting is covered by an expectation (a known failure)."""
        return all(rid not in record.unexpected for record, rid in self.records)

    @property
    def first(self) -> tuple[RunRecord, str]:
        """The sighting to show: an unexpected one if any, the one with a minimal case before others."""
        unexpected = [(r, rid) for r, rid in self.records if rid in r.unexpected]
        pool = unexpected or self.records
        return next(((r, rid) for r, rid in pool if r.results[rid].reproduction), pool[0])

    @property
    def mode(self) -> str:
        """How the first sighting failed: its fingerprint's mode (``<requirement>/<mode>``), "" where none is named."""
        record, rid = self.first
        return record.results[rid].fingerprint.partition("/")[2]

    @property
    def title(self) -> str:
        """The finding's name with its failure mode: what a reader needs first."""
        return f"{self.name}: {self.mode}" if self.mode else self.name

    @property
    def cause(self) -> str:
        record, rid = self.first
        return record.results[rid].expectation_reason or record.expectation_reason

    @property
    def robustness(self) -> bool:
        """Whether the requirement binds the engine's answer to input outside normal operation (``binds``)."""
        found = spec.load_registry().get(self.requirement)
        return found is not None and found.binds == "robustness"

    @property
    def seen_by(self) -> str:
        checks = sorted(set(self.checks))
        return f"1 defect, seen by {len(checks)} check{'s' if len(checks) != 1 else ''}"


def finding_name(rid: str, result: RequirementRecord) -> str:
    """The defect a failed (or blocked) requirement result shows: the requirement its minimal case isolates (its
    finding without the case's features, which name the stage it was met on), else the requirement failed. One
    requirement's failures of one engine are one finding, whatever their mode and whichever check met them."""
    finding = result.finding
    return finding.split(" (", 1)[0].split(" on ", 1)[0] if finding else rid


def shown_name(rid: str, result: RequirementRecord) -> str:
    """A finding's name as reports show it: the requirement, with the feature its minimal case needs beside it."""
    finding = result.finding
    return finding.split(" on ", 1)[0] if finding else rid


def distinct(pairs: Iterable[tuple[RunRecord, str]]) -> int:
    """How many defects ``(record, requirement or "check")`` pairs are: findings by name, a check's ERROR each."""
    return len({(r.engine, key) for r, rid in pairs for key in _keys(r, rid)})


def _keys(record: RunRecord, rid: str) -> list[str]:
    """The defects a failure shows (as ``findings`` groups them): those a combined proof patch joins, else its proof,
    else its name."""
    if rid == "check":
        return [f"{record.check} {record.status}"]
    result = record.results[rid]
    return result.expectation_defects or [result.expectation_proof or finding_name(rid, result)]


def findings(records: list[RunRecord]) -> list[Finding]:
    """Every engine's findings, unexpected ones first, then by engine, then lowest in the order of the requirements
    first (``requirement_order``): the first finding a reader meets is the likeliest root cause."""
    found: dict[tuple[str, str], Finding] = {}
    named: dict[tuple[str, str], list[Finding]] = defaultdict(list)  # finding name -> the findings it shows in
    for record in records:
        for rid, result in record.results.items():
            if result.status != FAIL:
                continue
            name = finding_name(rid, result)
            # a failure whose published cause a proof backs is that proof's defect (one patch makes all its minimal
            # cases pass), or each defect a combined patch joins; any other is its finding name's
            combined = bool(result.expectation_defects)
            for defect in _keys(record, rid):
                key = (record.engine, defect)
                if key not in found:
                    found[key] = Finding(record.engine, name, rid, named_by_combined=combined, defect=defect)
                finding = found[key]
                if finding.named_by_combined and not combined:  # a sighting of this defect alone names it
                    if finding.name != name:
                        finding.also.insert(0, finding.name)
                    finding.name, finding.requirement, finding.named_by_combined = name, rid, False
                if name != finding.name and name not in finding.also:
                    finding.also.append(name)
                finding.checks.append(record.check)
                finding.records.append((record, rid))
                if finding not in named[(record.engine, name)]:
                    named[(record.engine, name)].append(finding)
    for record in records:  # what each finding kept from being certified: the one the same check recorded
        for rid, result in record.results.items():
            if result.status != BLOCKED or not result.finding:
                continue
            name = finding_name(rid, result)
            candidates = named.get((record.engine, name), [])
            same_check = [f for f in candidates if any(seen is record for seen, _ in f.records)]
            for finding in (same_check or candidates)[:1]:
                finding.blocked.append((record.check, rid))
                finding.checks.append(record.check)
    for finding in found.values():  # shown with the feature its first sighting's minimal case needs
        record, rid = finding.first
        if (shown := shown_name(rid, record.results[rid])).split(" (", 1)[0] == finding.name:
            finding.name = shown
    names = Counter((f.engine, f.name) for f in found.values())
    for finding in found.values():  # two defects of one engine under one name: each says which patch fixes it
        if names[(finding.engine, finding.name)] > 1 and finding.defect.endswith(".diff"):
            finding.name += f" [{Path(finding.defect).stem}]"
    return sorted(
        finding_chains.merge(list(found.values())),
        key=lambda f: (f.expected, f.engine, requirement_order.sort_key(f.requirement), f.name),
    )


def requirement_statuses(records: list[RunRecord]) -> dict[tuple[str, str], tuple[str, int]]:
    """``{(engine, requirement): (merged status, cases)}`` over the results of every check of the run."""
    statuses: dict[tuple[str, str], list[str]] = defaultdict(list)
    cases: dict[tuple[str, str], int] = defaultdict(int)
    for record in records:
        for rid, result in record.results.items():
            key = (record.engine, rid)
            statuses[key].append(result.status)
            cases[key] += result.cases if result.status in (PASS, FAIL, BLOCKED) else 0
    return {key: (merged_status(found, cases[key]), cases[key]) for key, found in statuses.items()}


def not_applicable(records: list[RunRecord]) -> dict[str, list[tuple[str, str]]]:
    """Per engine, ``(requirement, why)`` for each requirement that no check could judge because its cases lie
    outside the engine's contract or it is judged only on values the adapter derives."""
    merged = requirement_statuses(records)
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen = set()
    for record in records:
        for rid, result in record.results.items():
            key = (record.engine, rid)
            if result.status == NOT_APPLICABLE and merged[key][0] == NOT_APPLICABLE and key not in seen:
                seen.add(key)
                out[record.engine].append((rid, result.evidence))
    return {engine: sorted(pairs) for engine, pairs in out.items()}
