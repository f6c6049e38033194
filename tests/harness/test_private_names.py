"""No module reaches into another module's ``_private`` names (issue 39): a helper that two modules share has a
public name in its home, so that renaming a private helper can never break a module that is not its own.

The test reads the source (no import): ``from M import _x`` where ``M`` is another module of the project, and
``m._x`` where ``m`` names a module of the project that the file imports. Private names of other distributions
(``argparse._AppendAction``) are their own business, and a module may import its own private names (a spawned
process's entry point)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the folders of the checkout that the installed ``specconform`` maps (pyproject.toml's package-dir), and the
# test and script folders, which import under their own names
PACKAGES = {"harness": "specconform.harness", "impl": "specconform.impl", "embedded": "specconform.embedded"}
PACKAGES["specs"] = "specconform.specs"
FOLDERS = (*PACKAGES, "tests", "scripts")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in PACKAGES:
        parts = [*PACKAGES[parts[0]].split("."), *parts[1:]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def imported_module(path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module ``node`` imports from, in ``path``."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join([*package, *([node.module] if node.module else [])])


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def is_ours(module: str) -> bool:
    return module.split(".")[0] in ("specconform", "tests", "scripts")


def private_reaches(path: Path, source: str, modules: set[str]) -> list[str]:
    """``file:line: what`` for each use in ``source`` (the text of ``path``) of another project module's private
    name; ``modules`` are the project's module names."""
    tree = ast.parse(source, str(path))
    own = module_name(path)
    aliases: dict[str, str] = {}  # a local name bound to one of the project's modules -> that module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_ours(alias.name):
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom):
            origin = imported_module(path, node)
            if not is_ours(origin):
                continue
            for alias in node.names:
                if f"{origin}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{origin}.{alias.name}"
                elif is_private(alias.name) and origin != own:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {origin} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id)
            if module is not None and module != own:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr} ({module})")
    return found


def test_no_module_uses_another_modules_private_name():
    paths = sources()
    modules = {module_name(path) for path in paths}
    found = [line for path in paths for line in private_reaches(path, path.read_text(), modules)]
    assert not found, "give the shared helper a public name in its home:\n" + "\n".join(found)


def test_the_scan_sees_a_private_import_and_a_private_attribute():
    """The scan itself: a module that imports a private name, or reads one off a module, is named; a private name
    of another distribution, or the module's own, is not."""
    path = ROOT / "harness" / "console.py"
    modules = {"specconform.harness.reports.text", "specconform.harness.reports", "specconform.harness.console"}
    found = private_reaches(path, SAMPLE, modules)
    assert [line.split(": ", 1)[1] for line in found] == [
        "from specconform.harness.reports.text import _count",
        "text._first_line (specconform.harness.reports.text)",
    ]


SAMPLE = """
import argparse
from specconform.harness.reports import text
from specconform.harness.reports.text import _count
from specconform.harness.console import _own
from .reports import text as shown
argparse._AppendAction
text._first_line("x")
shown.first_line("x")
"""
