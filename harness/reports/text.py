"""The small pieces of text every report shares: a record's first line of evidence, counts, a check's status as
the tables show it, and the order in which records are listed (worst status first)."""

from __future__ import annotations

from .. import findings
from ..core import BAD, SEVERITY
from ..schemas import RunRecord

ORDER = SEVERITY


# how the note that runner.write_reproductions appends to a failure's evidence begins:
# `` [minimal reproduction: <path>; specconform replay <path> <engine options>]``
REPRODUCTION_NOTE = " [minimal reproduction: "
_CLOSERS = {"[": "]", "(": ")", "{": "}"}


def first_line(text: str, limit: int = 240) -> str:
    """The first line of ``text`` shortened to ``limit`` characters by dropping whole clauses, for every front end
    (summary.md, report.html, the console): a cut in the middle of a clause or bracket misleads, and a replay command
    cut short cannot be run.

    The minimal reproduction note a failure's evidence ends with is kept whole, whatever line it is on; over the limit
    it names its file once, in the replay command, and the evidence beside it keeps at least half the limit, so a
    long command makes the line longer than ``limit``. The evidence drops its middle ``; ``-separated clauses first
    (the steps of a case between its setup and what went wrong, "…" in their place); only evidence that is still too
    long is cut at a word, before its last clause where that is short, with " …" and the brackets it leaves open
    closed."""
    body, note = _reproduction_note(text or "")
    line = (body.splitlines() or [""])[0]
    if len(line) + len(note) <= limit:
        return line + note
    if "; " in note:  # the replay command names the file too
        note = REPRODUCTION_NOTE + note.partition("; ")[2]
    return _clauses_kept(line, max(limit - len(note), limit // 2)) + note


def _reproduction_note(text: str) -> tuple[str, str]:
    """``text`` without the reproduction note it ends with, and that note ("" when it has none)."""
    start = text.rfind(REPRODUCTION_NOTE)
    if start < 0 or not text.rstrip().endswith("]"):
        return text, ""
    return text[:start], text[start:].rstrip()


def _clauses_kept(line: str, room: int) -> str:
    """``line`` in at most ``room`` characters: as many of its first clauses as fit beside its last, or cut."""
    if len(line) <= room:
        return line
    *clauses, last = _outside_brackets(line, "; ")
    for kept in range(len(clauses) - 1, 0, -1):
        shortened = "; ".join([*clauses[:kept], "…", last])
        if len(shortened) <= room:
            return shortened
    if clauses and len(last) <= room // 2:
        return f"{_cut('; '.join(clauses), room - len(last) - 2)}; {last}"
    return _cut(line, room)


def _outside_brackets(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` that no bracket encloses."""
    parts, start, depth = [], 0, 0
    for i, char in enumerate(text):
        if char in _CLOSERS:
            depth += 1
        elif char in _CLOSERS.values():
            depth = max(depth - 1, 0)
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
    return [*parts, text[start:]]


def _cut(text: str, room: int) -> str:
    """``text`` cut at a word to at most ``room`` characters, " …" marking the cut and the brackets it leaves open
    closed after it."""
    end = room - 2
    while True:
        kept = text[: max(end, 0)]
        if 0 <= end < len(text) and text[end] != " " and " " in kept:
            kept = kept.rsplit(" ", 1)[0]
        kept = kept.rstrip(" ,;:")
        shown = f"{kept} …{_unclosed(kept)}".lstrip()
        if len(shown) <= room or not kept:
            return shown
        end = len(kept) - (len(shown) - room)


def _unclosed(text: str) -> str:
    """The closing brackets of the brackets ``text`` leaves open, innermost first."""
    opened: list[str] = []
    for char in text:
        if char in _CLOSERS:
            opened.append(char)
        elif opened and char == _CLOSERS[opened[-1]]:
            opened.pop()
    return "".join(_CLOSERS[char] for char in reversed(opened))


def sorted_records(records: list[RunRecord]) -> list[RunRecord]:
    return sorted(records, key=lambda r: (ORDER.get(r.status, 9), r.engine, r.check))


def count_of(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{n} {noun if n == 1 else plural}"


def evidence_of(record: RunRecord, rid: str, limit: int = 240) -> str:
    result = record.results.get(rid)
    return first_line((result.evidence if result else "") or record.message, limit)


def status_counts_text(counts: dict[str, int]) -> str:
    return " · ".join(f"{status} {n}" for status, n in counts.items())


def unexpected_pass(r: RunRecord) -> bool:
    return r.unexpected_pass


def check_status_text(r: RunRecord) -> str:
    if unexpected_pass(r):
        return "PASS (unexpected)"
    if r.status in BAD:
        return r.status + (" (unexpected)" if r.unexpected else " (expected)")
    return r.status


def own_reproduction(record: RunRecord, rid: str) -> str:
    """The minimal reproduction of requirement ``rid`` of ``record`` ("" when it has none, or for ``"check"``)."""
    result = record.results.get(rid) if rid != "check" else None
    return (result.reproduction or "") if result else ""


def also_failing(f: findings.Finding) -> str:
    """What else one defect fails, said beside its one name: ``; also failing TB-MARK-2, TB-MARK-3 (the same
    defect)`` or ""."""
    return f"; also failing {', '.join(f.also)} (the same defect)" if f.also else ""


def incomplete_lines(missing: list[str]) -> list[str]:
    if not missing:
        return []
    shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    return [f"**INCOMPLETE RUN: {len(missing)} selected checks have no record**: {shown}", ""]
