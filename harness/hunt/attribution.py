"""A hunt's violations attributed as every other failure is (RUN-FINDING-1): by their case, not by the invariant that
met them.

An invariant names the requirement it follows from (``invariants.INVARIANTS``), but that is what the invariant was
written for, not what failed. Each recorded violation's case (one request, canonical) and what the engine emitted
for it are judged alone by the oracle (``oracle.rejection_judge.violations``; under the engine's own draws too where
the oracle computes them, ``oracle.draws_exact``), and the violation is filed under the lowest requirement its case
violates (``rejection_judge.owner``). Violations whose cases are filed under one requirement are one finding,
listing every invariant that saw it (RUN-FINDING-2).

A token with ``p = 0`` emitted as the sample of a rejected row breaks RS-PROB-3 whatever decides the row. Where the
row's residual ``max(p - q, 0)`` has no mass within rounding (``RESIDUAL_TOLERANCE``), the row is decided by
RS-PROB-4 (the token is a sample of ``p``), which a token of ``p = 0`` breaks too: the empty residual is the feature
of the case that the failure meets, so it is RS-PROB-4's, as the oracle names an empty residual's divergence under
the reference draws (``rejection_judge._sampled``). Where the oracle finds nothing in the recorded case (none was
recorded, or the engine's output breaks no rule the oracle can judge without the engine's draws), the finding keeps
the invariant's requirement and says why.

A case is judged as small as the hunt could make it: where the request replays alone, the hunt shrank it with the
project's shrinker while the engine still broke the invariant (``replay.minimal_case``, kept as the violation's
``minimal``). Attributing runs no engine: a record is judged as it was written (``--render``), and a violation that
does not replay alone (its draws are its launch's) on its recorded request.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np

from ..oracle import draws_exact
from ..oracle import rejection as rs
from ..oracle import rejection_judge as rj
from .invariants import INVARIANTS

# a residual with at most this mass (of p's 1) is empty within the rounding an engine's float32 leaves (RS-RNG-3)
RESIDUAL_TOLERANCE = draws_exact.TOLERANCE
_REQUIREMENT = {inv.name: inv.requirement for inv in INVARIANTS}


@dataclass(frozen=True)
class HuntFinding:
    """One defect a hunt met: the ``requirement`` and ``mode`` its case violates, the oracle's ``evidence``, the
    invariants that saw it (``name (requirement)``), the indices of its violations in the record, its first case in
    one line, the command that replays it, and ``unjudged``: why the oracle could not judge it ("" where it did; the
    finding then keeps the invariant's requirement)."""

    requirement: str
    mode: str
    evidence: str
    invariants: tuple[str, ...]
    violations: tuple[int, ...]
    case: str
    replay: str
    unjudged: str = ""

    def line(self) -> str:
        """The finding as reports show it: requirement and mode, the case in one line, the replay command."""
        seen = ", ".join(self.invariants)
        how = f"kept under the invariant's requirement: {self.unjudged}" if self.unjudged else self.evidence
        return f"{self.requirement} ({self.mode}), seen by {seen}: {self.case}; {how} [replay: `{self.replay}`]"

    def to_json(self) -> dict:
        return asdict(self)


def scheme_of(profile) -> str | None:
    """The draw scheme the oracle judges an engine's seeded requests under: its profile's ``draws``, ``reference``
    with the capability ``reference-draws``, else None (its draws are its own)."""
    if profile.draws:
        return profile.draws
    return "reference" if "reference-draws" in profile.capabilities else None


def _output(case: rs.RejectionCase, token_ids: list[int], num_emitted: int) -> tuple[np.ndarray, np.ndarray]:
    """``(tokens [1, W] int64, num [1] int64)``: the emitted ids, read through ``num_emitted`` as the hunt reads
    them, then -1 placeholders (W at least ``K + 1``)."""
    width = max(int(case.num_draft_tokens[0]) + 1, num_emitted)
    row = list(token_ids[: max(num_emitted, 0)])
    return np.array([row + [-1] * (width - len(row))], dtype=np.int64), np.array([num_emitted], dtype=np.int64)


def residual_mass(case: rs.RejectionCase, j: int) -> float:
    """The mass of row ``j``'s residual ``max(p - q, 0)`` (float64; ``q`` one-hot at the draft without
    ``draft_probs``) of the one request of ``case``; ``j`` a draft row."""
    p = rs.target_probs(case.target_logits[j], float(case.temperature[0]))
    if case.draft_probs is None:
        q = np.zeros(case.vocab_size)
        q[int(case.draft_token_ids[j])] = 1.0
    else:
        q = np.asarray(case.draft_probs[j], dtype=np.float64)
    return float(np.maximum(p - q, 0.0).sum())


def _deciding_rule(case: rs.RejectionCase, row: list[int], n: int, found: rj.Violation) -> rj.Violation:
    """``found`` where it is a token of ``p = 0`` sampled at a rejected row (the last emitted, on a draft row) whose
    residual is empty: RS-PROB-4's, the rule that decides that row; any other violation as it is."""
    position = re.search(r"position (\d+):", found.evidence) if found.mode == "zero-probability-token" else None
    if position is None or int(position.group(1)) != n - 1 or n - 1 >= int(case.num_draft_tokens[0]):
        return found
    j = n - 1
    mass = residual_mass(case, j)
    if mass > RESIDUAL_TOLERANCE:
        return found
    evidence = (
        f"row {j} rejected draft {int(case.draft_token_ids[j])} and its residual max(p - q, 0) holds {mass:.2g} of "
        f"mass (empty within rounding, at most {RESIDUAL_TOLERANCE:g}), so its token is a sample of p whatever the "
        f"draws (RS-PROB-4); {row[j]} has p = 0 "
        "(RS-PROB-3 forbids it too)"
    )
    return rj.Violation("RS-PROB-4", "empty-residual-emits-zero-probability-token", evidence, 0)


def judge(violation: dict, scheme: str | None) -> tuple[rj.Violation | None, str]:
    """``(owner, why unjudged)`` of one recorded violation (``Violation.to_json`` form): its case and output judged
    alone, compared with the oracle token for token under ``scheme``'s draws where the oracle has them (greedy rows
    always). ``owner`` None where the oracle finds nothing, with the reason."""
    from ..vectors import case_from_json

    if not violation.get("case"):
        return None, "the record holds no case for it"
    try:
        case = case_from_json(violation["case"])
        case.validate()
    except (KeyError, TypeError, ValueError) as exc:  # InvalidCase is a ValueError
        return None, f"the recorded case is not a valid case ({type(exc).__name__}: {exc})"
    tokens, num = _output(case, violation["token_ids"], int(violation["num_emitted"]))
    # an unseeded sampled request has no draws to compare under: its output contract alone is judged
    compare = (True if scheme == "reference" else "greedy") if case.seeds is not None else False
    found = rj.violations(case, tokens, num, compare=compare, misread=False)
    if scheme in draws_exact.SCHEMES and scheme != "reference" and case.seeds is not None:
        judged = draws_exact.judge_case(scheme, case, tokens, num)
        found += [rj.Violation(m.requirement, m.mode, m.evidence, m.request) for m in judged.mismatches]
    row = [int(t) for t in tokens[0]]
    found = [_deciding_rule(case, row, int(num[0]), v) for v in found]
    if not found:
        draws = f"under the {scheme} draws" if scheme else "without the engine's draws (the oracle does not have them)"
        return None, f"the oracle, {draws}, finds no rule broken by the recorded output {row[: int(num[0])]}"
    return rj.owner(found), ""


def case_line(violation: dict) -> str:
    """The recorded case and output in one line a person can read."""
    if not violation.get("case"):
        return f"launch {violation['launch']}, request {violation['request']} (no case recorded)"
    from ..vectors import case_from_json

    case = case_from_json(violation["case"])
    q = "q given" if case.draft_probs is not None else "one-hot (no q)"
    forced = [] if case.forced_token_ids is None else [int(t) for t in case.forced_token_ids if t >= 0]
    emitted = violation["token_ids"][: violation["num_emitted"]]
    seed = "no seed (drawn by its launch's generator)" if violation["seed"] is None else f"seed {violation['seed']}"
    return (
        f"K={int(case.num_draft_tokens[0])}, V={case.vocab_size}, T={float(case.temperature[0]):.3g}, "
        f"drafts {case.draft_token_ids.tolist()}, {q}{f', forced {forced}' if forced else ''}, "
        f"{seed}, position {violation['position']}: emitted {emitted}"
        + (f" (shrunk from K={violation['shrunk_from']})" if "shrunk_from" in violation else "")
    )


def smallest(violation: dict) -> dict:
    """The violation as it is judged: with its ``minimal`` case and output in place of the recorded ones where the
    hunt shrank it (``replay.minimal_case``), marked ``shrunk_from`` (the recorded drafts)."""
    minimal = violation.get("minimal")
    if not minimal:
        return violation
    return violation | minimal | {"shrunk_from": violation["case"]["num_draft_tokens"][0]}


def replay_command(violation: dict, record: dict, record_path: str) -> str:
    """The command that meets the violation again: the request replayed alone where its draws are its own (it has a
    seed), else the hunt run again with the record's seed, which redraws every launch."""
    engine = record.get("engine_spec") or "ENGINE"  # a record written before it was kept
    if violation.get("seed") is not None:
        return f"specconform hunt --replay {record_path} --engine {engine}"
    rows = record["devices"][0]["rows_per_launch"] if record.get("devices") else 1
    return (
        f"specconform hunt --engine {engine} --seed {record['seed']} --draws {record['draws']} --rows {rows} "
        f"--vocab {record['vocab_size']} --report-dir DIR"
    )


def hunt_findings(record: dict, record_path: str) -> list[HuntFinding]:
    """The findings of a hunt record (``HuntRecord.to_json`` form): its violations judged alone and grouped by the
    requirement they are filed under, lowest in the order of the requirements first."""
    from .. import requirement_order

    scheme = record.get("scheme")
    groups: dict[str, list] = {}
    for index, recorded in enumerate(record.get("violations") or []):
        violation = smallest(recorded)
        owner, unjudged = judge(violation, scheme)
        invariant = violation["invariant"]
        requirement = owner.requirement if owner else _REQUIREMENT.get(invariant, invariant)
        groups.setdefault(requirement, []).append((index, violation, owner, unjudged))
    found = []
    for requirement, members in groups.items():
        _, first, owner, unjudged = next((m for m in members if m[2] is not None), members[0])
        invariants = dict.fromkeys(
            f"{v['invariant']} ({_REQUIREMENT.get(v['invariant'], '?')})" for _, v, _, _ in members
        )
        found.append(
            HuntFinding(
                requirement=requirement,
                mode=owner.mode if owner else first["invariant"],
                evidence=owner.evidence if owner else "",
                invariants=tuple(invariants),
                violations=tuple(m[0] for m in members),
                case=case_line(first),
                replay=replay_command(first, record, record_path),  # replays the case as it was met
                unjudged=unjudged,
            )
        )
    return sorted(found, key=lambda f: requirement_order.sort_key(f.requirement))
