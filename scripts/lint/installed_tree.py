"""The installed shape of the package, built from a checkout for the static tools (mypy, import-linter):
``python scripts/lint/installed_tree.py DIR`` makes ``DIR/specconform/``.

A checkout keeps specconform's subpackages at the repository's top level and ``specconform/__init__.py`` finds them
at run time, and the adapters package finds an engine's adapter in its product's folder
(``harness/products/<product>/<module>.py``, imported as ``specconform.harness.adapters.<module>``); static tools
follow neither. The tree holds links: ``specconform/`` to the subpackages, ``specconform/harness/adapters/`` to the
adapters' own files and to each product's adapter under its import name, and ``specconform/harness/products/`` to the
registry's modules only (a product folder's name, ``vllm-mrv2``, is no Python name: its adapter is read as the
adapters package's module, never as a module of its own).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "impl", "embedded", "specs")


def _links(folder: Path, entries) -> None:
    folder.mkdir()
    for entry in entries:
        (folder / entry.name).symlink_to(entry)


def build(tree: Path) -> Path:
    """``tree/specconform``, the package as a wheel installs it, made of links into the checkout; returns it."""
    package = tree / "specconform"
    package.mkdir()
    shutil.copy(ROOT / "specconform" / "__init__.py", package)
    for name in PACKAGES:
        if name != "harness":
            (package / name).symlink_to(ROOT / name)
    harness = ROOT / "harness"
    package_harness = package / "harness"
    _links(package_harness, [e for e in harness.iterdir() if e.name not in ("adapters", "products")])
    products = harness / "products"
    product_adapters = sorted(products.glob("*/*.py"))
    _links(package_harness / "adapters", [*(harness / "adapters").iterdir(), *product_adapters])
    _links(package_harness / "products", [e for e in products.iterdir() if e.is_file()])
    return package


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR")
    build(Path(sys.argv[1]))
