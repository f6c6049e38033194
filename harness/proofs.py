"""Proofs of published causes (``specconform prove EXPECTATIONS --engine ENGINE``).

An expectation entry that publishes a failure of a third-party engine names its cause: a line of the
engine's own code. Its ``proof`` backs that cause::

    proof:
      patch: proofs/vllm-0.33-mrv2/start-restarts-count.diff        # a unified diff of the peer's package
      reproduction: proofs/vllm-0.33-mrv2/start-restarts-count.json # what ``specconform replay`` reads

Both paths are relative to the repository root: the nearest folder above the expectations file that holds a
``proofs`` folder (``<root>/harness/products/<product>/expectations-<version>.yaml``), else the folder above the
file's folder (``<root>/expectations/<engine>.yaml``). The diff's paths name files of the installed package from its
top-level package on (``a/vllm/v1/sample/thinking_budget_state.py``).

The entry is PROVEN when the reproduction, replayed in a fresh interpreter, fails unpatched with the
entry's fingerprint (or, without one, on its requirement) and passes whole with the patch applied. An
entry whose status is ERROR (the engine raised or died) is PROVEN when the unpatched replay ends with the
engine raising and the patched one passes whole.
A cause inside a server (an API reproduction) is patched in the server's processes instead: the proof
names the script that starts the server (``server:``) and ``specconform.harness.proof_servers`` runs it unpatched
and patched around the two replays.
The patch never touches site-packages: the child copies each file the diff names into a temporary
folder, applies the hunks there (strictly: every context and removed line must match at the line the
hunk states; no offset, no fuzz) and puts a meta-path finder first on ``sys.meta_path`` that loads the
patched module's name from the patched file. Its ``__file__`` is the patched file, so Triton kernels
defined there are compiled (or interpreted) from the patched source.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RESULT_PREFIX = "specconform-proof-result: "  # the child's last line of stdout that carries its verdicts
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class ProofUsageError(ValueError):
    """A proof that cannot be run: a missing file, a malformed diff or one that does not apply."""


@dataclass
class Hunk:
    old_start: int
    new_start: int
    lines: list[tuple[str, str]]  # (" ", "-" or "+", the line without its newline)


@dataclass
class FilePatch:
    path: str  # from the top-level package on, e.g. vllm/v1/sample/thinking_budget_state.py
    hunks: list[Hunk]


def _strip(name: str) -> str:
    name = name.split("\t")[0].strip()
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_diff(text: str, where: str = "the diff") -> list[FilePatch]:
    """The files and hunks of a unified diff; ``ProofUsageError`` names what is malformed."""
    lines = text.splitlines()
    files: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            raise ProofUsageError(f"{where}: line {i + 1}: '---' without a '+++' line after it")
        old, new = _strip(lines[i][4:]), _strip(lines[i + 1][4:])
        if old == "/dev/null" or new == "/dev/null" or old != new:
            raise ProofUsageError(f"{where}: line {i + 1}: a proof patches files in place ({old!r} -> {new!r})")
        patch = FilePatch(new, [])
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            match = _HUNK.match(lines[i])
            if not match:
                raise ProofUsageError(f"{where}: line {i + 1}: malformed hunk header {lines[i]!r}")
            old_len = 1 if match.group(2) is None else int(match.group(2))
            new_len = 1 if match.group(4) is None else int(match.group(4))
            hunk = Hunk(int(match.group(1)), int(match.group(3)), [])
            i += 1
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_len or seen_new < new_len):
                line = lines[i]
                if line.startswith("\\"):  # "\ No newline at end of file"
                    i += 1
                    continue
                tag, body = (line[:1] or " "), line[1:]
                if tag not in " -+":
                    break
                hunk.lines.append((tag, body))
                seen_old += tag != "+"
                seen_new += tag != "-"
                i += 1
            if (seen_old, seen_new) != (old_len, new_len):
                raise ProofUsageError(
                    f"{where}: hunk at {patch.path} line {hunk.old_start} holds {seen_old} old and {seen_new} new "
                    f"lines; its header says {old_len} and {new_len}"
                )
            patch.hunks.append(hunk)
        if not patch.hunks:
            raise ProofUsageError(f"{where}: {patch.path} has no hunk")
        files.append(patch)
    if not files:
        raise ProofUsageError(f"{where}: no file in the diff (expected '--- a/...' and '+++ b/...' lines)")
    return files


def apply_hunks(original: str, patch: FilePatch, where: str = "the diff") -> str:
    """``original`` with ``patch``'s hunks applied strictly (each at the line its header states)."""
    lines = original.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0  # the next original line not yet copied (0-based)
    for hunk in patch.hunks:
        old = [body for tag, body in hunk.lines if tag != "+"]
        start = hunk.old_start - 1 if old else hunk.old_start  # an insertion-only hunk names the line before it
        if start < cursor:
            raise ProofUsageError(f"{where}: hunks of {patch.path} overlap or are out of order")
        found = [line.rstrip("\r\n") for line in lines[start : start + len(old)]]
        if found != old:
            bad = next((k for k, (a, b) in enumerate(zip(found, old)) if a != b), min(len(found), len(old)))
            got = found[bad] if bad < len(found) else "<end of file>"
            raise ProofUsageError(
                f"{where} does not apply to {patch.path}: line {start + bad + 1} is {got!r}, "
                f"the hunk expects {old[bad] if bad < len(old) else '<end of hunk>'!r}"
            )
        out.extend(lines[cursor:start])
        ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
        out.extend(body + ending for tag, body in hunk.lines if tag != "-")
        cursor = start + len(old)
    out.extend(lines[cursor:])
    return "".join(out)


def installed_file(path: str) -> Path:
    """The installed file a diff path names, found from its top-level package's import spec."""
    top = path.split("/")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise ProofUsageError(f"the diff patches {path}, but no package {top!r} is importable here")
    file = Path(list(spec.submodule_search_locations)[0]).parent / path
    if not file.is_file():
        raise ProofUsageError(f"the diff patches {path}, which {top!r} does not hold ({file})")
    return file


def module_name(path: str) -> str:
    """``vllm/v1/sample/x.py`` -> ``vllm.v1.sample.x``; ``pkg/__init__.py`` -> ``pkg``."""
    if not path.endswith(".py"):
        raise ProofUsageError(f"the diff patches {path}: only Python modules can be loaded patched")
    parts = path[:-3].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def patch_into(diff: Path, folder: Path) -> dict[str, tuple[Path, Path]]:
    """Apply ``diff`` to copies of the installed files under ``folder``:
    ``{module name: (patched file, installed file)}``."""
    try:
        text = diff.read_text()
    except OSError as exc:
        raise ProofUsageError(f"cannot read the patch {diff}: {exc.strerror}") from None
    out = {}
    for patch in parse_diff(text, str(diff)):
        source = installed_file(patch.path)
        target = folder / patch.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(apply_hunks(source.read_text(), patch, str(diff)))
        out[module_name(patch.path)] = (target, source)
    return out


class PatchedFinder(importlib.abc.MetaPathFinder):
    """Loads each named module from its patched file (a package keeps its installed folder for its
    submodules)."""

    def __init__(self, modules: dict[str, tuple[Path, Path]]):
        self.modules = modules

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.modules:
            return None
        patched, installed = self.modules[fullname]
        locations = [str(installed.parent)] if installed.name == "__init__.py" else None
        return importlib.util.spec_from_file_location(fullname, patched, submodule_search_locations=locations)


def install(modules: dict[str, tuple[Path, Path]]) -> PatchedFinder:
    """Put a ``PatchedFinder`` first on ``sys.meta_path``; the modules must not be imported yet."""
    loaded = sorted(name for name in modules if name in sys.modules)
    if loaded:
        raise ProofUsageError(f"{loaded} already imported: a patch must be installed before its module loads")
    finder = PatchedFinder(modules)
    sys.meta_path.insert(0, finder)
    return finder


@dataclass
class ProofEntry:
    """One expectation entry with its proof, paths resolved."""

    index: int
    check: str
    requirement: str
    fingerprints: tuple[str, ...]
    patch: Path
    reproduction: Path
    server: Path | None = None  # the script that starts the server the reproduction talks to (patched there)
    status: str = "FAIL"  # the entry's: FAIL (a requirement failed) or ERROR (the engine raised)

    @property
    def label(self) -> str:
        return self.check + (f" {self.requirement}" if self.requirement else "")


def load_proofs(expectations: str | Path, selector: str = "") -> tuple[list[ProofEntry], list[str]]:
    """The entries of ``expectations`` with a proof (those ``selector``, ``CHECK[:REQUIREMENT]``, names)
    and the labels of the selected FAIL entries without one."""
    import yaml

    # imported here: a proof's server loads this module by its file alone (``proof_servers``), for its patching
    from .expectations import load_expectations, validate_proof

    validated = load_expectations(expectations)  # raises ValueError naming a bad entry or proof
    raw = (yaml.safe_load(Path(expectations).read_text()) or {}).get("expectations", [])
    check, _, requirement = selector.partition(":")
    proven, unproven = [], []
    for i, (entry, expectation) in enumerate(zip(raw, validated)):
        if check and (expectation.check != check or (requirement and expectation.requirement != requirement)):
            continue
        if "proof" not in entry:
            if expectation.status == "FAIL":
                unproven.append(expectation.check + (f" {expectation.requirement}" if expectation.requirement else ""))
            continue
        paths = validate_proof(entry["proof"], expectations, f"{expectations}: expectation {i}")
        proven.append(
            ProofEntry(
                i, expectation.check, expectation.requirement, expectation.fingerprints, *paths, expectation.status
            )
        )
    if selector and not proven and not unproven:
        raise ProofUsageError(f"{expectations}: no entry matches --entry {selector!r}")
    return proven, unproven


def replay_in_child(
    engine: str, reproduction: Path, patch: Path | None = None, timeout: float = 1800, api_options: dict | None = None
) -> list[dict]:
    """The reproduction's verdicts (``[{name, fingerprint, evidence}]``) replayed in a fresh interpreter,
    with ``patch`` applied there when given (``api_options``: ``--engine openai``'s options);
    ``RuntimeError`` tells why a child gave none."""
    command = [
        sys.executable,
        "-m",
        "specconform.harness.proofs",
        "--engine",
        engine,
        "--reproduction",
        str(reproduction),
    ]
    if patch is not None:
        command += ["--patch", str(patch)]
    if api_options:
        command += ["--api-options", json.dumps(api_options)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=dict(os.environ))
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the replay ran past {timeout:.0f} s") from None
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            payload = json.loads(line[len(RESULT_PREFIX) :])
            if "usage_error" in payload:
                raise ProofUsageError(payload["usage_error"])
            if "error" in payload:
                raise RuntimeError(payload["error"])
            return payload["results"]
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    raise RuntimeError(f"the replay exited {done.returncode} without a verdict: {tail}")


def judge(entry: ProofEntry, unpatched: list[dict] | str, patched: list[dict]) -> tuple[bool, str]:
    """Whether the two replays prove the entry's cause, and why (not); ``unpatched`` is the error an unpatched
    replay ended with instead of verdicts (which only an ERROR entry expects)."""
    if entry.status == "ERROR" or isinstance(unpatched, str):
        if not isinstance(unpatched, str):
            return False, "unpatched the reproduction does not end in an error (the entry's status is ERROR)"
        if entry.status != "ERROR" or not unpatched.startswith("the engine raised"):
            return False, unpatched
        left = [f"{r['name']}: {r['fingerprint']} ({r['evidence']})" for r in patched if r["fingerprint"]]
        if left:
            return False, f"patched it no longer errs but fails: {'; '.join(left)}"
        return True, f"unpatched {unpatched}, patched PASS"
    failures = [r["fingerprint"] for r in unpatched if r["fingerprint"]]
    if entry.fingerprints:
        seen = [(r["fingerprint"], r.get("vector_fingerprint")) for r in unpatched if r["fingerprint"]]
        shown = [f for pair in seen for f in pair if f in entry.fingerprints]
    else:
        shown = [f for f in failures if not entry.requirement or f.startswith(entry.requirement + "/")]
    if not shown:
        wanted = " or ".join(entry.fingerprints) or (entry.requirement or "a failure")
        got = ", ".join(failures) or "it passes"
        return False, f"unpatched the reproduction does not fail with {wanted} ({got})"
    left = [f"{r['name']}: {r['fingerprint']} ({r['evidence']})" for r in patched if r["fingerprint"]]
    if left:
        return False, f"patched it still fails: {'; '.join(left)}"
    return True, f"unpatched {shown[0]}, patched PASS"


def prove(entry: ProofEntry, engine: str, timeout: float = 1800, api_options: dict | None = None) -> tuple[bool, str]:
    """Prove one entry: the patch is first checked to apply here (a usage error if not), then the
    reproduction is replayed twice, unpatched and patched, each in its own interpreter; with a
    ``server`` the patch goes to a server started for each replay (``specconform.harness.proof_servers``)."""
    with tempfile.TemporaryDirectory() as folder:
        patch_into(entry.patch, Path(folder))

    def unpatched_replay() -> list[dict] | str:
        try:
            return replay_in_child(engine, entry.reproduction, None, timeout, api_options)
        except RuntimeError as exc:  # the engine raised (what an ERROR entry expects), or no verdict came
            return str(exc)

    try:
        if entry.server is None:
            unpatched = unpatched_replay()
            patched = replay_in_child(engine, entry.reproduction, entry.patch, timeout, api_options)
        else:
            from .proof_servers import served

            options = api_options or {}
            urls = list(
                dict.fromkeys(filter(None, (options.get(k) for k in ("base_url", "spec_base_url", "plain_base_url"))))
            )
            with served(entry.server, urls):
                unpatched = unpatched_replay()
            with served(entry.server, urls, entry.patch):
                patched = replay_in_child(engine, entry.reproduction, None, timeout, api_options)
    except RuntimeError as exc:
        return False, str(exc)
    return judge(entry, unpatched, patched)


def _add_vector_fingerprints(document: dict, results: list[dict]) -> None:
    """Give each failed budget scenario the fingerprint the golden-vector check reports for it
    (``checks.vectors``: the scenario's first requirement, mode ``forced-rows-differ`` or
    ``valid-update-rejected``), beside the one ``replay`` blames by the diverging row."""
    requirements = {s["name"]: s["requirements"] for s in document.get("scenarios", ())}
    for result in results:
        if result["fingerprint"] and result["name"] in requirements:
            mode = result["fingerprint"].partition("/")[2]
            mode = mode if mode == "valid-update-rejected" else "forced-rows-differ"
            result["vector_fingerprint"] = f"{requirements[result['name']][0]}/{mode}"


def _child(argv: list[str]) -> int:
    """Replay one reproduction (patched when ``--patch`` is given) and print the verdicts as JSON."""
    parser = argparse.ArgumentParser(prog="python -m specconform.harness.proofs")
    parser.add_argument("--engine", required=True)
    parser.add_argument("--reproduction", required=True)
    parser.add_argument("--patch")
    parser.add_argument("--api-options", type=json.loads, default=None)
    args = parser.parse_args(argv)
    from . import reproductions
    from .adapters import make_engine

    with tempfile.TemporaryDirectory() as folder:
        try:
            document = reproductions.load(args.reproduction)
            if args.patch:
                install(patch_into(Path(args.patch), Path(folder)))
            engine = make_engine(args.engine, args.api_options)
        except ValueError as exc:  # ProofUsageError, a malformed reproduction, a misnamed engine
            print(RESULT_PREFIX + json.dumps({"usage_error": str(exc)}))
            return 2
        try:
            results = [
                {"name": r.name, "fingerprint": r.fingerprint, "evidence": r.evidence}
                for r in reproductions.replay(engine, document)
            ]
            _add_vector_fingerprints(document, results)
        except Exception as exc:  # noqa: BLE001 - the engine failed: the proof is not made, and why is told
            print(RESULT_PREFIX + json.dumps({"error": f"the engine raised {type(exc).__name__}: {exc}"}))
            return 1
    print(RESULT_PREFIX + json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1:]))
