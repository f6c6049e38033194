"""Rejection-sampling cases in the canonical ragged layout (``specconform.specs.interface.RejectionCase``).

Hypothesis draws the structure every rule branches on: the vocabulary size, the batch, each
request's draft count and temperature, whether draft probabilities are given, how each draft row's
``q`` relates to its draft and target, forced rows and the kind of ``-inf`` mask. The numbers no rule
branches on (logits, Dirichlet draws, draft ids, seeds) come from a NumPy generator seeded by one
drawn integer.

Why every generated case is reachable for a real engine (specs/INTERPRETING.md, "Generated cases"):

- **Vocabularies** from 1 to 262,144 (Gemma 3), with 151,936 (Qwen) and sizes that are no multiple
  of any power-of-two tile (37, 257, 4097, 8193, 131,071): engines pad the vocabulary to tiles.
- **Masks**: ``-inf`` logits come from top-k, grammars and forcing; a ``tail`` mask leaves only the
  low ids, the shape that once returned id ``V`` from a padded tile; a ``last-ids`` mask leaves only
  the vocabulary's last ids, those of the last partial tile of some power-of-two tiling (a kernel
  that drops that tile, or reads its padding, has no mass left to sample), and the drafts and the
  drafter's ``q`` lie among them too. Every free row keeps a finite logit (a row without one is invalid input, judged
  by the error vectors).
- **Forced rows** (``forced_logits="non-finite"``): the thinking budget forces a row whatever the
  model computed there, NaN and ``+inf`` included (fp16 overflow); a forced row's logits are not
  read (RS-FORCE-1) and are not the input RS-INPUT-3 rejects, so they hold NaN, ``+inf``, or no
  finite logit.
- **Ties** (rounded logits): quantised and low-temperature models produce exact ties.
- **Draft rows** (``DRAFT_KINDS``): ``from-q`` (the drafter's sample), ``q-with-zeros`` (a drafter
  with top-k/top-p filtering), ``q-zero-at-draft`` (``q(d) = 0``: a drafter whose stored ``q`` was
  filtered or rounded to zero in float32 after the draft was chosen), ``empty-residual`` (``q = p``
  on ``p``'s support and ``p(d) = q(d) = 0``: the residual has no mass, RS-PROB-4; ``p`` is uniform
  over a power-of-two support so that it is exact in every precision), ``one-hot-q`` (a
  deterministic drafter that reports its choice as one-hot).
- **Zero-draft requests** beside drafting ones: speculation on, nothing proposed this step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from specconform.specs.interface import RejectionCase

VOCABS = (1, 2, 3, 5, 37, 64, 100, 257, 1000, 4097, 8193, 131_071, 151_936, 262_144)
WIDE_VOCAB = 8193  # above it a case holds at most 2 requests of at most one draft, and is drawn 1 time in 10
SMALL_VOCABS = (1, 2, 3, 5, 37, 64, 100, 257)
DRAFT_KINDS = ("from-q", "q-with-zeros", "q-zero-at-draft", "empty-residual", "one-hot-q")
MASKS = ("none", "scattered", "tail")
LAST_IDS = "last-ids"  # only the last partial tile's ids finite: drawn by the families that name it
# vocabularies whose last ids a tiling can lose: no power of two, or (151,936) no multiple of 1024
TILE_REMAINDER_VOCABS = (5, 37, 100, 257, 1000, 4097, 8193, 131_071, 151_936)
NON_FINITE_ROWS = ("nan", "pos-inf", "no-finite", "nan-and-inf")
TEMPERATURES = (0.5, 1.0, 1.5)


@dataclass(frozen=True)
class RejectionFamily:
    """How a family of cases is drawn. ``greedy``: ``all``, ``none`` or ``mixed`` requests;
    ``draft_probs``: ``given``, ``none`` or ``either``; ``zero_drafts``: ``some`` or ``most``;
    ``forced_logits``: ``finite`` (drawn like any row) or ``non-finite`` (``NON_FINITE_ROWS``)."""

    greedy: str = "mixed"
    draft_probs: str = "either"
    zero_drafts: str = "some"
    forced: bool = False
    ties: bool = False
    masks: tuple[str, ...] = ("none", "scattered")
    vocabs: tuple[int, ...] = SMALL_VOCABS
    max_requests: int = 4
    max_drafts: int = 3
    forced_logits: str = "finite"


def _softmax(row: np.ndarray) -> np.ndarray:
    finite = np.isfinite(row)
    out = np.zeros_like(row)
    out[finite] = np.exp(row[finite] - row[finite].max())
    return out / out.sum()


def _float32_rows(q: np.ndarray) -> np.ndarray:
    q = q.astype(np.float32).astype(np.float64)
    return q / q.sum(axis=1, keepdims=True)


def _draft_row(rng, kind: str, logits: np.ndarray, row: int, temperature: float, first: int = 0):
    """``(q row, draft id)`` of one draft row, ``q`` on the ids from ``first`` on (a ``last-ids`` case's drafter puts
    its mass where its target does); ``empty-residual`` rewrites ``logits[row]``."""
    V = logits.shape[1]
    if kind == "empty-residual" and V >= 2 and temperature > 0:
        support = rng.choice(V, size=2 ** int(rng.integers(0, int(np.log2(V - 1)) + 1)), replace=False)
        logits[row] = -np.inf
        logits[row, support] = 0.0
        q = np.zeros(V)
        q[support] = 1.0 / len(support)
        outside = np.setdiff1d(np.arange(V), support)
        return q, int(rng.choice(outside))
    n = V - first  # the ids q may hold mass on
    if kind == "one-hot-q":
        d = first + int(rng.integers(0, n))
        q = np.zeros(V)
        q[d] = 1.0
        return q, d
    q = rng.dirichlet(np.ones(n))
    if kind in ("q-with-zeros", "q-zero-at-draft") and n >= 2:
        zeros = rng.random(n) < 0.5
        zeros[int(rng.integers(0, n))] = False  # q keeps some mass
        if kind == "q-zero-at-draft" and not zeros.any():
            zeros[(np.flatnonzero(~zeros)[0] + 1) % n] = True
        q[zeros] = 0.0
        q /= q.sum()
        if kind == "q-zero-at-draft":
            return np.concatenate([np.zeros(first), q]), first + int(rng.choice(np.flatnonzero(zeros)))
    return np.concatenate([np.zeros(first), q]), first + int(rng.choice(n, p=q))


def rejection_cases(family: RejectionFamily) -> st.SearchStrategy[RejectionCase]:
    """Valid cases of ``family`` (see the module docstring)."""
    drafts_per_request = st.integers(0, family.max_drafts)
    if family.zero_drafts == "most":
        drafts_per_request = st.one_of(st.just(0), st.just(0), drafts_per_request)

    regular = [v for v in family.vocabs if v <= WIDE_VOCAB]
    wide_vocabs = [v for v in family.vocabs if v > WIDE_VOCAB]
    vocab = st.sampled_from(regular)
    if wide_vocabs:  # wide vocabularies are slow on a CPU: about one case in ten
        vocab = st.integers(0, 9).flatmap(lambda die: st.sampled_from(wide_vocabs if die == 9 else regular))

    @st.composite
    def case(draw):
        V = draw(vocab)
        wide = V > WIDE_VOCAB  # at most 2 requests of at most one draft: 4 rows of V logits
        B = draw(st.integers(1, 2 if wide else family.max_requests))
        K = [min(draw(drafts_per_request), 1) if wide else draw(drafts_per_request) for _ in range(B)]
        greedy = {"all": st.just(True), "none": st.just(False), "mixed": st.booleans()}[family.greedy]
        temperature = [0.0 if draw(greedy) else draw(st.sampled_from(TEMPERATURES)) for _ in range(B)]
        use_q = {"given": True, "none": False, "either": draw(st.booleans())}[family.draft_probs] and sum(K) > 0
        kinds = [draw(st.sampled_from(DRAFT_KINDS)) for _ in range(sum(K))] if use_q else []
        rows = sum(K) + B
        forced_rows = [draw(st.booleans()) for _ in range(rows)] if family.forced else []
        mask = draw(st.sampled_from(family.masks))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))

        logits = rng.normal(scale=2.0, size=(rows, V))
        if family.ties:
            logits = np.round(logits)
        if mask == "scattered":
            masked = rng.random((rows, V)) < 0.3
            masked[np.arange(rows), rng.integers(0, V, rows)] = False
            logits[masked] = -np.inf
        elif mask == "tail":
            logits[:, V // 2 + 1 :] = -np.inf
        last = _last_tile(rng, V) if mask == LAST_IDS else 0
        if last:
            logits[:, : V - last] = -np.inf
        logits = logits.astype(np.float32).astype(np.float64)
        q_rows, drafts, row, d = [], [], 0, 0
        for i, k in enumerate(K):
            for _ in range(k):
                if use_q:
                    q, token = _draft_row(rng, kinds[d], logits, row, temperature[i], V - last if last else 0)
                    q_rows.append(q)
                else:
                    token = int(rng.integers(V - last if last else 0, V))
                drafts.append(token)
                row += 1
                d += 1
            row += 1  # the bonus row
        forced = None
        if family.forced:
            forced = np.where(np.array(forced_rows), rng.integers(0, V, rows), -1)
            if family.forced_logits == "non-finite":
                _non_finite_forced_rows(rng, logits, forced)
        return RejectionCase(
            logits,
            drafts,
            K,
            temperature,
            _float32_rows(np.array(q_rows)) if use_q else None,
            forced,
            seeds=rng.integers(0, 2**62, B),
            positions=rng.integers(0, 2**40, B),
        )

    return case()


def _last_tile(rng, V: int) -> int:
    """How many of the last ids a ``last-ids`` mask leaves: the ``V mod T`` ids of the last partial tile of a
    power-of-two tiling ``T < V`` (drawn among those that leave one), or the last id alone where none does."""
    tiles = [1 << b for b in range(1, V.bit_length()) if V % (1 << b)]
    return V % tiles[int(rng.integers(0, len(tiles)))] if tiles else 1


def _non_finite_forced_rows(rng, logits: np.ndarray, forced: np.ndarray) -> None:
    """Rewrite each forced row of ``logits`` ``[rows, V]`` (``forced != -1``) as one of ``NON_FINITE_ROWS``: all
    NaN, +inf at the forced id and another, no finite logit, or NaN at the forced id with +inf beside it."""
    V = logits.shape[1]
    for row in np.flatnonzero(forced != -1):
        kind, token, other = NON_FINITE_ROWS[int(rng.integers(0, 4))], int(forced[row]), int(rng.integers(0, V))
        if kind == "nan":
            logits[row] = np.nan
        elif kind == "pos-inf":
            logits[row, [token, other]] = np.inf
        elif kind == "no-finite":
            logits[row] = -np.inf
        else:
            logits[row, token], logits[row, other] = np.nan, np.inf


def draft_kind(case: RejectionCase, draft: int) -> str:
    """Which ``DRAFT_KINDS`` class draft row ``draft`` of a case belongs to, read from the case itself
    (for tests that assert a class is generated)."""
    if case.draft_probs is None:
        return "no-q"
    rows = [
        r for i, k in enumerate(case.num_draft_tokens) for r in range(case.row_offsets()[i], case.row_offsets()[i] + k)
    ]
    q = case.draft_probs[draft]
    d = int(case.draft_token_ids[draft])
    if q[d] == 1.0:
        return "one-hot-q"
    if q[d] == 0:
        request = int(np.searchsorted(case.draft_offsets(), draft, side="right") - 1)
        T = case.temperature[request]
        p = _softmax(case.target_logits[rows[draft]] / (T if T > 0 else 1.0))
        return "empty-residual" if np.all(p <= q) else "q-zero-at-draft"
    return "q-with-zeros" if (q == 0).any() else "from-q"


def case_size(case: RejectionCase) -> int:
    """Logits rows: what a shrinker lowers."""
    return int(case.target_logits.shape[0])


def _subset(case: RejectionCase, rows: list[int], drafts: list[int], requests: list[int], num) -> RejectionCase:
    def pick(values, index):
        return None if values is None else np.asarray(values)[index]

    return RejectionCase(
        case.target_logits[rows],
        case.draft_token_ids[drafts],
        num,
        case.temperature[requests],
        pick(case.draft_probs, drafts),
        pick(case.forced_token_ids, rows),
        seeds=pick(case.seeds, requests),
        positions=pick(case.positions, requests),
        seeded=pick(case.seeded, requests),
    )


def reordered(case: RejectionCase, order: list[int]) -> RejectionCase:
    """``case`` with its requests in ``order`` (request ``order[s]`` in slot ``s``), each with its own rows, drafts,
    temperature, seed and position: the same batch after a scheduler moved its requests."""
    offsets, draft_offsets = case.row_offsets(), case.draft_offsets()
    rows = [r for i in order for r in range(offsets[i], offsets[i + 1])]
    drafts = [d for i in order for d in range(draft_offsets[i], draft_offsets[i + 1])]
    return _subset(case, rows, drafts, list(order), [int(case.num_draft_tokens[i]) for i in order])


def smaller_cases(case: RejectionCase):
    """Candidate reductions of a case: one request fewer, then one draft fewer (a request's last)."""
    offsets, draft_offsets = case.row_offsets(), case.draft_offsets()
    K = case.num_draft_tokens.tolist()
    B = case.batch_size
    for drop in range(B) if B > 1 else ():
        keep = [i for i in range(B) if i != drop]
        rows = [r for i in keep for r in range(offsets[i], offsets[i + 1])]
        drafts = [d for i in keep for d in range(draft_offsets[i], draft_offsets[i + 1])]
        yield _subset(case, rows, drafts, keep, [K[i] for i in keep])
    for i in range(B):
        if K[i] == 0:
            continue
        last_row, last_draft = offsets[i] + K[i] - 1, draft_offsets[i + 1] - 1
        rows = [r for r in range(offsets[-1]) if r != last_row]
        drafts = [d for d in range(draft_offsets[-1]) if d != last_draft]
        yield _subset(case, rows, drafts, list(range(B)), [k - (j == i) for j, k in enumerate(K)])
