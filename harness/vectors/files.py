"""The checked-in vector files: ``specconform vectors --write`` regenerates them; ``specconform vectors`` (and the
test suite) checks that regenerating changes nothing. Each entry states what it needs of an engine's input domain."""

from __future__ import annotations

import json
from pathlib import Path

from .. import contract
from ..spec import vectors_dir
from .budget import budget_vectors
from .codec import case_from_json, decode_float
from .counting import counting_vectors
from .rejection import rejection_vectors

GENERATORS = {
    "thinking-budget": budget_vectors,
    "rejection": rejection_vectors,
    "counting": counting_vectors,
}


def entry_preconditions(kind: str, group: str, entry: dict) -> list[str]:
    """What a vector needs of an engine's input domain (``specconform.harness.contract.PRECONDITIONS``), read off its
    content: an engine whose contract excludes one is not run on the vector."""
    if kind == "thinking-budget":
        found = contract.budget_preconditions(entry)
    elif kind == "rejection" and group == "exact":
        case = case_from_json(entry["case"])
        found = contract.rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
    elif kind == "rejection" and group == "distributions" and entry["q"] is not None:
        q = [[decode_float(v) for v in row] for row in entry["q"]]
        found = contract.rejection_preconditions(entry["drafts"], [len(entry["drafts"])], q)
    elif kind == "counting" and group == "rows":
        found = contract.row_preconditions([entry["row"]], entry["vocab_size"])
    else:  # drafts sampled from q, invalid input judged under input-validation, metrics over well-formed rows
        found = set()
    return sorted(found)


def with_preconditions(kind: str, document: dict) -> dict:
    """``document`` with every entry that needs something of the input domain stating it (``preconditions``)."""
    for group, entries in document.items():
        if isinstance(entries, list):
            for entry in entries:
                needs = entry_preconditions(kind, group, entry)
                if needs:
                    entry["preconditions"] = needs
    return document


def render(kind: str) -> str:
    return json.dumps(with_preconditions(kind, GENERATORS[kind]()), indent=1, allow_nan=False) + "\n"


def write_all(directory: Path | None = None) -> list[Path]:
    directory = directory or vectors_dir()
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in GENERATORS:
        path = directory / f"{kind}.json"
        path.write_text(render(kind))
        paths.append(path)
    return paths


def stale(directory: Path | None = None) -> list[str]:
    """Kinds whose checked-in file differs from what the oracle generates now."""
    directory = directory or vectors_dir()
    out = []
    for kind in GENERATORS:
        path = directory / f"{kind}.json"
        if not path.exists() or path.read_text() != render(kind):
            out.append(kind)
    return out
