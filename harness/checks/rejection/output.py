"""What every rejection check reads of an engine's output: its rows in the layout the profile declares
(RS-LAYOUT-3), the first way a row breaks the output contract, and whether a case lies outside the engine's
contract."""

from __future__ import annotations

import numpy as np

from ... import contract
from ...oracle import rejection as rs
from ...oracle import rejection_judge as rj


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
    """The structural violation one output's failure belongs to: ``(requirement, mode, evidence)`` or None
    (RS-LAYOUT-2, RS-ZERO-1, RS-INPUT-1, RS-PROB-3, AC-COUNT-5, RS-FORCE-1; ``oracle.rejection_judge``)."""
    found = rj.owner(rj.violations(case, tokens, num, compare=False))
    return None if found is None else (found.requirement, found.mode, found.evidence)


def describe_case(case: rs.RejectionCase) -> str:
    return (
        f"K={case.num_draft_tokens.tolist()}, V={case.vocab_size}, T={case.temperature.tolist()}, "
        f"drafts={case.draft_token_ids.tolist()}, q {'given' if case.draft_probs is not None else 'none'}"
    )
