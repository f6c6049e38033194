"""Accepted-token counting checks: a validating count judged row by row, and acceptance metrics
judged against their definitions on a stream without end-of-sequence tokens and on one with them."""

from __future__ import annotations

import numpy as np

from .. import contract, shrink
from ..cases.rejection import RejectionFamily
from ..core import Context, Outcome, Tally
from ..oracle import counting as ac
from ..oracle import metrics_judge as mj
from .catalogue import check
from .rejection import declare_exact


@check(
    "counting/validated",
    cls="ac.count",
    covers=("AC-COUNT-1", "AC-COUNT-2", "AC-COUNT-3", "AC-COUNT-4"),
    needs=("counting",),
    description="a validating count flags broken prefixes and bad ids",
)
def validated_count_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    rows = [[5, 6, 9, -1], [-1, -1, -1, -1], [5, -1, 7, -1], [5, 11, -1, -1], [1, 2, 3, 4]]
    rows += [[int(t) for t in rng.integers(-1, 12, 4)] for _ in range(200)]
    tiny = [[0, -1], [0, 0], [1, -1], [-1, 0]]  # V = 1: only the id 0 is in the vocabulary
    outside = 0
    for batch, vocab in ((rows, 10), (tiny, 1)):
        why = ctx.profile.outside_contract({"malformed-row"})
        if why:  # the engine counts only rows its own sampler emits: no hole, no id outside the vocabulary
            kept = [row for row in batch if not contract.row_preconditions([row], vocab)]
            outside += len(batch) - len(kept)
            tally.not_applicable(why, "AC-COUNT-2", "AC-COUNT-3")
            batch = kept
        _judge_counts(engine, batch, vocab, tally, ctx.profile)
    return tally.outcome(
        f"{len(rows)} rows at V = 10 and {len(tiny)} at V = 1 counted by definition"
        + (f"; {outside} malformed rows outside the engine's contract, not run" if outside else "")
    )


def row_violations(row: list[int], vocab: int, got: tuple[int, bool, bool]) -> list[tuple[str, str, str]]:
    """``(requirement, mode, evidence)`` of every way the engine's ``got`` (count, broken prefix, out of vocabulary)
    for ``row`` breaks the counting rules: a wrong count is AC-COUNT-4's on a discarded row, AC-COUNT-2's on a row
    with a hole, else AC-COUNT-1's; a misreported hole AC-COUNT-2's, a misreported id AC-COUNT-3's."""
    problems = {p.kind for p in ac.validate_rows([row], vocab)}
    num, broken, oov = got
    hole, found = "hole" in problems, []
    if num != ac.num_emitted(row):
        rid = "AC-COUNT-4" if row[0] == -1 else "AC-COUNT-2" if hole else "AC-COUNT-1"
        found.append((rid, "count-differs", f"row {row}: counted {num}, first placeholder at {ac.num_emitted(row)}"))
    if broken != hole:
        found.append(("AC-COUNT-2", "broken-prefix-misreported", f"row {row}: broken prefix reported {broken}"))
    if oov != ("out_of_vocab" in problems):
        found.append(("AC-COUNT-3", "bad-id-misreported", f"row {row}: out-of-vocabulary reported {oov}"))
    return found


def smaller_rows(row: list[int]):
    """Candidate reductions of a row: one position fewer."""
    for i in range(len(row)) if len(row) > 1 else ():
        yield row[:i] + row[i + 1 :]


def _count_one(engine, row: list[int], vocab: int) -> tuple[int, bool, bool]:
    num, broken, oov = (np.asarray(x) for x in engine.count_emitted(np.array([row]), vocab))
    return int(num[0]), bool(broken[0]), bool(oov[0])


def attribute_row(engine, row: list[int], vocab: int, profile=None) -> tuple[str, str, str] | None:
    """``(requirement, mode, evidence)`` of the lowest requirement the engine's answer for ``row`` violates once the
    row is shrunk while that answer breaks the rules in any way (RUN-FINDING-1), or None where it breaks none."""
    first = mj.owner(row_violations(row, vocab, _count_one(engine, row, vocab)))
    if first is None:
        return None

    def diverges(candidate: list[int]) -> bool:
        malformed = profile is not None and profile.outside_contract({"malformed-row"})
        if malformed and contract.row_preconditions([candidate], vocab):
            return False
        return bool(row_violations(candidate, vocab, _count_one(engine, candidate, vocab)))

    small = shrink.minimise(row, smaller_rows, diverges)
    owner = mj.owner(row_violations(small, vocab, _count_one(engine, small, vocab))) or first
    shown = f"{first[2]}; minimised to {small} (V = {vocab}): {owner[2]}" if small != row else first[2]
    return owner[0], owner[1], shown


def _judge_counts(engine, rows: list[list[int]], vocab: int, tally: Tally, profile=None) -> None:
    """Each row's count and reports against the rules; the first row failing each way is shrunk and recorded under
    the lowest requirement its minimal row violates (``attribute_row``), the requirement it failed as met reading
    BLOCKED where that is another; later rows failing the same way go where it went."""
    num, broken, oov = (np.asarray(x) for x in engine.count_emitted(np.array(rows), vocab))
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for i, row in enumerate(rows):
        found = row_violations(row, vocab, (int(num[i]), bool(broken[i]), bool(oov[i])))
        first = mj.owner(found)  # None: the row breaks no rule
        if first is None:
            hole = any(p.kind == "hole" for p in ac.validate_rows([row], vocab))
            own = "AC-COUNT-4" if row[0] == -1 else "AC-COUNT-2" if hole else "AC-COUNT-1"
            tally.exercised(own, "AC-COUNT-3", *(("AC-COUNT-2",) if hole else ()))
            continue
        if first[:2] not in seen:
            seen[first[:2]] = attribute_row(engine, row, vocab, profile) or first
        rid, mode, shown = seen[first[:2]]
        if first[0] != rid:
            tally.blocked(first[0], rid, f"its minimal row fails {rid} ({mode})")
        tally.violated(rid, mode, shown, finding=rid)


def _steps(rng, eos: list[int], limits: bool = False) -> list[tuple[int, list[int], int | None]]:
    """300 steps ``(K, row, commit_limit)`` with rows of 0..K+1 tokens of ``0..7``: the ``eos`` ids (3, and 6
    for a model with several end tokens, as Llama 3 and Qwen have) are drawn among them, 3 is replaced by 4
    without any; with ``limits`` half the steps carry a commit limit in ``[1, K + 1]`` (AC-STOP-1)."""
    steps = []
    for _ in range(300):
        k = int(rng.integers(0, 5))
        n = int(rng.integers(0, k + 2))
        row = [int(t) for t in rng.integers(0, 8, n)]
        if not eos:
            row = [t if t != 3 else 4 for t in row]
        limit = int(rng.integers(1, k + 2)) if limits and rng.random() < 0.5 else None
        steps.append((k, row + [-1] * (k + 1 - n), limit))
    return steps


def _oracle_metrics(steps, eos) -> ac.AcceptanceMetrics:
    metrics = ac.AcceptanceMetrics(max_positions=4)
    for k, row, limit in steps:
        metrics.observe(k, row, eos, limit)
    return metrics


def _value(name: str, metrics):
    """A metric of the engine's dict or of the oracle's ``AcceptanceMetrics``."""
    value = metrics[name] if isinstance(metrics, dict) else getattr(metrics, name)
    return [int(x) for x in value] if name == "accepted_per_position" else float(value)


def _same(name: str, got: dict, oracle) -> bool:
    a, b = _value(name, got), _value(name, oracle)
    return a == b if isinstance(a, list) else bool(np.isclose(a, b, equal_nan=True))


@check(
    "counting/metrics",
    cls="ac.metrics",
    covers=("AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-STOP-1"),
    needs=("metrics",),
    description=(
        "acceptance metrics equal their definitions, without EOS, with EOS, with max_tokens and stop-string limits"
    ),
)
def metrics_check(engine, ctx: Context, requirements: tuple[str, ...]) -> Outcome:
    """AC-METRIC-1..3 on a stream without EOS; AC-METRIC-4 on a stream where EOS ends accepted runs;
    AC-STOP-1 on one where commit limits (``max_tokens``, stop strings) trim them too; both again with two end
    tokens (an EOS and a stop token id, or a model's two EOS ids), where either ends a run; AC-METRIC-1 (NaN when
    nothing was drafted) over zero steps."""
    tally = Tally(requirements)
    rng = np.random.default_rng(ctx.seed)
    # the streams with two end tokens come last, so that the earlier streams are drawn as before them
    for eos, limits in (([], False), ([3], False), ([3], True), ([3, 6], False), ([3, 6], True)):
        steps = _steps(rng, eos, limits)
        oracle = _oracle_metrics(steps, eos)
        got = engine.acceptance_metrics(steps, eos)
        ids = "without EOS" if not eos else f"with EOS {' and '.join(map(str, eos))}"
        label = f"{len(steps)} steps {ids}{' and commit limits' if limits else ''}"
        mean_ok = np.isclose(got["mean_acceptance_length"], oracle.mean_acceptance_length)
        if eos:  # only the trimming separates these streams from the first: judged on every metric the engine made
            rid = "AC-STOP-1" if limits else "AC-METRIC-4"
            judged = [name for name in mj.METRICS if name not in ctx.profile.derived]
            differ = [name for name in judged if not _same(name, got, oracle)]
            if not differ:
                tally.exercised(rid)
                continue

            # shrunk while the engine's metrics differ from the oracle's, then judged alone (RUN-FINDING-1)
            def differs(candidate, eos=eos, judged=judged) -> bool:
                return bool(mj.metric_violations(candidate, eos, engine.acceptance_metrics(candidate, eos), judged))

            small = shrink.minimise(steps, mj.smaller_streams, differs)
            found = mj.metric_violations(small, eos, engine.acceptance_metrics(small, eos), judged)
            owner, mode, shown = mj.owner(found) or (mj.METRICS[differ[0]], "metrics-differ", "")
            if owner != rid:
                tally.blocked(rid, owner, f"its minimal stream fails {owner} ({mode})")
            tally.violated(
                owner,
                mode,
                f"{label}: minimised to {len(small)} steps {small}: {shown}",
                finding=owner,
            )
            continue
        # (requirement, agrees, what, the engine's value, the oracle's)
        compared: list[tuple[str, bool | np.bool_, str, object, object]] = [
            (
                "AC-METRIC-2",
                mean_ok,
                "mean acceptance length",
                got["mean_acceptance_length"],
                oracle.mean_acceptance_length,
            ),
            (
                "AC-METRIC-1",
                np.isclose(got["acceptance_rate"], oracle.acceptance_rate),
                "acceptance rate",
                got["acceptance_rate"],
                oracle.acceptance_rate,
            ),
            (
                "AC-METRIC-3",
                list(got["accepted_per_position"]) == oracle.accepted_per_position,
                "accepted per position",
                got["accepted_per_position"],
                oracle.accepted_per_position,
            ),
        ]
        if "per_position_rates" in got:  # AC-METRIC-3's rates, where the engine reports them
            rates = list(got["per_position_rates"])
            same = len(rates) == len(oracle.per_position_rates()) and np.allclose(
                rates, oracle.per_position_rates(), equal_nan=True
            )
            compared.append(("AC-METRIC-3", same, "per-position rates", rates, oracle.per_position_rates()))
        for rid, ok, what, value, expected in compared:
            if ok:
                tally.exercised(rid)
            else:
                tally.violated(
                    rid, f"{what.replace(' ', '-')}-differs", f"{label}: {what} {value}, expected {expected}"
                )
    for label, steps in (("over zero steps", []), ("over steps that drafted nothing", [(0, [5], None), (0, [6], 1)])):
        empty = engine.acceptance_metrics(steps, [])
        if np.isnan(empty["acceptance_rate"]) and not any(empty["accepted_per_position"]):
            tally.exercised("AC-METRIC-1")
        else:
            tally.violated(
                "AC-METRIC-1",
                "rate-defined-without-drafts",
                f"{label}: acceptance rate {empty['acceptance_rate']}, accepted per position "
                f"{list(empty['accepted_per_position'])} (expected NaN and no accepted draft)",
            )
    return tally.outcome(
        "acceptance metrics over committed tokens, without EOS, with EOS, with EOS and commit limits, with two end "
        "tokens with and without commit limits; "
        "NaN rate over zero steps and over steps that drafted nothing"
    )


declare_exact(
    "counting/sampler",
    "ac.count",
    ("AC-COUNT-1", "AC-COUNT-5"),
    "num_emitted equals the first placeholder of every row the sampler writes",
    RejectionFamily(greedy="all"),
)
