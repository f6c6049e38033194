"""Golden-vector replay (RUN-RECORD-2): each vector against an engine, a failure message or ""."""

from __future__ import annotations

from . import spec, vectors
from .oracle import rejection as rs


class _Update:
    def __init__(self, data):
        self.batch_size = data["batch_size"]
        self.removed = list(data["removed"])
        self.added = [vectors.Added(a["index"], a["budget"], a["prompt_token_ids"]) for a in data["added"]]
        self.moved = [tuple(m) for m in data["moved"]]


def _budget_scenario(engine, scenario) -> str:
    state = engine.budget_state(
        scenario["start_token_ids"],
        scenario["end_token_ids"],
        scenario["max_num_reqs"],
        scenario["scope"],
        max_spec_len=max((max(s["num_draft_tokens"], default=0) for s in scenario["steps"]), default=0),
    )
    for index, step in enumerate(scenario["steps"]):
        state.sync_batch(None if step["update"] is None else _Update(step["update"]))
        got = list(state.forced_tokens(step["num_draft_tokens"], step["draft_token_ids"]))
        if got != step["expected_forced"]:
            return f"step {index}: forced rows {got}, expected {step['expected_forced']}"
        state.update_state(step["sampled_token_ids"])
    return ""


def _budget_error(engine, entry) -> str:
    try:
        state = engine.budget_state(entry["start_token_ids"], entry["end_token_ids"], entry["max_num_reqs"])
        if entry["update"] is not None:
            state.sync_batch(_Update(entry["update"]))
    except ValueError as exc:
        if entry["expected_error_field"] in str(exc):
            return ""
        return f"error does not name {entry['expected_error_field']!r}: {exc}"
    return f"accepted invalid input; expected an error naming {entry['expected_error_field']!r}"


def _rejection_exact(engine, entry) -> str:
    tokens, num = engine.rejection_sample(vectors.case_from_json(entry["case"]))
    tokens, num = [list(map(int, r)) for r in tokens], [int(n) for n in num]
    if tokens != entry["expected_token_ids"] or num != entry["expected_num_emitted"]:
        expected = (entry["expected_token_ids"], entry["expected_num_emitted"])
        return f"token_ids {tokens} num_emitted {num}; expected {expected[0]} {expected[1]}"
    return ""


def _rejection_error(engine, entry) -> str:
    try:
        engine.rejection_sample(vectors.case_from_json(entry["case"]))
    except (ValueError, rs.InvalidCase) as exc:
        if entry["expected_error_field"] in str(exc):
            return ""
        return f"error does not name {entry['expected_error_field']!r}: {exc}"
    return f"accepted invalid input; expected an error naming {entry['expected_error_field']!r}"


def replay_checks():
    """``[(check name, requirement ids, runner(engine) -> failure message or "")]``."""
    groups = (
        ("thinking-budget", "scenarios", _budget_scenario),
        ("thinking-budget", "errors", _budget_error),
        ("rejection", "exact", _rejection_exact),
        ("rejection", "errors", _rejection_error),
    )
    checks = []
    for kind, group, replay_one in groups:
        for entry in spec.load_vectors(kind)[group]:
            name = f"vectors/{kind}/{entry['name']}"
            checks.append((name, entry["requirements"], lambda e, f=replay_one, v=entry: f(e, v)))
    return checks
