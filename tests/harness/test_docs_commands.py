"""Every shell block of the README and of ``docs/`` runs as written, where it can run offline on a CPU.

A block runs command by command in one bash (so that ``export`` and a server started with ``&`` carry to the next
command), from a folder that reads as the checkout's root (its folders linked, the published runs a command names
copied, since a command may write into them), and every command must exit 0. A command that cannot run here is listed in
``NOT_HERE`` with the reason; every other command runs, so a new block is tried from the day it is written. Words in
capitals that stand for a user's own value (``RUN_DIR``, ``FILE.json``, ``ENGINE``) are given a published run's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_readme_adapter import readme_adapter

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

NOT_HERE = {
    # installs
    "pip install torch --index-url https://download.pytorch.org/whl/cpu && pip install -e '.[all]'": "installs from "
    "the package indexes (.ci/run installs the same on a clean clone)",
    "python3 -m venv .venv && . .venv/bin/activate": "makes the virtual environment the next command installs into",
    "pip install -e '.[all]'": "installs into the user's environment",
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e '.[test,triton]' && .venv/bin/python -m pytest": (
        "is .ci/run itself, which runs this test"
    ),
    "git clone --depth 1 https://github.com/OWNER/specconform specconform": "needs the network",
    "TORCH_SPEC= ENGINE=my_engine.specconform:make DEVICE=cuda BASELINE_DIR=last-good-baseline "
    "bash specconform/scripts/ci/all.sh": "needs a GPU and the user's engine",
    # a GPU
    "specconform run --engine reference:cuda": "needs a GPU",
    "specconform run --engine reference:cuda --check rejection/distribution --check rejection/distribution-one-hot "
    "--thorough": "needs a GPU",
    "specconform hunt --engine reference:cuda --draws 1e9 --rows 1e6 --report-dir reports/hunt": "needs a GPU",
    # long
    "specconform run": "judges every check of three engines (the suite's own tests cover each family)",
    # synopses: brackets mark what a user may leave out, capitals what they fill in
    "specconform serve [--host 127.0.0.1] [--port 8000] [--speculative-tokens 3] [--device cpu] "
    "[--engine-replicas 1] [--engine-threads 1]": "is a synopsis",
    "specconform pin RUN_DIR... --expectations known.yaml --write": "is a synopsis",
    "specconform prove EXPECTATIONS.yaml --engine ENGINE [--entry CHECK[:REQUIREMENT]]": "is a synopsis",
}


def shell_blocks() -> list[tuple[str, list[str]]]:
    """``(where, commands)`` of every ``sh`` block: a command is a line with its continuations joined, its comment
    dropped."""
    blocks = []
    for page in PAGES:
        for number, block in enumerate(re.findall(r"^```(?:sh|bash)\n(.*?)^```", page.read_text(), re.S | re.M)):
            joined = re.sub(r"\\\n\s*", " ", block)
            commands = [" ".join(re.sub(r"\s+#\s.*$", "", line).split()) for line in joined.splitlines()]
            blocks.append((f"{page.relative_to(ROOT)}[{number}]", [c for c in commands if c]))
    return blocks


def published_run(product: str) -> Path:
    """The latest published run folder of ``product``."""
    return sorted(p for p in (ROOT / "reports" / "engines" / product).iterdir() if p.is_dir())[-1]


def filled(command: str) -> str:
    """``command`` with a published run's values for the words a user fills in."""
    run_dir = published_run("vllm-0.33-mrv2")
    reproduction = sorted((run_dir / "reproductions").glob("*.json"))[0]
    for word, value in {
        "RUN_DIR/reproductions/FILE.json": reproduction,
        "RUN_DIR": run_dir,
        "--engine ENGINE": "--engine reference",
    }.items():
        command = command.replace(word, str(value))
    return command


def test_every_command_not_run_here_is_still_in_the_docs():
    written = {command for _, commands in shell_blocks() for command in commands}
    assert not set(NOT_HERE) - written, "NOT_HERE lists commands no page holds any more"


@pytest.mark.parametrize(("where", "commands"), shell_blocks(), ids=[where for where, _ in shell_blocks()])
def test_a_shell_block_runs_as_written(where, commands, tmp_path):
    runnable = [filled(command) for command in commands if command not in NOT_HERE]
    if not runnable:
        pytest.skip(f"{where}: " + "; ".join(sorted({NOT_HERE[c] for c in commands})))
    for entry in ROOT.iterdir():  # the pages speak from a checkout's root: its folders, read only
        if entry.is_dir() and not entry.name.startswith(".") and entry.name != "reports":
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / "my_pkg.py").write_text(readme_adapter())  # the README's adapter, which its blocks judge
    for published in set(re.findall(r"(?<![\w/])reports/engines/[\w.-]+/\d{8}-\d{6}", " ".join(runnable))):
        shutil.copytree(ROOT / published, tmp_path / published)
    script = "set -e\n" + "".join(f"{command}\necho '>>> ok: {command[:40]}'\n" for command in runnable)
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, f"{where}: {result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    assert result.stdout.count(">>> ok: ") == len(runnable)
