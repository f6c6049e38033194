"""Every requirement a stream's acceptance metrics violate, judged against the oracle (RUN-FINDING-1).

``metric_violations(steps, eos, got, judged)`` compares the engine's metrics ``got`` over ``steps`` (``(K, row,
commit_limit)``) with the oracle's: nothing when every ``judged`` metric agrees; else AC-STOP-1 where a step's commit
limit trims its row and counting the rows without their limits explains every difference (the commit rule
broken), AC-METRIC-4 where an end token trims a row and counting past it explains them, and otherwise the
requirement of each metric that differs (AC-METRIC-1..3). The special requirements are named only where the
stream holds their feature (a limit that trims, an end token that does); ``owner`` picks the lowest."""

from __future__ import annotations

import numpy as np

from .. import requirement_order
from . import counting as ac

METRICS = {
    "mean_acceptance_length": "AC-METRIC-2",
    "acceptance_rate": "AC-METRIC-1",
    "accepted_per_position": "AC-METRIC-3",
}


def value(name: str, metrics):
    """A metric of an engine's dict or of the oracle's ``AcceptanceMetrics``."""
    got = metrics[name] if isinstance(metrics, dict) else getattr(metrics, name)
    return [int(x) for x in got] if name == "accepted_per_position" else float(got)


def _trimmed(counts: list[int]) -> list[int]:
    while counts and counts[-1] == 0:
        counts = counts[:-1]
    return counts


def same(name: str, got, oracle) -> bool:
    """Whether a metric agrees (per-position counts past the last nonzero one are zeros, however many are listed)."""
    a, b = value(name, got), value(name, oracle)
    if isinstance(a, list):
        return _trimmed(a) == _trimmed(b)
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True))


def oracle_metrics(steps, eos, max_positions: int = 4) -> ac.AcceptanceMetrics:
    metrics = ac.AcceptanceMetrics(max_positions=max_positions)
    for k, row, limit in steps:
        metrics.observe(k, row, eos, limit)
    return metrics


def _trims(steps, eos) -> tuple[bool, bool]:
    """Whether a commit limit trims some step's row below its end token's cut, and whether an end token does."""
    limit = any(
        lim is not None and ac.committed_tokens(row, eos, lim) < ac.committed_tokens(row, eos) for _, row, lim in steps
    )
    end = any(ac.committed_tokens(row, eos) < ac.committed_tokens(row, ()) for _, row, _ in steps)
    return limit, end


def metric_violations(steps, eos, got: dict, judged, max_positions: int = 4) -> list[tuple[str, str, str]]:
    """``(requirement, mode, evidence)`` of every violation (see the module docstring)."""
    oracle = oracle_metrics(steps, eos, max_positions)
    differ = [name for name in judged if not same(name, got, oracle)]
    if not differ:
        return []
    limit, end = _trims(steps, eos)
    shown = "; ".join(f"{name} {value(name, got)}, expected {value(name, oracle)}" for name in differ)
    unlimited = [(k, row, None) for k, row, _ in steps]
    if limit and all(same(n, got, oracle_metrics(unlimited, eos, max_positions)) for n in judged):
        return [("AC-STOP-1", "counts-tokens-past-commit-limit", shown)]
    if limit and all(same(n, got, oracle_metrics(unlimited, (), max_positions)) for n in judged):
        return [("AC-STOP-1", "counts-tokens-past-commit-limit", shown + " (past end tokens too)")]
    if end and len(eos) > 1:  # one end token honoured, another not
        for token in eos:
            if all(same(n, got, oracle_metrics(steps, [token], max_positions)) for n in judged):
                return [("AC-METRIC-4", "counts-tokens-after-another-end-token", shown)]
    if end and all(same(n, got, oracle_metrics(steps, (), max_positions)) for n in judged):
        return [("AC-METRIC-4", "counts-tokens-after-eos", shown)]
    return [(METRICS[name], f"{name.replace('_', '-')}-differs", shown) for name in differ]


def owner(found: list[tuple[str, str, str]]) -> tuple[str, str, str] | None:
    if not found:
        return None
    first = requirement_order.lowest(v[0] for v in found)[0]
    return next(v for v in found if v[0] == first)


def smaller_streams(steps):
    """Candidate reductions of a stream: half of it, then one step fewer, then one step without its limit."""
    if len(steps) > 1:
        half = len(steps) // 2
        yield steps[:half]
        yield steps[half:]
    for i in range(len(steps)):
        if len(steps) > 1:
            yield steps[:i] + steps[i + 1 :]
    for i, (k, row, limit) in enumerate(steps):
        if limit is not None:
            yield steps[:i] + [(k, row, None)] + steps[i + 1 :]
