"""The hunt's adversarial rows: one batch of requests built once on the engine's device, every launch verifying it
again under fresh seeds.

Each request follows a ``Template``: its draft rows and its bonus row, each with the target's support (the cells
with a finite logit; top-k, min-p and the vocabulary's edges as ``-inf``), the draft, the draft distribution ``q`` and
the forced token. The templates are chosen for the invariants that hold on every draw (``harness.hunt.invariants``):
drafts the target gives no mass, drafts ``q`` gives no mass, ``q = p`` (a rejection there is a rounding event with
an all but empty residual), the last id alone in its tile, forced rows whose token the target masks. What the
checks read is computed from the built tensors, not from the templates, so a template that misses its intent weakens
the hunt but never misjudges it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SUPPORTS = ("full", "top-k", "top-p", "min-p", "last-id", "first-id", "draft-only")
DRAFTS = ("", "outside", "inside", "last-id")
QS = ("random", "at-draft", "zero-at-draft", "target")
FORCED = ("", "draft", "last-id", "first-id", "outside")
TEMPERATURES = (0.3, 0.7, 1.0, 1.7)  # 1.0: vLLM skips its temperature kernel there
LOGIT_RANGE = 4.0  # finite logits lie in [-4, 4]: no finite cell's probability underflows to 0 at these temperatures
MIN_P = 0.3  # min-p keeps the cells whose probability is at least MIN_P times the largest
MAX_TOP_K = 4
TOP_P = 0.5  # top-p keeps the most probable cells until their mass reaches TOP_P (at temperature 1)
POSITION_RANGE = 1 << 20


@dataclass(frozen=True)
class RowSpec:
    """One row of a template: ``support`` (``SUPPORTS``), ``draft`` (``DRAFTS``; ``""`` for the bonus row),
    ``q`` (``QS``: how the draft distribution treats the draft) and ``forced`` (``FORCED``; ``""`` free)."""

    support: str
    draft: str = ""
    q: str = "random"
    forced: str = ""

    def __post_init__(self) -> None:
        for field, value, allowed in (
            ("support", self.support, SUPPORTS),
            ("draft", self.draft, DRAFTS),
            ("q", self.q, QS),
            ("forced", self.forced, FORCED),
        ):
            if value not in allowed:
                raise ValueError(f"RowSpec.{field} must be one of {allowed}; got {value!r}")
        if "outside" in (self.draft, self.forced) and self.support == "full":
            raise ValueError("RowSpec: a cell outside the support needs a support other than 'full'")


@dataclass(frozen=True)
class Template:
    """A request: its draft rows, then its bonus row (the last of ``rows``, without a draft)."""

    name: str
    rows: tuple[RowSpec, ...]

    def __post_init__(self) -> None:
        if not self.rows or self.rows[-1].draft or not all(r.draft for r in self.rows[:-1]):
            raise ValueError(f"template {self.name}: draft rows, then one bonus row without a draft")

    @property
    def num_drafts(self) -> int:
        return len(self.rows) - 1


TEMPLATES = (
    Template("p-zero-under-top-k", (RowSpec("top-k", "outside", "at-draft"), RowSpec("top-k"))),
    Template(
        "p-zero-at-last-id",
        (RowSpec("draft-only", "inside", "at-draft"), RowSpec("first-id", "last-id", "at-draft"), RowSpec("min-p")),
    ),
    Template("p-zero-under-min-p", (RowSpec("min-p", "outside", "random"), RowSpec("last-id"))),
    Template("p-zero-under-top-p", (RowSpec("top-p", "outside", "at-draft"), RowSpec("top-p"))),
    Template("q-zero-on-the-only-token", (RowSpec("draft-only", "inside", "zero-at-draft"), RowSpec("full"))),
    Template(
        "q-equals-p",
        (RowSpec("min-p", "inside", "target"), RowSpec("top-k", "inside", "target"), RowSpec("first-id")),
    ),
    Template("bonus-at-last-id", (RowSpec("last-id"),)),
    Template("bonus-under-top-k", (RowSpec("draft-only", "inside", "at-draft"), RowSpec("top-k"))),
    Template(
        "forced-rows",
        (
            RowSpec("full", "last-id", "random", forced="draft"),
            RowSpec("top-k", "inside", "at-draft", forced="outside"),
            RowSpec("full", forced="first-id"),
        ),
    ),
    Template(
        "forced-bonus-at-last-id", (RowSpec("draft-only", "inside", "at-draft"), RowSpec("top-k", forced="last-id"))
    ),
    Template("forced-p-zero-draft", (RowSpec("top-k", "outside", "at-draft", forced="draft"), RowSpec("top-k"))),
)


@dataclass
class HuntRows:
    """A batch in the canonical ragged layout (specs/rejection-sampling.md), on one device.

    - ``target_logits [R, V]`` float32, ``-inf`` outside each row's support; ``draft_token_ids [D]`` int64;
      ``num_draft_tokens [B]`` int64; ``draft_probs [D, V]`` float32 (one-hot launches leave it out);
      ``temperature [B]`` float32 (all > 0); ``positions [B]`` int64; ``forced_token_ids [R]`` int64 (-1 free).
    - per row ``[R]`` int64: ``row_request`` (its request) and ``row_local`` (its index ``j`` in the request).
    - ``max_drafts``: the largest ``K_i`` (known without reading the device).
    """

    target_logits: Any
    draft_token_ids: Any
    num_draft_tokens: Any
    draft_probs: Any
    temperature: Any
    positions: Any
    forced_token_ids: Any
    row_request: Any
    row_local: Any
    max_drafts: int

    @property
    def num_rows(self) -> int:
        return int(self.target_logits.shape[0])

    @property
    def batch_size(self) -> int:
        return int(self.num_draft_tokens.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.target_logits.shape[1])


def _random_cell(torch, mask, generator):
    """One id per row drawn uniformly among the cells of ``mask [N, V]`` (bool; each row holds one at least)."""
    score = torch.rand(mask.shape, generator=generator, device=mask.device)
    return torch.where(mask, score, -1.0).argmax(dim=1)


def _support(torch, spec: RowSpec, logits, generator):
    """``[N, V]`` bool: the cells of ``logits`` the row keeps (``draft-only`` is set once the draft is known)."""
    n, vocab = logits.shape
    ids = torch.arange(vocab, device=logits.device)
    if spec.support == "top-k":
        k = torch.randint(1, MAX_TOP_K + 1, (n, 1), generator=generator, device=logits.device).clamp(max=vocab - 1)
        kth = logits.sort(dim=1, descending=True).values.gather(1, k - 1)
        return logits >= kth
    if spec.support == "top-p":
        probs, order = torch.softmax(logits, dim=1).sort(dim=1, descending=True)
        kept = torch.cumsum(probs, dim=1) - probs < TOP_P  # the mass before a cell has not reached TOP_P
        return torch.zeros_like(kept).scatter(1, order, kept)
    if spec.support == "min-p":
        return logits >= logits.max(dim=1, keepdim=True).values + math.log(MIN_P)
    if spec.support == "last-id":
        return (ids == vocab - 1).expand(n, vocab)
    if spec.support == "first-id":
        return (ids == 0).expand(n, vocab)
    return torch.ones((n, vocab), dtype=torch.bool, device=logits.device)


def _draft(torch, spec: RowSpec, support, generator):
    """``[N]`` int64 draft ids of ``spec.draft`` under ``support [N, V]``."""
    n, vocab = support.shape
    if spec.draft == "last-id":
        return torch.full((n,), vocab - 1, dtype=torch.int64, device=support.device)
    if spec.draft == "outside":
        return _random_cell(torch, ~support, generator)
    if spec.support == "draft-only":
        return torch.randint(0, vocab, (n,), generator=generator, device=support.device)
    return _random_cell(torch, support, generator)


def _draft_probs(torch, spec: RowSpec, logits, draft, temperature, generator):
    """``[N, V]`` float32 rows of ``q`` (each sums to 1) as ``spec.q`` says."""
    n, vocab = logits.shape
    at_draft = torch.nn.functional.one_hot(draft, vocab).bool()
    if spec.q == "target":  # q = p at the request's temperature: a rejection is a rounding event
        return torch.softmax(logits / temperature[:, None], dim=1)
    if spec.q == "at-draft":
        rest = torch.full((n, vocab), 0.1 / max(vocab - 1, 1), device=logits.device)
        return torch.where(at_draft, 0.9, rest)
    q = torch.rand((n, vocab), generator=generator, device=logits.device) + 0.01
    if spec.q == "zero-at-draft":
        q = torch.where(at_draft, 0.0, q)
    return q / q.sum(dim=1, keepdim=True)


def _forced(torch, spec: RowSpec, support, draft, generator):
    """``[N]`` int64 forced ids (-1 free)."""
    n, vocab = support.shape
    fill = {"": -1, "last-id": vocab - 1, "first-id": 0}
    if spec.forced in fill:
        return torch.full((n,), fill[spec.forced], dtype=torch.int64, device=support.device)
    if spec.forced == "draft":
        return draft.clone()
    return _random_cell(torch, ~support, generator)


def _template_block(torch, template: Template, n: int, vocab: int, generator, device) -> dict:
    """``n`` requests of ``template``: rows request-major (``[n, K + 1, ...]`` flattened), drafts ``[n, K]``."""
    temperature = torch.tensor(TEMPERATURES, device=device)[
        torch.randint(0, len(TEMPERATURES), (n,), generator=generator, device=device)
    ]
    logits, drafts, qs, forced = [], [], [], []
    for spec in template.rows:
        row = (torch.rand((n, vocab), generator=generator, device=device) * 2 - 1) * LOGIT_RANGE
        support = _support(torch, spec, row, generator)
        draft = _draft(torch, spec, support, generator) if spec.draft else None
        if spec.support == "draft-only":
            support = torch.nn.functional.one_hot(draft, vocab).bool()
        logits.append(torch.where(support, row, float("-inf")))
        forced.append(_forced(torch, spec, support, draft, generator))
        if draft is not None:
            drafts.append(draft)
            qs.append(_draft_probs(torch, spec, logits[-1], draft, temperature, generator))
    k = template.num_drafts
    empty_q = torch.empty((n, 0, vocab), device=device)
    return {
        "target_logits": torch.stack(logits, dim=1).reshape(n * (k + 1), vocab),
        "draft_token_ids": torch.stack(drafts, dim=1).reshape(-1)
        if k
        else torch.empty(0, dtype=torch.int64, device=device),
        "draft_probs": (torch.stack(qs, dim=1) if k else empty_q).reshape(n * k, vocab),
        "forced_token_ids": torch.stack(forced, dim=1).reshape(-1),
        "num_draft_tokens": torch.full((n,), k, dtype=torch.int64, device=device),
        "temperature": temperature.float(),
    }


def build_rows(rows: int, vocab: int, seed: int, device) -> HuntRows:
    """A batch of at least ``rows`` logits rows over a vocabulary of ``vocab`` ids on ``device``: the same number of
    requests of each template, shuffled, drawn from torch's generator seeded with ``seed``."""
    import torch

    if vocab < 2:
        raise ValueError(f"vocab must be at least 2 (a support and a cell outside it); got {vocab}")
    if rows < 1:
        raise ValueError(f"rows must be at least 1; got {rows}")
    device = torch.device(device)
    generator = torch.Generator(device=device).manual_seed(seed)
    per_cycle = sum(len(t.rows) for t in TEMPLATES)
    n = -(-rows // per_cycle)  # requests of each template
    blocks = [_template_block(torch, t, n, vocab, generator, device) for t in TEMPLATES]
    joined = {name: torch.cat([b[name] for b in blocks]) for name in blocks[0]}
    return _shuffled(torch, joined, generator, device)


def _shuffled(torch, joined: dict, generator, device) -> HuntRows:
    """``joined``'s requests in a random order (ragged rows and drafts moved with their request), with positions."""
    k = joined["num_draft_tokens"]
    batch = k.shape[0]
    order = torch.randperm(batch, generator=generator, device=device)
    row_start = torch.cumsum(k + 1, 0) - (k + 1)
    draft_start = torch.cumsum(k, 0) - k
    new_k = k[order]
    new_row_start = torch.cumsum(new_k + 1, 0) - (new_k + 1)
    row_request = torch.repeat_interleave(torch.arange(batch, device=device), new_k + 1)
    row_local = torch.arange(row_request.shape[0], device=device) - new_row_start[row_request]
    old_row = row_start[order][row_request] + row_local
    draft_rows = row_local < new_k[row_request]
    old_draft = (draft_start[order][row_request] + row_local)[draft_rows]
    return HuntRows(
        target_logits=joined["target_logits"][old_row].contiguous(),
        draft_token_ids=joined["draft_token_ids"][old_draft].contiguous(),
        num_draft_tokens=new_k.contiguous(),
        draft_probs=joined["draft_probs"][old_draft].contiguous(),
        temperature=joined["temperature"][order].contiguous(),
        positions=torch.randint(0, POSITION_RANGE, (batch,), generator=generator, device=device),
        forced_token_ids=joined["forced_token_ids"][old_row].contiguous(),
        row_request=row_request,
        row_local=row_local,
        max_drafts=max(t.num_drafts for t in TEMPLATES),
    )
