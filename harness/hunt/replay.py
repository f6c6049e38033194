"""A hunt's violations replayed alone (``specconform hunt --replay RECORD --engine ENGINE``): each first violation's
request, as the record holds it (a canonical case with its seed and position), through an engine's canonical entry
point, judged by the same host rules as the hunt's reproduction.

The record's engine found the violation; the replay asks whether another build of it (a patched copy, a fixed
release) or another engine still emits what breaks the invariant on that very request and draw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core import UsageError
from .invariants import request_violations


@dataclass(frozen=True)
class Replay:
    """One recorded violation replayed: the ``invariant`` the hunt found broken, what the record says the engine
    emitted (``recorded``), what the replayed engine emits now (``emitted``, its first ``num_emitted`` ids) and the
    invariants that output breaks (``violations``, empty where it breaks none)."""

    invariant: str
    recorded: list[int]
    emitted: list[int]
    violations: list[str]

    @property
    def reproduced(self) -> bool:
        return self.invariant in self.violations


def replay_alone(engine, case, one_hot: bool) -> tuple[list[int], list[str]]:
    """``case`` (one request) through ``engine.rejection_sample``: the ids it emits and the invariants they break
    (``request_violations``; ``one_hot``: the request was drawn without its draft probabilities)."""
    tokens, num = engine.rejection_sample(case)
    emitted = [int(t) for t in tokens[0][: int(num[0])]]
    return emitted, request_violations(case, tokens[0], int(num[0]), one_hot)


def minimal_case(engine, case, invariant: str, one_hot: bool) -> dict | None:
    """``case`` (one request that breaks ``invariant`` replayed alone through ``engine``) shrunk by the project's
    shrinker (``shrink.minimise`` over ``cases.rejection.smaller_cases``: its last drafts dropped) while the engine,
    run on the smaller case alone, still breaks ``invariant``: ``{"case", "token_ids", "num_emitted"}`` of the
    smallest such case (``case`` JSON, the ids the engine emits for it), or None where no smaller case breaks it.
    The draws of a request are keyed by its seed and position, so a row kept sees the draws it saw."""
    from ..cases.rejection import smaller_cases
    from ..shrink import minimise
    from ..vectors.codec import case_json

    def still_breaks(candidate) -> bool:
        try:
            candidate.validate()
            return invariant in replay_alone(engine, candidate, one_hot)[1]
        except Exception:  # noqa: BLE001 - invalid, or the engine fails otherwise: not the violation to follow
            return False

    minimal = minimise(case, smaller_cases, still_breaks)
    if minimal is case:
        return None
    tokens, num = engine.rejection_sample(minimal)
    return {"case": case_json(minimal), "token_ids": [int(t) for t in tokens[0]], "num_emitted": int(num[0])}


def read_violations(path: str | Path) -> list[dict]:
    """The ``violations`` of the hunt record at ``path``; a ``UsageError`` naming the file and what is wrong where it
    cannot be read, holds none, or holds one whose draws were its whole launch's (no seed: it cannot replay alone)."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"--replay {path}: cannot read a hunt record ({exc})") from None
    violations = record.get("violations") if isinstance(record, dict) else None
    if not violations:
        raise UsageError(f"--replay {path}: the record holds no violations to replay")
    for n, violation in enumerate(violations):
        if not isinstance(violation, dict) or not {"case", "invariant", "token_ids", "num_emitted"} <= set(violation):
            raise UsageError(f"--replay {path}: violations[{n}] is not a hunt violation (case, invariant, token_ids)")
        if violation.get("seed") is None:
            raise UsageError(
                f"--replay {path}: violations[{n}] has seed None: its engine drew from its launch's generator, so "
                "the request alone does not redraw it"
            )
    return violations


def replay(path: str | Path, engine) -> list[Replay]:
    """Every violation of the hunt record at ``path`` replayed alone through ``engine``."""
    from ..vectors import case_from_json

    replays = []
    for violation in read_violations(path):
        case = case_from_json(violation["case"])
        emitted, violations = replay_alone(engine, case, one_hot=case.draft_probs is None)
        recorded = violation["token_ids"][: violation["num_emitted"]]
        replays.append(Replay(violation["invariant"], recorded, emitted, violations))
    return replays
