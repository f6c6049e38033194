"""Run checks against an engine in its own process and score them (specs/INTERPRETING.md).

Each result becomes one record with a result per requirement, written to the JSON-lines file the
moment it is known (RUN-RECORD-1), so a crash or Ctrl-C loses nothing already measured. Every
selected check gets a record: when the engine dies or hangs the check is ERROR or TIMEOUT, the
engine is restarted for the next one, and an engine that fails ``GIVE_UP_AFTER`` checks in a row
is given up on, its remaining checks recorded as ERROR.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from . import public, schemas
from .contract import derived_only
from .core import (
    BLOCKED,
    ERROR,
    FAIL,
    NOT_APPLICABLE,
    NOT_CLAIMED,
    NOT_RUN,
    PASS,
    PRECONDITION_FAILED,
    STATUSES,  # noqa: F401  (specconform.harness.cli counts records by runner.STATUSES)
    TIMEOUT,
    Check,
    Context,
    Outcome,
    RequirementResult,
    check_outcome,
    uniform_outcome,
)
from .expectations import Expectation
from .isolation import EngineFailure, EngineInfo, EngineProcess
from .schemas import RequirementRecord, RunRecord

GIVE_UP_AFTER = 3  # consecutive deaths or timeouts of one engine


_EXPECTATION_KEYS = ("expected_status", "expectation_reason", "expectation_link")
_RESULT_EXPECTATION_KEYS = (*_EXPECTATION_KEYS, "expectation_proof", "expectation_defects")


def expect(record: RunRecord, expectations: list[Expectation]) -> RunRecord:
    """``record`` with expectations attached to it and to each requirement result, and listing what no expectation
    covers: each failed requirement whose failure (and fingerprint) is not expected, and ``"check"`` for an ERROR or
    TIMEOUT that is not expected."""
    update: dict = {}
    whole = next((e for e in expectations if e.applies(record)), None)
    if whole:
        update.update(expected_status=whole.status, expectation_reason=whole.reason, expectation_link=whole.link)
    unexpected = []
    if record.status in (ERROR, TIMEOUT) and not (whole and whole.met_by(record.status, "")):
        unexpected.append("check")
    results = {}
    for rid, result in record.results.items():
        # entries of one requirement may tell its failure modes apart (each its own cause and proof): the entry whose
        # fingerprints the result meets, else the first
        owns = [e for e in expectations if e.applies(record, rid)]
        own = next((e for e in owns if e.met_by(result.status, result.fingerprint)), owns[0] if owns else None)
        expectation = own or whole  # an entry without a requirement covers every requirement of its check
        if expectation:
            fields: dict = dict(
                expected_status=expectation.status,
                expectation_reason=expectation.reason,
                expectation_link=expectation.link,
            )
            if expectation.proof:
                fields["expectation_proof"] = expectation.proof
            if expectation.defects:
                fields["expectation_defects"] = list(expectation.defects)
            result = result.model_copy(update=fields)
        results[rid] = result
        if result.status == FAIL and not (expectation and expectation.met_by(FAIL, result.fingerprint)):
            unexpected.append(rid)
    return record.model_copy(update={**update, "results": results, "unexpected": unexpected})


def reexpect(records: list[RunRecord], expectations: list[Expectation]) -> list[RunRecord]:
    """``records`` with their expectations attached anew from ``expectations`` (those of the run dropped): a run
    re-rendered after its causes were written or corrected."""
    out = []
    for record in records:
        data = record.to_json()
        for key in _EXPECTATION_KEYS:
            data.pop(key, None)
        for result in data["results"].values():
            for key in _RESULT_EXPECTATION_KEYS:
                result.pop(key, None)
        out.append(expect(RunRecord.model_validate(data), expectations))
    return out


def pin_expectations(records: list[RunRecord], expectations: list[Expectation]) -> list[dict]:
    """Expectation entries that pin every bad result of ``records`` by requirement and fingerprint.

    Each failed requirement becomes ``{check, requirement, status, fingerprint, reason, link?, if?}``
    (the fingerprints of several runs of one engine merged into a list) and each ERROR or TIMEOUT
    check ``{check, status, reason, link?, if?}``. The reason, link and conditions come from the entry
    in ``expectations`` that covers the result today: a check glob, or a requirement entry whose
    fingerprints (if it has any) include this one. A bad result that no entry explains is an error
    naming it, and nothing is returned: a reason written for one failure is never carried to another."""
    pinned: dict[tuple, dict] = {}
    unexplained: list[str] = []

    def pin(source: Expectation, key: tuple, **fields) -> None:
        out = pinned.setdefault(key, {**fields, "reason": source.reason})
        if source.link:
            out["link"] = source.link
        if source.conditions:
            out["if"] = dict(source.conditions)

    for record in records:
        whole = next((e for e in expectations if e.applies(record)), None)
        if record.status in (ERROR, TIMEOUT):
            if whole and whole.met_by(record.status, ""):
                pin(whole, (record.check, "", whole.conditions), check=record.check, status=record.status)
            else:
                unexplained.append(f"{record.check} ({record.status})")
        for rid, result in record.results.items():
            if result.status != FAIL:
                continue
            source = next((e for e in expectations if e.applies(record, rid)), None) or whole
            if source is None or not source.met_by(FAIL, result.fingerprint):
                unexplained.append(f"{record.check} {result.fingerprint or rid}")
                continue
            key = (record.check, rid, source.conditions)
            pin(source, key, check=record.check, requirement=rid, status=FAIL, fingerprint=[])
            if result.fingerprint not in pinned[key]["fingerprint"]:
                pinned[key]["fingerprint"] = sorted([*pinned[key]["fingerprint"], result.fingerprint])
    if unexplained:
        raise ValueError(
            f"{len(unexplained)} bad result(s) have no expectation to take a reason from: "
            + "; ".join(unexplained)
            + " (write an entry with its cause first)"
        )
    for entry in pinned.values():
        if len(entry.get("fingerprint", ())) == 1:
            entry["fingerprint"] = entry["fingerprint"][0]
    return list(pinned.values())


def run_checks(
    engine: EngineProcess,
    checks: Iterable[Check],
    ctx_for: Callable[[EngineInfo], Context],
    *,
    expectations: Iterable[Expectation] = (),
    timeout_s: float | None = 600,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    reproduce: Callable[[Check, Context | None], str] = lambda check, ctx: "",
    run_dir: Path | None = None,
    engine_args: str = "",
) -> list[RunRecord]:
    """Run ``checks`` in order against ``engine`` (started on first use); ``ctx_for`` builds each
    check's context from the engine's own name, version and profile. Every check gets a record.
    ``checks`` may be any iterable: it is drawn from one check at a time, as each is about to run.
    ``reproduce(check, ctx)`` writes the command that re-runs a check; ``ctx`` is ``None`` when the engine never
    started.

    A failure's minimal reproduction is written into ``run_dir`` (``write_reproductions``), with the command
    that replays it against the engine ``engine_args`` names (default: ``--engine <its spec>``)."""
    expectations = list(expectations)
    records: list[RunRecord] = []
    failures_in_a_row = 0
    info = engine.info
    for check in checks:
        started = time.perf_counter()
        outcome: Outcome
        if failures_in_a_row >= GIVE_UP_AFTER:
            outcome = uniform_outcome(
                ERROR,
                f"not run: the engine failed {failures_in_a_row} checks in a row and was given up on",
                check.requirements,
            )
        else:
            try:
                if info is None:
                    info = engine.start(timeout_s)
                ctx = ctx_for(info)
                if unjudged := gate(check, ctx.profile, info.probe_problem):
                    outcome = uniform_outcome(*unjudged, check.requirements)
                else:
                    outcome = judged_on_engine_values(check, engine.run(check.name, ctx, timeout_s), ctx.profile)
                failures_in_a_row = 0
            except EngineFailure as failure:
                failures_in_a_row += 1
                outcome = uniform_outcome(failure.status, failure.message, check.requirements)
        ctx = ctx_for(info) if info is not None else None
        results = {rid: result.to_json() for rid, result in outcome.requirements.items()}
        documents = {
            rid: r.pop("reproduction") for rid, r in results.items() if isinstance(r.get("reproduction"), dict)
        }
        record = RunRecord(
            check=check.name,
            cls=check.cls,
            requirements=list(check.requirements),
            status=outcome.status,
            message=outcome.message,
            results={rid: RequirementRecord.model_validate(result) for rid, result in results.items()},
            engine=info.name if info else engine.engine_spec,
            engine_spec=engine.engine_spec,
            engine_version=info.version if info else "unknown (the engine never started)",
            device=info.device if info else "unknown",
            profile=ctx.profile.label if ctx else "unknown",
            claimed_classes=sorted(ctx.profile.classes) if ctx else None,
            seed=ctx.seed if ctx else 0,
            duration_s=round(time.perf_counter() - started, 4),
            reproduce=reproduce(check, ctx),
            statistic=outcome.statistic,
            p_value=outcome.p_value,
            alpha=outcome.alpha,
            trials=outcome.trials,
            expected_status=None,
            expectation_reason="",
            expectation_link="",
            unexpected=[],
            plots=outcome.plots,
            reproduction="",
        )
        record = public.scrub_record(record)  # no path of this machine in what is published
        if run_dir is not None:
            engine_args = engine_args or f"--engine {shlex.quote(engine.engine_spec)}"
            record = write_reproductions(run_dir, record, documents, engine_args)
        record = expect(record, expectations)
        records.append(record)
        on_record(record)
    return records


def gate(check: Check, profile, probe_problem: str = "") -> tuple[str, str] | None:
    """Why ``check`` is not run on an engine of ``profile``, as ``(status, message)``: NOT_CLAIMED (its class is
    not claimed), PRECONDITION_FAILED (a capability it needs is missing; ``probe_problem``: why an HTTP engine's
    first request showed no token ids) or NOT_APPLICABLE (its cases lie outside the engine's contract, or it judges
    no requirement of the engine's lossless verification mode); None when it is run."""
    if not profile.claims(check.cls):
        return NOT_CLAIMED, f"profile {profile.name} does not claim {check.cls}"
    if missing := [n for n in check.needs if n not in profile.capabilities]:
        probed = (
            f" (probing it: {probe_problem})" if probe_problem and {"token-ids", "marker-ids"} & set(missing) else ""
        )
        return PRECONDITION_FAILED, f"the engine lacks {', '.join(missing)}{probed}"
    if why := profile.outside_contract(check.preconditions):
        return NOT_APPLICABLE, f"outside the engine's contract: {why}"
    outside, why = profile.outside_verification(check.cls, check.requirements)
    if outside and set(outside) == set(check.requirements):
        return NOT_APPLICABLE, why
    return None


def judged_on_engine_values(check: Check, outcome: Outcome, profile) -> Outcome:
    """``outcome`` with every requirement judged only on observables the engine's adapter derives (the profile's
    ``derived``) turned NOT_APPLICABLE: such a verdict, PASS or FAIL, would judge the adapter; so are the
    per-token rule's requirements of an engine in a lossless verification mode (RUN-PROFILE-3)."""
    changed = {}
    outside, mode = profile.outside_verification(check.cls, check.requirements)
    for rid, result in outcome.requirements.items():
        why = derived_only(check.observables(rid), profile.derived) or (mode if rid in outside else "")
        if why and result.status in (PASS, FAIL, BLOCKED, NOT_RUN):
            changed[rid] = RequirementResult(NOT_APPLICABLE, 0, why)
    if not changed:
        return outcome
    rolled = check_outcome({**outcome.requirements, **changed}, _summary(outcome))
    return replace(outcome, status=rolled.status, message=rolled.message, requirements=rolled.requirements)


def _summary(outcome: Outcome) -> str:
    """The check's own summary line: a FAIL, BLOCKED, NOT_RUN or NOT_APPLICABLE outcome wraps it as
    ``<first evidence> [<summary>]`` (``core.check_outcome``)."""
    message = outcome.message
    if outcome.status == PASS or not message.endswith("]"):
        return message
    depth = 0
    for i in range(len(message) - 1, -1, -1):
        depth += {"]": 1, "[": -1}.get(message[i], 0)
        if depth == 0:
            return message[i + 1 : -1]
    return message


def _file_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def write_reproductions(run_dir: Path, record: RunRecord, documents: dict[str, dict], engine_args: str) -> RunRecord:
    """Write each requirement's minimal reproduction (``documents``: requirement id -> a golden-vector document) to
    ``run_dir/reproductions/<engine>--<check>--<requirement>.json``; ``record`` with each path, relative to the run
    folder, in its result, and the evidence naming the file and the command that replays it against the engine
    ``engine_args`` names (``--engine <spec>`` and its server's options)."""
    results = dict(record.results)
    first = record.reproduction
    for rid, document in documents.items():
        relative = Path("reproductions") / _file_name(f"{record.engine}--{record.check}--{rid}.json")
        document = {"check": record.check, "engine": record.engine, "requirement": rid, "seed": record.seed, **document}
        (run_dir / relative.parent).mkdir(parents=True, exist_ok=True)
        (run_dir / relative).write_text(json.dumps(document, indent=1) + "\n")
        command = f"specconform replay {relative} {engine_args}"
        evidence = results[rid].evidence + f" [minimal reproduction: {relative}; {command}]"
        results[rid] = results[rid].model_copy(update={"reproduction": str(relative), "evidence": evidence})
        first = first or str(relative)
    return record.model_copy(update={"results": results, "reproduction": first})


class RecordWriter:
    """Appends each record to ``results.jsonl`` and flushes, so nothing measured is lost; a record that does not fit
    its schema (``specconform.harness.schemas.RunRecord``) is an error of the harness, raised before it is written."""

    def __init__(self, path: Path):
        self.path = path
        self.file = path.open("a")

    def __call__(self, record: RunRecord) -> None:
        data = record.to_json()
        RunRecord.model_validate(data)
        self.file.write(json.dumps(data) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def write_manifest(run_dir: Path, engines: list[str], checks: list[Check]) -> None:
    """Add to what the run set out to do, so that a report can say which selected checks have no record."""
    manifest = run_dir / "run.json"
    planned = json.loads(manifest.read_text())["planned"] if manifest.is_file() else []
    planned += [[engine, check.name] for engine in engines for check in checks]
    manifest.write_text(json.dumps({"planned": planned}, indent=0))


def read_records(path: str | Path) -> list[RunRecord]:
    """The records of a run's ``results.jsonl`` (``path`` or the folder holding it), each checked against
    ``specconform.harness.schemas.RunRecord``: a ``ValueError`` names the line and the key that does not fit."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no results at {str(path)!r} (a run folder holds results.jsonl)")
    records = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            records.append(schemas.parse(RunRecord, json.loads(line), f"{path}:{number}"))
    return records


def missing_records(run_dir: Path, records: list[RunRecord]) -> list[str]:
    """``engine: check`` for every planned check of the run's manifest that has no record."""
    manifest = Path(run_dir) / "run.json"
    if not manifest.is_file():
        return []
    recorded = {(r.engine_spec, r.check) for r in records}
    planned = json.loads(manifest.read_text())["planned"]
    return [f"{engine}: {check}" for engine, check in planned if (engine, check) not in recorded]
