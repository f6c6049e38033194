"""Every registered requirement is exercised by a golden vector or a test marked with its id.

Requirements that only a non-canonical engine can exercise are listed in NOT_YET_COVERED; the test
fails when one of them gains coverage, so the list stays honest.
"""

import ast
from pathlib import Path

from specconform.harness import spec

NOT_YET_COVERED: set[str] = set()


def _ids_in_vectors():
    found = set()
    for kind in ("thinking-budget", "rejection", "counting"):
        for entries in spec.load_vectors(kind).values():
            if isinstance(entries, list):
                for entry in entries:
                    found.update(entry["requirements"])
    return found


def _ids_in_test_markers():
    found = set()
    for path in Path(__file__).resolve().parents[1].rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "req":
                found.update(a.value for a in node.args if isinstance(a, ast.Constant))
    return found


def test_every_requirement_is_exercised_or_listed_as_not_yet_covered():
    registry = set(spec.load_registry())
    permissions = set(spec.load_permissions())
    covered = _ids_in_vectors() | _ids_in_test_markers()
    assert sorted(covered - registry - permissions) == [], "tests name ids that the registry lacks"
    assert sorted(permissions - _ids_in_test_markers()) == [], "a permission without a test that it is honoured"
    assert sorted(registry - covered - NOT_YET_COVERED) == []
    assert sorted(NOT_YET_COVERED & covered) == [], "covered now: remove from NOT_YET_COVERED"
