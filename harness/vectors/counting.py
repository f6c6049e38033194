"""The accepted-token-counting golden vectors (``specs/vectors/counting.json``)."""

from __future__ import annotations

from ..oracle import counting as ac
from .codec import FORMAT_VERSION, encode_float

# Counting


def counting_vectors() -> dict:
    rows = [
        ("accepted-two-of-three", [5, 6, 9, -1], 11, ["AC-COUNT-1"]),
        ("all-accepted", [5, 6, 7, 9], 11, ["AC-COUNT-1"]),
        ("zero-draft", [9], 11, ["AC-COUNT-1"]),
        ("discarded", [-1, -1, -1], 11, ["AC-COUNT-4"]),
        ("hole", [5, -1, 7, -1], 11, ["AC-COUNT-2"]),
        ("out-of-vocab", [5, 11, -1], 11, ["AC-COUNT-3"]),
    ]
    counts = []
    for name, row, V, reqs in rows:
        problems = ac.validate_rows([row], V)
        counts.append(
            {
                "name": name,
                "requirements": reqs,
                "row": row,
                "vocab_size": V,
                "expected_num_emitted": ac.num_emitted(row),
                "expected_problems": sorted({p.kind for p in problems}),
            }
        )
    with_eos = [
        (3, [5, 6, 9, -1], None),
        (3, [9, -1, -1, -1], None),
        (0, [4], None),
        (2, [5, 2, 8], None),
        (3, [5, 2, 7, 8], None),
        (1, [-1, -1], None),
        (4, [1, 2, 3, 4, 5], None),
    ]
    # max_tokens or a stop string trims an accepted run (commit limits), beside an end token among the
    # request's stop_token_ids (7) that a limit cuts off before it is reached
    with_stops = [
        (3, [5, 6, 9, 4], 2),
        (3, [5, 6, 9, -1], 3),
        (2, [5, 6, 8], 1),
        (4, [1, 7, 3, 4, 5], 4),
        (4, [1, 3, 4, 7, 5], 3),
        (2, [9, -1, -1], 1),
        (0, [4], 1),
    ]
    metric_vectors = [
        _metrics_vector(
            "metrics-with-eos",
            ["AC-METRIC-1", "AC-METRIC-2", "AC-METRIC-3", "AC-METRIC-4", "AC-COUNT-4"],
            [2],
            with_eos,
        ),
        _metrics_vector("metrics-with-stops", ["AC-STOP-1", "AC-METRIC-4", "AC-METRIC-2"], [7], with_stops),
    ]
    return {"format": FORMAT_VERSION, "kind": "counting", "rows": counts, "metrics": metric_vectors}


def _metrics_vector(name: str, requirements: list[str], eos_token_ids: list[int], steps) -> dict:
    """A metrics vector over ``(K, row, commit_limit)`` steps: per-step accepted drafts and the aggregate
    metrics over committed tokens (AC-METRIC-4, AC-STOP-1)."""
    metrics = ac.AcceptanceMetrics(max_positions=4)
    per_step = [metrics.observe(k, row, eos_token_ids, limit) for k, row, limit in steps]
    return {
        "name": name,
        "requirements": requirements,
        "eos_token_ids": eos_token_ids,
        "steps": [{"num_draft_tokens": k, "row": row, "commit_limit": limit} for k, row, limit in steps],
        "expected_accepted_per_step": per_step,
        "expected": {
            "num_drafts": metrics.num_drafts,
            "num_draft_tokens": metrics.num_draft_tokens,
            "num_accepted_tokens": metrics.num_accepted_tokens,
            "num_discarded": metrics.num_discarded,
            "acceptance_rate": encode_float(metrics.acceptance_rate),
            "mean_acceptance_length": encode_float(metrics.mean_acceptance_length),
            "accepted_per_position": metrics.accepted_per_position,
            "per_position_rates": [encode_float(x) for x in metrics.per_position_rates()],
        },
    }
