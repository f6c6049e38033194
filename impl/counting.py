"""Accepted-token counting and acceptance metrics (specs/accepted-tokens.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .validation import describe, require_int, require_tensor


@dataclass
class ValidatedCount:
    """``num_emitted [B]`` int32 (index of the first placeholder), ``broken_prefix [B]`` bool (a real
    token after a placeholder), ``out_of_vocab [B]`` bool (an id outside ``[0, V)``)."""

    num_emitted: torch.Tensor
    broken_prefix: torch.Tensor
    out_of_vocab: torch.Tensor

    @property
    def valid(self) -> torch.Tensor:
        return ~(self.broken_prefix | self.out_of_vocab)


def count_emitted_validated(token_ids: torch.Tensor, vocab_size: int, placeholder: int = -1) -> ValidatedCount:
    """Count by definition and report rows of ``token_ids [B, W]`` (int) that break AC-COUNT-2 or AC-COUNT-3."""
    _require_rows("token_ids", token_ids)
    require_int("vocab_size", vocab_size, 1)
    is_placeholder = token_ids == placeholder
    width = token_ids.shape[1]
    columns = torch.arange(width, device=token_ids.device)
    first = (
        torch.where(is_placeholder, columns, width).min(dim=1).values
        if width
        else torch.zeros(token_ids.shape[0], dtype=torch.int64, device=token_ids.device)
    )
    real = ~is_placeholder
    broken = (real & (columns[None, :] > first[:, None])).any(dim=1)
    out_of_vocab = (real & ((token_ids < 0) | (token_ids >= vocab_size))).any(dim=1)
    return ValidatedCount(first.to(torch.int32), broken, out_of_vocab)


def _require_rows(name: str, token_ids) -> None:
    require_tensor(name, token_ids, "integer")
    if token_ids.dim() != 2:
        raise ValueError(f"{name} must be 2-D [B, W]; got {describe(token_ids)}")


class AcceptanceStats:
    """Acceptance counters accumulated per step (AC-METRIC-1..5).

    ``observe(num_draft_tokens [B], token_ids [B, W], commit_limits [B] | None)`` adds one step. A
    request with K = 0 drafts counts nowhere; a row with no token is counted as discarded; tokens
    after the first EOS in a row (AC-METRIC-4) and beyond the row's commit limit, what
    ``max_tokens`` or a completed stop string leaves the request (AC-STOP-1), are not committed.
    """

    def __init__(self, max_positions: int, eos_token_ids: Iterable[int] = ()):
        self.max_positions = require_int("max_positions", max_positions, 0)
        self.eos_token_ids = sorted(set(eos_token_ids))
        if any(isinstance(t, bool) or not isinstance(t, int) for t in self.eos_token_ids):
            raise ValueError(f"eos_token_ids must be integer token ids; got {describe(eos_token_ids)}")
        self.num_drafts = 0
        self.num_draft_tokens = 0
        self.num_accepted_tokens = 0
        self.num_discarded = 0
        self.accepted_per_position = torch.zeros(max_positions, dtype=torch.int64)
        self.drafts_per_position = torch.zeros(max_positions, dtype=torch.int64)

    def observe(
        self, num_draft_tokens: torch.Tensor, token_ids: torch.Tensor, commit_limits: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Add one step; returns the accepted drafts counted per request ``[B]`` int64.

        ``commit_limits`` ``[B]`` integer, each at least 1: the tokens each request may still commit
        (None: no limit)."""
        _require_rows("token_ids", token_ids)
        require_tensor("num_draft_tokens", num_draft_tokens, "integer")
        if tuple(num_draft_tokens.shape) != (token_ids.shape[0],):
            raise ValueError(
                f"num_draft_tokens must have shape ({token_ids.shape[0]},), one K per row of token_ids; "
                f"got {describe(num_draft_tokens)}"
            )
        k = num_draft_tokens.to("cpu", torch.int64)
        if k.numel() and not 0 <= int(k.min()) <= int(k.max()) <= self.max_positions:
            raise ValueError(f"num_draft_tokens must lie in [0, max_positions={self.max_positions}]; got {k.tolist()}")
        tokens = token_ids.to("cpu", torch.int64)
        width = tokens.shape[1]
        columns = torch.arange(width)
        committed = count_emitted_validated(tokens, vocab_size=2**62).num_emitted.to(torch.int64)
        if commit_limits is not None:
            require_tensor("commit_limits", commit_limits, "integer")
            limits = commit_limits.to("cpu", torch.int64)
            if tuple(limits.shape) != (tokens.shape[0],) or (limits.numel() and int(limits.min()) < 1):
                raise ValueError(
                    f"commit_limits must have shape ({tokens.shape[0]},) with every limit >= 1; "
                    f"got {describe(commit_limits)}"
                )
            committed = torch.minimum(committed, limits)
        if self.eos_token_ids:
            is_eos = torch.isin(tokens, torch.tensor(self.eos_token_ids)) & (columns[None, :] < committed[:, None])
            first_eos = torch.where(is_eos, columns, width).min(dim=1).values
            committed = torch.minimum(committed, first_eos + 1)
        drafted = k > 0
        discarded = drafted & (committed == 0)
        counted = drafted & ~discarded
        accepted = torch.where(counted, torch.minimum(committed - 1, k), torch.zeros_like(k))
        self.num_discarded += int(discarded.sum())
        self.num_drafts += int(counted.sum())
        self.num_draft_tokens += int(k[counted].sum())
        self.num_accepted_tokens += int(accepted.sum())
        positions = torch.arange(self.max_positions)
        self.drafts_per_position += ((positions[None, :] < k[:, None]) & counted[:, None]).sum(0)
        self.accepted_per_position += (positions[None, :] < accepted[:, None]).sum(0)
        return accepted

    @property
    def acceptance_rate(self) -> float:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else float("nan")

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else float("nan")

    def per_position_rates(self) -> list[float]:
        return [
            a / d if d else float("nan")
            for a, d in zip(self.accepted_per_position.tolist(), self.drafts_per_position.tolist())
        ]
