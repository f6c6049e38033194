"""The engine protocol's argument types: what the specification hands an engine, shared by the reference
implementation, the oracle, the golden vectors, the checks and every engine adapter.

* ``BatchUpdate``: the persistent-batch update (specs/thinking-budget.md, TB-BATCH-1..5). It is plain data: it
  validates nothing, so a check can hand an engine an invalid budget (``1.5``, ``True``) and judge whether the
  engine rejects it (TB-API-2).
* ``RejectionCase``: one batch of speculative-decoding verification in the canonical ragged layout
  (specs/rejection-sampling.md, RS-LAYOUT-1); ``validate`` raises ``InvalidCase`` for the input the spec
  requires an implementation to reject (RS-INPUT-*).
* ``PLACEHOLDER``: the id that pads an output row past its emitted tokens (AC-COUNT-1).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt


class Move(enum.Enum):
    """How a move changes two slots (TB-BATCH-2, TB-BATCH-3)."""

    SWAP = "SWAP"
    UNIDIRECTIONAL = "UNIDIRECTIONAL"


class IdTensor(Protocol):
    """A 1-D integer tensor (torch's, say): a prompt may be given as one (thinking-budget.md section 10)."""

    def dim(self) -> int: ...

    def tolist(self) -> list: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class AddedRequest:
    """A request placed in slot ``index`` with ``budget`` (``None`` or ``-1``: untracked) and its prompt: a list,
    tuple or range of ids, or a 1-D integer tensor."""

    index: int
    budget: Any
    prompt_token_ids: Sequence[int] | IdTensor = ()


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


PLACEHOLDER = -1


class InvalidCase(ValueError):
    """Input that the spec requires an implementation to reject (RS-INPUT-*)."""


@dataclass(init=False)
class RejectionCase:
    """The canonical ragged layout (RS-LAYOUT-1).

    ``target_logits``: ``[sum(K_i + 1), V]``; request ``i`` owns ``K_i`` draft rows then its bonus
    row. ``draft_token_ids``: ``[sum(K_i)]``. ``num_draft_tokens``: ``[B]``. ``draft_probs``:
    ``[sum(K_i), V]`` or None (one-hot drafts). ``temperature``: ``[B]``, 0 = greedy.
    ``forced_token_ids``: ``[sum(K_i + 1)]``, -1 = free. ``seeds``: ``[B]`` int64 or None (no request has a
    seed). ``seeded``: ``[B]`` bool beside ``seeds``, False where a request has no seed (its entry in ``seeds`` is
    then unused), or None (every request has its seed): a batch may mix seeded and unseeded requests (section 6,
    mixed batches).
    ``positions``: ``[B]`` int64.

    The constructor takes any array-like (lists included) and stores numpy arrays of the dtypes above: the
    ``__init__`` is written out, since a generated one would type each argument as the stored array.
    """

    target_logits: np.ndarray
    draft_token_ids: np.ndarray
    num_draft_tokens: np.ndarray
    temperature: np.ndarray
    draft_probs: np.ndarray | None = None
    forced_token_ids: np.ndarray | None = None
    seeds: np.ndarray | None = None
    positions: np.ndarray | None = None
    seeded: np.ndarray | None = None

    def __init__(
        self,
        target_logits: npt.ArrayLike,
        draft_token_ids: npt.ArrayLike,
        num_draft_tokens: npt.ArrayLike,
        temperature: npt.ArrayLike,
        draft_probs: npt.ArrayLike | None = None,
        forced_token_ids: npt.ArrayLike | None = None,
        seeds: npt.ArrayLike | None = None,
        positions: npt.ArrayLike | None = None,
        seeded: npt.ArrayLike | None = None,
    ) -> None:
        self.target_logits = np.asarray(target_logits, dtype=np.float64)
        self.draft_token_ids = np.asarray(draft_token_ids, dtype=np.int64).reshape(-1)
        self.num_draft_tokens = np.asarray(num_draft_tokens, dtype=np.int64).reshape(-1)
        self.temperature = np.asarray(temperature, dtype=np.float64).reshape(-1)
        self.draft_probs = None if draft_probs is None else np.asarray(draft_probs, dtype=np.float64)
        self.forced_token_ids = None if forced_token_ids is None else np.asarray(forced_token_ids, np.int64).reshape(-1)
        self.seeds = None if seeds is None else np.asarray(seeds, dtype=np.int64).reshape(-1)
        self.positions = None if positions is None else np.asarray(positions, dtype=np.int64).reshape(-1)
        self.seeded = None if seeded is None else np.asarray(seeded).reshape(-1)

    @property
    def batch_size(self) -> int:
        return len(self.num_draft_tokens)

    @property
    def vocab_size(self) -> int:
        return self.target_logits.shape[1]

    def row_offsets(self) -> np.ndarray:
        """First logits row of each request, ``[B + 1]`` (exclusive prefix sum of K_i + 1)."""
        return np.concatenate([[0], np.cumsum(self.num_draft_tokens + 1)])

    def draft_offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.num_draft_tokens)])

    def seed_of(self, i: int) -> int | None:
        """Request ``i``'s seed, or None where it has none (mixed batches, spec section 6)."""
        if self.seeds is None or (self.seeded is not None and not self.seeded[i]):
            return None
        return int(self.seeds[i])

    @property
    def marks_unseeded(self) -> bool:
        """Whether ``seeded`` marks a request without a seed: the batch mixes seeded and unseeded requests, or
        (all marked) holds unseeded requests alone (mixed batches, spec section 6)."""
        return self.seeds is not None and self.seeded is not None and not self.seeded.all()

    def validate(self) -> None:
        """Raise ``InvalidCase`` naming the field for input the spec rejects (RS-INPUT-1..5)."""
        B, V = self.batch_size, self.vocab_size
        if (self.num_draft_tokens < 0).any():
            raise InvalidCase(f"num_draft_tokens must be >= 0; got {self.num_draft_tokens.tolist()}")
        rows = int((self.num_draft_tokens + 1).sum())
        if self.target_logits.shape[0] != rows:
            raise InvalidCase(f"target_logits has {self.target_logits.shape[0]} rows; sum(K_i + 1) is {rows}")
        if len(self.draft_token_ids) != int(self.num_draft_tokens.sum()):
            raise InvalidCase(
                f"draft_token_ids has {len(self.draft_token_ids)} entries; sum(K_i) is "
                f"{int(self.num_draft_tokens.sum())}"
            )
        if len(self.temperature) != B:
            raise InvalidCase(f"temperature has {len(self.temperature)} entries; B is {B}")
        if self.seeded is not None:
            if self.seeds is None:
                raise InvalidCase(f"seeded is {self.seeded.tolist()} but seeds is None; seeded marks entries of seeds")
            if self.seeded.dtype != np.bool_:
                raise InvalidCase(f"seeded must hold booleans; got {self.seeded.tolist()} ({self.seeded.dtype})")
            if len(self.seeded) != len(self.seeds):
                raise InvalidCase(f"seeded has {len(self.seeded)} entries; seeds has {len(self.seeds)}")
        if not np.isfinite(self.temperature).all() or (self.temperature < 0).any():
            raise InvalidCase(f"temperature must be finite and >= 0; got {self.temperature.tolist()}")
        bad = (self.draft_token_ids < 0) | (self.draft_token_ids >= V)
        if bad.any():
            raise InvalidCase(f"draft_token_ids must lie in [0, {V}); got {self.draft_token_ids[bad].tolist()}")
        forced = self.forced_token_ids
        if forced is not None:
            if len(forced) != rows:
                raise InvalidCase(f"forced_token_ids has {len(forced)} entries; expected {rows}")
            bad = (forced < -1) | (forced >= V)
            if bad.any():
                raise InvalidCase(f"forced_token_ids must be -1 or in [0, {V}); got {forced[bad].tolist()}")
        free = np.ones(rows, dtype=bool) if forced is None else forced == -1
        logits = self.target_logits[free]
        if np.isnan(logits).any():
            raise InvalidCase("target_logits contains NaN")
        if np.isposinf(logits).any():
            raise InvalidCase("target_logits contains +inf")
        no_finite = ~np.isfinite(logits).any(axis=1)
        if no_finite.any():
            row = int(np.flatnonzero(free)[np.flatnonzero(no_finite)[0]])
            raise InvalidCase(f"target_logits row {row} has no finite logit")
        if self.draft_probs is not None:
            q = self.draft_probs
            if q.shape != (len(self.draft_token_ids), V):
                raise InvalidCase(f"draft_probs has shape {q.shape}; expected {(len(self.draft_token_ids), V)}")
            if not np.isfinite(q).all() or (q < 0).any():
                raise InvalidCase("draft_probs must be finite and >= 0")
            sums = q.sum(axis=1)
            bad = np.abs(sums - 1.0) > 1e-3
            if bad.any():
                raise InvalidCase(
                    f"draft_probs row {int(np.flatnonzero(bad)[0])} sums to "
                    f"{float(sums[bad][0])!r}; rows must sum to 1 within 1e-3"
                )
