"""The invariants a hunt judges on every draw, and their tally on the device.

A draw is one row the engine decided: an accepted or rejected draft row, or the row whose token ends the request
(``num_emitted`` rows of each request). Every launch adds its draws, the draws each invariant judged (its
opportunities), its violations and the first violating row to tensors on the device; nothing is read back until
``DeviceTally.read``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rows import HuntRows


@dataclass(frozen=True)
class Invariant:
    """An invariant of every draw: its name, the requirement it follows from, and what it says."""

    name: str
    requirement: str
    says: str


INVARIANTS = (
    Invariant("q-zero-draft-rejected", "RS-PROB-3", "a free draft row whose q(d) = 0 rejects its draft"),
    Invariant("p-zero-draft-rejected", "RS-PROB-1", "a free draft row whose target gives d probability 0 rejects it"),
    Invariant("emitted-in-support", "RS-INPUT-2", "a free row emits an id whose target logit is finite"),
    Invariant("emitted-in-vocab", "RS-INPUT-1", "every emitted id lies in [0, V)"),
    Invariant("forced-emitted", "RS-FORCE-1", "a forced row emits its forced token"),
    Invariant("emitted-count", "RS-LAYOUT-2", "num_emitted lies in [1, K + 1]"),
)
NO_VIOLATION = 2**62  # the first-violation code of an invariant never violated


class DeviceTally:
    """Draws, opportunities and violations of ``INVARIANTS`` over the launches on ``rows``, kept on its device.

    ``observe(tokens [B, W] int, num_emitted [B] int, launch, one_hot)`` adds one launch without reading anything
    back; the first violating row of each invariant is kept as ``launch * R + row`` (the smallest code).
    ``q_zero_outside``: the engine's contract excludes drafts with ``q(d) = 0`` (``drafts-sampled-from-q``): a request
    holding one is then not judged at all in a launch with draft probabilities, and neither counts its draws."""

    def __init__(self, rows: HuntRows, q_zero_outside: bool = False):
        import torch

        self.torch = torch
        self.rows = rows
        device = rows.target_logits.device
        k = rows.num_draft_tokens
        draft_row = rows.row_local < k[rows.row_request]
        forced = rows.forced_token_ids
        self.free = forced < 0
        self.forced = ~self.free
        self.row_ids = torch.arange(rows.num_rows, device=device)
        # request i's rows follow its drafts and the bonus rows of the i requests before it: row r holds draft r - i
        draft_index = torch.where(draft_row, self.row_ids - rows.row_request, 0)
        draft = rows.draft_token_ids[draft_index] if rows.draft_token_ids.numel() else torch.zeros_like(draft_index)
        target_at_draft = rows.target_logits.gather(1, draft[:, None])[:, 0]
        self.p_zero = draft_row & self.free & (target_at_draft == float("-inf"))
        has_q = rows.draft_probs.numel() > 0
        q_at_draft = rows.draft_probs[draft_index, draft] if has_q else torch.ones_like(target_at_draft)
        self.q_zero = draft_row & self.free & (q_at_draft == 0)
        # contract.rejection_preconditions: any draft of the request with q(d) = 0, forced or free
        q_zero_drafts = torch.zeros(rows.batch_size, dtype=torch.int64, device=device)
        q_zero_request = q_zero_drafts.index_add_(0, rows.row_request, (draft_row & (q_at_draft <= 0)).long()) > 0
        self.judged_with_q = ~q_zero_request if q_zero_outside else torch.ones_like(q_zero_request)
        self.draws = torch.zeros((), dtype=torch.int64, device=device)
        self.opportunities = torch.zeros(len(INVARIANTS), dtype=torch.int64, device=device)
        self.violations = torch.zeros(len(INVARIANTS), dtype=torch.int64, device=device)
        self.first = torch.full((len(INVARIANTS),), NO_VIOLATION, dtype=torch.int64, device=device)

    def observe(self, tokens, num_emitted, launch: int, one_hot: bool) -> None:
        torch, rows = self.torch, self.rows
        num = num_emitted.to(torch.int64)
        judged = self.judged_with_q if not one_hot else torch.ones_like(self.judged_with_q)
        count_ok = (num >= 1) & (num <= rows.num_draft_tokens + 1)
        num = torch.where(count_ok & judged, num, 0)  # a malformed count is judged by emitted-count alone
        num_of_row = num[rows.row_request]
        reached = rows.row_local < num_of_row
        accepted = reached & (rows.row_local + 1 < num_of_row)
        width = tokens.shape[1]
        token = tokens.reshape(-1)[rows.row_request * width + rows.row_local.clamp(max=width - 1)].to(torch.int64)
        in_vocab = (token >= 0) & (token < rows.vocab_size)
        logit = rows.target_logits.gather(1, token.clamp(0, rows.vocab_size - 1)[:, None])[:, 0]
        q_zero = self.q_zero & reached if not one_hot else torch.zeros_like(reached)
        first_row = (self.rows.row_local == 0) & judged[rows.row_request]  # one opportunity per judged request
        opportunities = torch.stack(
            [
                q_zero,
                self.p_zero & reached,
                reached & self.free & in_vocab,
                reached,
                reached & self.forced,
                first_row,
            ]
        )
        violated = torch.stack(
            [
                q_zero & accepted,
                self.p_zero & accepted,
                reached & self.free & in_vocab & (logit == float("-inf")),
                reached & ~in_vocab,
                reached & self.forced & (token != rows.forced_token_ids),
                first_row & ~count_ok[rows.row_request],
            ]
        )
        self.draws += num.sum()
        self.opportunities += opportunities.sum(dim=1)
        self.violations += violated.sum(dim=1)
        code = torch.where(violated, launch * rows.num_rows + self.row_ids, NO_VIOLATION).amin(dim=1)
        torch.minimum(self.first, code, out=self.first)

    def read(self) -> dict:
        """The tallies on the host (the one synchronisation): ``draws``, and per invariant name its
        ``opportunities``, ``violations`` and ``first`` code (None if never violated)."""
        opportunities = self.opportunities.tolist()
        violations = self.violations.tolist()
        first = self.first.tolist()
        return {
            "draws": int(self.draws),
            "invariants": {
                inv.name: {
                    "opportunities": opportunities[i],
                    "violations": violations[i],
                    "first": None if first[i] == NO_VIOLATION else first[i],
                }
                for i, inv in enumerate(INVARIANTS)
            },
        }

    def draws_now(self) -> int:
        return int(self.draws)


def request_violations(case, token_ids, num_emitted: int, one_hot: bool) -> list[str]:
    """The invariants one request of a launch violates, judged on the host from its canonical case (one request,
    ``case.draft_probs`` None where the launch was one-hot) and what the engine emitted for it (``token_ids [W]``):
    the same rules as ``DeviceTally``, written once more in NumPy for the reproduction."""
    import numpy as np

    k = int(case.num_draft_tokens[0])
    vocab = case.vocab_size
    forced = case.forced_token_ids if case.forced_token_ids is not None else np.full(k + 1, -1)
    if not 1 <= num_emitted <= k + 1:
        return ["emitted-count"]
    found = []
    for j in range(num_emitted):
        token, free, accepted = int(token_ids[j]), forced[j] < 0, j + 1 < num_emitted
        if j < k and free and accepted:
            d = int(case.draft_token_ids[j])
            if not one_hot and case.draft_probs is not None and case.draft_probs[j, d] == 0:
                found.append("q-zero-draft-rejected")
            if case.target_logits[j, d] == -np.inf:
                found.append("p-zero-draft-rejected")
        if not 0 <= token < vocab:
            found.append("emitted-in-vocab")
        elif free and case.target_logits[j, token] == -np.inf:
            found.append("emitted-in-support")
        if not free and token != forced[j]:
            found.append("forced-emitted")
    return found
