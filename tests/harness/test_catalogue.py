"""The check catalogue equals its snapshot (``catalogue_snapshot.json``): every check's name, class, requirements,
needs, preconditions, observables and description, in run order, kernel-level and API-level apart. The snapshot
was written from the catalogue before checks declared themselves (``harness.checks.catalogue``), so that moving
the declarations changed no check; a deliberate change of the catalogue rewrites it:
``python -m tests.harness.test_catalogue``."""

from __future__ import annotations

import json
from pathlib import Path

from harness import checks

SNAPSHOT = Path(__file__).with_name("catalogue_snapshot.json")


def _entry(check) -> dict:
    entry = {
        "name": check.name,
        "cls": check.cls,
        "requirements": list(check.requirements),
        "needs": list(check.needs),
        "preconditions": list(check.preconditions),
        "observes": [[rid, list(observables)] for rid, observables in check.observes],
        "description": check.description,
    }
    if hasattr(check.run, "family"):  # a scenario check: the cases it draws
        entry["family"] = repr(check.run.family)
    return entry


def catalogue() -> dict:
    return {
        "kernel": [_entry(c) for c in checks.kernel_checks()],
        "api": [_entry(c) for c in checks.api_checks()],
    }


def test_catalogue_equals_its_snapshot():
    assert catalogue() == json.loads(SNAPSHOT.read_text())


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(catalogue(), indent=1) + "\n")
