"""Golden-vector replay (RUN-RECORD-2): every group of every vector file, each vector one case for the
requirements it names.

A vector that replays exactly exercises all of them; one that does not is a failure of its first
(primary) requirement, and its other requirements stay NOT_RUN: the case no longer says anything
about them. The statistical groups (``distributions``, ``sampled_drafts``) are judged like the
distribution checks: sized by the declared power, and a test that cannot certify the declared deviation
counts for nothing (NOT_RUN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from specconform.specs.interface import BatchUpdate

from .. import shrink, spec, stats, vectors
from ..cases.budget import BudgetScenario
from ..core import Check, Context, Outcome, Tally
from ..oracle import metrics_judge as mj
from ..oracle import rejection as rs
from . import budget, counting, rejection
from .rejection import minimal as rejection_minimal
from .rejection.distribution import GATE_TRIALS, trial_case
from .rejection.minimal import comparable


def _budget_scenario(engine, ctx: Context, entry, requirements) -> Outcome:
    """A ``scenarios`` vector, driven as the generated budget checks drive theirs (``budget.replay_scenario``). A
    failing vector is re-judged, not blamed on its label: it is minimised and goes to the requirement its minimal
    case isolates (``budget.record_divergence``); where that is not one the vector names, the failure is recorded
    under it and the vector's requirement reads BLOCKED. A rejected valid update is a failure of its own."""
    tally = Tally(requirements)
    vector = {
        **entry,
        "max_spec_len": entry.get(
            "max_spec_len", max((max(s["num_draft_tokens"], default=0) for s in entry["steps"]), default=0)
        ),
    }
    divergence = budget.replay_scenario(engine, vector, requirements)
    if divergence is None:
        tally.exercised(*requirements)
        return tally.outcome("replayed exactly")
    scenario = BudgetScenario.from_vector(vector)
    if scenario is None or divergence.mode == "valid-update-rejected":
        tally.violated(divergence.requirement, divergence.mode, budget.describe(vector, divergence))
    else:
        budget.record_divergence(engine, ctx.profile, tally, requirements, scenario, vector, divergence, entry["name"])
    return tally.outcome("the vector did not replay")


def _expected_error(
    entry, call: Callable[[], object], errors: tuple[type[Exception], ...], profile
) -> tuple[str, str] | None:
    """The error an invalid vector must raise names its field: the spec's name, or one of the engine's own names
    for it that its profile declares (``field_names``), since an engine's users know its fields by those."""
    names = profile.names_of(entry["expected_error_field"])
    shown = " or ".join(repr(n) for n in names)
    try:
        call()
    except errors as exc:
        if any(name in str(exc) for name in names):
            return None
        return "error-does-not-name-field", f"error does not name {shown}: {exc}"
    return "invalid-input-accepted", f"accepted invalid input; expected an error naming {shown}"


def _budget_error(engine, profile, entry) -> tuple[str, str] | None:
    def call():
        state = engine.budget_state(entry["start_token_ids"], entry["end_token_ids"], entry["max_num_reqs"])
        if entry["update"] is not None:
            state.sync_batch(BatchUpdate.from_json(entry["update"]))

    return _expected_error(entry, call, (ValueError,), profile)


def _rejection_exact(engine, ctx: Context, entry, requirements) -> Outcome:
    """An ``exact`` vector: the engine's output, read in the layout the profile declares, against the vector's. A
    vector that does not replay is re-judged as the generated checks judge a failing case
    (``rejection.minimal``: shrunk while the engine diverges from the oracle, judged alone) and recorded under the
    lowest requirement its minimal case violates, not its label; the vector's first requirement then reads
    BLOCKED where that is not one it names."""
    tally = Tally(requirements)
    case = vectors.case_from_json(entry["case"])
    try:
        out_tokens, out_num = rejection.sample_output(engine, ctx.profile, case)
        tokens, num = [list(map(int, r)) for r in out_tokens], [int(n) for n in out_num]
        failed = tokens != entry["expected_token_ids"] or num != entry["expected_num_emitted"]
        shown = f"token_ids {tokens} num_emitted {num}"
    except (ValueError, rs.InvalidCase) as exc:
        failed, shown = True, f"the valid case was rejected: {exc}"
    if not failed:
        tally.exercised(*requirements)
        return tally.outcome("replayed exactly")
    tie_break = ctx.profile.tie_break
    attributed = rejection_minimal.attribute(
        engine, ctx.profile, case, True, tie_break, lambda candidate: comparable(candidate, tie_break)
    )
    owner = attributed.owner
    evidence = (
        f"{shown}; expected {entry['expected_token_ids']} {entry['expected_num_emitted']}; its minimal case "
        f"({len(attributed.minimal.temperature)} requests, K = {attributed.minimal.num_draft_tokens.tolist()}) "
        f"fails {owner.requirement}: {owner.evidence}"
    )
    document = rejection_minimal.document(case, attributed, requirements, tie_break)
    rejection_minimal.record(tally, ctx.profile, requirements, requirements[0], owner, evidence, document)
    return tally.outcome("the vector did not replay")


def _rejection_error(engine, profile, entry) -> tuple[str, str] | None:
    return _expected_error(
        entry,
        lambda: engine.rejection_sample(vectors.case_from_json(entry["case"])),
        (ValueError, rs.InvalidCase),
        profile,
    )


def _count_row(engine, profile, entry) -> tuple[str, str] | tuple[str, str, str] | None:
    """``_exactly``'s failure of a counting row: ``(mode, evidence)``, or ``(mode, evidence, requirement)`` where
    its minimal row fails another requirement; None where it replays."""
    num, broken, out_of_vocab = (
        np.asarray(x) for x in engine.count_emitted(np.array([entry["row"]]), entry["vocab_size"])
    )
    got = (int(num[0]), bool(broken[0]), bool(out_of_vocab[0]))
    problems = entry["expected_problems"]
    expected = (entry["expected_num_emitted"], "hole" in problems, "out_of_vocab" in problems)
    if got != expected:
        shown = f"row {entry['row']}: (num_emitted, broken_prefix, out_of_vocab) = {got}, expected {expected}"
        # shrunk while the answer breaks the counting rules, then judged alone (RUN-FINDING-1)
        owner = counting.attribute_row(engine, list(entry["row"]), entry["vocab_size"], profile)
        return ("count-differs", shown) if owner is None else (owner[1], f"{shown}; {owner[2]}", owner[0])
    return None


def _metrics(engine, profile, entry) -> tuple[str, str, str] | None:
    """The aggregate metrics the engine interface returns, against the vector's ``expected`` ones; the
    vector's per-step and raw counts are not observable through ``acceptance_metrics``. Only what the engine
    produced is judged (the profile's ``derived`` are the adapter's values); a difference is blamed on the
    vector's trimming requirement (AC-METRIC-4, AC-STOP-1: which tokens count at all) where it names one and
    counting every token explains it, else on the requirement that defines the metric that differs."""
    steps = [(s["num_draft_tokens"], s["row"], s["commit_limit"]) for s in entry["steps"]]
    got = engine.acceptance_metrics(steps, entry["eos_token_ids"])
    expected = entry["expected"]
    differ = {}
    for name, rid in (("acceptance_rate", "AC-METRIC-1"), ("mean_acceptance_length", "AC-METRIC-2")):
        if name not in profile.derived and not np.isclose(got[name], expected[name], rtol=1e-9, atol=1e-12):
            differ[rid] = f"{name} {got[name]}, expected {expected[name]}"
    per_position = [int(x) for x in got["accepted_per_position"]]
    if "accepted_per_position" not in profile.derived and per_position != expected["accepted_per_position"]:
        differ["AC-METRIC-3"] = f"accepted_per_position {per_position}, expected {expected['accepted_per_position']}"
    if not differ:
        return None
    # shrunk while the metrics differ, then judged alone: recorded under the lowest requirement it violates
    judged = [name for name in mj.METRICS if name not in profile.derived]
    eos = entry["eos_token_ids"]

    def differs(candidate) -> bool:
        return bool(mj.metric_violations(candidate, eos, engine.acceptance_metrics(candidate, eos), judged, 4))

    small = shrink.minimise(steps, mj.smaller_streams, differs)
    found = mj.owner(mj.metric_violations(small, eos, engine.acceptance_metrics(small, eos), judged, 4))
    blame = found[0] if found else entry["requirements"][0]
    shown = f"; minimised to {len(small)} steps {small}: {found[2]}" if found else ""
    return "metrics-differ", "; ".join(differ.values()) + shown, blame


def _exactly(replay_one: Callable) -> Callable[..., Outcome]:
    """A replay that matches or not: the vector exercises all its requirements, or fails its first.
    ``replay_one(engine, profile, entry)`` returns ``(mode, evidence)`` of a failure or None; the profile
    gives the variants the engine declares (the rejection layout, RS-LAYOUT-3)."""

    def run(engine, ctx: Context, entry, requirements) -> Outcome:
        tally = Tally(requirements)
        failure = replay_one(engine, ctx.profile, entry)
        if failure:  # (mode, evidence) of the vector's first requirement, or (mode, evidence, requirement)
            owner = failure[2] if len(failure) > 2 else requirements[0]
            if owner not in requirements:  # the vector's minimal case fails another: its own is blocked
                tally.blocked(requirements[0], owner, f"its minimal case fails {owner} ({failure[0]})")
            tally.violated(owner, failure[0], failure[1], finding=owner if owner != requirements[0] else "")
        else:
            tally.exercised(*requirements)
        return tally.outcome("replayed exactly" if not failure else "the vector did not replay")

    return run


def _vector_probs(rows) -> np.ndarray:
    return np.array(rows, dtype=np.float64)


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p)


def _fixed_drafts(engine, ctx: Context, entry, requirements) -> Outcome:
    """Statistical replay of a ``distributions`` vector: drafts fixed, the emitted row's distribution over
    the vector's outcomes (``expected_distribution``) G-tested and certified against the declared power;
    an emitted row outside the outcomes is a sample on a zero-probability cell (STAT-TEST-2)."""
    target = stats.Power(ctx.deviation, ctx.power)
    p = _vector_probs(entry["p"])  # [K + 1, V]
    K, V = len(entry["drafts"]), p.shape[1]
    outcomes = entry["expected_distribution"]
    probs = np.array([o["probability"] for o in outcomes] + [0.0])  # [outcomes + 1]: the last cell is "other"
    codes = np.array([_row_code(o["emitted"], K, V) for o in outcomes])  # [outcomes], int
    trials = min(stats.trials_needed(probs, target, ctx.alpha), ctx.trials)
    rng = np.random.default_rng(ctx.seed)
    counts = np.zeros(len(probs))
    q = None if entry["q"] is None else _vector_probs(entry["q"])

    def batch(b: int, rng: np.random.Generator = rng) -> rs.RejectionCase:
        return rs.RejectionCase(
            np.tile(_log(p), (b, 1)),
            np.tile(entry["drafts"], b),
            np.full(b, K),
            np.ones(b),
            None if q is None else np.tile(q, (b, 1)),
            seeds=rng.integers(0, 2**62, size=b),
            positions=np.zeros(b, dtype=np.int64),
        )

    tally = Tally(requirements)
    few = batch(GATE_TRIALS, np.random.default_rng(ctx.seed + 1))  # the trials' own draws stay as they were
    if rejection_minimal.gate(engine, ctx.profile, few, tally, requirements[0], {}, entry["name"]):
        return tally.outcome("its rows fail before the statistics")
    done = 0
    while done < trials:
        b = min(65536, trials - done)
        case = batch(b)
        tokens = rejection.sample_output(engine, ctx.profile, case)[0][:, : K + 1]
        seen = _row_codes(tokens, V)[:, None] == codes[None, :]  # [b, outcomes]
        cells = np.where(seen.any(axis=1), seen.argmax(axis=1), len(outcomes))
        counts += np.bincount(cells, minlength=len(probs))
        done += b
    judgement = stats.judge(stats.g_test(counts, probs, ctx.alpha), probs, target)
    more = batch(rejection_minimal.SECOND_LOOK_TRIALS, np.random.default_rng(ctx.seed + 1))
    if judgement.failed and rejection_minimal.second_look(
        engine, ctx.profile, more, tally, requirements[0], {}, entry["name"]
    ):
        return tally.outcome("failed; its trials part from the oracle exactly")
    line = judgement.line(f"{entry['name']}: emitted rows")
    if judgement.failed:
        tally.violated(requirements[0], "emitted-row-distribution", line)
    elif judgement.counted:
        tally.exercised(*requirements)
    return tally.outcome(line, p_value=judgement.result.p_value, alpha=ctx.alpha, trials=trials)


def _row_code(row, K: int, V: int) -> int:
    padded = list(row) + [-1] * (K + 1 - len(row))
    return sum((t + 1) * (V + 1) ** j for j, t in enumerate(padded))


def _row_codes(tokens: np.ndarray, V: int) -> np.ndarray:
    """One integer per row of ``tokens [B, K + 1]`` (int, -1 padded); ids outside [-1, V) map to -1."""
    bad = ((tokens < -1) | (tokens >= V)).any(axis=1)
    weights = (V + 1) ** np.arange(tokens.shape[1], dtype=np.int64)
    return np.where(bad, -1, ((tokens + 1) * weights).sum(axis=1))


def distribution_case(entry: dict) -> stats.DistributionCase:
    """The ``stats.DistributionCase`` of a ``sampled_drafts`` entry: its ``target_logits`` at its
    ``temperature`` where it states them (a reproduction does), else ``log p`` at temperature 1; drafts
    verified with ``q`` unless ``pass_q`` is false; the expected values are the entry's."""
    logits = _log(_vector_probs(entry["p"])) if "target_logits" not in entry else _vector_probs(entry["target_logits"])
    return stats.DistributionCase(
        entry["name"],
        logits,
        _vector_probs(entry["q"]),
        float(entry.get("temperature", 1.0)),
        bool(entry.get("pass_q", True)),
        expected_positions=_vector_probs(entry["expected_position_marginals"]),
        expected_lengths=_vector_probs(entry["expected_accepted_length"]),
    )


def sampled_drafts(engine, ctx: Context, entry, requirements) -> Outcome:
    """Statistical replay of a ``sampled_drafts`` entry: drafts drawn from ``q``, every position tested
    against ``expected_position_marginals`` and the accepted length against ``expected_accepted_length``,
    each judged against the declared power (``rejection.judge_report``). A reproduction states the run it
    came from (``seed``, ``trials``, ``alpha_test``, ``deviation``, ``power``) and is re-run with exactly
    that; a golden vector is sized from ``ctx``."""
    case = distribution_case(entry)
    ctx = replace(
        ctx, deviation=float(entry.get("deviation", ctx.deviation)), power=float(entry.get("power", ctx.power))
    )
    target = stats.Power(ctx.deviation, ctx.power)
    alpha_test = float(entry.get("alpha_test", stats.sidak(ctx.alpha, stats.tests_per_case(case.K))))
    trials = int(entry.get("trials", stats.planned_trials(case, target, alpha_test, ctx.trials)))
    tally = Tally(requirements)
    few = trial_case(case, GATE_TRIALS, int(entry.get("seed", ctx.seed)))
    if rejection_minimal.gate(engine, ctx.profile, few, tally, requirements[0], {}, entry["name"]):
        return tally.outcome("its rows fail before the statistics")
    report = rejection.run_distribution(engine, ctx, case, trials, alpha_test, int(entry.get("seed", ctx.seed)))
    more = trial_case(case, rejection_minimal.SECOND_LOOK_TRIALS, int(entry.get("seed", ctx.seed)))
    if report.violations() and rejection_minimal.second_look(
        engine, ctx.profile, more, tally, requirements[0], {}, entry["name"]
    ):
        return tally.outcome("failed; its trials part from the oracle exactly")
    rejection.judge_report(report, requirements, tally)
    tests = [j for j in report.positions if j.result.trials] + [report.accepted_length]
    return tally.outcome(
        "\n".join(report.position_lines()),
        p_value=min(t.result.p_value for t in tests),
        alpha=alpha_test,
        trials=trials,
    )


_GROUPS = (
    ("thinking-budget", "scenarios", _budget_scenario, ("budget",)),
    ("thinking-budget", "errors", _exactly(_budget_error), ("budget",)),
    ("rejection", "exact", _rejection_exact, ("rejection",)),
    ("rejection", "distributions", _fixed_drafts, ("rejection",)),
    ("rejection", "sampled_drafts", sampled_drafts, ("rejection",)),
    ("rejection", "errors", _exactly(_rejection_error), ("rejection", "input-validation")),
    ("counting", "rows", _exactly(_count_row), ("counting",)),
    ("counting", "metrics", _exactly(_metrics), ("metrics",)),
)


def vector_checks(registry: dict) -> list[Check]:
    """One check per golden vector, in file order (every group of every vector file)."""
    checks = []
    for kind, group, replay, needs in _GROUPS:
        for entry in spec.load_vectors(kind)[group]:
            requirements = tuple(entry["requirements"])
            spec.require_registered(requirements, f"golden vector {kind}/{entry['name']}")

            def run(engine, ctx: Context, replay=replay, entry=entry, requirements=requirements) -> Outcome:
                return replay(engine, ctx, entry, requirements)

            extra = ("reference-draws",) if "RS-RNG-3" in requirements else ()
            checks.append(
                Check(
                    f"vectors/{kind}/{entry['name']}",
                    registry[requirements[0]].cls,
                    requirements,
                    needs + extra,
                    entry.get("description") or "golden vector replay",
                    run,
                    preconditions=tuple(entry.get("preconditions", ())),
                    observes=tuple((r, registry[r].observes) for r in requirements if registry[r].observes),
                )
            )
    return checks
