"""Mutation testing of the reference implementation and the oracle-backed engine, judged by the harness.

Each mutant is one small change to one source file: an operator (``+`` for ``-``, ``and`` for ``or``, a
dropped ``not``), a comparison (a boundary ``<`` for ``<=``, or its negation), a constant (``n`` for
``n + 1`` and ``n - 1``, ``True`` for ``False``) or a dropped statement (a call, a ``raise``, an
augmented assignment, a write into a tensor or attribute, a re-assignment of a bound name). The mutant is
judged by the conformance checks, not by the project's unit tests. What makes judging ~1,000 mutants cheap:

- The unmutated code is judged first by every check with its lines traced (``coverage``, one context per
  check): a check that never executes a mutant's lines runs exactly as on the original, so only the checks
  that do are run (all of them when the import or the engine's factory executes the line).
- The parent imports the project and its libraries once and forks a child per mutant; the child gives the
  enclosing function the mutated code in place (``__code__``), or, for module-level code and default
  arguments, imports the project again with the mutated file served by an import hook.
- The checks run in the child in one process, the mutated code's own requirement area first, each group
  cheapest first, until the first that is not passed; each draws at most ``--cases`` of its generated
  cases (a prefix of its seeded sequence, the simplest first) and runs ``--trials`` per statistical case.
- The parent kills a child whose check runs past ``--timeout + --timeout-factor ×`` its baseline seconds
  (TIMEOUT) and re-judges every TIMEOUT with ``--rejudge`` times the limits, so that a loaded machine does
  not turn a survivor into a kill; a child that dies is an ERROR of the check it was running.

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
import importlib
import importlib.abc
import importlib.util
import json
import os
import random
import select
import signal
import sys
import time
from collections import Counter
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


BUDGET, REJECTION, COUNTING = "TB-", "RS-", "AC-"
ANY = ""  # shared code: no area of its own


@dataclass(frozen=True)
class Target:
    """A file to mutate, the engine that judges it and, per function (name globs, first match), the
    requirement area its code implements (an id prefix: its checks run first, and a kill on another area's
    requirement is counted). ``skip``: functions (and module-level names) left alone, for the reason ``why``."""

    path: str
    engine: str
    areas: dict[str, str]
    skip: tuple[str, ...] = ()
    why: str = ""

    def area(self, function: str) -> str:
        return next((a for pattern, a in self.areas.items() if fnmatch.fnmatchcase(function, pattern)), ANY)


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
            "LEVEL_PROGRAMS_PER_SM",
            "WIDE_WARPS",
            "NARROW_WARPS",
            "ROW_PASS_NARROWING",
            "RACE_NARROWING",
            "ROW_SPLIT_MIN_IDS",
            "FILL_PROGRAMS_PER_SM",
            "_target_programs",
            "_split_programs",
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
        {"<module>": ANY, "*": COUNTING},
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
            "OracleEngine.count_emitted": COUNTING,
            "OracleEngine.acceptance_metrics": COUNTING,
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

    def lines(self, source: str) -> range:
        """The source lines of the mutated statement or expression, from its node's first line to the
        changed text's last."""
        return range(self.line, source.encode()[: self.end].count(b"\n") + 2)

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


# -- judging mutants ------------------------------------------------------------------------------------
#
# A parent process that has imported the project and its libraries (torch, NumPy, SciPy, Hypothesis) forks
# one child per mutant: the child forgets the project's modules, imports them again with the mutated file
# served by an import hook, builds the engine and runs the checks in order until the first that is not
# passed. The parent reads the child's events from a pipe and kills it when a check runs past its limit
# (TIMEOUT). So a mutant costs its checks, not an interpreter and torch import.


@dataclass
class Verdict:
    """What the checks said of one mutant: KILLED (by ``check`` with ``status``, violating
    ``requirements``; ``requirements`` is the check's own list for ERROR and TIMEOUT) or SURVIVED.
    ``checks_run`` of the ``checks_planned`` that execute the mutated lines were run."""

    status: str
    check: str = ""
    check_status: str = ""
    requirements: list[str] = field(default_factory=list)
    message: str = ""
    checks_run: int = 0
    checks_planned: int = 0
    seconds: float = 0.0


@dataclass
class Job:
    """One judgement in a forked child: ``engine`` (a ``make_engine`` spec) with ``mutant`` applied (None:
    the unmutated code), running ``checks`` in this order until the first that is not passed (None: every
    check of the catalogue that the engine's profile can run, all of them), each within ``limits[check]``
    seconds (default ``Setup.check_limit_s``). ``trace``: files whose executed lines are recorded per check
    (``coverage``), and under ``IMPORT`` for the import and the engine's factory."""

    engine: str
    mutant: Mutant | None = None
    checks: list[str] | None = None
    limits: dict[str, float] = field(default_factory=dict)
    trace: tuple[str, ...] = ()
    verdict: Verdict | None = None
    plan: dict[str, list[str]] = field(default_factory=dict)  # check -> its requirements (the child's own plan)
    seconds: dict[str, float] = field(default_factory=dict)  # check -> seconds it ran
    lines: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # file -> context -> lines


@dataclass(frozen=True)
class Setup:
    """What every child of a run shares: the project's root (first on the path), the check catalogue
    (``module:function``), the checks left out, the cases' seed and the trials of a statistical check."""

    source_root: Path
    catalogue: str = "harness.checks:all_checks"
    exclude: tuple[str, ...] = FAST_EXCLUDE
    seed: int = 20261121
    trials: int = 2_000
    max_cases: int = 0  # each check draws at most this many of its generated cases (0: all of them)
    start_limit_s: float = 120  # importing the project and building the engine
    check_limit_s: float = 1_200  # a check that a job gives no limit of its own


IMPORT = "(import)"  # the coverage context of the project's import and the engine's factory


class _MutantLoader(importlib.abc.SourceLoader):
    """Loads one module from the mutated source text instead of its file (no bytecode cache)."""

    def __init__(self, path: str, source: str):
        self.path, self.source = path, source

    def get_filename(self, fullname: str) -> str:
        return self.path

    def get_data(self, path: str) -> bytes:
        return self.source.encode() if path == self.path else Path(path).read_bytes()


class _MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, module: str, path: str, source: str):
        self.module, self.path, self.source = module, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.module:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path, loader=_MutantLoader(self.path, self.source))


def _project_modules(source_root: Path) -> list[str]:
    """The imported modules whose file lies under ``source_root``."""
    root = str(source_root.resolve())
    return [
        name
        for name, module in list(sys.modules.items())
        if (getattr(module, "__file__", None) or "").startswith(root) and name != "__main__"
    ]


_CATALOGUES: dict[str, dict] = {}  # built once in the parent (it parses the requirements for each check)


def _catalogue(spec: str, fresh: bool = False) -> dict:
    """The checks by name of the catalogue ``spec`` (``module:function``); ``fresh``: built again from the
    modules imported now, not taken from the parent's."""
    if fresh or spec not in _CATALOGUES:
        module_name, _, function = spec.partition(":")
        _CATALOGUES[spec] = {c.name: c for c in getattr(importlib.import_module(module_name), function)()}
    return _CATALOGUES[spec]


def _reimport(mutant: Mutant | None, source_root: Path) -> None:
    """Forget the project's modules so that they are imported again, ``mutant``'s file from its mutated
    text (an import hook serves it)."""
    for name in _project_modules(source_root):
        del sys.modules[name]
    sys.path.insert(0, str(source_root))
    if mutant is not None:
        path = str(source_root / mutant.path)
        sys.meta_path.insert(0, _MutantFinder(_module(mutant.path), path, mutant.apply(Path(path).read_text())))


def _patch(mutant: Mutant, source_root: Path) -> bool:
    """Give the already imported function that encloses ``mutant`` the mutated code, in place, so that every
    reference to it runs the mutant; False when that cannot be done (the module is not imported, the change
    lies outside a function's body, as a default argument or module-level code, or the function is not
    found), and the module must be imported again."""
    module = sys.modules.get(_module(mutant.path))
    if module is None or mutant.function == "<module>":
        return False
    original = (source_root / mutant.path).read_text()
    data = original.encode()
    starts = [0]
    for line in data.splitlines(True):
        starts.append(starts[-1] + len(line))
    parents, node = [], ast.parse(original)
    for part in mutant.function.split("."):  # down to the outermost function on the mutant's path
        node = next((n for n in node.body if getattr(n, "name", None) == part), None)
        if node is None:
            return False
        parents.append(part)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
    else:
        return False  # a class body
    body_start = starts[node.body[0].lineno - 1] + node.body[0].col_offset
    body_end = starts[node.end_lineno - 1] + node.end_col_offset
    if not body_start <= mutant.start <= mutant.end <= body_end:
        return False
    qualname = ".".join(parents)
    pending = [compile(mutant.apply(original), str(source_root / mutant.path), "exec")]
    new_code = None
    while pending and new_code is None:
        code = pending.pop()
        if code.co_qualname == qualname:
            new_code = code
        pending += [c for c in code.co_consts if isinstance(c, type(code))]
    holder = module
    for part in parents[:-1]:
        holder = getattr(holder, part)
    bound = vars(holder).get(parents[-1])
    candidates = [bound] + [getattr(bound, a, None) for a in ("__func__", "fget", "fset", "fdel", "__wrapped__")]
    functions = [
        f
        for f in candidates
        if hasattr(f, "__code__")
        and f.__code__.co_qualname == qualname
        and new_code is not None
        and f.__code__.co_firstlineno == new_code.co_firstlineno
    ]
    if len(functions) != 1:
        return False
    try:
        functions[0].__code__ = new_code
    except ValueError:  # the mutated code closes over other names
        return False
    return True


def _child(job: Job, setup: Setup, send) -> None:
    """(In the forked child) apply ``job.mutant`` (its function's code patched in place, or the project
    imported again), build the engine and run the checks, reporting each as an event: ``plan``, ``start``,
    ``result``, ``lines``."""
    tracer = None
    if job.trace:
        import coverage

        tracer = coverage.Coverage(data_file=None, include=list(job.trace), config_file=False)
        tracer.start()
        tracer.switch_context(IMPORT)
    reimported = job.mutant is None or not _patch(job.mutant, setup.source_root)
    if reimported:
        _reimport(job.mutant, setup.source_root)
    if setup.max_cases:  # the first cases of each check's seeded sequence, the simplest first
        cases = importlib.import_module("harness.cases")
        every = cases.draw
        cases.draw = lambda strategy, case_seed, count: every(strategy, case_seed, min(count, setup.max_cases))
    first = job.checks[0] if job.checks else None
    try:
        catalogue = _catalogue(setup.catalogue, fresh=reimported)
        runner = importlib.import_module("harness.runner")
        core = importlib.import_module("harness.core")
        engine = importlib.import_module("harness.adapters").make_engine(job.engine)
    except BaseException as exc:  # the mutated import or factory: the first check cannot run
        send(event="result", check=first, status="ERROR", violated=[], message=f"{type(exc).__name__}: {exc}")
        return
    profile = engine.profile
    names = job.checks
    if names is None:
        names = [c.name for c in runner.select(catalogue.values(), (), setup.exclude)]
    runnable = [
        n for n in names if profile.claims(catalogue[n].cls) and set(catalogue[n].needs) <= profile.capabilities
    ]
    send(event="plan", checks={n: list(catalogue[n].requirements) for n in runnable})
    ctx = core.Context(profile=profile, seed=setup.seed, trials=setup.trials)
    for name in runnable:
        send(event="start", check=name)
        if tracer:
            tracer.switch_context(name)
        started = time.perf_counter()
        try:
            outcome = catalogue[name].run(engine, ctx)
            status, violated, message = outcome.status, list(outcome.violated), outcome.message
        except BaseException as exc:  # a crash (SystemExit included) is not a spec violation: ERROR
            status, violated, message = "ERROR", [], f"{type(exc).__name__}: {exc}"
        send(
            event="result",
            check=name,
            status=status,
            violated=violated,
            message=(message.splitlines() or [""])[0][:300],
            seconds=round(time.perf_counter() - started, 3),
        )
        if job.checks is not None and status in KILLING:
            break
    if tracer:
        tracer.stop()
        data = tracer.get_data()
        send(event="lines", lines={f: _by_context(data.contexts_by_lineno(f)) for f in data.measured_files()})


def _by_context(contexts_by_line: dict[int, list[str]]) -> dict[str, list[int]]:
    by_context: dict[str, list[int]] = {}
    for line, contexts in sorted(contexts_by_line.items()):
        for context in contexts:
            by_context.setdefault(context, []).append(line)
    return by_context


@dataclass
class _Running:
    job: Job
    pid: int
    fd: int
    started: float
    deadline: float
    current: str | None = None
    pending: bytes = b""
    events: list[dict] = field(default_factory=list)


def _fork(job: Job, setup: Setup) -> _Running:
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            out = os.fdopen(write_fd, "w")

            def send(**event):
                out.write(json.dumps(event) + "\n")
                out.flush()

            _child(job, setup, send)
            send(event="done")
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    now = time.monotonic()
    return _Running(job, pid, read_fd, now, now + setup.start_limit_s)


def _receive(child: _Running, data: bytes, setup: Setup) -> None:
    """Take the child's events from ``data``; a check's start sets the deadline to its limit."""
    *lines, child.pending = (child.pending + data).split(b"\n")
    for line in lines:
        event = json.loads(line)
        child.events.append(event)
        if event["event"] == "start":
            child.current = event["check"]
            child.deadline = time.monotonic() + child.job.limits.get(child.current, setup.check_limit_s)
        elif event["event"] == "result":
            child.current = None
            child.deadline = time.monotonic() + setup.start_limit_s


def _finish(child: _Running, timed_out: bool, setup: Setup) -> None:
    """The verdict from the child's events: the first check that was not passed kills the mutant; a child
    killed at its deadline is a TIMEOUT of the check it was running, one that died without a result an
    ERROR of it (before any check: of the first)."""
    job, events = child.job, child.events
    job.plan = next((e["checks"] for e in events if e["event"] == "plan"), job.plan)
    results = [e for e in events if e["event"] == "result"]
    job.seconds = {e["check"]: e["seconds"] for e in results if "seconds" in e}
    job.lines = next((e["lines"] for e in events if e["event"] == "lines"), {})
    ran = (len(results), len(job.plan) if job.checks is None else len(job.checks))
    killer = next((e for e in results if e["status"] in KILLING), None)
    if killer is not None:
        check = killer["check"] or ""
        requirements = killer["violated"] or job.plan.get(check, [])
        job.verdict = Verdict("KILLED", check, killer["status"], requirements, killer["message"], *ran)
    elif timed_out or not any(e["event"] == "done" for e in events):
        current = child.current or (job.checks[0] if job.checks and not results else "")
        if timed_out:
            limit = job.limits.get(current, setup.check_limit_s) if child.current else setup.start_limit_s
            status, message = "TIMEOUT", f"ran past {limit:.3g} s; the child was killed"
        else:
            status, message = "ERROR", f"the child ended during {current or 'the import'} without a result"
        job.verdict = Verdict("KILLED", current, status, job.plan.get(current, []), message, *ran)
    else:
        job.verdict = Verdict("SURVIVED", checks_run=ran[0], checks_planned=ran[1])
    job.verdict.seconds = round(time.monotonic() - child.started, 1)


def judge(jobs: list[Job], setup: Setup, workers: int = 1, on_done=lambda job: None) -> list[Job]:
    """Judge every job, at most ``workers`` children at a time; each job gets its ``verdict`` (and its
    ``plan``, ``seconds`` and ``lines``). ``on_done(job)`` is called as each one finishes."""
    queue = list(reversed(jobs))
    running: dict[int, _Running] = {}

    def end(child: _Running, timed_out: bool) -> None:
        if timed_out:
            os.kill(child.pid, signal.SIGKILL)
        os.waitpid(child.pid, 0)
        os.close(child.fd)
        del running[child.fd]
        _finish(child, timed_out, setup)
        on_done(child.job)

    while queue or running:
        while queue and len(running) < workers:
            child = _fork(queue.pop(), setup)
            running[child.fd] = child
        wait = max(0.0, min(c.deadline for c in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], wait)
        for fd in ready:
            data = os.read(fd, 1 << 20)
            if data:
                _receive(running[fd], data, setup)
            else:
                end(running[fd], timed_out=False)
        now = time.monotonic()
        for child in [c for c in running.values() if now >= c.deadline]:
            end(child, timed_out=True)
    return jobs


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
        *([meta["note"], ""] if meta.get("note") else []),
        f"Judged {len(results)} mutants in {len(meta['parts'])} run(s):",
        "",
        *[f"- {part}" for part in meta["parts"]],
        "",
        "Checks: every kernel-level check except "
        + ", ".join(f"`{pattern}`" for pattern in meta.get("exclude", FAST_EXCLUDE))
        + ", each with few trials per statistical case; of them, only those that executed one of the mutant's "
        "lines when the unmutated code was judged (coverage per check; all of them when the import or the "
        "engine's factory executed it), the mutated code's area first, each group cheapest first, until the "
        "first check that is not passed. A mutant that no check executes survives unjudged.",
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
    lines += [
        "",
        "## Every mutant",
        "",
        "| file:line | function | operator | change | verdict | check (status) | requirements | checks run | s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in sorted(results, key=lambda r: (r["path"], r["line"], r["key"])):
        change = f"`{_short(r['original'], 40)}` → `{r['replacement']}`".replace("|", "\\|")
        lines.append(
            f"| {r['path']}:{r['line']} | {r['function']} | {r['operator']} | {change} | {kind(r)} "
            f"| {r['check']} ({r['check_status']}) | {', '.join(r['requirements'])} "
            f"| {r['checks_run']}/{r.get('checks_planned', '')} | {r['seconds']} |"
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
    baselines = ", ".join(
        f"{engine} {b['status']} in {b['seconds']:.0f} s ({len(b['checks'])} checks)"
        for engine, b in meta["baselines"].items()
    )
    return (
        f"`{run_dir.name}`: {judged} of {meta['generated']} generated mutants ({meta['sampling']}), "
        f"{meta['seconds']:.0f} s on {meta['machine']}, {meta['workers']} worker(s); limits: {meta['limits']}; "
        f"{meta['trials']} trials per statistical case; baselines (unmutated, every check, traced): {baselines}"
    )


def report(
    run_dirs: list[Path],
    classified: dict[str, dict],
    reruns: tuple[Path, ...] = (),
    out: Path | None = None,
    note: str = "",
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
    metas = [json.loads((d / "run.json").read_text()) for d in run_dirs if (d / "run.json").exists()]
    meta = {
        "parts": [_describe_run(run_dir) for run_dir in run_dirs],
        "note": note,
        **({"exclude": metas[0]["exclude"]} if metas else {}),
    }
    text = summary(results, classified, meta)
    (out or run_dirs[0] / "summary.md").write_text(text)
    return text


def _preload(setup: Setup, targets) -> None:
    """Import the project's modules and their libraries in the parent, once: every forked child starts
    with torch, NumPy, SciPy and Hypothesis loaded, on one thread each."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in ("harness.adapters", *(_module(t.path) for t in targets)):
        importlib.import_module(name)
    _catalogue(setup.catalogue)


def _module(path: str) -> str:
    return path[: -len(".py")].replace("/", ".")


def plan_mutant(target: Target, mutant: Mutant, baseline: Job, source: str, args) -> Job:
    """The checks that can tell ``mutant`` from the original: those of the baseline run that executed one
    of its lines (all of them if the import or the engine's factory did), the mutated code's own area
    first, each group cheapest first (by the baseline's seconds); each with the limit
    ``args.timeout + args.timeout_factor × its baseline seconds``. A check that never executes the
    mutated lines runs exactly as on the original, so it cannot kill the mutant."""
    covered = baseline.lines.get(str(REPO / target.path), {})
    span = set(mutant.lines(source))
    executing = {context for context, lines in covered.items() if span & set(lines)}
    checks = [c for c in baseline.plan if IMPORT in executing or c in executing]
    area = target.area(mutant.function)
    checks.sort(key=lambda c: (not any(r.startswith(area) for r in baseline.plan[c]), baseline.seconds[c]))
    limits = {c: args.timeout + args.timeout_factor * baseline.seconds[c] for c in checks}
    return Job(target.engine, mutant, checks, limits, plan={c: baseline.plan[c] for c in checks})


def _entry(target: Target, job: Job, source: str) -> dict:
    mutant, verdict = job.mutant, job.verdict
    entry = {k: v for k, v in asdict(mutant).items() if k not in ("start", "end")}
    entry.update(asdict(verdict), engine=target.engine, area=target.area(mutant.function), diff=mutant.diff(source))
    return entry


def run(args) -> int:
    classified = load_classified(Path(args.equivalent))
    targets = [t for t in TARGETS if not args.target or t.path in args.target]
    setup = Setup(
        REPO, exclude=FAST_EXCLUDE + tuple(args.exclude or ()), seed=args.seed, trials=args.trials, max_cases=args.cases
    )
    sources = {t.path: (REPO / t.path).read_text() for t in targets}
    planned: list[tuple[Target, Mutant]] = []
    generated = 0
    judged = {entry["key"] for run_dir in args.skip_judged or () for entry in _read(Path(run_dir))}
    keys = set(args.key or ()) | {
        entry["key"]
        for run_dir in args.survivors_of or ()
        for entry in _read(Path(run_dir))
        if entry["status"] != "KILLED"
    }
    for target in targets:
        mutants = mutants_of(sources[target.path], target.path, target.skip)
        mutants = [m for m in mutants if not args.operator or m.operator in args.operator]
        generated += len(mutants)
        chosen = [m for m in mutants if m.key in keys] if keys else sample(mutants, args.fraction, args.seed)
        planned += [(target, m) for m in chosen if m.key not in judged]
    # each file's mutants in a seeded random order, the files interleaved: a run stopped early has judged a
    # random sample of each file's mutants
    random.Random(f"{args.seed}:order").shuffle(planned)
    per_file = Counter(target.path for target, _ in planned)
    seen: Counter = Counter()
    position = []
    for target, _ in planned:
        seen[target.path] += 1
        position.append(seen[target.path] / per_file[target.path])
    planned = [pair for _, pair in sorted(zip(position, planned), key=lambda item: item[0])]
    out = Path(args.report_dir) / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    started = time.monotonic()
    _preload(setup, targets)
    log = (out / "log.txt").open("w")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)
        log.write(text + "\n")
        log.flush()

    # The unmutated code, every check, its lines traced: it must pass them all, or no kill means anything.
    engines = sorted({t.engine for t in targets})
    trace = {e: tuple(str(REPO / t.path) for t in targets if t.engine == e) for e in engines}
    baselines = {job.engine: job for job in judge([Job(e, trace=trace[e]) for e in engines], setup, args.workers)}
    for engine, job in baselines.items():
        say(f"baseline {engine}: {job.verdict.status} in {job.verdict.seconds} s, {len(job.plan)} checks")
    broken = {e: asdict(job.verdict) for e, job in baselines.items() if job.verdict.status != "SURVIVED"}
    if broken:
        say(f"the unmutated code fails a check, so this run judges nothing: {broken}")
        return 1
    jobs = [plan_mutant(t, m, baselines[t.engine], sources[t.path], args) for t, m in planned]
    target_of = {id(job): target for job, (target, _) in zip(jobs, planned)}
    say(f"{len(planned)} of {generated} mutants to judge; results in {out}")
    done = 0
    sink = (out / "mutants.jsonl").open("w")  # as they are judged; written again after the re-judging

    def report_one(job: Job) -> None:
        nonlocal done
        done += 1
        sink.write(json.dumps(_entry(target_of[id(job)], job, sources[job.mutant.path])) + "\n")
        sink.flush()
        v = job.verdict
        killer = f"  <- {v.check} {v.check_status} {','.join(v.requirements)}" if v.check else ""
        ran = f"{v.checks_run}/{v.checks_planned}"
        say(f"[{done}/{len(jobs)}] {v.status:8} {v.seconds:6.1f} s {ran:>5} {job.mutant.key}{killer}")

    judge([j for j in jobs if j.checks], setup, args.workers, report_one)
    for job in jobs:
        if not job.checks:
            job.verdict = Verdict("SURVIVED", message="no check executes the mutated lines")
    # A TIMEOUT on a loaded machine is not a kill until the check runs past a limit ``--rejudge`` times longer.
    slow = [job for job in jobs if job.verdict.check_status == "TIMEOUT"]
    if slow:
        say(f"re-judging {len(slow)} TIMEOUT(s) with {args.rejudge:g} times the limits")
        first_verdicts = {id(job): job.verdict for job in slow}
        for job in slow:
            job.checks = job.checks[job.checks.index(job.verdict.check) :]  # the checks before it passed
            job.limits = {c: args.rejudge * limit for c, limit in job.limits.items()}
        done = 0
        judge(slow, setup, args.workers, report_one)
        for job in slow:
            first = first_verdicts[id(job)]
            job.verdict.message = (
                f"(re-judged after a TIMEOUT at {first.check}: {first.message}) " + job.verdict.message
            )
    sink.close()
    with (out / "mutants.jsonl").open("w") as sink:
        for job in jobs:
            sink.write(json.dumps(_entry(target_of[id(job)], job, sources[job.mutant.path])) + "\n")
    meta = {
        "started": out.name,
        "machine": f"{os.cpu_count()} CPU cores (load average {os.getloadavg()[0]:.1f} at the end)",
        "seconds": time.monotonic() - started,
        "workers": args.workers,
        "generated": generated,
        "sampling": f"the mutants named by --key or --survivors-of ({len(planned)})"
        if keys
        else f"a {args.fraction:.0%} sample stratified by file and operator, seed {args.seed}"
        if args.fraction < 1
        else "all of them",
        "exclude": list(setup.exclude),
        "trials": setup.trials,
        "max_cases": setup.max_cases,
        "limits": f"{args.timeout:g} s + {args.timeout_factor:g} × the baseline's seconds per check; "
        f"TIMEOUTs re-judged at {args.rejudge:g} times that",
        "baselines": {
            e: {"status": j.verdict.status, "seconds": j.verdict.seconds, "checks": j.seconds}
            for e, j in baselines.items()
        },
    }
    (out / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(report([out], classified))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.mutation", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="generate, judge and report the mutants of every target")
    go.add_argument("--target", action="append", help="only this file (repeatable), e.g. impl/markers.py")
    go.add_argument("--operator", action="append", choices=OPERATORS, help="only this operator (repeatable)")
    go.add_argument("--key", action="append", help="only the mutant with this key (repeatable)")
    go.add_argument("--exclude", action="append", help="also leave out the checks matching this glob (repeatable)")
    go.add_argument("--skip-judged", action="append", help="leave out the mutants this run folder judged")
    go.add_argument("--survivors-of", action="append", help="only the mutants that survived in this run folder")
    go.add_argument("--fraction", type=float, default=1.0, help="judge this fraction of the mutants (stratified)")
    go.add_argument("--workers", type=int, default=1)
    go.add_argument("--timeout", type=float, default=10, help="seconds per check, plus --timeout-factor × its baseline")
    go.add_argument("--timeout-factor", type=float, default=10, help="times the check's seconds on the unmutated code")
    go.add_argument("--rejudge", type=float, default=5, help="a TIMEOUT is re-judged with this many times the limit")
    go.add_argument("--trials", type=int, default=2_000, help="trials per case of a statistical check")
    go.add_argument("--cases", type=int, default=30, help="generated cases per check, at most (0: all)")
    go.add_argument("--seed", type=int, default=20261121)
    go.add_argument("--report-dir", default="reports/mutation")
    go.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    again = sub.add_parser("report", help="re-render a run's summary.md with the current classification")
    again.add_argument("run_dirs", nargs="+", help="one run, or several over disjoint targets")
    again.add_argument("--out", help="the summary file (default: the first run's summary.md)")
    again.add_argument("--rerun", action="append", default=[], help="a run of some of its mutants (--key)")
    again.add_argument("--note", default="", help="a paragraph on the runs, under the title (e.g. why one stopped)")
    again.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    args = parser.parse_args(argv)
    if args.command == "report":
        reruns = tuple(Path(d) for d in args.rerun)
        out = Path(args.out) if args.out else None
        classified = load_classified(Path(args.equivalent))
        print(report([Path(d) for d in args.run_dirs], classified, reruns, out, args.note))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
