"""Rejection mutants: the oracle's verification (``rs.verify_request``) and draws with one rule broken."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specconform.specs.interface import InvalidCase, RejectionCase

from ...oracle import rejection as rs
from ...oracle import rng as reference_rng

# Rejection mutants built on the oracle's verification (``mutant_sample_case``); the others use
# the reference draws unchanged.
VERIFY_MUTATIONS = {
    "residual-from-p",
    "padded-row-reading",
    "tail-filled-with-zero",
    "greedy-accepts-every-draft",
    "greedy-mismatch-emits-lowest-finite",
    "greedy-ties-to-highest",
    "acceptance-ratio-squared",
    "zero-q-draft-accepted",
    "empty-residual-emits-argmax",
    "one-hot-residual-keeps-draft",
    "batch-shares-first-temperature",
    "zero-draft-reads-previous-row",
    "forced-draft-row-ignored",
    "neg-inf-rejected",
    "invalid-logits-sanitised",
    "draft-probs-renormalised",
    "invalid-ids-clamped",
    "stateful-generator",
    "generator-seeded-per-call",
    "draws-not-the-reference",
    "sampling-noise-from-acceptance-stream",
    "draft-probs-read-padded",
    "seed-ignored",
    "logit-edits-dropped",
    "rejection-sampled-one-row-late",
    "unseeded-noise-not-drawn",
}


def _verify(logits_rows, drafts, q_rows, temperature, forced, draws, mutation):
    """One request's verification (the oracle's rules, ``rs.verify_request``) with one rule broken;
    returns the emitted tokens."""
    K, V = len(drafts), logits_rows.shape[1]
    if mutation == "forced-draft-row-ignored":
        forced = [-1] * K + [forced[K]]
    if mutation == "logit-edits-dropped":
        forced = [-1] * (K + 1)
    if temperature == 0:
        out = []
        for j in range(K + 1):
            if mutation == "greedy-ties-to-highest" and forced[j] == -1:
                best = V - 1 - int(np.argmax(logits_rows[j][::-1]))
            else:
                best = rs.greedy_token(logits_rows[j], forced[j])
            if j < K and mutation == "greedy-accepts-every-draft" and forced[j] == -1:
                best = int(drafts[j])
            if j < K and drafts[j] != best and mutation == "greedy-mismatch-emits-lowest-finite" and forced[j] == -1:
                # the draft is rejected as the rule says; the correction is the lowest unmasked id, not the argmax
                out.append(int(np.flatnonzero(np.isfinite(logits_rows[j]))[0]))
                return out
            out.append(best)
            if j == K or drafts[j] != best:
                return out
    out = []
    for j in range(K + 1):
        p = rs.target_probs(logits_rows[j], temperature, forced[j])
        if j == K:
            return out + [rs.exponential_race(p, draws.noise(j))]
        d = int(drafts[j])
        one_hot = q_rows is None
        q = np.zeros(V) if one_hot else np.asarray(q_rows[j], dtype=np.float64)
        if one_hot:
            q[d] = 1.0
        u = draws.uniform(j)
        if mutation == "acceptance-ratio-squared":
            u = float(np.sqrt(u))
        q_d = q[d] if not (mutation == "zero-q-draft-accepted" and q[d] == 0) else 1.0
        if q_d > 0 and u * q_d < p[d]:
            out.append(d)
            continue
        if mutation == "rejection-sampled-one-row-late":  # the continuation's token takes the rejected one's place
            return out + [
                rs.exponential_race(rs.target_probs(logits_rows[j + 1], temperature, forced[j + 1]), draws.noise(j + 1))
            ]
        residual = p if mutation == "residual-from-p" else np.maximum(p - q, 0.0)
        if mutation == "one-hot-residual-keeps-draft" and one_hot:
            residual = p
        if residual.sum() <= 0:
            residual = p
            if mutation == "empty-residual-emits-argmax":
                residual = np.zeros(V)
                residual[int(np.argmax(p))] = 1.0
        return out + [rs.exponential_race(residual, draws.noise(j))]
    raise AssertionError("unreachable")


class StatefulDraws:
    """Draws from one ``numpy`` generator per seed, advanced by its draws: created on first use and
    kept (``per_call=False``: the same ``(seed, position)`` differs on a replay), or created afresh at
    every call (``per_call=True``: batch-independent and repeatable, but blind to the position)."""

    def __init__(self, per_call: bool = False):
        self.per_call = per_call
        self.generators: dict[int, np.random.Generator] = {}

    def __call__(self, seed: int, position: int, vocab_size: int) -> rs.Draws:
        if self.per_call:
            self.generators.pop(seed, None)
        generator = self.generators.setdefault(seed, np.random.default_rng(seed % 2**63))
        return rs.Draws(
            uniform=lambda j: float(generator.random()), noise=lambda j: generator.exponential(size=vocab_size)
        )


class ProcessWideDraws:
    """Draws from one generator for the whole process, whatever the request's seed: every request's draws
    depend on every draw made before them (``seed-ignored``)."""

    def __init__(self):
        self.generator = np.random.default_rng(0)

    def __call__(self, seed: int, position: int, vocab_size: int) -> rs.Draws:
        generator = self.generator
        return rs.Draws(
            uniform=lambda j: float(generator.random()), noise=lambda j: generator.exponential(size=vocab_size)
        )


def noise_from_acceptance_stream(seed: int, position: int, vocab_size: int) -> rs.Draws:
    """The reference draws with the emitted token's noise keyed by the acceptance purpose (RS-RNG-2)."""
    return rs.counter_draws(seed, position, vocab_size, reference_rng.PURPOSE_ACCEPT)


def shifted_draws(seed: int, position: int, vocab_size: int) -> rs.Draws:
    """Counter-based draws keyed off by one seed: deterministic and batch-independent, not the reference's."""
    return rs.counter_draws(seed + 1, position, vocab_size)


def _unseeded_draws(case: RejectionCase, K: int, V: int, mutation: str) -> rs.Draws:
    """Fresh draws of a request without a seed (spec section 6, mixed batches). Under ``unseeded-noise-not-drawn``,
    in a batch that holds a seeded request, its recovery noise (the rows before its bonus row) is all zeros: what
    vLLM's ``_multinomial`` left in ``torch.empty_like``'s tensor when it filled a copy (PR 10863). ``residual / 0``
    is ``inf`` or ``0 / 0 = NaN``, and ``argmax`` (NumPy's as torch's) takes the first NaN, else the first ``inf``."""
    fresh = rs.fresh_draws(V)
    if mutation != "unseeded-noise-not-drawn" or case.seeded.sum() == 0:
        return fresh
    return rs.Draws(uniform=fresh.uniform, noise=lambda j: np.zeros(V) if j < K else fresh.noise(j))


def _sanitise(case: RejectionCase, mutation: str) -> RejectionCase:
    """Turn invalid input into valid input instead of rejecting it (RS-INPUT-3..5 mutants)."""
    V = case.vocab_size
    if mutation == "invalid-logits-sanitised":
        logits = np.nan_to_num(case.target_logits, nan=-np.inf, posinf=1e30)
        logits[~np.isfinite(logits).any(axis=1), 0] = 0.0
        return replace(case, target_logits=logits)
    if mutation == "draft-probs-renormalised" and case.draft_probs is not None:
        q = np.abs(np.nan_to_num(case.draft_probs, nan=0.0, posinf=1.0))
        q[q.sum(axis=1) == 0] = 1.0
        return replace(case, draft_probs=q / q.sum(axis=1, keepdims=True))
    if mutation == "invalid-ids-clamped":
        forced = None if case.forced_token_ids is None else np.clip(case.forced_token_ids, -1, V - 1)
        return replace(
            case,
            draft_token_ids=np.clip(case.draft_token_ids, 0, V - 1),
            forced_token_ids=forced,
            temperature=np.abs(case.temperature),
        )
    return case


def mutant_sample_case(case: RejectionCase, mutation: str, draws_for) -> tuple[np.ndarray, np.ndarray]:
    """``rs.sample_case`` with one rule broken: ``draws_for(seed, position, V)`` gives each request's draws."""
    if mutation == "neg-inf-rejected" and np.isneginf(case.target_logits).any():
        raise InvalidCase("target_logits holds -inf")
    case = _sanitise(case, mutation)
    case.validate()
    B, V = case.batch_size, case.vocab_size
    width = int(case.num_draft_tokens.max(initial=0)) + 1
    out = np.full((B, width), -1, dtype=np.int64)
    forced_all = case.forced_token_ids if case.forced_token_ids is not None else np.full(len(case.target_logits), -1)
    offsets = case.row_offsets()
    stride = width  # the padded reading: request i's rows at i * (max K + 1)
    for i in range(B):
        row_slice, draft_slice = rs.request_slices(case, i)
        K = int(case.num_draft_tokens[i])
        if mutation == "padded-row-reading":
            first = min(i * stride, len(case.target_logits) - K - 1)
            row_slice = slice(first, first + K + 1)
        if mutation == "zero-draft-reads-previous-row" and K == 0 and i > 0:
            row_slice = slice(offsets[i] - 1, offsets[i])
        q_rows = None if case.draft_probs is None else case.draft_probs[draft_slice]
        if mutation == "draft-probs-read-padded" and q_rows is not None:
            q_rows = case.draft_probs[[min(i * (width - 1) + j, len(case.draft_probs) - 1) for j in range(K)]]
        temperature = float(case.temperature[0 if mutation == "batch-shares-first-temperature" else i])
        seed = case.seed_of(i)
        position = 0 if case.positions is None else int(case.positions[i])
        if seed is not None:
            draws = draws_for(seed, position, V)
        elif case.seeded is not None:  # unseeded beside seeded requests (mixed batches, spec section 6)
            draws = _unseeded_draws(case, K, V, mutation)
        else:
            draws = None
        with np.errstate(divide="ignore", invalid="ignore"):  # the zero noise of unseeded-noise-not-drawn
            emitted = _verify(
                case.target_logits[row_slice],
                case.draft_token_ids[draft_slice],
                q_rows,
                temperature,
                forced_all[row_slice],
                draws,
                mutation,
            )
        out[i, : len(emitted)] = emitted
    num = (out != -1).sum(axis=1)
    if mutation == "tail-filled-with-zero":
        out[out == -1] = 0
    return out, num


def ids_as_given(case: RejectionCase) -> tuple[np.ndarray, np.ndarray]:
    """``(token_ids [B, max K + 1], num_emitted [B])`` int64 of a sampler that skips validation: every draft
    accepted as given, every forced id emitted as given, the bonus row's argmax last (ids outside ``[0, V)``
    included)."""
    counts = case.num_draft_tokens
    out = np.full((len(counts), int(counts.max(initial=0)) + 1), -1, dtype=np.int64)
    forced = case.forced_token_ids if case.forced_token_ids is not None else np.full(len(case.target_logits), -1)
    draft_start = np.concatenate([[0], np.cumsum(counts)])
    for i, k in enumerate(counts):
        rows = np.arange(draft_start[i] + i, draft_start[i + 1] + i + 1)  # request i's draft rows, then its bonus row
        free = [
            *case.draft_token_ids[draft_start[i] : draft_start[i + 1]],
            int(np.argmax(case.target_logits[rows[-1]])),
        ]
        out[i, : k + 1] = np.where(forced[rows] != -1, forced[rows], free)
    return out, counts + 1
