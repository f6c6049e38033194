"""Deliberately broken samplers: each reproduces a bug class seen in a real engine.

``mutant_sampler(None)`` is a correct, vectorised NumPy rejection sampler (one K for the whole
batch, as in distribution checks); every other name breaks exactly one rule:

- ``always-accept``: accepts every draft (a probabilistic kernel that always accepted);
- ``ignore-draft-probs``: treats sampled drafts as one-hot although ``q`` was passed;
- ``recover-from-p``: samples the recovered token from ``p`` instead of the residual;
- ``reuse-acceptance-draw``: samples the recovered token with the uniform that rejected the draft;
- ``recovered-id-equals-v``: emits ``V`` where the residual's sample is the last id (a padded tile).
"""

from __future__ import annotations

import numpy as np

REJECTION_MUTANTS = (
    "always-accept",
    "ignore-draft-probs",
    "recover-from-p",
    "reuse-acceptance-draw",
    "recovered-id-equals-v",
)
# The requirement each mutant violates, as the statistical check reports it.
MUTANT_REQUIREMENTS = {
    "always-accept": "RS-PROB-5",
    "ignore-draft-probs": "RS-PROB-6",
    "recover-from-p": "RS-PROB-5",
    "reuse-acceptance-draw": "RS-PROB-5",
    "recovered-id-equals-v": "RS-INPUT-1",
}


def _softmax(x):
    with np.errstate(invalid="ignore", divide="ignore"):
        z = x - x.max(axis=-1, keepdims=True)
        e = np.where(np.isneginf(x), 0.0, np.exp(z))
        return e / e.sum(axis=-1, keepdims=True)


def _sample_rows(weights, rng):
    """One sample per row of ``weights [N, V]`` (unnormalised) by the exponential race."""
    noise = rng.exponential(size=weights.shape)
    return np.argmax(weights / noise, axis=1)


def _inverse_cdf(weights, uniforms):
    cdf = np.cumsum(weights, axis=1)
    cdf = cdf / cdf[:, -1:]
    return np.minimum((cdf < uniforms[:, None]).sum(axis=1), weights.shape[1] - 1)


def mutant_sampler(mutation: str | None):
    """A ``stats.Sampler`` with one deliberate bug (or none)."""
    if mutation is not None and mutation not in REJECTION_MUTANTS:
        raise ValueError(f"mutation must be one of {REJECTION_MUTANTS} or None; got {mutation!r}")

    def sample(target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, positions):
        B = len(num_draft_tokens)
        K = int(num_draft_tokens[0])
        V = target_logits.shape[1]
        rng = np.random.default_rng(int(seeds[0]) % (2**63))
        p = _softmax(target_logits.reshape(B, K + 1, V) / float(temperature[0]))
        d = np.asarray(draft_token_ids).reshape(B, K)
        one_hot = np.zeros((B, K, V))
        np.put_along_axis(one_hot, d[:, :, None], 1.0, axis=2)
        if draft_probs is None or mutation == "ignore-draft-probs":
            q = one_hot
        else:
            q = np.asarray(draft_probs).reshape(B, K, V)
        u = rng.random((B, K))
        p_d = np.take_along_axis(p[:, :K], d[:, :, None], axis=2)[:, :, 0]
        q_d = np.take_along_axis(q, d[:, :, None], axis=2)[:, :, 0]
        accept = (q_d > 0) & (u * q_d < p_d)
        if mutation == "always-accept":
            accept[:] = True
        accepted = np.where(accept.all(axis=1), K, np.argmin(accept, axis=1))
        rows = np.arange(B)
        out = np.full((B, K + 1), -1, dtype=np.int64)
        for j in range(K):
            out[accepted > j, j] = d[accepted > j, j]
        rejected = accepted < K
        final = np.empty(B, dtype=np.int64)
        bonus_rows = rows[~rejected]
        final[bonus_rows] = _sample_rows(p[bonus_rows, K], rng)
        rej = rows[rejected]
        if len(rej):
            a = accepted[rej]
            p_row, q_row = p[rej, a], q[rej, a]
            residual = p_row if mutation == "recover-from-p" else np.maximum(p_row - q_row, 0.0)
            empty = residual.sum(axis=1) <= 0
            residual[empty] = p_row[empty]
            if mutation == "reuse-acceptance-draw":
                final[rej] = _inverse_cdf(residual, u[rej, a])
            else:
                final[rej] = _sample_rows(residual, rng)
            if mutation == "recovered-id-equals-v":
                final[rej] = np.where(final[rej] == V - 1, V, final[rej])
        out[rows, accepted] = final
        return out

    return sample


# ---------------------------------------------------------------------------------------------
# Broken engines: the harness must catch each one on the requirement it breaks.

from dataclasses import dataclass, replace  # noqa: E402

from specs.interface import BatchUpdate  # noqa: E402

from .. import profiles  # noqa: E402
from ..oracle import budget as tb  # noqa: E402
from ..oracle import rejection as rs  # noqa: E402
from ..oracle import rng as reference_rng  # noqa: E402
from . import UsageError  # noqa: E402
from .oracle import OracleBudget, OracleEngine  # noqa: E402


class _LateByOne(tb.RequestBudget):
    def forced_token(self):
        if self.budget is not None and self.in_section and self.count == self.budget_left:
            return -1
        return super().forced_token()


class _RestartsEnd(tb.RequestBudget):
    def forced_token(self):
        forced = super().forced_token()
        return self.end.marker[0] if forced != -1 else -1


class _ShortPromptStart(tb.RequestBudget):
    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        if state.in_section:  # counts the open section from S's first token, as one engine did
            state.count -= len(start) - 1
        return state


class _StartInsideSection(tb.RequestBudget):
    """Looks for S inside an open section too: a repeated S restarts the count."""

    def feed(self, token):
        restart = False
        if self.in_section:
            self.start_matched = self.start.step(self.start_matched, token)
            restart = self.start_matched == len(self.start)
        super().feed(token)
        if restart and self.in_section:
            self.count, self.start_matched = 0, 0


class _NaiveEndMatch(tb.RequestBudget):
    """Matches E without a failure function: a mismatch restarts from scratch (or from E[0])."""

    def feed(self, token):
        if not self.in_section:
            return super().feed(token)
        marker = self.end.marker
        matched = self.end_matched
        naive = matched + 1 if marker[matched] == token else int(marker[0] == token)
        super().feed(token)
        if self.in_section:
            self.end_matched = naive


class _CountExcludesPartialEnd(tb.RequestBudget):
    def forced_token(self):
        if self.budget is not None and self.in_section and self.count - self.end_matched < self.budget_left:
            return -1
        return super().forced_token()


class _ZeroBudgetLate(tb.RequestBudget):
    """Budget 0 on a model-opened section lets the token after S through."""

    def forced_token(self):
        if self.budget_left == 0 and self.in_section and self.count == 0 and not self.opened_in_prompt:
            return -1
        return super().forced_token()


class _CompletesStartedEnd(tb.RequestBudget):
    """Once the model starts E, the rest of E is forced, even while budget is left."""

    def forced_token(self):
        if self.budget is not None and self.in_section and self.end_matched:
            return self.end.marker[self.end_matched]
        return super().forced_token()


class _PromptThinkingUncounted(tb.RequestBudget):
    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        state.count = state.end_matched  # the prompt's thinking tokens are not counted
        return state


class _FirstTokenNeverForced(tb.RequestBudget):
    fresh: bool = True

    def forced_token(self):
        return -1 if self.fresh else super().forced_token()

    def feed(self, token):
        super().feed(token)
        self.fresh = False

    @classmethod
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request", *markers):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope, *markers)
        state.fresh = True
        return state


class _SpentForgotten(tb.RequestBudget):
    @property
    def budget_left(self):
        return self.budget


class _SpentAlwaysKept(tb.RequestBudget):
    @property
    def budget_left(self):
        return None if self.budget is None else self.budget - self.spent


class _PhraseNotForced(tb.RequestBudget):
    """Forces E (continuing a partial E) and never the declared transition phrase."""

    def forced_token(self):
        forced = super().forced_token()
        return -1 if forced == -1 else self.end.marker[self.end_matched]


class _ClosedOnlyByForcedSequence(tb.BudgetBatch):
    """Detects the end of a section by the whole forced sequence F, not by E: a natural E leaves it open."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.forced is not None:
            self.end, self.forced = self.forced, None


class _OtherEndMarkersIgnored(tb.BudgetBatch):
    """Closes sections on the first end marker only: the others the parser accepts leave them open."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.others = ()


class _SwapKeepsVacated(tb.BudgetBatch):
    """A SWAP that moves a tracked request out of a slot leaves that slot tracked too."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, update.added, ()))
        for src, dst, kind in update.moved:
            before = list(self.slots)
            super().apply(BatchUpdate(update.batch_size, (), (), ((src, dst, kind),)))
            if tb.move_kind_name(kind) != "SWAP":
                continue
            for x, y in ((src, dst), (dst, src)):
                if self.slots[x] is None and isinstance(before[x], tb.RequestBudget):
                    self.slots[x] = self.slots[y] if self.slots[y] is not None else before[x]


class _MovesBeforeAdditions(tb.BudgetBatch):
    """Applies an update's moves before its additions."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, (), update.moved))
        super().apply(BatchUpdate(update.batch_size, (), update.added, ()))


class _MoveKeepsOccupiedDestination(tb.BudgetBatch):
    """An UNIDIRECTIONAL move onto an occupied slot leaves the destination's request in place."""

    def apply(self, update):
        if update is None:
            return
        super().apply(BatchUpdate(update.batch_size, update.removed, update.added, ()))
        for src, dst, kind in update.moved:
            keep = self.occupied(dst) and tb.move_kind_name(kind) == "UNIDIRECTIONAL"
            kept = self.slots[dst]
            super().apply(BatchUpdate(update.batch_size, (), (), ((src, dst, kind),)))
            if keep:
                self.slots[dst] = kept


_BATCH_TYPES = {
    "swap-leaves-vacated-tracked": _SwapKeepsVacated,
    "moves-before-additions": _MovesBeforeAdditions,
    "move-keeps-occupied-destination": _MoveKeepsOccupiedDestination,
    "closed-only-by-forced-sequence": _ClosedOnlyByForcedSequence,
    "other-end-markers-ignored": _OtherEndMarkersIgnored,
}


class _MutantBudget(OracleBudget):
    def __init__(self, batch, mutation):
        super().__init__(batch)
        self.mutation = mutation

    def sync_batch(self, update):
        if update is not None and self.mutation in ("minus-one-tracked", "fractional-budget-truncated"):
            added = []
            for a in update.added:
                budget = a.budget
                if self.mutation == "minus-one-tracked" and budget == -1 and not isinstance(budget, bool):
                    budget = 0
                if self.mutation == "fractional-budget-truncated" and isinstance(budget, float):
                    budget = int(budget)
                added.append(replace(a, budget=budget))
            update = replace(update, added=tuple(added))
        try:
            super().sync_batch(update)
        except ValueError as exc:
            if self.mutation != "invalid-slots-ignored" or "budget" in str(exc):
                raise

    def update_state(self, rows):
        if self.mutation == "commits-first-token-only":
            rows = [[r[0]] if len(r) else [] for r in (list(row) for row in rows)]
        super().update_state(rows)
        if self.mutation == "partial-markers-dropped-between-steps":
            for slot in range(self.batch.max_num_reqs):
                state = self.batch.state(slot)
                if state is not None:
                    state.start_matched = state.end_matched = 0

    def _slot_rows(self, num_draft_tokens):
        """``[(slot, first row, rows)]`` for ``num_draft_tokens`` (None: one row per slot)."""
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * self.batch.batch_size
        out, offset = [], 0
        for slot, k in enumerate(num):
            out.append((slot, offset, k + 1))
            offset += k + 1
        return out

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        forced = self.forced_tokens(num_draft_tokens, draft_token_ids)
        if self.mutation in ("forced-logit-added", "forced-logit-too-small"):
            bonus = 1e9 if self.mutation == "forced-logit-added" else 10.0
            for row, token in enumerate(forced):
                if token != -1:
                    logits[row, token] = (0.0 if np.isneginf(logits[row, token]) else logits[row, token]) + bonus
            return logits
        logits = super().apply_to_logits(logits, num_draft_tokens, draft_token_ids)
        if self.mutation == "untracked-logits-shifted":
            for slot, first, count in self._slot_rows(num_draft_tokens):
                if self.batch.state(slot) is None:
                    rows = slice(first, first + count)
                    logits[rows] = logits[rows] - np.max(logits[rows], axis=1, keepdims=True)
        return logits

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        rows = super().forced_tokens(num_draft_tokens, draft_token_ids)
        if self.mutation == "budget-ignored":
            return [-1] * len(rows)
        num = list(num_draft_tokens) if num_draft_tokens is not None else [0] * self.batch.batch_size
        if self.mutation == "budget-not-applied-to-draft-rows":
            out, offset = [], 0
            for k in num:
                out += [-1] * k + [rows[offset + k]]
                offset += k + 1
            return out
        if self.mutation == "draft-rows-restart-end":
            end = self.batch.end.marker
            out = list(rows)
            for _slot, first, count in self._slot_rows(num_draft_tokens):
                for j in range(1, count):
                    if out[first + j] != -1:
                        out[first + j] = end[0]
            return out
        if self.mutation == "rows-in-reverse-slot-order":
            blocks = [rows[first : first + count] for _, first, count in self._slot_rows(num_draft_tokens)]
            return [t for block in reversed(blocks) for t in block]
        if self.mutation == "forced-tokens-to-row-0-without-drafts" and sum(num) == 0:
            out = [-1] * len(rows)
            for token in rows:
                if token != -1:
                    out[0] = token
            return out
        return rows


def _verify(logits_rows, drafts, q_rows, temperature, forced, draws, mutation):
    """One request's verification (the oracle's rules, ``rs.verify_request``) with one rule broken;
    returns the emitted tokens."""
    K, V = len(drafts), logits_rows.shape[1]
    if mutation == "forced-draft-row-ignored":
        forced = [-1] * K + [forced[K]]
    if temperature == 0:
        out = []
        for j in range(K + 1):
            if mutation == "greedy-ties-to-highest" and forced[j] == -1:
                best = V - 1 - int(np.argmax(logits_rows[j][::-1]))
            else:
                best = rs.greedy_token(logits_rows[j], forced[j])
            if j < K and mutation == "greedy-accepts-every-draft" and forced[j] == -1:
                best = int(drafts[j])
            if j < K and drafts[j] != best and mutation == "greedy-mismatch-emits-lowest-finite":
                best = int(np.flatnonzero(np.isfinite(logits_rows[j]))[0]) if forced[j] == -1 else best
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
        residual = p if mutation == "residual-from-p" else np.maximum(p - q, 0.0)
        if mutation == "one-hot-residual-keeps-draft" and one_hot:
            residual = p
        if residual.sum() <= 0:
            residual = np.eye(V)[int(np.argmax(p))] if mutation == "empty-residual-emits-argmax" else p
        return out + [rs.exponential_race(residual, draws.noise(j))]
    raise AssertionError("unreachable")


class _StatefulDraws:
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


def _noise_from_acceptance_stream(seed: int, position: int, vocab_size: int) -> rs.Draws:
    """The reference draws with the emitted token's noise keyed by the acceptance purpose (RS-RNG-2)."""
    return rs.counter_draws(seed, position, vocab_size, reference_rng.PURPOSE_ACCEPT)


def _shifted_draws(seed: int, position: int, vocab_size: int) -> rs.Draws:
    """Counter-based draws keyed off by one seed: deterministic and batch-independent, not the reference's."""
    return rs.counter_draws(seed + 1, position, vocab_size)


def _sanitise(case: rs.RejectionCase, mutation: str) -> rs.RejectionCase:
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


def _mutant_sample_case(case: rs.RejectionCase, mutation: str, draws_for) -> tuple[np.ndarray, np.ndarray]:
    """``rs.sample_case`` with one rule broken: ``draws_for(seed, position, V)`` gives each request's draws."""
    if mutation == "neg-inf-rejected" and np.isneginf(case.target_logits).any():
        raise rs.InvalidCase("target_logits holds -inf")
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
        seed = None if case.seeds is None else int(case.seeds[i])
        position = 0 if case.positions is None else int(case.positions[i])
        emitted = _verify(
            case.target_logits[row_slice],
            case.draft_token_ids[draft_slice],
            q_rows,
            temperature,
            forced_all[row_slice],
            None if seed is None else draws_for(seed, position, V),
            mutation,
        )
        out[i, : len(emitted)] = emitted
    num = (out != -1).sum(axis=1)
    if mutation == "tail-filled-with-zero":
        out[out == -1] = 0
    return out, num


def _ids_as_given(case: rs.RejectionCase) -> tuple[np.ndarray, np.ndarray]:
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


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the requirement the harness must report
    description: str
    scope: str = "request"  # the profile's declared variants
    forced_logit: str = "one-hot"
    forced_end: str = "marker"
    end_markers: str = "one"

    @property
    def area(self) -> tuple[str, ...]:
        """Check globs a zoo run judges this mutant by (its bug cannot show elsewhere): the checks of
        the requirement it breaks, and for sampler mutants the distribution checks."""
        if self.name in _SAMPLER_MUTATIONS:
            return ("rs.probabilistic", "rs.one-hot", "rs.input", self.breaks)
        return (self.breaks,)


MUTANTS = (
    Mutant(
        "budget-ignored",
        "TB-FORCE-1",
        "the budget is never applied (a gate that skipped it without other sampling options)",
    ),
    Mutant("budget-off-by-one", "TB-FORCE-1", "forcing starts one token after the budget is spent"),
    Mutant(
        "multi-token-start-undercounted",
        "TB-PROMPT-3",
        "a prompt-opened section is counted from S's first token, letting len(S) - 1 extra tokens through",
    ),
    Mutant("end-marker-restarted", "TB-FORCE-2", "forcing always emits E[0] instead of continuing a partial E"),
    Mutant("budget-not-applied-to-draft-rows", "TB-SPEC-1", "under speculation only the bonus row is forced"),
    Mutant(
        "forced-tokens-to-row-0-without-drafts",
        "TB-SPEC-4",
        "with speculation on but no drafts, every request's forced token lands in row 0",
    ),
    Mutant("swap-leaves-vacated-tracked", "TB-BATCH-3", "a SWAP with an untracked slot leaves both sides budgeted"),
    Mutant(
        "draft-probs-ignored",
        MUTANT_REQUIREMENTS["ignore-draft-probs"],
        "draft probabilities are dropped: sampled drafts are verified as one-hot",
    ),
    Mutant("always-accept", MUTANT_REQUIREMENTS["always-accept"], "every draft is accepted"),
    Mutant(
        "recover-from-p",
        MUTANT_REQUIREMENTS["recover-from-p"],
        "the recovered token is sampled from p instead of the residual",
    ),
    Mutant(
        "acceptance-draw-reused",
        MUTANT_REQUIREMENTS["reuse-acceptance-draw"],
        "the uniform that rejected the draft also samples the recovered token",
    ),
    Mutant(
        "recovered-id-equals-v",
        MUTANT_REQUIREMENTS["recovered-id-equals-v"],
        "a padded tail tile lets the recovered id equal V",
    ),
    Mutant("minus-one-tracked", "TB-API-1", "a budget of -1 is tracked as 0"),
    Mutant("fractional-budget-truncated", "TB-API-2", "a float budget is truncated to an int instead of rejected"),
    Mutant("empty-marker-accepted", "TB-API-3", "an empty marker is accepted (and never matches)"),
    Mutant("start-looked-for-inside-section", "TB-MARK-1", "a repeated S inside a section restarts the count"),
    Mutant(
        "partial-markers-dropped-between-steps",
        "TB-MARK-2",
        "partial marker matches are forgotten at every step boundary",
    ),
    Mutant("end-matched-without-failure-function", "TB-MARK-3", "E is matched naively: a mismatch restarts it"),
    Mutant("count-excludes-partial-end", "TB-COUNT-1", "count leaves out a trailing partial E"),
    Mutant("zero-budget-one-late", "TB-FORCE-4", "budget 0 on a model-opened section lets one token through"),
    Mutant("forced-logit-added", "TB-FORCE-5", "1e9 is added to the forced logit under the one-hot profile"),
    Mutant(
        "forced-logit-too-small",
        "TB-FORCE-6",
        "declares the large-constant variant but adds only 10 to the forced logit",
        forced_logit="large-constant",
    ),
    Mutant("started-end-completed", "TB-NATURAL-1", "once the model starts E, the rest of E is forced"),
    Mutant("untracked-logits-shifted", "TB-UNTRACKED-1", "untracked requests' logits are shifted by their maximum"),
    Mutant("prompt-thinking-uncounted", "TB-PROMPT-1", "a prompt-opened section's prompt tokens are not counted"),
    Mutant("first-token-never-forced", "TB-PROMPT-2", "the first generated token is never forced"),
    Mutant("spent-forgotten", "TB-SCOPE-1", "request scope gives every section the whole budget"),
    Mutant(
        "section-scope-spends",
        "TB-SCOPE-2",
        "declares per-section scope but charges earlier sections",
        scope="section",
    ),
    Mutant("draft-rows-restart-end", "TB-SPEC-2", "a forced draft row restarts E at E[0]"),
    Mutant("commits-first-token-only", "TB-SPEC-3", "only the first token of a committed run advances the state"),
    Mutant("moves-before-additions", "TB-BATCH-1", "an update's moves are applied before its additions"),
    Mutant(
        "move-keeps-occupied-destination",
        "TB-BATCH-2",
        "an UNIDIRECTIONAL move onto an occupied slot keeps the destination's request",
    ),
    Mutant("invalid-slots-ignored", "TB-BATCH-4", "invalid slots and batch sizes are ignored instead of rejected"),
    Mutant("rows-in-reverse-slot-order", "TB-BATCH-5", "forced rows are laid out last slot first"),
    Mutant("padded-row-reading", "RS-LAYOUT-1", "ragged input is read as if every request had max K drafts"),
    Mutant("tail-filled-with-zero", "RS-LAYOUT-2", "placeholders are written as 0 instead of -1"),
    Mutant("greedy-accepts-every-draft", "RS-GREEDY-1", "greedy verification accepts every draft"),
    Mutant(
        "greedy-mismatch-emits-lowest-finite",
        "RS-GREEDY-2",
        "at a greedy mismatch the lowest unmasked id is emitted instead of the argmax",
    ),
    Mutant("greedy-ties-to-highest", "RS-GREEDY-3", "greedy ties resolve to the highest id"),
    Mutant("acceptance-ratio-squared", "RS-PROB-1", "a draft is accepted with probability min(1, p/q)²"),
    Mutant("residual-from-p", "RS-PROB-2", "on rejection the emitted token is sampled from p, not the residual"),
    Mutant("zero-q-draft-accepted", "RS-PROB-3", "a draft with q(d) = 0 is verified as if q(d) were 1"),
    Mutant("empty-residual-emits-argmax", "RS-PROB-4", "an empty residual emits the argmax of p, not a sample"),
    Mutant("one-hot-residual-keeps-draft", "RS-ONEHOT-1", "without q, a rejected draft stays in the residual"),
    Mutant("batch-shares-first-temperature", "RS-MIXED-1", "every request is verified at request 0's temperature"),
    Mutant("zero-draft-reads-previous-row", "RS-ZERO-1", "a zero-draft request reads the previous request's row"),
    Mutant("forced-draft-row-ignored", "RS-FORCE-1", "forced draft rows are ignored (only the bonus row is forced)"),
    Mutant("neg-inf-rejected", "RS-INPUT-2", "-inf logits are rejected as invalid"),
    Mutant("invalid-logits-sanitised", "RS-INPUT-3", "NaN and +inf logits are replaced instead of rejected"),
    Mutant("draft-probs-renormalised", "RS-INPUT-4", "invalid draft probabilities are renormalised, not rejected"),
    Mutant("invalid-ids-clamped", "RS-INPUT-5", "out-of-range ids and negative temperatures are clamped"),
    Mutant(
        "unvalidated-ids-emitted",
        "RS-INPUT-7",
        "without input validation (RS-INPUT-6), invalid input emits its draft and forced ids as they are",
    ),
    Mutant("stateful-generator", "RS-RNG-1", "one generator per seed, advanced by every call (not counter-based)"),
    Mutant(
        "generator-seeded-per-call",
        "RS-RNG-1",
        "a generator seeded from the request's seed at every call: batch-independent but blind to the position",
    ),
    Mutant(
        "sampling-noise-from-acceptance-stream",
        "RS-RNG-2",
        "claims the reference draws but samples the emitted token from the acceptance stream",
    ),
    Mutant(
        "draft-probs-read-padded",
        "RS-ONEHOT-2",
        "draft probabilities of a ragged batch are read as if every request had max K drafts",
    ),
    Mutant(
        "draws-not-the-reference",
        "RS-RNG-3",
        "claims the reference draws but keys them by another seed",
    ),
    Mutant("count-non-placeholders", "AC-COUNT-2", "counts (row != -1).sum() and reports no broken prefix"),
    Mutant("count-includes-first-placeholder", "AC-COUNT-1", "a row's count includes its first placeholder"),
    Mutant("out-of-vocab-unreported", "AC-COUNT-3", "a validating count never reports an id outside [0, V)"),
    Mutant("discarded-row-counts-one", "AC-COUNT-4", "a discarded row counts one emitted token"),
    Mutant("num-emitted-is-k-plus-one", "AC-COUNT-5", "the sampler reports K + 1 emitted tokens for every row"),
    Mutant("acceptance-rate-counts-bonus", "AC-METRIC-1", "the acceptance rate counts each step's bonus token"),
    Mutant(
        "draft-count-from-configured-maximum",
        "AC-METRIC-1",
        "the acceptance rate's denominator counts every drafting step at the configured maximum of drafts "
        "(TensorRT-LLM issue 14724)",
    ),
    Mutant("mean-length-without-bonus", "AC-METRIC-2", "the mean acceptance length leaves out the bonus token"),
    Mutant("per-position-shifted", "AC-METRIC-3", "per-position counts are reported one position early"),
    Mutant(
        "mean-length-counts-after-eos",
        "AC-METRIC-4",
        "mean acceptance length counts tokens after an EOS inside the accepted run",
    ),
    Mutant(
        "commit-limit-ignored",
        "AC-STOP-1",
        "metrics count the tokens a max_tokens or stop-string limit trimmed from an accepted run",
    ),
    Mutant(
        "phrase-not-forced",
        "TB-END-1",
        "a declared transition phrase is never forced: the budget forces E, continuing a partial E",
        forced_end="phrase",
    ),
    Mutant(
        "closed-only-by-forced-sequence",
        "TB-END-2",
        "sections are detected by the whole forced sequence F, so an E the model emits alone does not close one",
        forced_end="phrase",
    ),
    Mutant(
        "other-end-markers-ignored",
        "TB-END-3",
        "only the first accepted end marker closes a section: another one the parser accepts leaves it open",
        end_markers="several",
    ),
    # the tensor-level API (capability tensor-api): the reference's own entry points with one bug
    Mutant(
        "spec-len-cast-to-int", "TB-TENSOR-1", "the budget state reads max_spec_len with int(), so True and 1.0 pass"
    ),
    Mutant(
        "step-commits-after-its-rows",
        "TB-TENSOR-2",
        "forced_tokens and apply_to_logits lay out their rows before committing sampled_token_ids",
    ),
    Mutant(
        "sampler-spec-len-cast-to-int", "RS-TENSOR-1", "the sampler reads max_spec_len with int(), so True and 2.0 pass"
    ),
    Mutant("vocab-size-cast-to-int", "AC-TENSOR-1", "the validating count reads vocab_size with int(), so True passes"),
)
_SAMPLER_MUTATIONS = {
    "draft-probs-ignored": "ignore-draft-probs",
    "always-accept": "always-accept",
    "recover-from-p": "recover-from-p",
    "acceptance-draw-reused": "reuse-acceptance-draw",
    "recovered-id-equals-v": "recovered-id-equals-v",
}
# Mutants whose randomness is their own: judged statistically, at full trials, in their own process.
SAMPLER_MUTANTS = tuple(m for m in MUTANTS if m.name in _SAMPLER_MUTATIONS)
_REQUEST_TYPES = {
    "budget-off-by-one": _LateByOne,
    "end-marker-restarted": _RestartsEnd,
    "multi-token-start-undercounted": _ShortPromptStart,
    "start-looked-for-inside-section": _StartInsideSection,
    "end-matched-without-failure-function": _NaiveEndMatch,
    "count-excludes-partial-end": _CountExcludesPartialEnd,
    "zero-budget-one-late": _ZeroBudgetLate,
    "started-end-completed": _CompletesStartedEnd,
    "prompt-thinking-uncounted": _PromptThinkingUncounted,
    "first-token-never-forced": _FirstTokenNeverForced,
    "spent-forgotten": _SpentForgotten,
    "section-scope-spends": _SpentAlwaysKept,
    "phrase-not-forced": _PhraseNotForced,
}
# Rejection mutants built on the oracle's verification (``_mutant_sample_case``); the others use
# the reference draws unchanged.
_VERIFY_MUTATIONS = {
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
}


class MutantEngine(OracleEngine):
    """The oracle with one deliberate bug (``Mutant.name``)."""

    def __init__(self, mutant: Mutant):
        super().__init__()
        self.mutant = mutant
        self.name = f"zoo:{mutant.name}"
        profile = replace(profiles.canonical(mutant.scope), forced_logit=mutant.forced_logit)
        profile = profiles.with_variant(profile, "forced_end", mutant.forced_end)
        self.profile = profiles.with_variant(profile, "end_markers", mutant.end_markers)
        hides_draws = mutant.name in _SAMPLER_MUTATIONS or mutant.name.endswith(("generator", "per-call"))
        if hides_draws:  # its randomness is not the reference's: judged statistically
            self.profile = replace(self.profile, capabilities=self.profile.capabilities - {"reference-draws"})
        if mutant.name == "unvalidated-ids-emitted":  # uses the permission RS-INPUT-6
            capabilities = self.profile.capabilities - {"input-validation"} | {"unvalidated-mode"}
            self.profile = replace(self.profile, capabilities=capabilities)
        if mutant.name in _SAMPLER_MUTATIONS:
            self.sampler = mutant_sampler(_SAMPLER_MUTATIONS[mutant.name])
        self.draws_for = {
            "stateful-generator": _StatefulDraws(),
            "generator-seeded-per-call": _StatefulDraws(per_call=True),
            "draws-not-the-reference": _shifted_draws,
            "sampling-noise-from-acceptance-stream": _noise_from_acceptance_stream,
        }.get(mutant.name, rs.counter_draws)

    def budget_state(
        self, start, end, max_num_reqs, scope="request", max_spec_len=0, forced_token_ids=None, other_end_token_ids=()
    ):
        if self.mutant.name == "empty-marker-accepted":
            start, end = list(start) or [2**31 - 1], list(end) or [2**31 - 1]
        batch = _BATCH_TYPES.get(self.mutant.name, tb.BudgetBatch)(
            start, end, max_num_reqs, scope, forced_token_ids, other_end_token_ids
        )
        batch.request_type = _REQUEST_TYPES.get(self.mutant.name, tb.RequestBudget)
        return _MutantBudget(batch, self.mutant.name)

    def rejection_sample(self, case: rs.RejectionCase):
        if self.mutant.name in _VERIFY_MUTATIONS:
            return _mutant_sample_case(case, self.mutant.name, self.draws_for)
        if self.mutant.name == "num-emitted-is-k-plus-one":
            tokens, _ = super().rejection_sample(case)
            return tokens, np.asarray(case.num_draft_tokens) + 1
        if self.mutant.name == "unvalidated-ids-emitted":
            try:
                case.validate()
            except rs.InvalidCase:
                return _ids_as_given(case)
        case.validate()
        uniform = (
            case.forced_token_ids is None
            and len(set(case.num_draft_tokens.tolist())) == 1
            and len(set(case.temperature.tolist())) == 1
            and case.temperature[0] > 0
        )
        if self.mutant.name not in _SAMPLER_MUTATIONS or not uniform:
            return super().rejection_sample(case)
        tokens = self.sampler(
            case.target_logits,
            case.draft_token_ids,
            case.num_draft_tokens,
            case.draft_probs,
            case.temperature,
            case.seeds,
            case.positions,
        )
        return tokens, (np.asarray(tokens) != -1).sum(axis=1)

    def count_emitted(self, token_ids, vocab_size):
        tokens = np.asarray(token_ids)
        if self.mutant.name == "count-non-placeholders":
            return (tokens != -1).sum(axis=1), np.zeros(len(tokens), bool), np.zeros(len(tokens), bool)
        num, broken, out_of_vocab = (list(x) for x in super().count_emitted(token_ids, vocab_size))
        if self.mutant.name == "count-includes-first-placeholder":
            num = [min(n + 1, tokens.shape[1]) if n else 0 for n in num]
        if self.mutant.name == "discarded-row-counts-one":
            num = [max(n, 1) for n in num]
        if self.mutant.name == "out-of-vocab-unreported":
            out_of_vocab = [False] * len(num)
        return num, broken, out_of_vocab

    def acceptance_metrics(self, steps, eos_token_ids):
        if self.mutant.name == "commit-limit-ignored":
            steps = [(k, row, None) for k, row, _ in steps]
        metrics = super().acceptance_metrics(
            steps, () if self.mutant.name == "mean-length-counts-after-eos" else eos_token_ids
        )
        drafted = sum(k for k, _, _ in steps)
        if self.mutant.name == "acceptance-rate-counts-bonus" and drafted:
            drafts = sum(1 for k, row, _ in steps if k and row[0] != -1)
            metrics["acceptance_rate"] = metrics["acceptance_rate"] + drafts / drafted
        if self.mutant.name == "draft-count-from-configured-maximum" and drafted:
            maximum = max(k for k, _, _ in steps)  # the configured number of drafts: the most any step drafted
            configured = maximum * sum(1 for k, _, _ in steps if k)  # every drafting step counted at the maximum
            metrics["acceptance_rate"] = metrics["acceptance_rate"] * drafted / configured
        if self.mutant.name == "mean-length-without-bonus":
            metrics["mean_acceptance_length"] = metrics["mean_acceptance_length"] - 1.0
        if self.mutant.name == "per-position-shifted":
            metrics["accepted_per_position"] = list(metrics["accepted_per_position"][1:]) + [0]
        return metrics


_TENSOR_API_MUTATIONS = (
    "spec-len-cast-to-int",
    "step-commits-after-its-rows",
    "sampler-spec-len-cast-to-int",
    "vocab-size-cast-to-int",
)


class _CommitsAfterRows:
    """A budget state whose steps lay out their rows before committing the tokens given to them
    (``step-commits-after-its-rows``)."""

    def __init__(self, state):
        self.state = state

    def __getattr__(self, name):
        return getattr(self.state, name)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None, *, sampled_token_ids=None):
        rows = self.state.forced_tokens(num_draft_tokens, draft_token_ids)
        if sampled_token_ids is not None:
            self.state.update_state(sampled_token_ids)
        return rows

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None, *, sampled_token_ids=None):
        self.state.apply_to_logits(logits, num_draft_tokens, draft_token_ids)
        if sampled_token_ids is not None:
            self.state.update_state(sampled_token_ids)
        return logits


def _tensor_api_mutant(mutant: Mutant):
    """The reference engine (capability ``tensor-api``) whose tensor entry points carry one bug."""
    from .reference import ReferenceEngine, ReferenceTensorApi

    class MutantTensorApi(ReferenceTensorApi):
        def budget_state(self, start_token_ids, end_token_ids, max_num_reqs, **options):
            if mutant.name == "spec-len-cast-to-int":
                options["max_spec_len"] = int(options.get("max_spec_len", 0))
            state = super().budget_state(start_token_ids, end_token_ids, max_num_reqs, **options)
            return _CommitsAfterRows(state) if mutant.name == "step-commits-after-its-rows" else state

        def rejection_sample(self, target_logits, draft_token_ids, num_draft_tokens, **options):
            if mutant.name == "sampler-spec-len-cast-to-int" and options.get("max_spec_len") is not None:
                options["max_spec_len"] = int(options["max_spec_len"])
            return super().rejection_sample(target_logits, draft_token_ids, num_draft_tokens, **options)

        def count_emitted_validated(self, token_ids, vocab_size):
            if mutant.name == "vocab-size-cast-to-int":
                vocab_size = int(vocab_size)
            return super().count_emitted_validated(token_ids, vocab_size)

    engine = ReferenceEngine()
    engine.name, engine.mutant = f"zoo:{mutant.name}", mutant
    engine.tensor_api = MutantTensorApi(engine)
    return engine


def needs_torch(name: str) -> bool:
    """Whether mutant ``name`` is the reference engine (torch) rather than the oracle (numpy)."""
    return name in _TENSOR_API_MUTATIONS


def make_mutant(name: str):
    """The zoo's engine for mutant ``name``: the oracle with its bug, or for the tensor-level API's mutants the
    reference engine whose own entry points carry it."""
    for mutant in MUTANTS:
        if mutant.name == name:
            return _tensor_api_mutant(mutant) if name in _TENSOR_API_MUTATIONS else MutantEngine(mutant)
    raise UsageError(f"unknown mutant {name!r}; the zoo holds: {', '.join(m.name for m in MUTANTS)}")
