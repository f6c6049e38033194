"""Rejection-sampling cases as an exported test states them: the case's tensors as literal lists and the tokens the
specification's oracle emits for it under the reference draws.

An ``exact`` entry of a rejection reproduction (``specs/vectors/README.md``) holds one batch in the canonical layout:
``target_logits [sum(K_i + 1), V]``, ``draft_token_ids [sum(K_i)]``, ``num_draft_tokens [B]``, ``draft_probs
[sum(K_i), V]`` or none (one-hot drafts), ``temperature [B]``, ``seeds``/``positions``/``seeded [B]``,
``forced_token_ids [sum(K_i + 1)]``. The expected output, ``token_ids [B, max K_i + 1]`` (-1 padded) and
``num_emitted [B]``, is computed here by the oracle as ``specconform replay`` computes it (``oracle.rejection
.sample_case``), so a sampled request must carry its seed: its draws are the counter-based reference draws keyed by
(seed, position). A statistical entry (``sampled_drafts``, ``acceptance_rule``) is not exported yet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import UsageError
from ..oracle import rejection as rs
from ..vectors import case_from_json

_CASE_FIELDS = (
    "target_logits",
    "draft_token_ids",
    "num_draft_tokens",
    "draft_probs",
    "temperature",
    "seeds",
    "positions",
    "forced_token_ids",
    "seeded",
)


@dataclass
class RejectionCase:
    """One exact entry: ``case`` its canonical fields as plain lists (floats may be infinite), ``expected_token_ids``
    and ``expected_num_emitted`` the oracle's output for it."""

    name: str
    description: str
    requirements: list[str]
    case: dict
    expected_token_ids: list[list[int]]
    expected_num_emitted: list[int]


def _plain(value):
    return None if value is None else np.asarray(value).tolist()


def rejection_case(entry: dict) -> RejectionCase:
    """The entry with the oracle's output; ``UsageError`` for a sampled request without a seed (its draws are fresh,
    so no output is expected of it)."""
    case = case_from_json(entry["case"])
    unseeded = case.seeds is None or (case.seeded is not None and not case.seeded.all())
    if unseeded and (np.asarray(case.temperature) > 0).any():
        raise UsageError(
            f"rejection case {entry['name']!r} samples without a seed: no token is expected of it, so no exact test"
        )
    tokens, num_emitted, _ = rs.sample_case(case)
    fields = {name: _plain(getattr(case, name)) for name in _CASE_FIELDS}
    return RejectionCase(
        entry["name"],
        entry.get("description", ""),
        list(entry["requirements"]),
        fields,
        np.asarray(tokens).tolist(),
        np.asarray(num_emitted).tolist(),
    )


# The test each case becomes: the engine's sampler (``engine_rejection_sample``, the idiom's) on the case, its output
# compared with the oracle's. Shared by every engine idiom that exports rejection cases.
CHECK = '''
def check(case):
    """Run the engine's sampler on ``case``; fail unless it emits the oracle's tokens and counts."""
    token_ids, num_emitted = engine_rejection_sample(case)
    width = len(case["expected_token_ids"][0])
    token_ids = [[int(t) for t in row[:width]] for row in token_ids]
    assert token_ids == case["expected_token_ids"], f"token_ids {token_ids}, expected {case['expected_token_ids']}"
    assert [int(n) for n in num_emitted] == case["expected_num_emitted"], (
        f"num_emitted {num_emitted}, expected {case['expected_num_emitted']}"
    )
'''
