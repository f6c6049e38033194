#!/usr/bin/env bash
# Check the import layers of pyproject.toml ([tool.importlinter]) with import-linter. A checkout keeps specconform's
# subpackages at the repository's top level and `specconform/__init__.py` finds them at run time, which static tools
# cannot follow; this builds the installed shape (specconform/ holding links to harness/, impl/, embedded/, specs/)
# in a temporary folder and checks that.
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
mkdir "$tree/specconform"
cp "$root/specconform/__init__.py" "$tree/specconform/"
for package in harness impl embedded specs; do
  ln -s "$root/$package" "$tree/specconform/$package"
done
# lint-imports puts the working folder first on the path: the checkout's own specconform/ would shadow the tree
cd "$tree"
PYTHONPATH="$tree" "$LINT_IMPORTS" --no-cache "$root/pyproject.toml" "$@"
