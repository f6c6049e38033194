"""Applying a mutant in the forked child: the enclosing function's code replaced in place, or the
project imported again with the mutated file served by an import hook."""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import sys
from pathlib import Path

from specconform.harness.mutation.mutator import Mutant

# the project's top-level folders, imported as subpackages of ``specconform`` (docs/install.md)
PACKAGE_FOLDERS = ("harness", "impl", "embedded", "specs")


def module_of(path: str) -> str:
    """The module name of the file at ``path`` (relative to the source root): ``impl/markers.py`` is
    ``specconform.impl.markers``; a file outside the project's folders keeps its own name."""
    name = path[: -len(".py")].replace("/", ".")
    return f"specconform.{name}" if name.split(".")[0] in PACKAGE_FOLDERS else name


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


def reimport(mutant: Mutant | None, source_root: Path) -> None:
    """Forget the project's modules so that they are imported again, ``mutant``'s file from its mutated
    text (an import hook serves it)."""
    for name in _project_modules(source_root):
        del sys.modules[name]
    sys.path.insert(0, str(source_root))
    if mutant is not None:
        path = str(source_root / mutant.path)
        sys.meta_path.insert(0, _MutantFinder(module_of(mutant.path), path, mutant.apply(Path(path).read_text())))


def patch_in_place(mutant: Mutant, source_root: Path) -> bool:
    """Give the already imported function that encloses ``mutant`` the mutated code, in place, so that every
    reference to it runs the mutant; False when that cannot be done (the module is not imported, the change
    lies outside a function's body, as a default argument or module-level code, or the function is not
    found), and the module must be imported again."""
    module = sys.modules.get(module_of(mutant.path))
    if module is None or mutant.function == "<module>":
        return False
    original = (source_root / mutant.path).read_text()
    data = original.encode()
    starts = [0]
    for line in data.splitlines(True):
        starts.append(starts[-1] + len(line))
    parents: list[str] = []
    body: list[ast.stmt] = ast.parse(original).body
    for part in mutant.function.split("."):  # down to the outermost function on the mutant's path
        node = next((n for n in body if getattr(n, "name", None) == part), None)
        if node is None:
            return False
        parents.append(part)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node
            break
        body = node.body if isinstance(node, ast.ClassDef) else []
    else:
        return False  # a class body
    if function.end_lineno is None or function.end_col_offset is None:  # ast.parse sets them: typeshed allows None
        return False
    body_start = starts[function.body[0].lineno - 1] + function.body[0].col_offset
    body_end = starts[function.end_lineno - 1] + function.end_col_offset
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
        if f is not None
        and hasattr(f, "__code__")
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
