"""Run pytest with a proof patch applied to the installed engine
(``python -m specconform.harness.patched_pytest --patch DIFF -- PYTEST_ARGS``).

An exported regression test (``specconform export --pytest``) fails on the engine as released; a fix must make it
pass. This runs it against the fix a proof publishes, in this interpreter, as ``specconform prove`` replays a
reproduction patched (``specconform.harness.proofs``): the diff is applied strictly to copies of the installed files
in a temporary folder and a meta-path finder loads the patched modules from there, before pytest imports the test
(and so the engine). site-packages is never touched. Without ``--patch`` it is plain pytest, for the unpatched run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .proofs import ProofUsageError, install, patch_into


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m specconform.harness.patched_pytest")
    parser.add_argument("--patch", help="a proof's unified diff of the installed engine (proofs/<engine>/*.diff)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="pytest's arguments, after --")
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    import pytest

    with tempfile.TemporaryDirectory() as folder:
        if args.patch:
            try:
                install(patch_into(Path(args.patch), Path(folder)))
            except ProofUsageError as exc:
                print(f"patched_pytest: {exc}", file=sys.stderr)
                return 2
        return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
