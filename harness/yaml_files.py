"""A user's YAML file (a profile, an API profile), read so that every mistake in it names the file and the line.

PyYAML's own errors name neither the file (it reads a string) nor, for a wrong value, the line: a YAML syntax error
becomes a ``ValueError`` that says ``FILE:LINE:COLUMN``, and ``YamlFile.at`` finds the line of a key, or of one
value in a key's list, for the checks that judge what the file says.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class YamlFile:
    """A YAML file's data and its node tree (where each key and value stands)."""

    path: Path
    data: Any
    root: yaml.Node | None

    def at(self, key: str, value: Any = None) -> str:
        """``FILE:LINE`` of the top-level ``key`` (of ``value`` among its list's items, where given); ``FILE`` alone
        when the file does not hold it."""
        node = self._value_node(key)
        if node is None:
            return str(self.path)
        if value is not None and isinstance(node, yaml.SequenceNode):
            node = next((item for item in node.value if getattr(item, "value", None) == str(value)), node)
        return f"{self.path}:{node.start_mark.line + 1}"

    def _value_node(self, key: str) -> yaml.Node | None:
        if not isinstance(self.root, yaml.MappingNode):
            return None
        return next((value for name, value in self.root.value if getattr(name, "value", None) == key), None)


def read(path: str | Path) -> YamlFile:
    """``path`` read as YAML; a ``ValueError`` naming ``FILE:LINE:COLUMN`` and what is wrong when it is not YAML, or
    when it is not a mapping (an empty file is an empty mapping)."""
    path = Path(path)
    text = path.read_text()
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join(filter(None, (error.context, error.problem)))
        raise ValueError(f"{where}: not valid YAML: {problem} (is an indent or a colon wrong?)") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {error}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}:1: expected a mapping of keys to values; got a {type(data).__name__}")
    return YamlFile(path, data, root)


def one_of(value: Any, allowed: Iterable[str], where: str, key: str) -> None:
    """Raise a ``ValueError`` at ``where`` naming ``key``, every allowed value, ``value`` and the allowed value
    closest to it (where one is close), unless ``value`` is among ``allowed``."""
    allowed = [str(a) for a in allowed]
    if value in allowed:
        return
    close = difflib.get_close_matches(str(value), allowed, n=1, cutoff=0.6)
    meant = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{where}: {key} must be one of {', '.join(allowed)}; got {value!r}{meant}")
