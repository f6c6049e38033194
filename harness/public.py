"""Records fit to publish: no path of the machine that made them.

A record's evidence may carry a traceback (the engine's process crashed), an engine's version may name the file
it loaded, and a reproduction command may name a profile by its path. Before a record is written, every path
under a folder of this machine is written relative to it under a name that says what it was: the project's own
files relative to the project, Python's libraries as ``<site-packages>`` and ``<stdlib>``, a virtual
environment as ``<python>``, the temporary folder as ``<tmp>`` and the home folder as ``~``.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

from .schemas import RunRecord

PROJECT = Path(__file__).resolve().parents[1]


def _pattern() -> tuple[re.Pattern, dict[str, str]]:
    """One regular expression matching any of this machine's folders (the longest first, each only as a whole
    path component), and the name each is published under. The temporary and home folders are read on each call
    (a test, or a tool such as pytest's pytester, may move them while the process runs); the rest never change."""
    return _pattern_of(tempfile.gettempdir(), os.path.expanduser("~"))


@functools.lru_cache(maxsize=4)
def _pattern_of(temporary: str, home: str) -> tuple[re.Pattern, dict[str, str]]:
    """``_pattern`` with the temporary folder ``temporary`` and the home folder ``home``."""
    names: dict[str, str] = {}
    for folder, name in (
        (str(PROJECT), "."),
        *((path, "<site-packages>") for key in ("purelib", "platlib") if (path := sysconfig.get_paths().get(key))),
        (sysconfig.get_paths().get("stdlib", ""), "<stdlib>"),
        (sys.prefix if sys.prefix != sys.base_prefix else "", "<python>"),  # a virtual environment's folder
        (temporary, "<tmp>"),
        (home, "~"),
    ):
        for spelling in {folder, os.path.realpath(folder)} if folder else ():
            if len(spelling) > 1:  # never "/" itself
                names.setdefault(spelling, name)
    alternatives = "|".join(re.escape(folder) for folder in sorted(names, key=len, reverse=True))
    return re.compile(f"(?:{alternatives})(?![\\w.-])"), names


def scrub(text: str) -> str:
    """``text`` with every path under one of this machine's folders written under the folder's published name."""
    if not text:
        return text
    pattern, names = _pattern()
    return pattern.sub(lambda match: names[match.group(0)], text)


def scrub_record(record: RunRecord) -> RunRecord:
    """``record`` with what it publishes scrubbed: its message, each requirement's evidence, the engine's version and
    device, and the command that reproduces it."""
    results = {
        rid: result.model_copy(update={"evidence": scrub(result.evidence)}) for rid, result in record.results.items()
    }
    return record.model_copy(
        update={
            "message": scrub(record.message),
            "engine_version": scrub(record.engine_version),
            "device": scrub(record.device),
            "reproduce": scrub(record.reproduce),
            "results": results,
        }
    )
