"""The verdict a reader needs first: per engine, per conformance class, and for the whole run (the exit status of
``specconform run``)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import findings, requirement_order, spec
from ..core import worst
from .text import ORDER, _count, _evidence, _first_line, _sorted, _unexpected_pass


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
        if self.verdict == "CONFORMS WHERE JUDGED":  # nothing failed: what falls short is what was judged
            partial = ", ".join(c.cls for c in self.claimed if c.verdict == "judged in part")
            in_full = f"{conforming} of {len(self.claimed)} claimed classes judged in full"
            return f"**CONFORMS WHERE JUDGED**: nothing failed; {in_full}; judged in part: {partial}"
        return f"**{self.verdict}**: {claimed}"


NOT_CLAIMED_VERDICT = "not claimed"


NOT_APPLICABLE_VERDICT = "not applicable"


_OUTSIDE = "outside the engine's contract or judged only on adapter-derived values (NOT_APPLICABLE)"


def _bad_pairs(records: list[dict]) -> list[tuple[dict, str]]:
    """Every failed requirement and every check that ended in ERROR or TIMEOUT: (record, requirement
    or ``"check"``)."""
    out = []
    for r in _sorted(records):
        out += [(r, rid) for rid, result in r["results"].items() if result["status"] == "FAIL"]
        if r["status"] in ("ERROR", "TIMEOUT"):
            out.append((r, "check"))
    return out


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
        # the likeliest root cause first: the failure lowest in the order of the requirements (a check's ERROR last)
        record, rid = min(
            (pair for v in verdicts for pair in v.unexpected),
            key=lambda pair: (pair[1] == "check", requirement_order.sort_key(pair[1])),
        )
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


def _class_cells(records: list[dict], engines: list[str]) -> dict[tuple[str, str], ClassVerdict]:
    return {
        (cls, engine): class_verdict(mine, cls)
        for engine in engines
        for cls in {r["cls"] for r in records}
        if (mine := [r for r in records if r["engine"] == engine and r["cls"] == cls])
    }
