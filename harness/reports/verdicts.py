"""The verdict a reader needs first: per engine, per conformance class, and for the whole run (the exit status of
``specconform run``)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import findings, requirement_order, spec
from ..core import worst
from ..schemas import RunRecord
from .text import ORDER, count_of, evidence_of, first_line, sorted_records, unexpected_pass


def _renamed(records: list[RunRecord]) -> list[RunRecord]:
    """``records`` with each id of an earlier specification that is now an alias (``spec.load_aliases``) read as
    its first successor."""
    successor = {rid: alias.now[0] for rid, alias in spec.load_aliases().items()}
    return [
        r.model_copy(
            update={
                "requirements": [successor.get(rid, rid) for rid in r.requirements],
                "results": {successor.get(rid, rid): result for rid, result in r.results.items()},
            }
        )
        for r in records
    ]


def _status(record: RunRecord, rid: str) -> str | None:
    """The status of ``record``'s result of requirement ``rid`` (``None``: it has none)."""
    result = record.results.get(rid)
    return result.status if result else None


def requirement_status(records: list[RunRecord]) -> dict[tuple[str, str], tuple[str, int]]:
    """``{(engine, requirement): (status, cases)}``, one status per requirement merged across the checks
    (``findings.merged_status``: FAIL only where a case violated it, PASS where cases exercised it and none
    violated it). A record of an earlier specification that names an id now an alias counts for the alias's
    first successor."""
    return findings.requirement_statuses(_renamed(records))


def engine_requirements(registry: dict[str, spec.Requirement]) -> list[str]:
    """The requirements an engine is judged on: ``RUN-*`` ones bind the runner (the project's tests)."""
    return [rid for rid in registry if not rid.startswith("RUN-")]


def claimed_classes(records: list[RunRecord]) -> list[str]:
    """The classes one engine's profile claims, every one whether this run judged it or not, as its records name
    them (``claimed_classes``); for records written before they named them, the classes of the checks judged. A
    class whose requirements all bind the runner is no engine's to conform to."""
    named = [r.claimed_classes for r in records if r.claimed_classes is not None]
    classes = set().union(*named) if named else {r.cls for r in records if r.status != "NOT_CLAIMED"}
    registry = spec.load_registry()
    runner_only = set(spec.classes()) - {registry[rid].cls for rid in engine_requirements(registry)}
    return sorted(classes - runner_only)


@dataclass
class ClassVerdict:
    """One engine's verdict on one conformance class, resting on every requirement of the class
    (``requirements.yaml``) that binds an engine, whichever checks judged it (RUN-STATUS-4).

    ``verdict`` is ``conforms`` (every one judged, and PASS, but those outside the engine's contract), ``fails``
    (a failure no expectation covers), ``known failure`` (every failure expected), ``judged in part`` (no failure,
    some PASS, others not judged: left out by ``--check``, NOT_RUN, PRECONDITION_FAILED), ``not judged`` (no
    failure and none PASS), ``not applicable`` (every one outside the contract) or ``not claimed``; ``why`` says
    it in one line."""

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
    unexpected: list[tuple[RunRecord, str]]
    known: list[tuple[RunRecord, str]]
    unexpected_passes: list[RunRecord]

    @property
    def claimed(self) -> list[ClassVerdict]:
        """The classes the verdict counts: every class the profile claims but those wholly outside the engine's
        contract."""
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
            return f"**FAILS**: {count_of(findings.distinct(self.unexpected), 'unexpected failure')}; {claimed}"
        if self.known:
            return f"**KNOWN FAILURES** only ({findings.distinct(self.known)}, all expected); {claimed}"
        if self.verdict == "CONFORMS WHERE JUDGED":  # nothing failed: what falls short is what was judged
            parts = [f"{conforming} of {len(self.claimed)} claimed classes judged in full"]
            for short in ("judged in part", NOT_JUDGED_VERDICT):
                if classes := [c.cls for c in self.claimed if c.verdict == short]:
                    parts.append(f"{short}: {', '.join(classes)}")
            return "**CONFORMS WHERE JUDGED**: nothing failed; " + "; ".join(parts)
        return f"**{self.verdict}**: {claimed}"


NOT_CLAIMED_VERDICT = "not claimed"


NOT_APPLICABLE_VERDICT = "not applicable"


NOT_JUDGED_VERDICT = "not judged"


_OUTSIDE = "outside the engine's contract or judged only on adapter-derived values (NOT_APPLICABLE)"


def _bad_pairs(records: list[RunRecord]) -> list[tuple[RunRecord, str]]:
    """Every failed requirement and every check that ended in ERROR or TIMEOUT: (record, requirement
    or ``"check"``)."""
    out = []
    for r in sorted_records(records):
        out += [(r, rid) for rid, result in r.results.items() if result.status == "FAIL"]
        if r.status in ("ERROR", "TIMEOUT"):
            out.append((r, "check"))
    return out


LEFT_OUT = "left out by --check"


@dataclass
class _EngineRun:
    """What one engine's class verdicts share, read once: its records (ids of an earlier specification read as
    their successors), each requirement's merged status, the requirements its checks left to a variant the profile
    does not declare, the registry, and the requirements no check covers."""

    records: list[RunRecord]
    merged: dict[str, tuple[str, int]]
    other_variant: set[str]
    registry: dict[str, spec.Requirement]
    uncovered: list[str]

    @classmethod
    def of(cls, records: list[RunRecord], uncovered: list[str]) -> _EngineRun:
        """A check that covers a requirement of a variant the profile does not declare judges the declared
        variant's instead and leaves it out of its results (TB-FORCE-6 beside TB-FORCE-5): the profile does not
        claim it."""
        records = _renamed(records)
        merged = {rid: value for (_, rid), value in findings.requirement_statuses(records).items()}
        other_variant = {rid for r in records for rid in r.requirements if rid not in merged}
        return cls(records, merged, other_variant, spec.load_registry(), list(uncovered))


def class_verdict(run: _EngineRun, cls: str, claimed: bool) -> ClassVerdict:
    """One engine's verdict on class ``cls`` (see ``ClassVerdict``): on every requirement of it that the profile
    claims. A requirement no record of the run names was left out by ``--check``, unless no check covers it."""
    records, registry = run.records, run.registry
    if not claimed:
        own_checks = [r for r in records if r.cls == cls]
        return ClassVerdict(cls, NOT_CLAIMED_VERDICT, "NOT_CLAIMED", first_line(own_checks[0].message))
    ids = [rid for rid in engine_requirements(registry) if registry[rid].cls == cls and rid not in run.other_variant]
    outside = sorted(rid for rid in ids if run.merged.get(rid, ("",))[0] == "NOT_APPLICABLE")
    per_req = {rid: run.merged.get(rid) for rid in ids if rid not in outside}  # the verdict rests on these
    if outside and not per_req:
        return ClassVerdict(cls, NOT_APPLICABLE_VERDICT, "NOT_APPLICABLE", f"{', '.join(outside)}: {_OUTSIDE}")
    if not per_req:  # a class of an earlier specification: nothing it required can be shown to have passed
        return ClassVerdict(cls, NOT_JUDGED_VERDICT, "NOT_RUN", "the registry (requirements.yaml) names none of its requirements")
    status = worst([value[0] if value else "NOT_RUN" for value in per_req.values()])
    bad = [(r, rid) for r, rid in _bad_pairs(records) if rid in per_req or (rid == "check" and r.cls == cls)]
    if bad:
        unexpected = [(r, rid) for r, rid in bad if rid in r.unexpected]
        record, rid = (unexpected or bad)[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        what = f"{record.status} on {rid}" if rid != "check" else record.status
        return ClassVerdict(
            cls,
            "fails" if unexpected else "known failure",
            status,
            f"{what} in `{record.check}`{more}: {evidence_of(record, rid)}",
        )
    blocked = sorted(rid for rid, value in per_req.items() if value and value[0] == "BLOCKED")
    if blocked:
        record = next(r for r in records if _status(r, blocked[0]) == "BLOCKED")
        return ClassVerdict(cls, "blocked", "BLOCKED", f"{', '.join(blocked)} {evidence_of(record, blocked[0])}")
    passed = [rid for rid, value in per_req.items() if value and value[0] == "PASS"]
    if len(passed) == len(per_req):
        cases = sum(per_req[rid][1] for rid in passed)
        besides = f"; {', '.join(outside)} {_OUTSIDE}" if outside else ""
        return ClassVerdict(
            cls, "conforms", status, f"{count_of(len(per_req), 'requirement')}, {count_of(cases, 'case')}{besides}"
        )
    unjudged = _not_judged(records, {rid: value for rid, value in per_req.items() if rid not in passed}, run.uncovered)
    return ClassVerdict(
        cls,
        "judged in part" if passed else NOT_JUDGED_VERDICT,
        status,
        f"{len(passed)} of {len(per_req)} requirements PASS; " + "; ".join(unjudged),
    )


def _not_judged(records: list[RunRecord], unjudged: dict[str, tuple[str, int] | None], uncovered: list[str]) -> list[str]:
    """Why each requirement of ``unjudged`` was not judged, requirements of one reason together: no record of the
    run names it (left out by ``--check``, or no check covers it), or its status with the first record's evidence
    (the capability the engine lacks, the case that never came)."""
    reasons: dict[str, list[str]] = {}
    for rid, value in sorted(unjudged.items()):
        if value is None:
            reason = "no check covers it" if rid in uncovered else LEFT_OUT
        else:
            record = next(r for r in records if _status(r, rid) == value[0])
            reason = f"{value[0]} ({evidence_of(record, rid)})"
        reasons.setdefault(reason, []).append(rid)
    return [f"{', '.join(rids)} {reason}" for reason, rids in reasons.items()]


def _engine_class_verdicts(records: list[RunRecord], uncovered: list[str]) -> list[ClassVerdict]:
    """One engine's verdict on every class its profile claims and every class its records name, in name order."""
    claimed = claimed_classes(records)
    run = _EngineRun.of(records, uncovered)
    return [class_verdict(run, cls, cls in claimed) for cls in sorted(set(claimed) | {r.cls for r in records})]


def engine_verdicts(records: list[RunRecord], uncovered: list[str] = ()) -> list[EngineVerdict]:
    """One verdict per engine, in name order; ``uncovered``: the requirements no check covers."""
    out = []
    for engine in sorted({r.engine for r in records}):
        mine = [r for r in records if r.engine == engine]
        counts = {s: sum(r.status == s for r in mine) for s in ORDER}
        bad = _bad_pairs(mine)
        unexpected = [(r, rid) for r, rid in bad if rid in r.unexpected]
        out.append(
            EngineVerdict(
                engine=engine,
                version=mine[0].engine_version,
                device=mine[0].device,
                profile=mine[0].profile,
                counts={s: n for s, n in counts.items() if n},
                classes=_engine_class_verdicts(mine, uncovered),
                unexpected=unexpected,
                known=[pair for pair in bad if pair not in unexpected],
                unexpected_passes=[r for r in mine if unexpected_pass(r)],
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
    tail = f"{count_of(known, 'known failure')} (expected), {count_of(passes, 'unexpected pass')}"
    if missing:
        tail += f"; INCOMPLETE: {len(missing)} selected checks have no record"
    if unexpected:
        # the likeliest root cause first: the failure lowest in the order of the requirements (a check's ERROR last)
        record, rid = min(
            (pair for v in verdicts for pair in v.unexpected),
            key=lambda pair: (pair[1] == "check", requirement_order.sort_key(pair[1])),
        )
        first = f"`{record.check}` on {rid}" if rid != "check" else f"`{record.check}` {record.status}"
        return False, f"{count_of(unexpected, 'unexpected failure')} in {', '.join(failing)} (first: {first}); {tail}"
    conforming = sum(v.verdict == "CONFORMS" for v in verdicts)
    line = f"no unexpected failure; engines conforming in every claimed class: {conforming} of {len(verdicts)}; "
    return not missing, line + tail


def not_claimed_line(verdict: EngineVerdict) -> list[str]:
    """The classes an engine's profile does not claim, in one line (none when it claims every class judged)."""
    classes = [c.cls for c in verdict.classes if c.verdict == NOT_CLAIMED_VERDICT]
    if not classes:
        return []
    return [f"not claimed by profile {verdict.profile} ({count_of(len(classes), 'class')}): {', '.join(classes)}"]


def class_cells(records: list[RunRecord], engines: list[str], uncovered: list[str] = ()) -> dict[tuple[str, str], ClassVerdict]:
    """``{(class, engine): verdict}`` for every class each engine claims or has a record of."""
    return {
        (verdict.cls, engine): verdict
        for engine in engines
        for verdict in _engine_class_verdicts([r for r in records if r.engine == engine], uncovered)
    }
