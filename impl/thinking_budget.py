"""The thinking-token budget state, resident on the device (specs/thinking-budget.md).

Per-request state lives in one ``int32`` tensor ``[NUM_FIELDS, max_num_reqs]`` on the state's
device. The per-step path (``forced_tokens`` / ``apply_to_logits`` / ``update_state``) is one kernel
launch per call (a step's committed tokens can ride along with ``forced_tokens`` or ``apply_to_logits``),
never reads back to the host, and can be captured in a CUDA graph.
``sync_batch`` costs O(changes) plus a host-side scan of each added request's prompt.

Budgets: every integer ``B >= 0`` is accepted (TB-API-1). The state holds ``min(B, 2**31 - 1)``: no
request can generate ``2**31 - 1`` thinking tokens (its count is held in the same ``int32``), so a larger
budget behaves exactly as that one.

Backends: ``"triton"`` (default on CUDA; also on CPU tensors under ``TRITON_INTERPRET=1``) and
``"torch"`` (default on CPU), with the same semantics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from specconform.specs.interface import AddedRequest, BatchUpdate, Move

from .kernels import HAS_TRITON
from .markers import MarkerMatcher
from .validation import INT32_MAX, describe, require_int, require_tensor

__all__ = ["AddedRequest", "BatchUpdate", "Move", "ThinkingBudgetState", "validate_budget"]

TRACKED, BUDGET, IN_SECTION, START_M, END_M, COUNT, SPENT = range(7)
NUM_FIELDS = 7
NO_MARKER = -2  # what a token id outside [0, 2**31 - 1] becomes in the int32 matching: no marker id (nor -1)
SCOPES = ("request", "section")
MAX_LAUNCH_KEYS = 1024  # compiled budget launches kept per holder; an engine sees a few batch sizes


def validate_budget(value, field_name: str = "budget") -> int | None:
    """``None``/-1 -> untracked; an int >= 0 -> the budget; anything else raises ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(
            f"{field_name} must be an integer >= 0, -1 or None; got {value!r} of type {type(value).__name__}"
        )
    if value == -1:
        return None
    if value < 0:
        raise ValueError(f"{field_name} must be an integer >= 0, -1 or None; got {value!r}")
    return value


def _matchable(ids: torch.Tensor) -> torch.Tensor:
    """``ids`` (any integer dtype) as the int32 the marker matching reads: an id outside ``[0, 2**31 - 1]``,
    which no marker holds, becomes ``NO_MARKER`` instead of wrapping onto a marker id."""
    return torch.where((ids < 0) | (ids > INT32_MAX), NO_MARKER, ids).to(torch.int32)


def _marker(tokens, field_name: str) -> list[int]:
    if isinstance(tokens, (str, bytes)):
        raise ValueError(f"{field_name} must be a sequence of token ids; got {tokens!r}")
    try:
        marker = [t for t in tokens]
    except TypeError:
        raise ValueError(f"{field_name} must be a sequence of token ids; got {tokens!r}") from None
    if not marker:
        raise ValueError(f"{field_name} must hold at least one token id; got an empty sequence")
    if any(isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= INT32_MAX for t in marker):
        raise ValueError(f"{field_name} must hold integer token ids in [0, {INT32_MAX}]; got {tokens!r}")
    return marker


def _prompt(added: AddedRequest) -> list[int]:
    prompt: object = added.prompt_token_ids  # any value: an engine is handed what a caller gives (TB-TENSOR-1)
    if isinstance(prompt, torch.Tensor):
        prompt = prompt.tolist() if prompt.dim() == 1 and not prompt.is_floating_point() else None
    ids = list(prompt) if isinstance(prompt, (list, tuple, range)) else None
    if ids is None or any(isinstance(t, bool) or not isinstance(t, int) for t in ids):
        raise ValueError(
            f"prompt_token_ids of the request added at slot {added.index} must be a sequence of integer token ids; "
            f"got {describe(added.prompt_token_ids)}"
        )
    return ids


class ThinkingBudgetState:
    """Budget state for up to ``max_num_reqs`` slots and up to ``max_spec_len`` drafts per slot.

    ``start_token_ids`` / ``end_token_ids``: the markers S and E (any length >= 1).
    ``scope``: ``"request"`` (canonical, TB-SCOPE-1) or ``"section"`` (TB-SCOPE-2).
    """

    def __init__(
        self,
        start_token_ids: Sequence[int],
        end_token_ids: Sequence[int],
        max_num_reqs: int,
        *,
        max_spec_len: int = 0,
        scope: str = "request",
        device: torch.device | str | None = None,
        backend: str = "auto",
    ):
        self.start = _marker(start_token_ids, "start_token_ids")
        self.end = _marker(end_token_ids, "end_token_ids")
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}; got {scope!r}")
        if isinstance(max_num_reqs, bool) or not isinstance(max_num_reqs, int) or max_num_reqs < 1:
            raise ValueError(f"max_num_reqs must be an integer >= 1; got {max_num_reqs!r}")
        if isinstance(max_spec_len, bool) or not isinstance(max_spec_len, int) or max_spec_len < 0:
            raise ValueError(f"max_spec_len must be an integer >= 0; got {max_spec_len!r}")
        self.scope = scope
        self.max_num_reqs = max_num_reqs
        self.max_spec_len = max_spec_len
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if backend == "auto":
            backend = "triton" if self.device.type == "cuda" and HAS_TRITON else "torch"
        if backend not in ("torch", "triton"):
            raise ValueError(f"backend must be auto, torch or triton; got {backend!r}")
        if backend == "triton" and not HAS_TRITON:
            raise ValueError("backend='triton' needs the triton package (pip install triton)")
        self.backend = backend
        dev = self.device
        self._start_matcher, self._end_matcher = MarkerMatcher(self.start), MarkerMatcher(self.end)
        self._start = torch.tensor(self.start, dtype=torch.int32, device=dev)
        self._start_fail = torch.tensor(self._start_matcher.failure, dtype=torch.int32, device=dev)
        self._end = torch.tensor(self.end, dtype=torch.int32, device=dev)
        self._end_fail = torch.tensor(self._end_matcher.failure, dtype=torch.int32, device=dev)
        self.state = torch.zeros((NUM_FIELDS, max_num_reqs), dtype=torch.int32, device=dev)
        # Host bookkeeping, touched only by sync_batch: which slots hold a request, which are tracked.
        self._occupied = [False] * max_num_reqs
        self._tracked = [False] * max_num_reqs
        self.batch_size = 0
        self._launches: dict[tuple, object] = {}  # compiled launches of the budget kernel per launch key

    # -- batch bookkeeping (host side, O(changes)) --------------------------------------------

    def _check_slot(self, slot, what: str) -> int:
        if isinstance(slot, bool) or not isinstance(slot, int) or not 0 <= slot < self.max_num_reqs:
            raise ValueError(f"{what} must be a slot in [0, {self.max_num_reqs}); got {slot!r}")
        return slot

    def _scan_prompt(self, budget: int, prompt: Sequence[int]) -> list[int]:
        """Initial state fields of a tracked request after its prompt (TB-PROMPT-1..3)."""
        start, end = self._start_matcher, self._end_matcher
        in_section, start_m, end_m, count = 0, 0, 0, 0
        for token in prompt:
            if in_section:
                count += 1
                end_m = end.step(end_m, token)
                if end_m == len(self.end):
                    in_section, count, end_m = 0, 0, 0
            else:
                start_m = start.step(start_m, token)
                if start_m == len(self.start):
                    in_section, count, start_m = 1, 0, 0
        fields = [0] * NUM_FIELDS
        fields[TRACKED], fields[BUDGET], fields[IN_SECTION] = 1, min(budget, INT32_MAX), in_section
        fields[START_M], fields[END_M], fields[COUNT] = start_m, end_m, count
        return fields  # SPENT = 0: sections closed inside the prompt do not count

    def sync_batch(self, update: BatchUpdate | None) -> None:
        """Apply one step's batch changes: removed, then added, then moved (TB-BATCH-1..5).

        Validates the whole update before touching any state, so a bad update changes nothing.
        """
        if update is None:
            return
        if not isinstance(update, BatchUpdate):
            raise ValueError(f"update must be a BatchUpdate or None; got {describe(update)}")
        bs = require_int("batch_size", update.batch_size, 0, self.max_num_reqs)
        for name in ("removed", "added", "moved"):
            if not isinstance(getattr(update, name), (list, tuple)):
                raise ValueError(f"{name} must be a list or tuple; got {describe(getattr(update, name))}")
        occupied = list(self._occupied)
        # source of each touched slot: ("old", slot) | ("new", fields) | ("empty",) | ("untracked",)
        source: dict[int, tuple] = {}

        def current(slot):
            return source.get(slot, ("old", slot))

        for slot in update.removed:
            self._check_slot(slot, "removed index")
            if not occupied[slot]:
                raise ValueError(f"removed index {slot} names an empty slot")
            occupied[slot] = False
            source[slot] = ("empty",)
        for added in update.added:
            if not isinstance(added, AddedRequest):
                raise ValueError(f"added entries must be AddedRequest; got {describe(added)}")
            slot = self._check_slot(added.index, "added index")
            budget = validate_budget(added.budget)
            prompt = _prompt(added)
            occupied[slot] = True
            if budget is None:
                source[slot] = ("untracked",)
            else:
                source[slot] = ("new", self._scan_prompt(budget, prompt))
        for move in update.moved:
            if not isinstance(move, (list, tuple)) or len(move) != 3:
                raise ValueError(f"moved entries must be (source, destination, Move); got {describe(move)}")
            src, dst, kind = move
            self._check_slot(src, "move source")
            self._check_slot(dst, "move destination")
            if not isinstance(kind, Move):
                raise ValueError(f"move kind must be Move.SWAP or Move.UNIDIRECTIONAL; got {kind!r}")
            if not occupied[src]:
                raise ValueError(f"move from empty slot {src}")
            if kind is Move.SWAP:
                if not occupied[dst]:
                    raise ValueError(f"SWAP with empty slot {dst}")
                source[src], source[dst] = current(dst), current(src)
            else:
                source[dst] = current(src)
                source[src] = ("empty",)
                occupied[dst], occupied[src] = True, False
        self._commit_sources(source)
        self._occupied = occupied
        self.batch_size = bs

    def _commit_sources(self, source: dict[int, tuple]) -> None:
        """Write the validated update: every tensor is built before the state is touched."""
        gather_dst, gather_src, write_dst, write_rows = [], [], [], []
        tracked = list(self._tracked)
        for slot, origin in source.items():
            if origin[0] == "old":
                if origin[1] != slot:
                    gather_dst.append(slot)
                    gather_src.append(origin[1])
                tracked[slot] = self._tracked[origin[1]]
            elif origin[0] == "new":
                write_dst.append(slot)
                write_rows.append(origin[1])
                tracked[slot] = True
            else:  # empty or untracked: all fields zero
                write_dst.append(slot)
                write_rows.append([0] * NUM_FIELDS)
                tracked[slot] = False
        gather = [torch.tensor(i, dtype=torch.int64, device=self.device) for i in (gather_dst, gather_src)]
        write_at = torch.tensor(write_dst, dtype=torch.int64, device=self.device)
        rows = torch.tensor(write_rows, dtype=torch.int32).reshape(-1, NUM_FIELDS).T.contiguous()
        if gather_dst:  # one gather: the right-hand side is read before anything is written
            self.state[:, gather[0]] = self.state[:, gather[1]]
        if write_dst:
            self.state[:, write_at] = rows.to(self.device, non_blocking=True)
        self._tracked = tracked

    def has_tracked_requests(self) -> bool:
        return any(self._tracked[: self.batch_size])

    # -- the per-step path (device side) --------------------------------------------------------

    def _check_drafts(self, num_draft_tokens, draft_token_ids):
        if num_draft_tokens is None:
            return None, None
        if draft_token_ids is None:
            raise ValueError("draft_token_ids must be given with num_draft_tokens")
        require_tensor("num_draft_tokens", num_draft_tokens, "integer")
        require_tensor("draft_token_ids", draft_token_ids, "integer")
        if num_draft_tokens.shape != (self.batch_size,):
            raise ValueError(
                f"num_draft_tokens must have shape ({self.batch_size},); got {tuple(num_draft_tokens.shape)}"
            )
        if draft_token_ids.dim() != 1:
            raise ValueError(f"draft_token_ids must be 1-D; got shape {tuple(draft_token_ids.shape)}")
        if draft_token_ids.shape[0] > self.batch_size * self.max_spec_len:
            raise ValueError(
                f"draft_token_ids has {draft_token_ids.shape[0]} drafts; at most batch_size * max_spec_len "
                f"= {self.batch_size * self.max_spec_len}"
            )
        if num_draft_tokens.device.type == "cpu" and num_draft_tokens.numel():
            # Checked where it costs no device synchronisation; on a GPU this is the caller's contract.
            most = int(num_draft_tokens.max())
            if most > self.max_spec_len or int(num_draft_tokens.min()) < 0:
                raise ValueError(f"num_draft_tokens must lie in [0, max_spec_len={self.max_spec_len}]")
            if int(num_draft_tokens.sum()) != draft_token_ids.shape[0]:
                raise ValueError(
                    f"num_draft_tokens sums to {int(num_draft_tokens.sum())}; draft_token_ids has "
                    f"{draft_token_ids.shape[0]} entries"
                )
        return num_draft_tokens.to(self.device), draft_token_ids.to(self.device)

    def forced_tokens(
        self,
        num_draft_tokens: torch.Tensor | None = None,
        draft_token_ids: torch.Tensor | None = None,
        *,
        sampled_token_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Forced token per logits row ``[batch_size + sum(K_i)]`` int32, -1 where free.

        ``num_draft_tokens``: ``[batch_size]`` int (K_i, zeros allowed; None = no drafts).
        ``draft_token_ids``: ``[sum(K_i)]`` int. Rows: per slot ``K_i`` draft rows then the bonus
        row; row ``j`` is judged on the state after the slot's first ``j`` drafts (TB-SPEC-1).
        ``sampled_token_ids``: the previous step's committed tokens, as ``update_state`` takes them;
        given, the state first advances by them, in the same launch (one kernel per step).
        """
        tokens = self._check_committed(sampled_token_ids) if sampled_token_ids is not None else None
        num_draft, drafts = self._check_drafts(num_draft_tokens, draft_token_ids)
        num_rows = self.batch_size + (0 if drafts is None else drafts.shape[0])
        if self.backend == "triton":
            return self._step_triton(tokens, num_draft, drafts, num_rows)
        if tokens is not None:
            self._advance_torch(tokens)
        return self._forced_torch(num_draft, drafts, num_rows)

    def apply_to_logits(
        self,
        logits: torch.Tensor,
        num_draft_tokens: torch.Tensor | None = None,
        draft_token_ids: torch.Tensor | None = None,
        *,
        sampled_token_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """In place: each forced row of ``logits [rows, V]`` becomes one-hot (0 at the forced token,
        -inf elsewhere, TB-FORCE-5); free rows are untouched. Returns ``logits``. The other arguments
        are ``forced_tokens``'s."""
        require_tensor("logits", logits, "floating", self.device)
        if logits.dim() == 2 and max(self.end) >= logits.shape[1]:
            raise ValueError(
                f"end_token_ids {self.end} must lie in [0, V) to be forced; logits has V = {logits.shape[1]}"
            )
        tokens = self._check_committed(sampled_token_ids) if sampled_token_ids is not None else None
        num_draft, drafts = self._check_drafts(num_draft_tokens, draft_token_ids)
        num_rows = self.batch_size + (0 if drafts is None else drafts.shape[0])
        if logits.dim() != 2 or logits.shape[0] != num_rows:
            raise ValueError(f"logits must have shape ({num_rows}, V); got {tuple(logits.shape)}")
        if self.backend == "triton":
            self._step_triton(tokens, num_draft, drafts, num_rows, logits)
            return logits
        if tokens is not None:
            self._advance_torch(tokens)
        forced = self._forced_torch(num_draft, drafts, num_rows)
        rows = forced >= 0
        one_hot = torch.full_like(logits, float("-inf"))
        one_hot.scatter_(1, forced.clamp(min=0).long()[:, None], 0.0)
        logits.copy_(torch.where(rows[:, None], one_hot, logits))
        return logits

    def update_state(self, sampled_token_ids: torch.Tensor) -> None:
        """Advance every tracked slot by its committed tokens.

        ``sampled_token_ids``: ``[batch_size, W]`` int, each row a -1-padded prefix (the rejection
        sampler's output).
        """
        tokens = self._check_committed(sampled_token_ids)
        if tokens is None:
            return
        if self.backend == "triton":
            self._step_triton(tokens, None, None, None)
            return
        self._advance_torch(tokens)

    def _check_committed(self, sampled_token_ids) -> torch.Tensor | None:
        """``sampled_token_ids`` on the state's device, or None when there is nothing to advance."""
        require_tensor("sampled_token_ids", sampled_token_ids, "integer")
        if sampled_token_ids.dim() != 2 or sampled_token_ids.shape[0] != self.batch_size:
            raise ValueError(
                f"sampled_token_ids must have shape ({self.batch_size}, W); got {tuple(sampled_token_ids.shape)}"
            )
        if self.batch_size == 0 or sampled_token_ids.shape[1] == 0:
            return None
        return sampled_token_ids.to(self.device)

    # -- torch backend ---------------------------------------------------------------------------

    def _advance_torch(self, tokens):
        fields = [f.clone() for f in self.state[:, : self.batch_size]]
        live = fields[TRACKED] != 0
        for c in range(tokens.shape[1]):
            live = live & (tokens[:, c] != -1)
            self._feed_torch(fields, _matchable(tokens[:, c]), live)
        self.state[:, : self.batch_size] = torch.stack(fields)

    @staticmethod
    def _kmp_torch(matched, token, marker, failure):
        for _ in range(marker.shape[0]):
            mismatch = (matched > 0) & (marker[matched.long()] != token)
            matched = torch.where(mismatch, failure[(matched - 1).clamp(min=0).long()], matched)
        return torch.where(marker[matched.long()] == token, matched + 1, matched)

    def _feed_torch(self, f, token, active):
        """Vectorised ``_feed`` of kernels/budget.py over slots; ``f`` is a list of field rows."""
        new_end = self._kmp_torch(f[END_M], token, self._end, self._end_fail)
        new_start = self._kmp_torch(f[START_M], token, self._start, self._start_fail)
        inside = active & (f[IN_SECTION] != 0)
        outside = active & (f[IN_SECTION] == 0)
        closes = inside & (new_end == len(self.end))
        opens = outside & (new_start == len(self.start))
        zero = torch.zeros_like(f[COUNT])
        f[SPENT] = torch.where(closes, f[SPENT] + f[COUNT] + 1 - len(self.end), f[SPENT])
        f[COUNT] = torch.where(inside, torch.where(closes, zero, f[COUNT] + 1), torch.where(opens, zero, f[COUNT]))
        f[END_M] = torch.where(inside, torch.where(closes, zero, new_end), torch.where(opens, zero, f[END_M]))
        f[START_M] = torch.where(outside, torch.where(opens, zero, new_start), torch.where(closes, zero, f[START_M]))
        f[IN_SECTION] = torch.where(closes, zero, torch.where(opens, zero + 1, f[IN_SECTION]))

    def _forced_of(self, f):
        left = f[BUDGET] if self.scope == "section" else f[BUDGET] - f[SPENT]
        forced = (f[TRACKED] != 0) & (f[IN_SECTION] != 0) & (f[COUNT] >= left)
        return torch.where(forced, self._end[f[END_M].long()], torch.full_like(f[COUNT], -1))

    def _forced_torch(self, num_draft, drafts, num_rows):
        fields = [f.clone() for f in self.state[:, : self.batch_size]]
        if num_draft is None:
            return self._forced_of(fields)
        k = num_draft.long()
        row0 = torch.cumsum(k + 1, 0) - k - 1
        draft0 = row0 - torch.arange(self.batch_size, device=self.device)
        padded = torch.cat([_matchable(drafts), torch.zeros(1, dtype=torch.int32, device=self.device)])
        out = torch.empty(num_rows, dtype=torch.int32, device=self.device)
        for j in range(self.max_spec_len):
            live = j < k
            out[(row0 + j)[live]] = self._forced_of(fields)[live]
            token = padded[torch.where(live, draft0 + j, drafts.shape[0])]
            self._feed_torch(fields, token, live & (fields[TRACKED] != 0))
        out[row0 + k] = self._forced_of(fields)
        return out

    # -- triton backend --------------------------------------------------------------------------

    def _step_triton(self, tokens, num_draft, drafts, num_rows, logits=None):
        """One launch: advance by ``tokens [batch_size, W]`` (None: no advance), then the forced rows
        ``[num_rows]`` int32 (``num_rows`` None: none wanted), each forced row of ``logits [num_rows, V]``
        (when given) made one-hot. The launch goes through a compiled handle cached per launch key
        (``impl/kernels/launch.py``), so that an eager step pays for the driver launch, not the JIT."""
        out = torch.empty(num_rows, dtype=torch.int32, device=self.device) if num_rows is not None else None
        if self.batch_size == 0:
            return out
        placeholder = self.state  # for a pointer the kernel does not read
        has_drafts = num_draft is not None
        if has_drafts and not drafts.numel():
            drafts = torch.zeros(1, dtype=torch.int64, device=self.device)
        tokens = tokens.contiguous() if tokens is not None else None
        args = (  # budget_step_kernel's runtime arguments, in order
            self.state,
            self.state.stride(0),
            tokens if tokens is not None else placeholder,
            tokens.shape[1] if tokens is not None else 0,
            num_draft if has_drafts else placeholder,
            drafts if has_drafts else placeholder,
            out if out is not None else placeholder,
            logits if logits is not None else placeholder,
            logits.stride(0) if logits is not None else 0,
            logits.shape[1] if logits is not None else 0,
            self._start,
            self._start_fail,
            self._end,
            self._end_fail,
        )
        flags = (tokens is not None, out is not None, has_drafts, logits is not None)
        # what the JIT specialises on: the grid, every integer, every tensor's dtype and 16-byte alignment
        key = (
            self.batch_size,
            flags,
            *[(a.dtype, a.data_ptr() % 16 == 0) if isinstance(a, torch.Tensor) else a for a in args],
        )
        launch = self._launches.get(key)
        if launch is None:
            from .kernels.budget import budget_step_kernel
            from .kernels.launch import CompiledLaunch

            if len(self._launches) >= MAX_LAUNCH_KEYS:
                self._launches.clear()
            launch = self._launches[key] = CompiledLaunch(
                budget_step_kernel,
                (self.batch_size,),
                1,
                START_LEN=len(self.start),
                END_LEN=len(self.end),
                PAD=1 << (max(len(self.start), len(self.end)) - 1).bit_length(),
                MAX_DRAFTS=self.max_spec_len,
                SECTION_SCOPE=self.scope == "section",
                HAS_COMMITTED=flags[0],
                HAS_ROWS=flags[1],
                HAS_DRAFTS=flags[2],
                HAS_LOGITS=flags[3],
                LAYOUT_BLOCK=min(1024, 1 << max(self.batch_size - 1, 15).bit_length()),
                BLOCK=1024,
            )
        launch(*args)
        return out
