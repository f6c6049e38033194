"""The zero-coin mutant (``zero-coin-accepts-zero-p``): SGLang's seeded verification under its own draws
(``sglang-seeded``) with the test of SGLang issue 35771.

SGLang draws its coins from [0, 1) and its target-only verification accepted a draft when ``coin <= p(d)`` (in the
ratio form here, ``coin * q(d) <= p(d)``). Where the coin is exactly 0, a draft whose target probability is 0 is then
accepted, which RS-PROB-3 forbids; that happens once in 2^32 coins, so no statistical check sees it, and the exact
check under the engine's own draws sees it only on a seed hunted onto that coin (``rejection/own-draws``,
``specconform.harness.oracle.boundaries``). Everything else is the oracle's: the coins of draft ``j`` and of the final
sampling are SGLang's (column ``j`` and column ``K + 1`` of the request's ``(seed, position)``), the token after the
last accepted draft SGLang's inverse-CDF sample of the residual (``p`` where it has no mass) or of the bonus row.
"""

from __future__ import annotations

import numpy as np

from specconform.specs.interface import RejectionCase

from ...oracle import rejection as rs
from ...oracle.draws import sglang_seeded

NAME = "zero-coin-accepts-zero-p"


def _verify(logits_rows, drafts, q_rows, temperature: float, forced, seed: int, position: int) -> list[int]:
    """One seeded, sampled request verified with SGLang's coins and the ``<=`` test: its emitted tokens."""
    K = len(drafts)
    coins, final = sglang_seeded.verify_coins([seed], [position], K + 1)
    out: list[int] = []
    for j in range(K + 1):
        p = rs.target_probs(logits_rows[j], temperature, int(forced[j]))
        if j == K:
            return out + [sglang_seeded.inverse_cdf(p, final[0])[0]]
        d = int(drafts[j])
        q = np.array(q_rows[j], dtype=np.float64) if q_rows is not None else np.zeros(len(p))
        q[d] += q_rows is None  # one-hot at the draft
        if q[d] > 0 and float(coins[0, j]) * q[d] <= p[d]:  # the bug: "<=" where the rule has "<"
            out.append(d)
            continue
        residual = np.maximum(p - q, 0.0)
        return out + [sglang_seeded.inverse_cdf(residual if residual.sum() > 0 else p, final[0])[0]]
    raise AssertionError("unreachable: the bonus row ends every request")


def zero_coin_sample_case(case: RejectionCase) -> tuple[np.ndarray, np.ndarray]:
    """``(token_ids [B, max K + 1], num_emitted [B])`` int64: the oracle's output, each seeded, sampled request's
    rows verified by ``_verify`` instead."""
    tokens, num, _ = rs.sample_case(case)
    forced = case.forced_token_ids if case.forced_token_ids is not None else np.full(len(case.target_logits), -1)
    for i in range(case.batch_size):
        seed, temperature = case.seed_of(i), float(case.temperature[i])
        if seed is None or temperature == 0:
            continue
        row_slice, draft_slice = rs.request_slices(case, i)
        emitted = _verify(
            case.target_logits[row_slice],
            case.draft_token_ids[draft_slice],
            None if case.draft_probs is None else case.draft_probs[draft_slice],
            temperature,
            forced[row_slice],
            seed,
            0 if case.positions is None else int(case.positions[i]),
        )
        tokens[i] = -1
        tokens[i, : len(emitted)] = emitted
        num[i] = len(emitted)
    return tokens, num
