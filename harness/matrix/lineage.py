"""An engine's history across its releases: each finding's "first seen in" and "fixed in", and each regression.

The rows of one series (one product, variant and runner: ``runs.Row.series``) are compared in release order. Runs on
different runners are not compared: a CPU run and a GPU run judge different kernels, sized differently. A CPU run
under Triton's interpreter and a pure-torch CPU run are one runner (``runs.device_kind``): a release's factory may
verify with Triton kernels where the next release's verifies in torch, and a finding of the one is fixed in the other.

- **A finding keeps one identity across releases by its fingerprints.** A finding's fingerprints are those of its
  failures (``<requirement>/<mode>``, ``results.jsonl``'s ``fingerprint``). A finding of a later release continues the
  lineage of an earlier one whose fingerprints it shares (the one sharing most, the earliest on a tie, each lineage
  continued by at most one finding per release); a finding that shares none starts a lineage of its own.
- **Fixed in** a release: the first release after a sighting where no finding continues the lineage and every
  requirement of its fingerprints was judged (PASS or FAIL): a release that did not judge them says nothing.
- **Seen again in** a release: a lineage fixed before and sighted again.
- **Regressed in** a release: a requirement that reads PASS in an earlier release and FAIL in this one (each
  change from PASS to FAIL, the releases that did not judge it skipped).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import findings
from ..core import FAIL, PASS
from .runs import Row, release_key

_JUDGED = (PASS, FAIL)


def fingerprints(finding: findings.Finding) -> frozenset[str]:
    """A finding's fingerprints: ``<requirement>/<mode>`` of each of its failures (``<requirement>/`` for a failure
    recorded without a mode)."""
    return frozenset(record.results[rid].fingerprint or f"{rid}/" for record, rid in finding.records)


@dataclass
class Lineage:
    """One finding across the releases of a series: its name (as first seen), its fingerprints (of every sighting),
    and, per release it was sighted in, that release's finding."""

    name: str
    fingerprints: set[str]
    sightings: dict[str, findings.Finding] = field(default_factory=dict)  # version -> the finding
    first_seen: str = ""
    fixed_in: list[str] = field(default_factory=list)
    seen_again_in: list[str] = field(default_factory=list)
    last: str = ""  # the last release of the series

    @property
    def requirements(self) -> set[str]:
        return {fp.partition("/")[0] for fp in self.fingerprints}

    @property
    def open(self) -> bool:
        """Whether the finding stands in the series' last release."""
        return self.last in self.sightings


@dataclass(frozen=True)
class Regression:
    """A requirement that read PASS in ``passed`` and FAIL in the later release ``failed``."""

    requirement: str
    passed: str
    failed: str


@dataclass
class History:
    """One series' history: its rows in release order, its findings' lineages and its regressions."""

    series: tuple[str, str, str]
    rows: list[Row]
    lineages: list[Lineage]
    regressions: list[Regression]

    @property
    def versions(self) -> list[str]:
        return [row.version for row in self.rows]


def _statuses(row: Row) -> dict[str, str]:
    """``{requirement: merged status}`` of a row's run."""
    return {rid: status for (_, rid), (status, _) in findings.requirement_statuses(row.records).items()}


def _continue(lineages: list[Lineage], finding: findings.Finding, version: str) -> Lineage:
    """The lineage ``finding`` continues (see the module's docstring), or a new one."""
    own = fingerprints(finding)
    candidates = [(len(own & x.fingerprints), -i, x) for i, x in enumerate(lineages) if version not in x.sightings]
    best = max((c for c in candidates if c[0]), key=lambda c: c[:2], default=None)
    if best is None:
        lineage = Lineage(finding.name, set(own), first_seen=version)
        lineages.append(lineage)
    else:
        lineage = best[2]
        lineage.fingerprints |= own
    lineage.sightings[version] = finding
    return lineage


def _walk(lineage: Lineage, versions: list[str], statuses: dict[str, dict[str, str]]) -> None:
    """Sets when ``lineage`` was fixed and seen again, walking the releases after its first sighting."""
    fixed = False
    for version in versions[versions.index(lineage.first_seen) + 1 :]:
        if version in lineage.sightings:
            if fixed:
                lineage.seen_again_in.append(version)
            fixed = False
        elif not fixed and all(statuses[version].get(rid) in _JUDGED for rid in lineage.requirements):
            lineage.fixed_in.append(version)
            fixed = True


def _regressions(versions: list[str], statuses: dict[str, dict[str, str]]) -> list[Regression]:
    out = []
    for rid in sorted({rid for s in statuses.values() for rid in s}):
        passed = ""
        for version in versions:
            status = statuses[version].get(rid)
            if status == PASS:
                passed = version
            elif status == FAIL and passed:
                out.append(Regression(rid, passed, version))
                passed = ""
    return out


def history(series_rows: list[Row]) -> History:
    """The history of one series (``series_rows``: its rows, in release order; one row per release)."""
    versions = [row.version for row in series_rows]
    if len(set(versions)) != len(versions):
        raise ValueError(f"series {series_rows[0].series}: one row per release expected; got releases {versions}")
    statuses = {row.version: _statuses(row) for row in series_rows}
    lineages: list[Lineage] = []
    for row in series_rows:
        for finding in row.findings():
            _continue(lineages, finding, row.version)
    for lineage in lineages:
        lineage.last = versions[-1]
        _walk(lineage, versions, statuses)
    return History(series_rows[0].series, list(series_rows), lineages, _regressions(versions, statuses))


def histories(rows: list[Row]) -> list[History]:
    """One history per series of ``rows`` (``runs.Row.series``), its rows in release order. Two rows of one series
    at one release (two folders judging the same release, say its budget and its verification) are read as one: the
    later run's records, and the earlier run's of the checks the later one did not run."""
    by_series: dict[tuple[str, str, str], dict[str, Row]] = {}
    for row in rows:
        kept = by_series.setdefault(row.series, {})
        other = kept.get(row.version)
        kept[row.version] = row if other is None else _joined(*sorted((other, row), key=lambda r: r.stamp))
    return [history(sorted(kept.values(), key=lambda r: release_key(r.version))) for kept in by_series.values()]


def _joined(earlier: Row, later: Row) -> Row:
    """``later`` with the records of ``earlier``'s checks that ``later`` did not run."""
    ran = {record.check for record in later.records}
    return replace(later, records=[r for r in earlier.records if r.check not in ran] + later.records)


def summary_line(item: History) -> str:
    """The series' history in one line: what was fixed and regressed in which release, and what stands. A finding
    fixed later names the release it was first seen in even where that is the first judged, so the line alone says
    which releases carry it."""
    versions = item.versions
    if len(versions) == 1:
        return f"one release judged ({versions[0]}): no history yet"
    parts = []
    for lineage in item.lineages:
        said = [f"first seen in {lineage.first_seen}"] if lineage.first_seen != versions[0] or lineage.fixed_in else []
        said += [f"fixed in {v}" for v in lineage.fixed_in] + [f"seen again in {v}" for v in lineage.seen_again_in]
        if lineage.open:
            said.append(f"stands in {versions[-1]}" + ("" if said else f" (seen since {lineage.first_seen})"))
        elif not said:  # sighted in the first release, then neither sighted nor judged again
            said.append(f"seen in {', '.join(lineage.sightings)}, not judged since")
        parts.append(f"{lineage.name}: {', '.join(said)}")
    parts += [f"regressed in {r.failed}: {r.requirement} (PASS in {r.passed})" for r in item.regressions]
    head = f"releases {', '.join(versions)}"
    return f"{head}: " + ("; ".join(parts) if parts else "no finding in any")
