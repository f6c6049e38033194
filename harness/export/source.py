"""What ``specconform export`` exports: one reproduction document, named by its file or found in a run folder.

A reproduction file is a golden-vector document (``specconform.harness.reproductions``): a run folder's
``reproductions/<engine>--<check>--<requirement>.json`` or a proof's reproduction under ``proofs/``. A run folder is
searched through its ``results.jsonl``: every failed requirement result that names a reproduction and matches the
selector (its requirement, its fingerprint or its finding name), optionally of one check. Where several match (a
finding seen by several generated checks), the smallest minimal case is taken (fewest rows, then fewest tokens, then
the file name), so the choice is the same on every machine; the others are listed for the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import reproductions
from ..core import UsageError
from ..schemas import RequirementRecord


@dataclass
class Source:
    """The document to export, where it came from, and the engine it was recorded for (empty when it names none,
    as a golden vector copied under ``proofs/`` does)."""

    document: dict
    path: Path
    engine: str
    others: list[Path] = field(default_factory=list)  # further reproductions of the same selection, not exported


def _load(path: Path) -> dict:
    try:
        return reproductions.load(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _matches(selector: str, rid: str, result: RequirementRecord) -> bool:
    finding = result.finding or ""
    return selector in (rid, result.fingerprint, finding, finding.split(" ", 1)[0])


def _size(document: dict) -> tuple[int, int]:
    return (int(document.get("minimal_rows", 0)), int(document.get("minimal_size", 0)))


def from_run(run_dir: Path, selector: str, check: str = "") -> Source:
    """The reproduction of ``run_dir`` the selector names (see the module docstring)."""
    from ..runner import read_records

    if not selector:
        raise UsageError(f"{run_dir} is a run folder: name the finding (its requirement or fingerprint) after it")
    found: dict[Path, str] = {}
    failed_with_reproduction = set()
    for record in read_records(run_dir):
        if check and record.check != check:
            continue
        for rid, result in record.results.items():
            if result.status != "FAIL" or not result.reproduction:
                continue
            failed_with_reproduction.add(rid)
            if _matches(selector, rid, result):
                found[run_dir / result.reproduction] = record.engine
    if not found:
        known = ", ".join(sorted(failed_with_reproduction)) or "none"
        where = f" of check {check}" if check else ""
        raise UsageError(
            f"{run_dir}: no failed requirement{where} with a reproduction matches {selector!r} "
            f"(requirements with one: {known})"
        )
    documents = {path: _load(path) for path in found}
    ordered = sorted(documents, key=lambda path: (*_size(documents[path]), path.name))
    chosen = ordered[0]
    return Source(documents[chosen], chosen, found[chosen], ordered[1:])


def resolve(finding: str, selector: str = "", check: str = "") -> Source:
    """``finding`` as the command line names it: a reproduction file, or a run folder with ``selector``."""
    path = Path(finding)
    if path.is_dir():
        return from_run(path, selector, check)
    if selector or check:
        raise UsageError(f"{finding} is a reproduction file: a finding selector or --check applies to a run folder")
    document = _load(path)
    return Source(document, path, str(document.get("engine", "")))
