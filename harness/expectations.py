"""Expectation files: an engine's known results (RUN-EXPECT-1) and the proofs that back their causes.

``load_expectations`` reads one file into ``Expectation`` entries, checking each entry against its schema
(``specconform.harness.schemas.ExpectationEntry``) and each ``proof`` against the files it names
(``validate_proof``); ``specconform.harness.proofs`` replays those proofs, and the runner scores records against
the entries.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from . import schemas, yaml_files

PROOF_KEYS = ("patch", "reproduction", "server", "defects")
PATH_KEYS = ("patch", "reproduction", "server")
REQUIRED_PROOF_KEYS = ("patch", "reproduction")


@dataclass(frozen=True)
class Expectation:
    """A known result (RUN-EXPECT-1), keyed like web-platform-tests' metadata.

    ``check`` is a name or glob; ``requirement`` narrows it to one requirement's result (absent: the
    check's own status); ``fingerprints`` pin the ways of failing (``<requirement>/<mode>``; one or a
    list in YAML), so that a different failure under an expected FAIL is reported as unexpected;
    ``conditions`` are globs on the record's ``engine``, ``engine_version`` and ``device``."""

    check: str
    status: str
    reason: str
    link: str = ""
    requirement: str = ""
    fingerprints: tuple[str, ...] = ()
    conditions: tuple[tuple[str, str], ...] = ()
    # the patch that proves the cause (``specconform.harness.proofs``); entries that share one are one defect
    proof: str = ""
    defects: tuple[str, ...] = ()  # a combined patch's single-defect patches: its failures are each of those defects

    def applies(self, record: schemas.RunRecord, requirement: str = "") -> bool:
        """Whether this entry covers ``record`` (its check's own status, or with ``requirement`` that result)."""
        return (
            fnmatch.fnmatchcase(record.check, self.check)
            and self.requirement == requirement
            and all(fnmatch.fnmatchcase(str(getattr(record, key)), pattern) for key, pattern in self.conditions)
        )

    def met_by(self, status: str, fingerprint: str) -> bool:
        return status == self.status and (not self.fingerprints or fingerprint in self.fingerprints)


def load_expectations(path: str | Path | None) -> list[Expectation]:
    """An engine's expectation file (``specconform.harness.schemas.ExpectationsFile``: ``expectations: [{check, status,
    reason, link?, requirement?, fingerprint?: one or a list, if?: {engine|engine_version|device: glob}, proof?: {patch,
    reproduction}}]``); a bad entry is an error naming it and its key (a proof's paths are checked by
    ``specconform.harness.proofs``)."""
    if not path:
        return []
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"expectations file {str(path)!r} does not exist")
    data = yaml_files.read(path).data  # a syntax error names FILE:LINE:COLUMN
    # the file's own keys first, then each entry, so that an error says which entry it is in
    schemas.parse(schemas.ExpectationsFile, {**data, "expectations": []} if isinstance(data, dict) else data, str(path))
    entries = [
        schemas.parse(schemas.ExpectationEntry, entry, f"{path}: expectation {i}")
        for i, entry in enumerate(data.get("expectations") or [])
    ]
    out = []
    for i, entry in enumerate(entries):
        if entry.proof is not None:
            validate_proof(entry.proof, path, f"{path}: expectation {i}")
        out.append(
            Expectation(
                entry.check,
                entry.status,
                entry.reason,
                entry.link,
                entry.requirement,
                tuple(entry.fingerprint),
                tuple(sorted(entry.conditions.model_dump(exclude_none=True).items())),
                (entry.proof or {}).get("patch", ""),
                tuple((entry.proof or {}).get("defects", ())),
            )
        )
    return out


def root_of(expectations: str | Path) -> Path:
    """The repository root proof paths are relative to: the nearest folder above the expectations file that holds a
    ``proofs`` folder, else the folder above the file's folder."""
    folder = Path(expectations).resolve().parent
    return next((above for above in folder.parents if (above / "proofs").is_dir()), folder.parent)


def validate_proof(proof, expectations: str | Path, where: str) -> tuple[Path, Path, Path | None]:
    """The resolved ``(patch, reproduction, server or None)`` of an entry's ``proof`` mapping; ``ValueError``
    names an unknown key, a missing key or a path that does not exist."""
    if not isinstance(proof, dict):
        raise ValueError(f"{where}: proof must be a mapping with {list(PROOF_KEYS)}")
    unknown = sorted(set(proof) - set(PROOF_KEYS))
    if unknown:
        raise ValueError(f"{where}: proof has unknown keys {unknown}; allowed: {list(PROOF_KEYS)}")
    defects = proof.get("defects", [])
    if "defects" in proof and (
        not isinstance(defects, list) or len(defects) < 2 or not all(isinstance(d, str) and d for d in defects)
    ):
        raise ValueError(f"{where}: proof defects must list the two or more single-defect patches it joins")
    for defect in defects:
        if not (root_of(expectations) / defect).is_file():
            raise ValueError(f"{where}: proof defect {defect!r} does not exist")
    paths = []
    for key in PATH_KEYS:
        if key not in REQUIRED_PROOF_KEYS and key not in proof:
            paths.append(None)
            continue
        if not isinstance(proof.get(key), str) or not proof[key]:
            raise ValueError(f"{where}: proof lacks {key!r}")
        path = root_of(expectations) / proof[key]
        if not path.is_file():
            raise ValueError(f"{where}: proof {key} {proof[key]!r} does not exist (looked for {path})")
        paths.append(path)
    return paths[0], paths[1], paths[2]
