"""Helpers for the tests of the CI recipe (scripts/ci/): run a script as a CI system would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts" / "ci"


def run_script(name: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    """Run ``scripts/ci/<name>`` with bash; stdout and stderr captured as text."""
    return subprocess.run(
        ["bash", str(SCRIPTS / name), *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def ci_env(report_dir: Path, **extra: str) -> dict:
    """The environment a CI job gives the scripts: this interpreter, this checkout, judged on the CPU."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(
        PYTHON=sys.executable,
        PYTHONPATH=str(ROOT),
        REPORT_DIR=str(report_dir),
        DEVICE="cpu",
        HF_HUB_OFFLINE="1",
    )
    env.update(extra)
    return env


def state(report_dir: Path, name: str) -> str:
    """What a step kept in ``$REPORT_DIR/ci/`` (``conformance.status``, ``gate.line``, ...)."""
    return (report_dir / "ci" / name).read_text().strip()


@pytest.fixture
def script():
    return run_script
