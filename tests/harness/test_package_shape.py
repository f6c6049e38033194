"""The package stays a house a newcomer can walk through: no module of the installed packages is over 600 lines and
no function over 120 (issue #30's measure; a new concern goes into a module of its own), and the only top-level
import name is ``specconform`` (docs/install.md, "The installed import names")."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("specconform", "harness", "impl", "embedded", "specs")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120


def _modules() -> list[str]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [path for path in listed.stdout.split() if path.split("/")[0] in PACKAGES]


def test_no_module_is_over_600_lines():
    lengths = {path: len((ROOT / path).read_text().splitlines()) for path in _modules()}
    assert len(lengths) > 100  # the package's modules were found
    assert {path: n for path, n in lengths.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_is_over_120_lines():
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path}:{node.lineno} {node.name}"] = lines
    assert long == {}


def test_the_packages_import_each_other_under_the_one_top_level_name():
    """No module imports ``harness``, ``impl``, ``embedded`` or ``specs`` as a top-level name: in a user's
    environment those generic names may be another distribution's."""
    generic = {"harness", "impl", "embedded", "specs"}
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse((ROOT / path).read_text())):
            if isinstance(node, ast.Import):
                found += [f"{path}:{node.lineno}" for alias in node.names if alias.name.split(".")[0] in generic]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] in generic:
                found.append(f"{path}:{node.lineno}")
    assert found == []


def test_a_folder_imported_by_its_own_name_from_the_checkout_says_its_package_name():
    """From a checkout's root the folders are on the path under their own names; importing one that way would load a
    second copy of the package beside ``specconform.*``, so it fails and names the one name it has."""
    for folder in ("harness", "impl", "embedded", "specs"):
        done = subprocess.run([sys.executable, "-c", f"import {folder}"], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 1
        assert f"ModuleNotFoundError: '{folder}' is the folder of 'specconform.{folder}'" in done.stderr
