"""The acceptance rule under the engine's own draws: fixed drafts, the acceptance rate and the token emitted on
rejection G-tested alone, in ragged and in mixed batches (``acceptance_rule``), with reproductions that re-run one
case and layout (``replay_rule``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import contract, stats, vectors
from ...core import Context, Outcome, Tally
from ...oracle import rejection as rs
from ..catalogue import check
from . import minimal
from .output import sample_output

# trials of a case and layout judged exactly before its statistics (``minimal.gate``)
GATE_TRIALS = 32

# Fixed-draft cases of the acceptance-rule check: (name, logits [K + 1, V] (K draft rows, then the bonus row), q of
# a draft row or None (one-hot), the draft (the same token at every draft row), requirement of the acceptance rate,
# requirement of the residual, the batch layouts it runs in). Each test reads the first draft row only.
_NEG = -np.inf
_ALL_LAYOUTS = ("homogeneous", "ragged", "mixed")
# Two drafts per request, the second case of RS-MIXED-1: a verifier that takes each request's greedy flag from a
# per-draft-row array at the request's index reads another request's flag once K >= 2 (row i belongs to request
# i // K). In a batch of greedy requests followed by as many sampled ones, every sampled request then reads a greedy
# flag. Greedy verification never accepts this draft (the argmax is token 0); the acceptance rule accepts it with
# p(1) = 0.45: the acceptance rate parts by TV 0.45 for a request verified by the wrong rule. Its trials are sized for
# the declared deviation, as every case's; at the default α even a run capped at 100 trials per case detects TV 0.34
# at power 0.9 (``stats.detectable_deviation``), well inside this effect.
_TWO_DRAFTS = [[np.log(0.55), np.log(0.45), _NEG, _NEG]] * 2 + [[0.0] * 4]
_RULE_CASES = (
    (
        "residual",
        [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6],
        [0.05, 0.1, 0.5, 0.2, 0.15, 0.0],
        2,
        "RS-PROB-1",
        "RS-PROB-2",
        _ALL_LAYOUTS,
    ),
    (
        "one-hot",
        [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6],
        None,
        1,
        "RS-ONEHOT-1",
        "RS-ONEHOT-1",
        ("homogeneous",),
    ),
    (
        "zero-q",
        [[2.0, 1.0, 0.5, 0.0, -1.0, _NEG], [0.0] * 6],
        [0.0, 0.3, 0.3, 0.2, 0.2, 0.0],
        0,
        "RS-PROB-3",
        "RS-PROB-2",
        ("homogeneous",),
    ),
    (
        "empty-residual",
        [[0.0, 0.0, _NEG, _NEG], [0.0] * 4],
        [0.5, 0.5, 0.0, 0.0],
        2,
        "RS-PROB-3",
        "RS-PROB-4",
        ("homogeneous",),
    ),
    ("two-drafts", _TWO_DRAFTS, None, 1, "RS-ONEHOT-1", "RS-ONEHOT-1", ("homogeneous", "greedy-first")),
)


def _rule_expectation(logits, q_row, draft) -> tuple[float, np.ndarray]:
    """``(acceptance probability, distribution of the token emitted on rejection)`` at temperature 1."""
    p = rs.target_probs(np.asarray(logits, dtype=np.float64), 1.0)
    q = np.eye(len(p))[draft] if q_row is None else np.asarray(q_row, dtype=np.float64)
    accept = 0.0 if q[draft] == 0 else min(1.0, p[draft] / q[draft])
    residual = np.maximum(p - q, 0.0)
    return accept, (residual / residual.sum() if residual.sum() > 0 else p)


def _rule_batch(rng, logits, q_row, draft, trials: int, layout: str):
    """``trials`` seeded requests of one fixed-draft case (``K = len(logits) - 1`` drafts, each ``draft``,
    temperature 1), alone (``homogeneous``), with a request of another draft count after every fourth
    (``ragged``: K - 1 and K + 1 in turn, same temperature), with a greedy request of K drafts after every
    fourth (``mixed``), or after as many greedy requests of K drafts (``greedy-first``: a batch ordered by
    policy). Returns the case, the batch index of every trial request and the greedy requests' indices."""
    V, K = len(logits[0]), len(logits) - 1
    rows: list[list[float]] = []  # [sum(K_i + 1)][V]
    drafts: list[int] = []
    num: list[int] = []
    temps: list[float] = []
    q: list[np.ndarray] = []  # [sum(K_i)] rows [V]
    trial_index: list[int] = []
    greedy_index: list[int] = []

    def add(request_rows, request_drafts: list[int], temperature: float, q_rows) -> None:
        rows.extend(request_rows)
        drafts.extend(request_drafts)
        num.append(len(request_drafts))
        temps.append(temperature)
        q.extend(q_rows)

    def filler(k: int, temperature: float) -> None:
        if temperature == 0:
            greedy_index.append(len(num))
        request_rows = [list(rng.normal(size=V)) for _ in range(k + 1)]
        fill_drafts = [int(rng.integers(0, V)) for _ in range(k)]
        add(request_rows, fill_drafts, temperature, [np.eye(V)[d] for d in fill_drafts])

    for _ in range(trials if layout == "greedy-first" else 0):
        filler(K, 0.0)
    for t in range(trials):
        trial_index.append(len(num))
        add(logits, [draft] * K, 1.0, [np.eye(V)[draft] if q_row is None else q_row] * K)
        if layout == "mixed" and t % 4 == 0:
            filler(K, 0.0)
        elif layout == "ragged" and t % 4 == 0:
            filler((K - 1, K + 1)[(t // 4) % 2], 1.0)
    case = rs.RejectionCase(
        np.array(rows),
        drafts,
        num,
        temps,
        None if q_row is None else np.array(q),  # one-hot verification: no draft probabilities at all
        seeds=rng.integers(0, 2**62, len(num)),
        positions=rng.integers(0, 2**40, len(num)),
    )
    return case, trial_index, greedy_index


# RS-RNG-3: an exact comparison skips a decision within this relative distance of a floating-point boundary
BOUNDARY_MARGIN = 1e-5


def _greedy_margin(case: rs.RejectionCase, i: int) -> float:
    """The smallest relative gap between the two largest logits of greedy request ``i``'s rows: below
    ``BOUNDARY_MARGIN`` the argmax is a tie at an engine's float32 precision (two logits of a normal draw 4e-8
    apart were one in a batch of 7,575), which the oracle's float64 breaks and the engine need not."""
    row_slice, _ = rs.request_slices(case, i)
    top = np.sort(case.target_logits[row_slice], axis=1)[:, -2:]
    return float(np.min((top[:, 1] - top[:, 0]) / np.maximum(1.0, np.abs(top[:, 1]))))


def _greedy_row(case: rs.RejectionCase, i: int) -> list[int]:
    """The oracle's tokens of greedy request ``i``, ``-1`` padded to its K + 1."""
    row_slice, draft_slice = rs.request_slices(case, i)
    rows = case.target_logits[row_slice]
    emitted = rs.verify_request(rows, case.draft_token_ids[draft_slice], None, 0.0, [-1] * len(rows), None).emitted
    return (emitted + [-1] * len(rows))[: len(rows)]


_BLAME = {"homogeneous": None, "ragged": "RS-LAYOUT-1", "mixed": "RS-MIXED-1", "greedy-first": "RS-MIXED-1"}


def _rule_trials(accept: float, residual: np.ndarray, target: stats.Power, alpha_test: float) -> int:
    """Trials of one fixed-draft case after which its acceptance-rate test and, on the rejected trials, its
    rejection-token test reach the trials ``target`` needs (STAT-POWER-1)."""
    needed = stats.trials_needed(np.array([accept, 1 - accept]), target, alpha_test)
    if accept < 1:
        needed = max(needed, stats.trials_to_reach(stats.trials_needed(residual, target, alpha_test), 1 - accept))
    return needed


@dataclass
class RuleRun:
    """One fixed-draft case of the acceptance-rule check in one batch layout, sampled by an engine: the
    greedy requests' failure (exact, or None) and the two tests, each ``(what, counts, probs, reach)``
    (the acceptance rate of the draft row, then the token emitted on rejection, which a conforming
    engine reaches with probability ``1 - accept``)."""

    greedy_failure: str | None
    tests: list[tuple[str, np.ndarray, np.ndarray, float]]


def run_rule(engine, profile, logits, q_row, draft: int, layout: str, trials: int, seed: int) -> RuleRun:
    """``trials`` seeded requests of one fixed-draft case (``logits [2, V]``: the draft row and the bonus
    row, ``q_row [V]`` or None for one-hot, ``draft``) in ``layout``, drawn from ``seed``."""
    accept, residual = _rule_expectation(logits[0], q_row, draft)
    rows = [list(row) for row in logits]
    case, trial_index, greedy_index = _rule_batch(np.random.default_rng(seed), rows, q_row, draft, trials, layout)
    tokens, _ = sample_output(engine, profile, case)
    tokens = np.asarray(tokens)
    greedy_failure = None
    compared = [i for i in greedy_index if _greedy_margin(case, i) >= BOUNDARY_MARGIN]
    if compared:
        expected = {i: _greedy_row(case, i) for i in compared}
        wrong = [i for i in compared if tokens[i, : len(expected[i])].tolist() != expected[i]]
        if wrong:
            greedy_failure = (
                f"greedy request {wrong[0]} emitted {tokens[wrong[0], : len(expected[wrong[0]])].tolist()}, "
                f"expected {expected[wrong[0]]}"
            )
    trial_tokens = tokens[trial_index, :2]
    accepted = trial_tokens[:, 1] != -1
    rejected_tokens = trial_tokens[~accepted, 0]
    in_range = rejected_tokens[(rejected_tokens >= 0) & (rejected_tokens < len(residual))]
    tests = [
        ("acceptance-rate", np.array([accepted.sum(), (~accepted).sum()]), np.array([accept, 1 - accept]), 1.0),
        ("rejection-token", np.bincount(in_range, minlength=len(residual)), np.asarray(residual), 1 - accept),
    ]
    return RuleRun(greedy_failure, tests)


def rule_reproduction(name, logits, q_row, draft, layout, trials, seed, alpha_test, rid, mode, run: RuleRun) -> dict:
    """A standalone document for one failed test of the acceptance-rule check: the fixed-draft case, its
    layout and run (trials, seed, α_test), the test (``mode``) and its observed counts against the
    expected probabilities (``specconform replay`` re-runs the same test)."""
    entry = {
        "name": f"{name}-{layout}",
        "requirements": [rid],
        "test": mode,
        "target_logits": vectors.encode_matrix(logits),
        "q": None if q_row is None else [vectors.encode_float(x) for x in q_row],
        "draft": draft,
        "layout": layout,
        "trials": trials,
        "seed": seed,
        "alpha_test": alpha_test,
        "observed_counts": {what: counts.tolist() for what, counts, _, _ in run.tests},
        "expected_probabilities": {what: [vectors.encode_float(x) for x in probs] for what, _, probs, _ in run.tests},
        "greedy_failure": run.greedy_failure,
    }
    return {
        "format": vectors.FORMAT_VERSION,
        "kind": "rejection",
        "fingerprint": f"{rid}/{mode}",
        "exact": [],
        "acceptance_rule": [entry],
        "errors": [],
    }


def replay_rule(engine, profile, entry: dict) -> tuple[str, str]:
    """Re-run an ``acceptance_rule`` entry: ``(fingerprint, evidence)``, the fingerprint empty when its test
    passes."""
    logits = np.array(entry["target_logits"], dtype=np.float64)
    q_row = None if entry["q"] is None else np.array(entry["q"], dtype=np.float64)
    layout, trials, seed = entry["layout"], int(entry["trials"]), int(entry["seed"])
    run = run_rule(engine, profile, logits, q_row, int(entry["draft"]), layout, trials, seed)
    rid, mode = entry["requirements"][0], entry["test"]
    if mode == "greedy-request-differs":
        return (f"{rid}/{mode}", run.greedy_failure) if run.greedy_failure else ("", "greedy requests equal the oracle")
    what, counts, probs, _ = next(t for t in run.tests if t[0] == mode)
    result = stats.g_test(counts, probs, float(entry["alpha_test"]))
    line = f"{what} counts {counts.tolist()} against {np.round(probs, 4).tolist()}: p = {result.p_value:.3g}"
    return (f"{rid}/{mode}" if not result.passed else "", line)


@check(
    "rejection/acceptance-rule",
    cls="rs.probabilistic",
    covers=("RS-PROB-1", "RS-PROB-2", "RS-PROB-3", "RS-PROB-4", "RS-ONEHOT-1", "RS-MIXED-1", "RS-LAYOUT-1"),
    needs=("rejection",),
    description=(
        "fixed drafts under the engine's own draws: acceptance rate and rejection token G-tested, alone, in "
        "ragged and in mixed batches"
    ),
)
def acceptance_rule(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """RS-PROB-1..4, RS-ONEHOT-1, RS-MIXED-1 and RS-LAYOUT-1 under the engine's own draws.

    For fixed drafts, the acceptance rate of the draft row is G-tested against ``min(1, p(d)/q(d))`` and the token
    emitted on rejection against the residual (``p`` where the residual is empty). Each case runs alone; the first
    also in a ragged batch (other draft counts) and in a mixed batch (greedy requests, which must emit the oracle's
    tokens exactly), and ``two-drafts`` (K = 2) after as many greedy requests of two drafts (``greedy-first``),
    where a verifier that reads a request's policy from a per-draft-row array at the request's index verifies every
    sampled request greedily. A deviation only in a ragged or mixed batch is blamed on RS-LAYOUT-1 or RS-MIXED-1.
    Trials are sized from the declared ``Power(ctx.deviation, ctx.power)`` (at most ``ctx.trials`` per case and
    layout); a test counts as a case only when it detects and certifies that deviation (STAT-POWER-1, STAT-CERT-1).
    An engine that does not claim greedy verification (``rs.greedy``) gets no mixed batch: RS-MIXED-1 stays NOT_RUN,
    and does not hold back the check's PASS (RUN-STATUS-3: it applies only to an engine with both rules). Each case
    and layout draws from its own seed, so a failed test leaves a reproduction that re-runs it alone."""
    greedy = "rs.greedy" in ctx.profile.classes
    tally = Tally(requirements, conditional=() if greedy else ("RS-MIXED-1",))  # no mixed batch without greedy
    plan = [(number, case, layout) for number, case in enumerate(_RULE_CASES) for layout in case[-1]]
    plan = [item for item in plan if greedy or _BLAME[item[2]] != "RS-MIXED-1"]  # no mixed batch without greedy
    alpha_test = stats.sidak(ctx.alpha, 2 * len(plan))
    target = stats.Power(ctx.deviation, ctx.power)
    worst_p, total = 1.0, 0
    uncounted: list[str] = []
    seen: minimal.Gated = {}

    def violated(rid, mode, evidence, document) -> None:
        tally.violated(rid, mode, evidence, reproduction=None if rid in tally.failures else document())

    for number, (name, logits, q_row, draft, accept_rid, residual_rid, _) in enumerate(_RULE_CASES):
        layouts = [layout for n, _, layout in plan if n == number]
        if why := ctx.profile.outside_contract(contract.rule_preconditions(q_row, draft)):
            tally.not_applicable(why, accept_rid, residual_rid)
            uncounted.append(f"{name}: not run, outside the engine's contract")
            continue
        accept, residual = _rule_expectation(logits[0], q_row, draft)
        trials = min(_rule_trials(accept, residual, target, alpha_test), ctx.trials)
        failed_alone = False
        for index, layout in enumerate(layouts):
            seed = ctx.seed + 3 * number + index
            rows = [list(row) for row in logits]
            few = _rule_batch(np.random.default_rng(seed), rows, q_row, draft, GATE_TRIALS, layout)[0]
            if minimal.gate(engine, ctx.profile, few, tally, _BLAME[layout] or accept_rid, seen, f"{name} ({layout})"):
                uncounted.append(f"{name} ({layout}): not tested, its rows fail before the statistics")
                continue
            run = run_rule(engine, ctx.profile, logits, q_row, draft, layout, trials, seed)
            failing = run.greedy_failure or any(
                stats.judge(stats.g_test(counts, probs, alpha_test), probs, target, reach).failed
                for _, counts, probs, reach in run.tests
            )
            more = _rule_batch(np.random.default_rng(seed), rows, q_row, draft, minimal.SECOND_LOOK_TRIALS, layout)[0]
            if failing and minimal.second_look(
                engine, ctx.profile, more, tally, _BLAME[layout] or accept_rid, seen, name
            ):
                uncounted.append(f"{name} ({layout}): failed; its trials part from the oracle exactly")
                continue
            total += trials
            label = f"{name} ({layout}, {trials} trials)"
            blame = _BLAME[layout]

            def document(rid, mode, case=(name, logits, q_row, draft, layout, trials, seed), run=run):
                return lambda: rule_reproduction(*case, alpha_test, rid, mode, run)

            if run.greedy_failure:
                mode = "greedy-request-differs"
                violated("RS-MIXED-1", mode, f"{label}: {run.greedy_failure}", document("RS-MIXED-1", mode))
            elif blame == "RS-MIXED-1":
                tally.exercised("RS-MIXED-1")
            for (what, counts, probs, reach), rid in zip(run.tests, (accept_rid, residual_rid)):
                judgement = stats.judge(stats.g_test(counts, probs, alpha_test), probs, target, reach)
                result = judgement.result
                worst_p = min(worst_p, result.p_value)
                if judgement.failed:
                    failed_alone |= blame is None
                    culprit = rid if blame is None or failed_alone else blame
                    violated(
                        culprit,
                        what,
                        f"{label}: {what} counts {counts.tolist()} against {np.round(probs, 4).tolist()}: "
                        f"p = {result.p_value:.3g} < α_test {alpha_test:.2g}, {result.zero_hits} on p = 0",
                        document(culprit, what),
                    )
                elif judgement.counted:
                    tally.exercised(rid if blame is None else blame)
                elif reach > 0:
                    uncounted.append(f"{label} {what}: not counted, {judgement.reason}")
    batched = [f"{case[0]} {layout}" for _, case, layout in plan if layout != "homogeneous"]
    return tally.outcome(
        "\n".join(
            [
                f"{len(_RULE_CASES)} fixed-draft cases alone, {', '.join(batched)} in batches, "
                f"{total} trials in all (sized for TV {target.deviation} at power {target.power}, at most {ctx.trials} "
                f"per case); smallest p {worst_p:.3g} at α_test {alpha_test:.2g}; {len(uncounted)} tests not counted",
                *uncounted,
            ]
        ),
        p_value=worst_p,
        alpha=alpha_test,
        trials=total,
    )
