"""What every rejection check reads of an engine's output: its rows in the layout the profile declares
(RS-LAYOUT-3), the first way a row breaks the output contract, and whether a case lies outside the engine's
contract."""

from __future__ import annotations

import numpy as np

from ... import contract
from ...oracle import counting as ac
from ...oracle import rejection as rs


def outside_contract(profile, case: rs.RejectionCase) -> str | None:
    """Why ``case`` is not run against an engine with ``profile`` (None: it is): it needs an input the engine's
    contract says its callers never produce (``specconform.harness.contract``)."""
    return profile.outside_contract(
        contract.rejection_preconditions(case.draft_token_ids, case.num_draft_tokens, case.draft_probs)
    )


def sample_output(engine, profile, case: rs.RejectionCase) -> tuple[np.ndarray, np.ndarray]:
    """``(token_ids [B, W], num_emitted [B])`` from the engine, in the canonical layout. Under the
    declared ``layout: padded`` variant (RS-LAYOUT-3) a row's tail after ``num_emitted`` is unspecified:
    it is read through ``num_emitted`` and judged as ``-1`` placeholders."""
    tokens, num = engine.rejection_sample(case)
    tokens, num = np.array(tokens), np.asarray(num)
    if profile.layout == "padded" and tokens.ndim == 2 and num.shape == (tokens.shape[0],):
        tokens[np.arange(tokens.shape[1])[None, :] >= num[:, None]] = -1
    return tokens, num


def output_problem(case: rs.RejectionCase, tokens, num) -> tuple[str, str, str] | None:
    """The first structural violation of one output: ``(requirement, mode, evidence)`` or None
    (RS-LAYOUT-2, RS-INPUT-1, RS-PROB-3, AC-COUNT-5, RS-FORCE-1)."""
    V = case.vocab_size
    tokens = np.asarray(tokens)
    num = np.asarray(num)
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    if tokens.ndim != 2 or tokens.shape[0] != case.batch_size or tokens.shape[1] < width:
        return (
            "RS-LAYOUT-2",
            "wrong-shape",
            f"token_ids has shape {tokens.shape}; expected ({case.batch_size}, >= {width})",
        )
    offsets = case.row_offsets()
    for i in range(case.batch_size):
        row = tokens[i].tolist()
        n = ac.num_emitted(row)
        if any(t != -1 for t in row[n:]):
            return "RS-LAYOUT-2", "token-after-placeholder", f"request {i}: real tokens after a placeholder: {row}"
        if not 1 <= n <= case.num_draft_tokens[i] + 1:
            return (
                "RS-LAYOUT-2",
                "emitted-count-out-of-range",
                f"request {i} emitted {n} tokens with K = {case.num_draft_tokens[i]}",
            )
        if any(not 0 <= t < V for t in row[:n]):
            return "RS-INPUT-1", "id-outside-vocabulary", f"request {i}: ids outside [0, {V}): {row}"
        if int(num[i]) != n:
            return (
                "AC-COUNT-5",
                "num-emitted-differs",
                f"request {i}: num_emitted {int(num[i])} but the row holds {n} tokens",
            )
        for j, t in enumerate(row[:n]):
            r = offsets[i] + j
            forced = -1 if case.forced_token_ids is None else int(case.forced_token_ids[r])
            if forced == -1 and np.isneginf(case.target_logits[r, t]):
                return "RS-PROB-3", "zero-probability-token", f"request {i} position {j}: emitted token {t} has p = 0"
            if forced != -1 and j == n - 1 and t != forced:
                return "RS-FORCE-1", "forced-row-ignored", f"request {i} position {j}: forced {forced}, emitted {t}"
    return None


def describe_case(case: rs.RejectionCase) -> str:
    return (
        f"K={case.num_draft_tokens.tolist()}, V={case.vocab_size}, T={case.temperature.tolist()}, "
        f"drafts={case.draft_token_ids.tolist()}, q {'given' if case.draft_probs is not None else 'none'}"
    )
