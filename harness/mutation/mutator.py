"""The mutants of one source file, generated from its syntax tree.

Each mutant is one small change: an operator (``+`` for ``-``, ``and`` for ``or``, a dropped ``not``), a
comparison (a boundary ``<`` for ``<=``, or its negation), a constant (``n`` for ``n + 1`` and ``n - 1``,
``True`` for ``False``) or a dropped statement (a call, a ``raise``, an augmented assignment, a write into a
tensor or attribute, a re-assignment of a bound name).

Why an AST mutator of our own: mutmut 3 instruments functions with trampolines and decides through its
own pytest run (no command of ours per mutant), and cosmic-ray's local runs mutate the working tree in
place and report only the test command's exit code; neither records which check and requirement killed a
mutant, which is what the score is about.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
from collections import Counter
from dataclasses import dataclass

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
