"""Replaying a standalone vector file: a minimal reproduction a check wrote into a run folder, or any
file in the golden-vector format (``specconform replay FILE --engine E``).

Thinking-budget scenarios are driven beside the oracle exactly as the generated checks drive them,
so a reproduction fails with the fingerprint its check reported; rejection ``exact`` entries are
judged as the exact checks judge a case (the output contract, then token for token against the
oracle under the reference draws). A malformed file raises ``ValueError`` naming the
field, before the engine is touched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .checks.budget import describe, replay_scenario
from .checks.rejection import judge_exact
from .vectors import case_from_json

KINDS = ("thinking-budget", "rejection")
_SCENARIO_FIELDS = ("name", "requirements", "start_token_ids", "end_token_ids", "scope", "max_num_reqs", "steps")
_STEP_FIELDS = ("update", "num_draft_tokens", "draft_token_ids", "sampled_token_ids")
_EXACT_FIELDS = ("name", "requirements", "case", "expected_token_ids", "expected_num_emitted")


@dataclass
class Replayed:
    """One entry's verdict: ``fingerprint`` is empty when it replayed as expected."""

    name: str
    fingerprint: str
    evidence: str


def load(path: str | Path) -> dict:
    """The file's document, its structure checked; ``ValueError`` names what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{str(path)!r} is not a file")
    try:
        document = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("kind") not in KINDS:
        kind = document.get("kind") if isinstance(document, dict) else None
        raise ValueError(f"{path}: kind must be one of {KINDS}; got {kind!r}")
    group, fields = (
        ("scenarios", _SCENARIO_FIELDS) if document["kind"] == "thinking-budget" else ("exact", _EXACT_FIELDS)
    )
    entries = document.get(group)
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: {group} must be a non-empty list")
    for i, entry in enumerate(entries):
        missing = [f for f in fields if not isinstance(entry, dict) or f not in entry]
        if missing:
            raise ValueError(f"{path}: {group}[{i}] lacks {missing[0]!r}")
        if not entry["requirements"]:
            raise ValueError(f"{path}: {group}[{i}].requirements is empty")
        for j, step in enumerate(entry.get("steps", ())):
            absent = [f for f in _STEP_FIELDS if not isinstance(step, dict) or f not in step]
            if absent:
                raise ValueError(f"{path}: {group}[{i}].steps[{j}] lacks {absent[0]!r}")
    return document


def replay(engine, document: dict) -> list[Replayed]:
    """Replay every entry of a loaded document against ``engine``."""
    out = []
    if document["kind"] == "thinking-budget":
        for scenario in document["scenarios"]:
            divergence = replay_scenario(engine, scenario, tuple(scenario["requirements"]))
            if divergence is None:
                out.append(Replayed(scenario["name"], "", "forced rows equal the oracle's at every step"))
            else:
                out.append(Replayed(scenario["name"], divergence.fingerprint, describe(scenario, divergence)))
        return out
    for entry in document["exact"]:
        requirements = tuple(entry["requirements"])
        failure = judge_exact(engine, case_from_json(entry["case"]), requirements, entry.get("tie_break", "lowest"))
        if failure is None:
            out.append(Replayed(entry["name"], "", "tokens equal the oracle's under the reference draws"))
        else:
            out.append(Replayed(entry["name"], f"{failure[0]}/{failure[1]}", failure[2]))
    return out
