"""The accepted-token-counting golden vectors (``specs/vectors/counting.json``), generated from their sources in
``golden/counting/``: the oracle adds what each row emits and the metrics over each run of steps."""

from __future__ import annotations

from ..oracle import counting as ac
from .codec import FORMAT_VERSION, encode_float
from .schema import CountingMetricsFile, CountingRow, CountingRowsFile, MetricsVector, read


def counting_vectors() -> dict:
    return {
        "format": FORMAT_VERSION,
        "kind": "counting",
        "rows": [_row(v) for v in read("counting", "rows", CountingRowsFile).vectors],
        "metrics": [_metrics(v) for v in read("counting", "metrics", CountingMetricsFile).vectors],
    }


def _row(source: CountingRow) -> dict:
    problems = ac.validate_rows([source.row], source.vocab_size)
    return {
        "name": source.name,
        "requirements": source.requirements,
        "row": source.row,
        "vocab_size": source.vocab_size,
        "expected_num_emitted": ac.num_emitted(source.row),
        "expected_problems": sorted({p.kind for p in problems}),
    }


def _metrics(source: MetricsVector) -> dict:
    """Per-step accepted drafts and the aggregate metrics over committed tokens (AC-METRIC-4, AC-STOP-1)."""
    metrics = ac.AcceptanceMetrics(max_positions=4)
    per_step = [metrics.observe(s.num_draft_tokens, s.row, source.eos_token_ids, s.commit_limit) for s in source.steps]
    return {
        "name": source.name,
        "requirements": source.requirements,
        "eos_token_ids": source.eos_token_ids,
        "steps": [s.model_dump() for s in source.steps],
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
