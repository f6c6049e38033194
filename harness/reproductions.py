"""Replaying a standalone vector file: a minimal reproduction a check wrote into a run folder, or any
file in the golden-vector format (``specconform replay FILE --engine E``).

Kinds and groups (specs/vectors/README.md, "Reproductions"):

- ``thinking-budget`` ``scenarios``: driven beside the oracle exactly as the generated checks drive them
  (``checks.budget.replay_scenario``), so a reproduction fails with the fingerprint its check reported;
- ``rejection`` ``exact``: judged as the exact checks judge a case (the output contract, then token for
  token against the oracle under the reference draws);
- ``rejection`` ``sampled_drafts``: the statistical test re-run as the distribution checks run it, with
  the seed, trials, α_test and declared power the entry states (``checks.vectors.sampled_drafts``);
- ``rejection`` ``acceptance_rule``: one fixed-draft test of the acceptance-rule check re-run alone, in its
  batch layout, with its seed, trials and α_test (``checks.rejection.replay_rule``);
- ``api``: the API check it names re-run with its seed against an API engine (the same requests); an
  optional ``before`` lists the checks the judge ran before it against the same servers, re-run first in
  that order with the same seed and their verdicts discarded (for a failure that needs the state they leave);
- ``check``: any check re-run whole at its seed, for a failure its check does not minimise (a pair of calls
  that together show it, such as ``rejection/counter-based-draws``).

A malformed file raises ``ValueError`` naming the field, before the engine is touched.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .checks.budget import describe, replay_scenario
from .checks.rejection import judge_exact, replay_rule
from .checks.vectors import sampled_drafts
from .core import FAIL, Context
from .vectors import case_from_json

KINDS = ("thinking-budget", "rejection", "api", "check")
_FIELDS = {
    "scenarios": ("name", "requirements", "start_token_ids", "end_token_ids", "scope", "max_num_reqs", "steps"),
    "exact": ("name", "requirements", "case", "expected_token_ids", "expected_num_emitted"),
    "sampled_drafts": ("name", "requirements", "p", "q", "expected_position_marginals", "expected_accepted_length"),
    "acceptance_rule": (
        "name",
        "requirements",
        "test",
        "target_logits",
        "q",
        "draft",
        "layout",
        "trials",
        "seed",
        "alpha_test",
    ),
}
_GROUPS = {"thinking-budget": ("scenarios",), "rejection": ("exact", "sampled_drafts", "acceptance_rule")}
_STEP_FIELDS = ("update", "num_draft_tokens", "draft_token_ids", "sampled_token_ids")
_API_FIELDS = ("check", "requirement", "seed", "requests")
_CHECK_FIELDS = ("check", "requirement", "seed")  # a whole check re-run at its seed: its cases are not minimised


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
    if document["kind"] in ("api", "check"):
        fields = _API_FIELDS if document["kind"] == "api" else _CHECK_FIELDS
        missing = [f for f in fields if f not in document]
        if missing:
            raise ValueError(
                f"{path}: {'an api' if document['kind'] == 'api' else 'a check'} reproduction lacks {missing[0]!r}"
            )
        if document["kind"] == "api" and "before" in document:
            _check_before(path, document["before"])
        return document
    groups = _GROUPS[document["kind"]]
    if not any(isinstance(document.get(group), list) and document[group] for group in groups):
        raise ValueError(f"{path}: {' or '.join(groups)} must be a non-empty list")
    for group in groups:
        for i, entry in enumerate(document.get(group) or ()):
            missing = [f for f in _FIELDS[group] if not isinstance(entry, dict) or f not in entry]
            if missing:
                raise ValueError(f"{path}: {group}[{i}] lacks {missing[0]!r}")
            if not entry["requirements"]:
                raise ValueError(f"{path}: {group}[{i}].requirements is empty")
            for j, step in enumerate(entry.get("steps", ())):
                absent = [f for f in _STEP_FIELDS if not isinstance(step, dict) or f not in step]
                if absent:
                    raise ValueError(f"{path}: {group}[{i}].steps[{j}] lacks {absent[0]!r}")
    return document


def _check_before(path: Path, before) -> None:
    """``ValueError`` unless ``before`` is a list of known check names."""
    from .checks import by_name

    known = by_name()
    if not isinstance(before, list) or not all(isinstance(name, str) and name in known for name in before):
        raise ValueError(f"{path}: before must be a list of known check names; got {before!r}")


def _first_failure(outcome, requirements) -> tuple[str, str]:
    """The fingerprint and evidence of the first failed requirement of ``requirements`` (empty when none)."""
    for rid in requirements:
        result = outcome.requirements.get(rid)
        if result is not None and result.status == FAIL:
            return result.fingerprint, result.evidence
    return "", outcome.message


def replay(engine, document: dict) -> list[Replayed]:
    """Replay every entry of a loaded document against ``engine``."""
    out = []
    if document["kind"] in ("api", "check"):
        from .checks import by_name

        checks = by_name()
        for name in document.get("before", ()):  # the state the judge's earlier checks left; verdicts discarded
            checks[name].run(engine, Context(profile=engine.profile, seed=int(document["seed"])))
        outcome = checks[document["check"]].run(engine, Context(profile=engine.profile, seed=int(document["seed"])))
        fingerprint, evidence = _first_failure(outcome, [document["requirement"]])
        return [Replayed(f"{document['check']} {document['requirement']}", fingerprint, evidence or outcome.message)]
    for scenario in document.get("scenarios", ()):
        divergence = replay_scenario(engine, scenario, tuple(scenario["requirements"]))
        if divergence is None:
            out.append(Replayed(scenario["name"], "", "forced rows equal the oracle's at every step"))
        else:
            out.append(Replayed(scenario["name"], divergence.fingerprint, describe(scenario, divergence)))
    for entry in document.get("exact", ()):
        requirements = tuple(entry["requirements"])
        case, tie_break = case_from_json(entry["case"]), entry.get("tie_break", "lowest")
        failure = judge_exact(engine, case, requirements, tie_break, alone=True)  # as its minimal case was judged
        if failure is None:
            out.append(Replayed(entry["name"], "", "tokens equal the oracle's under the reference draws"))
        else:
            out.append(Replayed(entry["name"], f"{failure[0]}/{failure[1]}", failure[2]))
    for entry in document.get("sampled_drafts", ()):
        requirements = tuple(entry["requirements"])
        outcome = sampled_drafts(engine, Context(profile=engine.profile), entry, requirements)
        fingerprint, evidence = _first_failure(outcome, requirements)
        out.append(Replayed(entry["name"], fingerprint, evidence or outcome.message.replace("\n", "; ")))
    for entry in document.get("acceptance_rule", ()):
        out.append(Replayed(entry["name"], *replay_rule(engine, engine.profile, entry)))
    return out
