"""Golden-vector replay (RUN-RECORD-2): each vector is one case for the requirements it names.

A vector that replays exactly exercises all of them; one that does not is a failure of its first
(primary) requirement, and its other requirements stay NOT_RUN: the case no longer says anything
about them.
"""

from __future__ import annotations

from collections.abc import Callable

from specs.interface import BatchUpdate

from .. import spec, vectors
from ..core import Check, Context, Outcome, Tally
from ..oracle import rejection as rs


def _budget_scenario(engine, scenario) -> tuple[str, str] | None:
    state = engine.budget_state(
        scenario["start_token_ids"],
        scenario["end_token_ids"],
        scenario["max_num_reqs"],
        scenario["scope"],
        max_spec_len=max((max(s["num_draft_tokens"], default=0) for s in scenario["steps"]), default=0),
    )
    for index, step in enumerate(scenario["steps"]):
        try:
            state.sync_batch(None if step["update"] is None else BatchUpdate.from_json(step["update"]))
        except ValueError as exc:
            return "valid-update-rejected", f"step {index}: the valid update was rejected: {exc}"
        got = [int(x) for x in state.forced_tokens(step["num_draft_tokens"], step["draft_token_ids"])]
        judged = [i for i, token in enumerate(step["expected_forced"]) if token is not None]  # None: discarded
        if len(got) != len(step["expected_forced"]) or any(got[i] != step["expected_forced"][i] for i in judged):
            return "forced-rows-differ", f"step {index}: forced rows {got}, expected {step['expected_forced']}"
        state.update_state(step["sampled_token_ids"])
    return None


def _expected_error(entry, call: Callable[[], object], errors: tuple[type[Exception], ...]) -> tuple[str, str] | None:
    field_name = entry["expected_error_field"]
    try:
        call()
    except errors as exc:
        if field_name in str(exc):
            return None
        return "error-does-not-name-field", f"error does not name {field_name!r}: {exc}"
    return "invalid-input-accepted", f"accepted invalid input; expected an error naming {field_name!r}"


def _budget_error(engine, entry) -> tuple[str, str] | None:
    def call():
        state = engine.budget_state(entry["start_token_ids"], entry["end_token_ids"], entry["max_num_reqs"])
        if entry["update"] is not None:
            state.sync_batch(BatchUpdate.from_json(entry["update"]))

    return _expected_error(entry, call, (ValueError,))


def _rejection_exact(engine, entry) -> tuple[str, str] | None:
    try:
        tokens, num = engine.rejection_sample(vectors.case_from_json(entry["case"]))
    except (ValueError, rs.InvalidCase) as exc:
        return "valid-input-rejected", f"the valid case was rejected: {exc}"
    tokens, num = [list(map(int, r)) for r in tokens], [int(n) for n in num]
    if tokens != entry["expected_token_ids"] or num != entry["expected_num_emitted"]:
        return (
            "tokens-differ",
            f"token_ids {tokens} num_emitted {num}; "
            f"expected {entry['expected_token_ids']} {entry['expected_num_emitted']}",
        )
    return None


def _rejection_error(engine, entry) -> tuple[str, str] | None:
    return _expected_error(
        entry, lambda: engine.rejection_sample(vectors.case_from_json(entry["case"])), (ValueError, rs.InvalidCase)
    )


_GROUPS = (
    ("thinking-budget", "scenarios", _budget_scenario, ("budget",)),
    ("thinking-budget", "errors", _budget_error, ("budget",)),
    ("rejection", "exact", _rejection_exact, ("rejection",)),
    ("rejection", "errors", _rejection_error, ("rejection", "input-validation")),
)


def vector_checks(registry: dict) -> list[Check]:
    """One check per golden vector, in file order."""
    checks = []
    for kind, group, replay_one, needs in _GROUPS:
        for entry in spec.load_vectors(kind)[group]:
            requirements = tuple(entry["requirements"])

            def run(engine, ctx: Context, replay_one=replay_one, entry=entry, requirements=requirements) -> Outcome:
                tally = Tally(requirements)
                failure = replay_one(engine, entry)
                if failure:
                    tally.violated(requirements[0], failure[0], failure[1])
                else:
                    tally.exercised(*requirements)
                return tally.outcome("replayed exactly" if not failure else "the vector did not replay")

            extra = ("reference-draws",) if "RS-RNG-3" in requirements else ()
            checks.append(
                Check(
                    f"vectors/{kind}/{entry['name']}",
                    registry[requirements[0]].cls,
                    requirements,
                    needs + extra,
                    entry.get("description") or "golden vector replay",
                    run,
                )
            )
    return checks
