"""The golden-vector codec: floats with 12 significant digits, ``-inf``, ``inf`` and ``nan`` as strings, so that
any JSON parser reads the files; rejection cases to and from JSON."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from specconform.specs.interface import RejectionCase

FORMAT_VERSION = 1


def encode_float(x: float) -> Any:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.12g}")


def decode_float(x: Any) -> float:
    return float(x) if isinstance(x, str) else x


def encode_matrix(rows) -> list:
    return [[encode_float(float(v)) for v in row] for row in np.asarray(rows, dtype=np.float64)]


# ---------------------------------------------------------------------------------------------
# Rejection cases and output distributions


def case_json(case: RejectionCase) -> dict:
    out = {
        "target_logits": encode_matrix(case.target_logits),
        "draft_token_ids": case.draft_token_ids.tolist(),
        "num_draft_tokens": case.num_draft_tokens.tolist(),
        "temperature": [encode_float(t) for t in case.temperature],
        "draft_probs": None if case.draft_probs is None else encode_matrix(case.draft_probs),
        "forced_token_ids": None if case.forced_token_ids is None else case.forced_token_ids.tolist(),
        "seeds": None if case.seeds is None else case.seeds.tolist(),
        "positions": None if case.positions is None else case.positions.tolist(),
    }
    if case.seeded is not None:  # written only for a batch that marks requests without a seed (a mixed batch)
        out["seeded"] = case.seeded.tolist()
    return out


def case_from_json(data: dict) -> RejectionCase:
    def matrix(rows):
        return None if rows is None else np.array([[decode_float(v) for v in r] for r in rows])

    target = matrix(data["target_logits"])
    draft_probs = matrix(data["draft_probs"])
    if draft_probs is not None and not len(draft_probs):  # no drafts: [] holds no row to give V, the logits do
        draft_probs = np.zeros((0, target.shape[1]))
    return RejectionCase(
        target_logits=target,
        draft_token_ids=np.array(data["draft_token_ids"], dtype=np.int64),
        num_draft_tokens=np.array(data["num_draft_tokens"], dtype=np.int64),
        temperature=np.array([decode_float(t) for t in data["temperature"]]),
        draft_probs=draft_probs,
        forced_token_ids=None if data["forced_token_ids"] is None else np.array(data["forced_token_ids"]),
        seeds=None if data["seeds"] is None else np.array(data["seeds"], dtype=np.int64),
        positions=None if data["positions"] is None else np.array(data["positions"], dtype=np.int64),
        seeded=None if data.get("seeded") is None else np.array(data["seeded"], dtype=bool),
    )


def dist_json(dist: dict) -> list:
    return [{"emitted": list(key), "probability": encode_float(prob)} for key, prob in sorted(dist.items())]
