"""mypy against a baseline that may only shrink: ``python scripts/lint/mypy_baseline.py [--update]``.

mypy runs on the installed shape of the package (``installed_tree.py``: a temporary ``specconform/`` holding links to
``harness/``, ``impl/``, ``embedded/`` and ``specs/``, and the products' adapters under their import names: a
checkout's ``specconform/__init__.py`` and the adapters package find them only at run time, which mypy cannot
follow). Each error is keyed by its file, message and code, without its line, so that an edit above an
error does not move it out of the baseline. The run fails when

- an error is not in ``mypy-baseline.txt`` (a new one: fix it),
- an error of the baseline no longer occurs (the baseline only shrinks: ``--update`` writes it smaller), or
- any error is in a module held at zero (``STRICT``), baseline or not.

mypy keeps its cache in the checkout's ``.mypy_cache/``, so that a second run (tests/ci/test_mypy_baseline.py, after
CI's) checks only what changed.

``--update`` rewrites the baseline from this run, and refuses to let it grow (it writes the first one whole).
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import installed_tree  # noqa: E402  (beside this script, which runs as a file)

ROOT = installed_tree.ROOT
BASELINE = ROOT / "mypy-baseline.txt"
CACHE = ROOT / ".mypy_cache"
# the modules held at zero errors (issue 39): the core types, the run's configuration, the statuses, the schemas,
# the session, and every module of the checks (a folder: each path under it)
STRICT = (
    *(f"specconform/harness/{name}.py" for name in ("core", "config", "statuses", "schemas", "session")),
    "specconform/harness/checks/",
)
ERROR = re.compile(r"^(?P<path>[^:]+\.py):\d+(?::\d+)?: error: (?P<message>.*)$")


def run_mypy() -> list[str]:
    """mypy's error lines on the installed shape, each as ``path: message  [code]`` (no line number)."""
    with tempfile.TemporaryDirectory() as tree:
        installed_tree.build(Path(tree))
        done = subprocess.run(
            [
                *(sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")),
                *("--cache-dir", str(CACHE), "-p", "specconform"),
            ],
            cwd=tree,
            capture_output=True,
            text=True,
        )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (a crash, a bad option)
        raise SystemExit(f"mypy failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return sorted(f"{m['path']}: {m['message']}" for m in map(ERROR.match, done.stdout.splitlines()) if m)


def strict_errors(found: list[str]) -> list[str]:
    """The errors of ``found`` in a module held at zero (``STRICT``)."""
    return [line for line in found if line.startswith(STRICT)]


def read_baseline() -> list[str]:
    return [line for line in BASELINE.read_text().splitlines() if line] if BASELINE.exists() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="write the baseline from this run (it may only shrink)")
    args = parser.parse_args(argv)
    found, baseline = run_mypy(), read_baseline()
    strict = strict_errors(found)
    new = collections.Counter(found) - collections.Counter(baseline)
    gone = collections.Counter(baseline) - collections.Counter(found)
    failed = False
    if strict:
        print("mypy: these modules are held at zero errors:", *strict, sep="\n  ", file=sys.stderr)
        failed = True
    if new:
        print("mypy: errors not in mypy-baseline.txt (fix them):", *sorted(new.elements()), sep="\n  ", file=sys.stderr)
        failed = True
    if args.update:
        if strict or (new and BASELINE.exists()):
            print("mypy: --update writes a smaller baseline only; fix the errors above first", file=sys.stderr)
            return 1
        BASELINE.write_text("".join(f"{line}\n" for line in found))
        print(f"mypy: baseline {len(baseline)} -> {len(found)} errors")
        return 0
    if gone:
        print(
            "mypy: fixed, still in the baseline (run scripts/lint/mypy_baseline.py --update):",
            *sorted(gone.elements()),
            sep="\n  ",
            file=sys.stderr,
        )
        failed = True
    print(f"mypy: {len(found)} errors, baseline {len(baseline)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
