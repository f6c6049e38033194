"""Executable oracle for accepted-token counting and metrics (specs/accepted-tokens.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from specconform.specs.interface import PLACEHOLDER


def num_emitted(row: Sequence[int], placeholder: int = PLACEHOLDER) -> int:
    """Index of the first placeholder (AC-COUNT-1); the row's length if it has none."""
    for index, token in enumerate(row):
        if token == placeholder:
            return index
    return len(row)


@dataclass(frozen=True)
class RowProblem:
    row: int
    kind: str  # "hole" (a real token after a placeholder) or "out_of_vocab"
    detail: str


def validate_rows(rows: Sequence[Sequence[int]], vocab_size: int, placeholder: int = PLACEHOLDER) -> list[RowProblem]:
    """Every violation of the prefix invariant (AC-COUNT-2) and of ``[0, V)`` (AC-COUNT-3)."""
    problems = []
    for r, row in enumerate(rows):
        n = num_emitted(row, placeholder)
        after = [t for t in row[n:] if t != placeholder]
        if after:
            problems.append(RowProblem(r, "hole", f"real tokens {after} after column {n}"))
        bad = [t for t in row if t != placeholder and not 0 <= t < vocab_size]
        if bad:
            problems.append(RowProblem(r, "out_of_vocab", f"ids {bad} outside [0, {vocab_size})"))
    return problems


def committed_tokens(row: Sequence[int], eos_token_ids: Iterable[int], commit_limit: int | None = None) -> int:
    """Tokens the step commits: the emitted prefix cut after its first end token (AC-METRIC-4) and at
    the step's commit limit, what ``max_tokens`` or a completed stop string leaves (AC-STOP-1)."""
    n = num_emitted(row) if commit_limit is None else min(num_emitted(row), commit_limit)
    eos = set(eos_token_ids)
    for index, token in enumerate(row[:n]):
        if token in eos:
            return index + 1
    return n


@dataclass
class AcceptanceMetrics:
    """Accumulated acceptance counters over steps (AC-METRIC-1..5, AC-STOP-1).

    A step of a request with ``K >= 1`` drafts is one *draft*; a step with ``K = 0`` counts
    nothing. ``accepted = committed - 1`` where ``committed`` is the step's committed tokens after
    end-token truncation and its commit limit. A discarded row (no tokens) is counted in
    ``num_discarded`` and nowhere else.
    """

    max_positions: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_discarded: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    drafts_per_position: list[int] = field(default_factory=list)

    def __post_init__(self):
        self.accepted_per_position = [0] * self.max_positions
        self.drafts_per_position = [0] * self.max_positions

    def observe(self, num_draft_tokens: int, row: Sequence[int], eos_token_ids=(), commit_limit=None) -> int:
        if num_draft_tokens == 0:
            return 0
        committed = committed_tokens(row, eos_token_ids, commit_limit)
        if committed == 0:
            self.num_discarded += 1
            return 0
        accepted = min(committed - 1, num_draft_tokens)
        self.num_drafts += 1
        self.num_draft_tokens += num_draft_tokens
        self.num_accepted_tokens += accepted
        for j in range(num_draft_tokens):
            self.drafts_per_position[j] += 1
        for j in range(accepted):
            self.accepted_per_position[j] += 1
        return accepted

    @property
    def acceptance_rate(self) -> float:
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else float("nan")

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else float("nan")

    def per_position_rates(self) -> list[float]:
        return [a / d if d else float("nan") for a, d in zip(self.accepted_per_position, self.drafts_per_position)]
