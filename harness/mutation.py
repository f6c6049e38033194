"""Mutation testing of the reference implementation and the oracle-backed engine, judged by the harness.

Each mutant is one small change to one source file: an operator (``+`` for ``-``, ``and`` for ``or``, a
dropped ``not``), a comparison (a boundary ``<`` for ``<=``, or its negation), a constant (``n`` for
``n + 1`` and ``n - 1``, ``True`` for ``False``) or a dropped statement (a call, a ``raise``, an
augmented assignment, a write into a tensor or attribute, a re-assignment of a bound name). The mutant is
judged by the conformance checks, not by the project's unit tests: its file is written into a private copy
of its top-level package, and ``python -m harness.mutation judge`` runs the checks against the engine in
its own process (``harness.isolation``: a hang is a TIMEOUT) until the first check that is not passed.
A mutant that some check fails (FAIL, ERROR or TIMEOUT) is KILLED; one that every check passes SURVIVED.

Why an AST mutator of our own: mutmut 3 instruments functions with trampolines and decides through its
own pytest run (no command of ours per mutant), and cosmic-ray's local runs mutate the working tree in
place and report only the test command's exit code; neither records which check and requirement killed a
mutant, which is what the score is about.

``python -m harness.mutation run`` writes ``reports/mutation/<date>/``: ``mutants.jsonl`` (per mutant:
file, line, operator, diff, status, the killing check and requirements, seconds) and ``summary.md``, with
each survivor's classification from ``expectations/mutation-equivalent.yaml``.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
KILLING = ("FAIL", "ERROR", "TIMEOUT")

BINARY_SWAPS = {
    ast.Add: ("+", "-"),
    ast.Sub: ("-", "+"),
    ast.Mult: ("*", "/"),
    ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "/"),
    ast.Mod: ("%", "*"),
    ast.LShift: ("<<", ">>"),
    ast.RShift: (">>", "<<"),
    ast.BitAnd: ("&", "|"),
    ast.BitOr: ("|", "&"),
    ast.BitXor: ("^", "|"),
    ast.Pow: ("**", "*"),
}
# comparison: (symbol, boundary replacement or None, negation)
COMPARE_SWAPS = {
    ast.Lt: ("<", "<=", ">="),
    ast.LtE: ("<=", "<", ">"),
    ast.Gt: (">", ">=", "<="),
    ast.GtE: (">=", ">", "<"),
    ast.Eq: ("==", None, "!="),
    ast.NotEq: ("!=", None, "=="),
    ast.In: ("in", None, "not in"),
    ast.NotIn: ("not in", None, "in"),
    ast.Is: ("is", None, "is not"),
    ast.IsNot: ("is not", None, "is"),
}
OPERATORS = ("binary", "boolean", "unary", "boundary", "negate-comparison", "constant", "drop-statement")


BUDGET = ("TB-", ("budget",))
REJECTION = ("RS-", ("rejection",))
ANY = ("", ())  # shared code: any requirement, every check


@dataclass(frozen=True)
class Target:
    """A file to mutate, the engine that judges it and, per function (name globs, first match), the
    requirement area its code implements (an id prefix) and the engine capabilities through which a check
    can reach it: only checks that need one of them can observe the mutant (``()``: every check).
    ``skip``: functions (and module-level names) left alone, for the reason ``why``."""

    path: str
    engine: str
    scopes: dict[str, tuple[str, tuple[str, ...]]]
    skip: tuple[str, ...] = ()
    why: str = ""

    def scope(self, function: str) -> tuple[str, tuple[str, ...]]:
        return next((s for pattern, s in self.scopes.items() if fnmatch.fnmatchcase(function, pattern)), ANY)


TRITON_ONLY = "reached only with backend='triton' (GPU, or the Triton interpreter); the CPU path never runs them"
TARGETS = (
    Target(
        "impl/thinking_budget.py",
        "reference",
        {"<module>": ANY, "*": BUDGET},
        ("ThinkingBudgetState._step_triton",),
        TRITON_ONLY,
    ),
    Target("impl/markers.py", "reference", {"<module>": ANY, "*": BUDGET}),
    Target(
        "impl/rejection.py",
        "reference",
        {"<module>": ANY, "*": REJECTION},
        (
            "PROGRAMS_PER_SM",
            "WIDE_WARPS",
            "NARROW_WARPS",
            "_target_programs",
            "_multi_processors",
            "_launch_shape",
            "_cdiv",
            "_TritonPlan",
            "_PLANS",
            "MAX_PLANS",
            "_plan",
            "_rejection_triton",
            "triton_next_pow2",
            "_block_size",
        ),
        TRITON_ONLY,
    ),
    Target(
        "impl/counting.py",
        "reference",
        {"AcceptanceStats*": ("AC-", ("metrics",)), "<module>": ANY, "*": ("AC-", ("counting", "metrics"))},
    ),
    Target(
        "impl/validation.py",
        "reference",
        {"*": ANY},
        ("describe", "_same_device"),
        "describe only formats error text (no requirement constrains its wording); _same_device compares "
        "CUDA device indices and is reached only with CUDA tensors",
    ),
    Target(
        "harness/adapters/oracle.py",
        "oracle",
        {
            "OracleEngine.budget_state": BUDGET,
            "OracleBudget*": BUDGET,
            "OracleEngine.rejection_sample": REJECTION,
            "OracleEngine.count_emitted": ("AC-", ("counting",)),
            "OracleEngine.acceptance_metrics": ("AC-", ("metrics",)),
            "*": ANY,
        },
    ),
)

# The checks every mutant is judged by: every kernel-level check except the statistical ones (seeded
# draws are judged exactly by rejection/reference-draws; the distribution checks take most of a run).
FAST_EXCLUDE = ("api.*", "rejection/distribution*")


@dataclass
class Mutant:
    """One change: ``replacement`` replaces ``source[start:end]`` (byte offsets into the UTF-8 source)."""

    path: str
    function: str  # qualified name of the enclosing function or class ("<module>" at top level)
    line: int
    operator: str  # one of OPERATORS
    original: str
    replacement: str
    start: int
    end: int
    key: str = ""  # stable across edits elsewhere in the file: path, function, operator, change, occurrence

    def apply(self, source: str) -> str:
        data = source.encode()
        return (data[: self.start] + self.replacement.encode() + data[self.end :]).decode()

    def diff(self, source: str) -> str:
        return "".join(
            difflib.unified_diff(
                source.splitlines(True),
                self.apply(source).splitlines(True),
                f"a/{self.path}",
                f"b/{self.path}",
                n=0,
            )
        )


class _Mutator(ast.NodeVisitor):
    """Collects the mutants of one module (see the module docstring for the operators)."""

    def __init__(self, source: str, path: str, skip: tuple[str, ...]):
        self.data = source.encode()
        self.path = path
        self.skip = skip
        self.line_starts = [0]
        for line in self.data.splitlines(True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.scope: list[str] = []
        self.bound: list[set[str]] = [set()]
        self.mutants: list[Mutant] = []

    # -- positions ------------------------------------------------------------------------------

    def _start(self, node) -> int:
        return self.line_starts[node.lineno - 1] + node.col_offset

    def _end(self, node) -> int:
        return self.line_starts[node.end_lineno - 1] + node.end_col_offset

    def _text(self, start: int, end: int) -> str:
        return self.data[start:end].decode()

    def _add(self, node, operator: str, start: int, end: int, replacement: str) -> None:
        function = ".".join(self.scope) or "<module>"
        original = self._text(start, end)
        self.mutants.append(Mutant(self.path, function, node.lineno, operator, original, replacement, start, end))

    def _token_between(self, left, right, symbol: str) -> tuple[int, int] | None:
        """The span of operator ``symbol`` between the end of ``left`` and the start of ``right``."""
        start, end = self._end(left), self._start(right)
        gap = self._text(start, end)
        core = gap.strip(" \t\r\n()\\")
        if " ".join(core.split()) != symbol:
            return None
        offset = len(gap[: gap.index(core)].encode())
        return start + offset, start + offset + len(core.encode())

    # -- scopes ---------------------------------------------------------------------------------

    def _skipped(self, name: str) -> bool:
        qualified = ".".join([*self.scope, name])
        return any(fnmatch.fnmatchcase(qualified, p) or fnmatch.fnmatchcase(name, p) for p in self.skip)

    def _visit_scope(self, node, name: str, bound: set[str]) -> None:
        if self._skipped(name):
            return
        self.scope.append(name)
        self.bound.append(set(bound))
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        for statement in body:
            self.visit(statement)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in [*node.args.defaults, *node.args.kw_defaults]:
                if default is not None:
                    self.visit(default)
        self.bound.pop()
        self.scope.pop()

    def visit_Module(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        for statement in body:
            self.visit(statement)

    def visit_FunctionDef(self, node):
        args = node.args
        names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        self._visit_scope(node, node.name, names)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self._visit_scope(node, node.name, set())

    # -- things left alone ----------------------------------------------------------------------

    def visit_Import(self, node):
        pass

    visit_ImportFrom = visit_Import

    def visit_JoinedStr(self, node):  # error-message text
        pass

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)

    def visit_If(self, node):
        self.visit(node.test)
        if "triton" in self._text(self._start(node.test), self._end(node.test)).lower():
            for statement in node.orelse:
                self.visit(statement)  # the Triton branch is not the CPU path
            return
        for statement in [*node.body, *node.orelse]:
            self.visit(statement)

    # -- statements -----------------------------------------------------------------------------

    def _drop(self, node) -> None:
        self._add(node, "drop-statement", self._start(node), self._end(node), "pass")

    def visit_Assign(self, node):
        names = {t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        if "__all__" in names or any(self._skipped(name) for name in names):
            return
        writes_into = any(isinstance(t, (ast.Subscript, ast.Attribute)) for t in node.targets)
        if writes_into or (names and names <= self.bound[-1]):
            self._drop(node)
        self.generic_visit(node)
        self.bound[-1] |= names

    def visit_AugAssign(self, node):
        self._drop(node)
        self.generic_visit(node)

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Call):
            self._drop(node)
        self.generic_visit(node)

    def visit_Raise(self, node):
        self._drop(node)  # its message is an f-string: nothing inside is mutated

    def visit_For(self, node):
        self.bound[-1] |= {t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)}
        self.generic_visit(node)

    # -- expressions ----------------------------------------------------------------------------

    def visit_BinOp(self, node):
        swap = BINARY_SWAPS.get(type(node.op))
        span = swap and self._token_between(node.left, node.right, swap[0])
        if span:
            self._add(node, "binary", *span, swap[1])
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        symbol, other = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        for left, right in zip(node.values, node.values[1:]):
            span = self._token_between(left, right, symbol)
            if span:
                self._add(node, "boolean", *span, other)
        self.generic_visit(node)

    def visit_UnaryOp(self, node):
        if isinstance(node.op, (ast.Not, ast.Invert, ast.USub)):
            self._add(node, "unary", self._start(node), self._start(node.operand), "")
        self.generic_visit(node)

    def visit_Compare(self, node):
        lefts = [node.left, *node.comparators[:-1]]
        for op, left, right in zip(node.ops, lefts, node.comparators):
            symbol, boundary, negation = COMPARE_SWAPS[type(op)]
            span = self._token_between(left, right, symbol)
            if span is None:
                continue
            if boundary:
                self._add(node, "boundary", *span, boundary)
            self._add(node, "negate-comparison", *span, negation)
        self.generic_visit(node)

    def visit_Constant(self, node):
        value = node.value
        start, end = self._start(node), self._end(node)
        if isinstance(value, bool):
            self._add(node, "constant", start, end, str(not value))
        elif isinstance(value, (int, float)):
            for changed in (value + 1, value - 1):
                self._add(node, "constant", start, end, repr(changed))


def mutants_of(source: str, path: str, skip: tuple[str, ...] = ()) -> list[Mutant]:
    """Every mutant of ``source`` (the file at ``path``), in source order, each with its stable ``key``."""
    mutator = _Mutator(source, path, skip)
    mutator.visit(ast.parse(source))
    mutants = sorted(mutator.mutants, key=lambda m: (m.start, m.end, m.operator, m.replacement))
    seen: Counter = Counter()
    for m in mutants:
        change = f"{m.path}:{m.function}:{m.operator}:{m.original}->{m.replacement}"
        seen[change] += 1
        m.key = f"{change}#{seen[change]}"
    return mutants


# -- judging one mutant -------------------------------------------------------------------------------


@dataclass
class Verdict:
    """What the checks said of one mutant: KILLED (by ``check`` with ``status``, violating
    ``requirements``; ``requirements`` is the check's own list for ERROR and TIMEOUT) or SURVIVED."""

    status: str
    check: str = ""
    check_status: str = ""
    requirements: list[str] = field(default_factory=list)
    message: str = ""
    checks_run: int = 0
    seconds: float = 0.0


def ordered_checks(checks, area: str, needs: tuple[str, ...] = ()):
    """The checks that need one of ``needs`` (all of them if none is named), those of the mutated code's
    own ``area`` first, then the rest in catalogue order."""
    reach = [c for c in checks if not needs or set(c.needs) & set(needs)]
    return sorted(reach, key=lambda c: not any(r.startswith(area) for r in c.requirements) if area else 0)


def judge_here(
    engine_spec: str, catalogue: str, exclude, area: str, needs, timeout_s: float, seed: int, include=()
) -> Verdict:
    """Judge the engine importable from this process's ``sys.path``: run the catalogue's checks that can
    reach the mutated code (the area's first) in the engine's own process until one is not passed."""
    from . import runner
    from .core import Context
    from .isolation import EngineProcess, _load_catalogue

    checks = ordered_checks(runner.select(_load_catalogue(catalogue).values(), include, exclude), area, tuple(needs))
    engine = EngineProcess(engine_spec, catalogue=catalogue)
    verdict = Verdict("SURVIVED")
    try:
        for check in checks:
            (record,) = runner.run_checks(
                engine, [check], lambda info: Context(profile=info.profile, seed=seed), timeout_s=timeout_s
            )
            verdict.checks_run += 1
            if record.status in KILLING:
                first_line = record.message.splitlines()[0] if record.message else ""
                return Verdict(
                    "KILLED",
                    check.name,
                    record.status,
                    record.violated or list(check.requirements),
                    first_line[:300],
                    verdict.checks_run,
                )
    finally:
        engine.stop()
    return verdict


def judge_mutant(
    mutant: Mutant,
    source_root: Path,
    work_dir: Path,
    engine_spec: str,
    *,
    catalogue: str = "harness.checks:all_checks",
    exclude=FAST_EXCLUDE,
    include=(),
    area: str = "",
    needs: tuple[str, ...] = (),
    timeout_s: float = 60,
    seed: int = 20261121,
    python: str = sys.executable,
) -> Verdict:
    """Write ``mutant`` into a copy of its top-level package under ``work_dir`` (which shadows
    ``source_root`` on the path) and judge it in a fresh interpreter; the copy is removed afterwards."""
    top = Path(mutant.path).parts[0]
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)
    original = source_root / top
    if original.is_dir():
        shutil.copytree(original, work_dir / top, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy2(original, work_dir / top)
    path = work_dir / mutant.path
    path.write_text(mutant.apply((source_root / mutant.path).read_text()))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(work_dir), str(source_root), str(REPO)]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [python, "-m", "harness.mutation", "judge", "--engine", engine_spec, "--catalogue", catalogue]
    command += [f"--exclude={pattern}" for pattern in exclude] + [f"--check={pattern}" for pattern in include]
    command += [f"--needs={capability}" for capability in needs]
    command += ["--area", area, "--timeout", str(timeout_s), "--seed", str(seed)]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=work_dir, env=env, capture_output=True, text=True, timeout=timeout_s * 40, check=False
        )
    except subprocess.TimeoutExpired:
        verdict = Verdict("KILLED", "(whole run)", "TIMEOUT", message=f"the judge ran past {timeout_s * 40:.0f} s")
    else:
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"the judge of {mutant.key} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
        verdict = Verdict(**json.loads(lines[-1]))
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    verdict.seconds = round(time.monotonic() - started, 1)
    return verdict


# -- a whole run ----------------------------------------------------------------------------------------


CLASSES = ("equivalent", "unreachable")


def load_classified(path: Path) -> dict[str, dict]:
    """``expectations/mutation-equivalent.yaml``: mutant key -> ``{"class", "why"}``. ``equivalent``: no
    input can tell the mutant from the original; ``unreachable``: only inputs outside the canonical interface
    (``specs/interface.py``) or another device reach the changed code, so no conformance case can."""
    if not path.exists():
        return {}
    classified = {}
    for entry in yaml.safe_load(path.read_text()) or []:
        if entry.get("class") not in CLASSES or not entry.get("why"):
            raise ValueError(f"{path}: entry {entry.get('key')!r} needs a class in {CLASSES} and a why")
        classified[entry["key"]] = {"class": entry["class"], "why": entry["why"]}
    return classified


def sample(mutants: list[Mutant], fraction: float, seed: int) -> list[Mutant]:
    """A deterministic sample of ``fraction`` of the mutants, stratified by file and operator."""
    if fraction >= 1:
        return mutants
    strata: dict[tuple, list[Mutant]] = {}
    for m in mutants:
        strata.setdefault((m.path, m.operator), []).append(m)
    chosen = []
    for key, group in sorted(strata.items()):
        rng = random.Random(f"{seed}:{key}")
        chosen += rng.sample(group, max(1, round(len(group) * fraction)))
    return sorted(chosen, key=lambda m: (m.path, m.start, m.operator, m.replacement))


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def summary(results: list[dict], classified: dict[str, dict], meta: dict) -> str:
    """The Markdown summary: the score, per file and operator, and every survivor with its class."""

    def kind(r):
        return "killed" if r["status"] == "KILLED" else classified.get(r["key"], {}).get("class", "gap")

    n = Counter(kind(r) for r in results)
    killed = [r for r in results if r["status"] == "KILLED"]
    non_equivalent = len(results) - n["equivalent"]
    reachable = non_equivalent - n["unreachable"]
    off_area = [r for r in killed if r["area"] and not any(q.startswith(r["area"]) for q in r["requirements"])]
    lines = [
        "# Mutation score",
        "",
        f"Judged {len(results)} mutants in {len(meta['parts'])} run(s):",
        "",
        *[f"- {part}" for part in meta["parts"]],
        "",
        f"Checks: every kernel-level check except {', '.join(FAST_EXCLUDE)} that needs an engine capability "
        "through which the mutated code is reached (every check for shared code), the mutated area's first; "
        "a mutant is judged until the first check that is not passed. A baseline (the unmutated code, the same "
        "checks) runs alongside each run.",
        "",
        f"**Score: {len(killed)} killed of {non_equivalent} non-equivalent mutants = "
        f"{100 * len(killed) / max(non_equivalent, 1):.1f} %**; of the {reachable} that a canonical case can reach: "
        f"{100 * len(killed) / max(reachable, 1):.1f} %. Survivors: {n['equivalent']} equivalent, "
        f"{n['unreachable']} unreachable through the canonical interface, {n['gap']} not classified (gaps).",
        f"Killed on a requirement outside the mutated code's area: {len(off_area)} of {len(killed)} "
        "(area by file and function: TB, RS or AC; validation.py and module-level code have none).",
        "",
        "| file | operator | mutants | killed | equivalent | unreachable | gap |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict[tuple, Counter] = {}
    for r in results:
        groups.setdefault((r["path"], r["operator"]), Counter())[kind(r)] += 1
    for (path, operator), c in sorted(groups.items()):
        lines.append(
            f"| {path} | {operator} | {sum(c.values())} | {c['killed']} | {c['equivalent']} | {c['unreachable']} "
            f"| {c['gap']} |"
        )
    by_status = Counter(r["check_status"] for r in killed)
    lines += ["", "Killed by status: " + ", ".join(f"{s} {k}" for s, k in sorted(by_status.items())), ""]
    reran = [r for r in results if r.get("rerun")]
    if reran:
        lines += ["## Re-judged (after a new case, or with a longer limit per check after a TIMEOUT)", ""]
        lines += [
            f"- `{r['path']}:{r['line']}` {r['operator']} `{_short(r['original'])}` → `{r['replacement']}`: "
            + (
                f"KILLED by {r['check']} ({r['check_status']}) on {','.join(r['requirements'])}"
                if r["check"]
                else "SURVIVED"
            )
            + f" in re-run `{r['rerun']}`"
            for r in reran
        ]
        lines.append("")
    lines += ["## Survivors", ""]
    for r in results:
        if r["status"] == "KILLED":
            continue
        entry = classified.get(r["key"])
        lines.append(
            f"- `{r['path']}:{r['line']}` {r['operator']} `{_short(r['original'])}` → `{r['replacement']}` "
            f"({r['function']}): " + (f"{entry['class']}: {entry['why']}" if entry else "**not killed: a gap**")
        )
    return "\n".join(lines) + "\n"


def _read(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "mutants.jsonl").read_text().splitlines() if line]


def _describe_run(run_dir: Path) -> str:
    """One line on a run: what it judged, how, and whether it finished (``run.json`` is written at its end)."""
    meta_path = run_dir / "run.json"
    judged = len(_read(run_dir))
    if not meta_path.exists():
        return f"`{run_dir.name}`: {judged} mutants judged, then stopped (no run.json; its log is log.txt)"
    meta = json.loads(meta_path.read_text())
    baselines = ", ".join(f"{engine} {status}" for engine, status in meta["baselines"].items())
    return (
        f"`{run_dir.name}`: {judged} of {meta['generated']} generated mutants ({meta['sampling']}), "
        f"{meta['seconds']:.0f} s on {meta['machine']}, {meta['workers']} worker(s), {meta['check_timeout_s']:g} s "
        f"per check; baselines {baselines}" + (f"; checks {', '.join(meta['checks'])}" if meta.get("checks") else "")
    )


def report(
    run_dirs: list[Path], classified: dict[str, dict], reruns: tuple[Path, ...] = (), out: Path | None = None
) -> str:
    """(Re-)render the summary of one run, or of several runs over disjoint targets, from their
    ``mutants.jsonl`` and ``run.json``; the verdicts of ``reruns`` (runs of some of their mutants with
    ``--key``, after a case was added) replace the runs' own. Written to ``out`` (default: the first run's
    ``summary.md``)."""
    judged: dict[str, dict] = {}
    for run_dir in run_dirs:  # a mutant judged by two runs counts once, with its first verdict
        for entry in _read(run_dir):
            judged.setdefault(entry["key"], entry)
    newer = {entry["key"]: {**entry, "rerun": rerun.name} for rerun in reruns for entry in _read(rerun)}
    results = [newer.get(key, entry) for key, entry in judged.items()]
    text = summary(results, classified, {"parts": [_describe_run(run_dir) for run_dir in run_dirs]})
    (out or run_dirs[0] / "summary.md").write_text(text)
    return text


def run(args) -> int:
    classified = load_classified(Path(args.equivalent))
    targets = [t for t in TARGETS if not args.target or t.path in args.target]
    planned: list[tuple[Target, Mutant]] = []
    generated = 0
    judged = {entry["key"] for run_dir in args.skip_judged or () for entry in _read(Path(run_dir))}
    for target in targets:
        mutants = mutants_of((REPO / target.path).read_text(), target.path, target.skip)
        mutants = [m for m in mutants if not args.operator or m.operator in args.operator]
        generated += len(mutants)
        chosen = [m for m in mutants if m.key in args.key] if args.key else sample(mutants, args.fraction, args.seed)
        planned += [(target, m) for m in chosen if m.key not in judged]
    # The unmutated code is judged alongside (all checks): it must pass them all, or no kill means anything.
    engines = {t.engine: t for t in targets}
    jobs = [(t, Mutant(t.path, "<module>", 0, "none", "", "", 0, 0, "baseline")) for t in engines.values()]
    jobs += planned
    out = Path(args.report_dir) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="specconform-mutation-"))
    print(f"{len(planned)} of {generated} mutants to judge; results in {out}", file=sys.stderr, flush=True)

    def one(index: int) -> dict:
        target, mutant = jobs[index]
        area, needs = target.scope(mutant.function) if mutant.key != "baseline" else ANY
        verdict = judge_mutant(
            mutant,
            REPO,
            scratch / f"w{index}",
            target.engine,
            area=area,
            needs=needs,
            include=tuple(args.check or ()),
            timeout_s=args.timeout,
            seed=args.seed,
        )
        source = (REPO / mutant.path).read_text()
        entry = {k: v for k, v in asdict(mutant).items() if k not in ("start", "end")}
        entry.update(asdict(verdict), engine=target.engine, area=area, needs=list(needs), diff=mutant.diff(source))
        killer = f"  <- {verdict.check} {verdict.check_status} {','.join(verdict.requirements)}"
        print(
            f"[{index + 1}/{len(jobs)}] {verdict.status:8} {verdict.seconds:6.1f} s {mutant.key}"
            + (killer if verdict.check else ""),
            file=sys.stderr,
            flush=True,
        )
        return entry

    results, baselines = [], {}
    with ThreadPoolExecutor(args.workers) as pool, (out / "mutants.jsonl").open("w") as sink:
        for entry in pool.map(one, range(len(jobs))):
            if entry["key"] == "baseline":
                baselines[entry["engine"]] = entry
                continue
            sink.write(json.dumps(entry) + "\n")
            sink.flush()
            results.append(entry)
    shutil.rmtree(scratch, ignore_errors=True)
    meta = {
        "started": out.name,
        "machine": f"{os.cpu_count()} CPU cores (load average {os.getloadavg()[0]:.1f} at the end)",
        "seconds": time.monotonic() - started,
        "workers": args.workers,
        "generated": generated,
        "sampling": f"the mutants named by --key ({len(planned)})"
        if args.key
        else f"a {args.fraction:.0%} sample stratified by file and operator, seed {args.seed}"
        if args.fraction < 1
        else "all of them",
        "exclude": list(FAST_EXCLUDE),
        "checks": list(args.check or ()),
        "baselines": {engine: entry["status"] for engine, entry in baselines.items()},
        "check_timeout_s": args.timeout,
    }
    (out / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    broken = {engine: entry for engine, entry in baselines.items() if entry["status"] != "SURVIVED"}
    if broken:
        print(f"the unmutated code fails a check, so this run judges nothing: {broken}", file=sys.stderr)
        return 1
    print(report([out], classified))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.mutation", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="generate, judge and report the mutants of every target")
    go.add_argument("--target", action="append", help="only this file (repeatable), e.g. impl/markers.py")
    go.add_argument("--operator", action="append", choices=OPERATORS, help="only this operator (repeatable)")
    go.add_argument("--key", action="append", help="only the mutant with this key (repeatable)")
    go.add_argument("--check", action="append", help="only the checks matching this glob (repeatable)")
    go.add_argument("--skip-judged", action="append", help="leave out the mutants this run folder judged")
    go.add_argument("--fraction", type=float, default=1.0, help="judge this fraction of the mutants (stratified)")
    go.add_argument("--workers", type=int, default=1)
    go.add_argument("--timeout", type=float, default=60, help="seconds per check (a hang is a TIMEOUT)")
    go.add_argument("--seed", type=int, default=20261121)
    go.add_argument("--report-dir", default="reports/mutation")
    go.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    again = sub.add_parser("report", help="re-render a run's summary.md with the current classification")
    again.add_argument("run_dirs", nargs="+", help="one run, or several over disjoint targets")
    again.add_argument("--out", help="the summary file (default: the first run's summary.md)")
    again.add_argument("--rerun", action="append", default=[], help="a run of some of its mutants (--key)")
    again.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    one = sub.add_parser("judge", help="(internal) judge the engine on this process's path; prints a JSON verdict")
    one.add_argument("--engine", required=True)
    one.add_argument("--catalogue", default="harness.checks:all_checks")
    one.add_argument("--exclude", action="append", default=[])
    one.add_argument("--check", action="append", default=[])
    one.add_argument("--area", default="")
    one.add_argument("--needs", action="append", default=[], help="only checks that need this capability")
    one.add_argument("--timeout", type=float, default=120)
    one.add_argument("--seed", type=int, default=20261121)
    args = parser.parse_args(argv)
    if args.command == "judge":
        verdict = judge_here(
            args.engine, args.catalogue, args.exclude, args.area, args.needs, args.timeout, args.seed, args.check
        )
        print(json.dumps(asdict(verdict)))
        return 0
    if args.command == "report":
        reruns = tuple(Path(d) for d in args.rerun)
        out = Path(args.out) if args.out else None
        print(report([Path(d) for d in args.run_dirs], load_classified(Path(args.equivalent)), reruns, out))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
