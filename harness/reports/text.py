"""The small pieces of text every report shares: a record's first line of evidence, counts, a check's status as
the tables show it, and the order in which records are listed (worst status first)."""

from __future__ import annotations

from .. import findings
from ..core import BAD, SEVERITY

ORDER = SEVERITY


def _first_line(text: str, limit: int = 240) -> str:
    """The first line of ``text``, cut at a word boundary to at most ``limit`` characters ("…" marks a cut)."""
    line = (text or "").splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit].rsplit(" ", 1)[0] + " …"


def _sorted(records):
    return sorted(records, key=lambda r: (ORDER.get(r["status"], 9), r["engine"], r["check"]))


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{n} {noun if n == 1 else plural}"


def _evidence(record: dict, rid: str, limit: int = 240) -> str:
    result = record["results"].get(rid, {})
    return _first_line(result.get("evidence") or record["message"], limit)


def _status_counts(counts: dict[str, int]) -> str:
    return " · ".join(f"{status} {n}" for status, n in counts.items())


def _unexpected_pass(r: dict) -> bool:
    return r["status"] == "PASS" and r.get("expected_status") not in (None, "PASS")


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


def also_failing(f: findings.Finding) -> str:
    """What else one defect fails, said beside its one name: ``; also failing TB-MARK-2, TB-MARK-3 (the same
    defect)`` or ""."""
    return f"; also failing {', '.join(f.also)} (the same defect)" if f.also else ""


def _incomplete(missing: list[str]) -> list[str]:
    if not missing:
        return []
    shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return [f"**INCOMPLETE RUN: {len(missing)} selected checks have no record**: {shown}", ""]
