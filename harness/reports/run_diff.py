"""The difference between two runs (``specconform diff``): new failures first, then fixes, then changes in
statistics."""

from __future__ import annotations

from ..schemas import RunRecord


def bad_results(records: list[RunRecord]) -> dict[tuple[str, str, str], RunRecord]:
    """``{(engine, check, requirement or "check"): record}`` for every failed requirement and every
    check that ended in ERROR or TIMEOUT."""
    out = {}
    for r in records:
        for rid, result in r.results.items():
            if result.status == "FAIL":
                out[(r.engine, r.check, rid)] = r
        if r.status in ("ERROR", "TIMEOUT"):
            out[(r.engine, r.check, "check")] = r
    return out


def _evidence(record: RunRecord, rid: str) -> str:
    result = record.results.get(rid)
    return result.evidence if result else ""


def _status(record: RunRecord, rid: str) -> str:
    """The status of ``record``'s result of ``rid``, else the check's own."""
    result = record.results.get(rid)
    return result.status if result else record.status


def diff(old: list[RunRecord], new: list[RunRecord]) -> tuple[str, int]:
    """New failures first (per requirement), then fixes, then changes in statistics; returns
    (Markdown, new failures)."""
    key = lambda r: (r.engine, r.check)  # noqa: E731
    before = {key(r): r for r in old}
    after = {key(r): r for r in new}
    bad_before, bad_after = bad_results(old), bad_results(new)
    new_failures = [(k, r) for k, r in bad_after.items() if k not in bad_before]
    fixes = [(k, r) for k, r in bad_before.items() if k not in bad_after and (k[0], k[1]) in after]
    changed = {(k[0], k[1]) for k, _ in new_failures + fixes}
    other = [
        (before[k], r)
        for k, r in after.items()
        if k in before and r.status != before[k].status and k not in changed
    ]
    stats = [
        (before[k], r)
        for k, r in after.items()
        if k in before
        and r.p_value is not None
        and before[k].p_value is not None
        and r.p_value != before[k].p_value
    ]
    gone = [r for k, r in before.items() if k not in after]
    sections = {
        "New failures": [
            # the whole first line of the evidence: a cut would end a list of ids mid-way
            f"- `{check}` {rid} ({engine}): {r.status} "
            f"{((_evidence(r, rid) or r.message or '').splitlines() or [''])[0]}"
            for (engine, check, rid), r in new_failures
        ],
        "Fixes": [
            f"- `{check}` {rid} ({engine}): now "
            f"{_status(after[(engine, check)], rid)}"
            for (engine, check, rid), _ in fixes
        ],
        "Changes in statistics": [
            f"- `{r.check}` ({r.engine}): p {b.p_value:.3g} → {r.p_value:.3g}" for b, r in stats
        ],
        "Other status changes": [f"- `{r.check}` ({r.engine}): {b.status} → {r.status}" for b, r in other]
        + [f"- `{r.check}` ({r.engine}): no longer run" for r in gone],
    }
    lines = [f"# specconform diff: {len(new_failures)} new failures, {len(fixes)} fixes", ""]
    for title, entries in sections.items():  # a section with nothing in it is left out
        if entries:
            lines += [f"## {title}", "", *entries, ""]
    if not any(sections.values()):
        lines += ["No change in any status or statistic.", ""]
    return "\n".join(lines), len(new_failures)
