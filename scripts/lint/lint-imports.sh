#!/usr/bin/env bash
# Check the import layers of pyproject.toml ([tool.importlinter]) with import-linter. A checkout keeps specconform's
# subpackages at the repository's top level and `specconform/__init__.py` finds them at run time, which static tools
# cannot follow, nor the adapters package finding each product's adapter in its folder; this builds the installed
# shape (scripts/lint/installed_tree.py: links to harness/, impl/, embedded/, specs/ and the products' adapters) in a
# temporary folder and checks that.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# the lint-imports beside $PYTHON (CI's venv), else the one on PATH (pre-commit's hook, in the project's venv)
if [ -n "${PYTHON:-}" ]; then
  LINT_IMPORTS="$(cd "$(dirname "$(command -v "$PYTHON")")" && pwd)/lint-imports"  # absolute: the check runs elsewhere
else
  LINT_IMPORTS="$(command -v lint-imports)"
fi
tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
"${PYTHON:-python3}" "$root/scripts/lint/installed_tree.py" "$tree"
# lint-imports puts the working folder first on the path: the checkout's own specconform/ would shadow the tree
cd "$tree"
PYTHONPATH="$tree" "$LINT_IMPORTS" --no-cache "$root/pyproject.toml" "$@"
