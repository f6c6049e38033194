"""Access to the normative specification: its documents, requirement registry and vectors."""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import yaml

SPEC_DOCUMENTS = (
    "thinking-budget.md",
    "rejection-sampling.md",
    "accepted-tokens.md",
    "openai-api.md",
    "statistics.md",
    "INTERPRETING.md",
)
LEVELS = ("MUST", "SHOULD")  # a MAY is a permission, not a requirement
_ID = r"\*\*(?P<id>(?:TB|RS|AC|API|STAT|RUN)-[A-Z]+-\d+)\*\*\s*"
_REQUIREMENT_LINE = re.compile(_ID + r"\((?P<level>MUST|SHOULD),\s*`(?P<cls>[a-z.\-]+)`")
_PERMISSION_LINE = re.compile(_ID + r"\(permission,\s*`(?P<cls>[a-z.\-]+)`")


def spec_dir() -> Path:
    return Path(str(resources.files("specconform.specs")))


def vectors_dir() -> Path:
    return spec_dir() / "vectors"


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    cls: str
    summary: str
    document: str
    # the observables the requirement is judged on (specconform.harness.contract.OBSERVABLES); empty: behaviour the
    # engine shows directly (forced rows, emitted tokens, errors)
    observes: tuple[str, ...] = ()
    # what a minimal case must hold to isolate this requirement rather than a basic one
    # (specconform.harness.checks.attribution)
    case_feature: str = ""
    # operation: binds the engine in normal operation (its verdict rests on these); robustness: binds its answer
    # to input its normal callers never give (reported beside the verdict, RUN-CONTRACT-1)
    binds: str = "operation"
    # the requirements this one assumes (specconform.harness.requirement_order): a failure whose minimal case also
    # fails one of them belongs to it (RUN-FINDING-1)
    builds_on: tuple[str, ...] = ()


def requirements_in_documents() -> dict[str, tuple[str, str, str]]:
    """``{id: (level, class, document)}`` for every requirement defined in the Markdown."""
    found: dict[str, tuple[str, str, str]] = {}
    for name in SPEC_DOCUMENTS:
        for match in _REQUIREMENT_LINE.finditer((spec_dir() / name).read_text()):
            rid = match["id"]
            if rid in found:
                raise ValueError(f"requirement {rid} is defined twice ({found[rid][2]}, {name})")
            found[rid] = (match["level"], match["cls"], name)
    return found


def permissions_in_documents() -> dict[str, tuple[str, str]]:
    """``{id: (class, document)}`` for every permission (``(permission, `class`)``) in the Markdown."""
    found: dict[str, tuple[str, str]] = {}
    for name in SPEC_DOCUMENTS:
        for match in _PERMISSION_LINE.finditer((spec_dir() / name).read_text()):
            found[match["id"]] = (match["cls"], name)
    return found


@dataclass(frozen=True)
class Permission:
    """A way an engine MAY differ (not a requirement): ``declared_by`` is the profile setting that declares
    it, ``honoured_by`` the checks that honour it."""

    id: str
    cls: str
    document: str
    summary: str
    declared_by: str
    honoured_by: tuple[str, ...]


def load_permissions() -> dict[str, Permission]:
    """``{id: Permission}`` from the ``permissions`` list of ``specs/requirements.yaml``."""
    data = yaml.safe_load((spec_dir() / "requirements.yaml").read_text())
    return {
        entry["id"]: Permission(
            entry["id"],
            entry["class"],
            entry["document"],
            entry["summary"],
            entry["declared_by"],
            tuple(entry["honoured_by"]),
        )
        for entry in data.get("permissions", ())
    }


def load_registry() -> dict[str, Requirement]:
    """The machine-readable registry ``specs/requirements.yaml``."""
    data = yaml.safe_load((spec_dir() / "requirements.yaml").read_text())
    registry = {}
    for entry in data["requirements"]:
        registry[entry["id"]] = Requirement(
            id=entry["id"],
            level=entry["level"],
            cls=entry["class"],
            summary=entry["summary"],
            document=entry["document"],
            observes=tuple(entry.get("observes", ())),
            case_feature=entry.get("case_feature", ""),
            binds=entry.get("binds", "operation"),
            builds_on=tuple(entry["builds_on"]),
        )
    return registry


@dataclass(frozen=True)
class Alias:
    """An id that is no longer a requirement: ``now`` are the requirements that carry what it said."""

    id: str
    now: tuple[str, ...]
    since: str
    why: str


def load_aliases() -> dict[str, Alias]:
    """``{old id: Alias}`` from the ``aliases`` list of ``specs/requirements.yaml``."""
    data = yaml.safe_load((spec_dir() / "requirements.yaml").read_text())
    return {
        entry["id"]: Alias(entry["id"], tuple(entry["now"]), str(entry["since"]), entry["why"])
        for entry in data.get("aliases", ())
    }


@functools.cache
def registry_ids() -> frozenset[str]:
    """The registry's ids, read once: every id a check writes down is looked up in them."""
    return frozenset(load_registry())


class UnknownRequirement(ValueError):
    """An id written where a registry requirement belongs that is none: left alone, a misspelt id would be judged,
    and could FAIL, as a requirement that does not exist."""


def require_registered(ids: Iterable[str], where: str) -> None:
    """An ``UnknownRequirement`` for the first of ``ids`` missing from the registry, naming it, ``where`` it is
    written, and what it is instead: an alias (with its successors), a permission, or a near miss of a registry id
    (difflib's nearest)."""
    for rid in ids:
        if rid not in registry_ids():
            raise UnknownRequirement(
                f"{where} names {rid}, which is not a requirement of specs/requirements.yaml: " + _instead_of(rid)
            )


def _instead_of(rid: str) -> str:
    if alias := load_aliases().get(rid):
        return f"it is an alias since specification {alias.since}, now {', '.join(alias.now)}"
    if rid in load_permissions():
        return "it is a permission, which no check judges"
    nearest = difflib.get_close_matches(rid, sorted(registry_ids()), n=1)
    return f"did you mean {nearest[0]}?" if nearest else "no registry id is near it"


def classes() -> dict[str, list[str]]:
    """``{conformance class: [requirement ids]}``."""
    out: dict[str, list[str]] = {}
    for req in load_registry().values():
        out.setdefault(req.cls, []).append(req.id)
    return out


def load_vectors(kind: str) -> dict:
    """A golden-vector file (``thinking-budget``, ``rejection``, ``counting``) as parsed JSON."""
    return json.loads((vectors_dir() / f"{kind}.json").read_text())
