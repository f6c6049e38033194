"""The persistent-batch update the specification defines (specs/thinking-budget.md, TB-BATCH-1..5).

One type, shared by the reference implementation, the oracle, the golden vectors and every engine
adapter. It is plain data: it validates nothing, so a check can hand an engine an invalid budget
(``1.5``, ``True``) and judge whether the engine rejects it (TB-API-2).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


class Move(enum.Enum):
    """How a move changes two slots (TB-BATCH-2, TB-BATCH-3)."""

    SWAP = "SWAP"
    UNIDIRECTIONAL = "UNIDIRECTIONAL"


@dataclass(frozen=True)
class AddedRequest:
    """A request placed in slot ``index`` with ``budget`` (``None`` or ``-1``: untracked) and its prompt."""

    index: int
    budget: Any
    prompt_token_ids: Sequence[int] = ()


@dataclass(frozen=True)
class BatchUpdate:
    """One step's changes to the persistent batch, applied ``removed`` → ``added`` → ``moved`` (TB-BATCH-1).

    ``moved`` holds ``(src, dst, kind)`` with ``kind`` a ``Move``.
    """

    batch_size: int
    removed: Sequence[int] = ()
    added: Sequence[AddedRequest] = ()
    moved: Sequence[tuple[int, int, Move]] = ()

    def to_json(self) -> dict:
        return {
            "batch_size": self.batch_size,
            "removed": list(self.removed),
            "added": [
                {"index": a.index, "budget": a.budget, "prompt_token_ids": list(a.prompt_token_ids)} for a in self.added
            ],
            "moved": [[src, dst, kind.value] for src, dst, kind in self.moved],
        }

    @classmethod
    def from_json(cls, data: dict) -> BatchUpdate:
        """The inverse of ``to_json``; an unknown move kind raises ``ValueError`` naming it."""
        moved = []
        for src, dst, kind in data.get("moved", ()):
            try:
                moved.append((src, dst, Move(kind)))
            except ValueError:
                raise ValueError(f"moved: kind must be SWAP or UNIDIRECTIONAL; got {kind!r}") from None
        return cls(
            batch_size=data["batch_size"],
            removed=tuple(data.get("removed", ())),
            added=tuple(
                AddedRequest(a["index"], a["budget"], tuple(a["prompt_token_ids"])) for a in data.get("added", ())
            ),
            moved=tuple(moved),
        )
