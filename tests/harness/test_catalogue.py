"""The check catalogue equals its snapshot (``catalogue_snapshot.json``): every check's name, class, requirements,
needs, preconditions, observables and description, in run order, kernel-level and API-level apart. The snapshot
was written from the catalogue before checks declared themselves (``specconform.harness.checks.catalogue``), so that
moving the declarations changed no check; a deliberate change of the catalogue rewrites it:
``python -m tests.harness.test_catalogue``. Declarations are validated when they are made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specconform.harness import checks
from specconform.harness.checks import catalogue

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


def described() -> dict:
    return {
        "kernel": [_entry(c) for c in checks.kernel_checks()],
        "api": [_entry(c) for c in checks.api_checks()],
    }


def test_catalogue_equals_its_snapshot():
    assert described() == json.loads(SNAPSHOT.read_text())


def test_a_declaration_is_validated_against_the_registry(monkeypatch):
    monkeypatch.setattr(catalogue, "_DECLARED", {})
    declaration = dict(cls="tb.api", needs=("budget",), description="d")
    with pytest.raises(ValueError, match="check budget/x names TB-APl-1, which is not a requirement .* TB-API-1"):
        catalogue.check("budget/x", covers=("TB-API-2", "TB-APl-1"), **declaration)(lambda engine, ctx, requirements: 0)
    with pytest.raises(ValueError, match="check budget/x's observes names TB-FORCE-3, .* now TB-FORCE-1, TB-FORCE-2"):
        catalogue.check("budget/x", covers=("TB-API-1",), observes={"TB-FORCE-3": ("x",)}, **declaration)(print)
    with pytest.raises(ValueError, match="check budget/x declares an unknown class 'tb.nope'"):
        catalogue.check("budget/x", covers=("TB-API-1",), **{**declaration, "cls": "tb.nope"})(lambda *a, **k: 0)


def test_a_body_gets_the_requirements_its_declaration_covers_and_the_run_order_names_every_check(monkeypatch):
    monkeypatch.setattr(catalogue, "_DECLARED", {})
    seen = []

    @catalogue.check("budget/x", cls="tb.api", covers=("TB-API-2", "TB-API-1"), needs=("budget",), description="d")
    def body(engine, ctx, requirements):
        seen.append(requirements)

    (declared,) = catalogue.declared(("budget/x",))
    declared.run("engine", "ctx")
    assert seen == [("TB-API-2", "TB-API-1")] and declared.requirements == ("TB-API-2", "TB-API-1")
    with pytest.raises(ValueError, match="check budget/x is declared twice"):
        catalogue.check("budget/x", cls="tb.api", covers=("TB-API-1",), needs=(), description="d")(body)
    catalogue.verify_order(("budget/x",))
    with pytest.raises(ValueError, match=r"not ordered \['budget/x'\], not declared \['budget/y'\]"):
        catalogue.verify_order(("budget/y",))


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(described(), indent=1) + "\n")
