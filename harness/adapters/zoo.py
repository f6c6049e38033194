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

from ..oracle import budget as tb  # noqa: E402
from ..oracle import rejection as rs  # noqa: E402
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
    def from_prompt(cls, start, end, budget, prompt_token_ids, scope="request"):
        state = super().from_prompt(start, end, budget, prompt_token_ids, scope)
        if state.in_section:  # counts the open section from S's first token, as one engine did
            state.count -= len(start) - 1
        return state


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


class _MutantBudget(OracleBudget):
    def __init__(self, batch, mutation):
        super().__init__(batch)
        self.mutation = mutation

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
        if self.mutation == "forced-tokens-to-row-0-without-drafts" and sum(num) == 0:
            out = [-1] * len(rows)
            for token in rows:
                if token != -1:
                    out[0] = token
            return out
        return rows


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # the requirement the harness must report
    description: str

    @property
    def area(self) -> tuple[str, ...]:
        """Check globs a zoo run judges this mutant by (its bug cannot show elsewhere)."""
        prefix = self.breaks.split("-")[0]
        return {"TB": ("tb.*",), "RS": ("rs.probabilistic", "rs.one-hot", "rs.input"), "AC": ("ac.*",)}[prefix]


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
    Mutant("count-non-placeholders", "AC-COUNT-2", "counts (row != -1).sum() and reports no broken prefix"),
    Mutant(
        "mean-length-counts-after-eos",
        "AC-METRIC-4",
        "mean acceptance length counts tokens after an EOS inside the accepted run",
    ),
)
_SAMPLER_MUTATIONS = {
    "draft-probs-ignored": "ignore-draft-probs",
    "always-accept": "always-accept",
    "recover-from-p": "recover-from-p",
    "acceptance-draw-reused": "reuse-acceptance-draw",
    "recovered-id-equals-v": "recovered-id-equals-v",
}
_REQUEST_TYPES = {
    "budget-off-by-one": _LateByOne,
    "end-marker-restarted": _RestartsEnd,
    "multi-token-start-undercounted": _ShortPromptStart,
}


class MutantEngine(OracleEngine):
    """The oracle with one deliberate bug (``Mutant.name``)."""

    def __init__(self, mutant: Mutant):
        super().__init__()
        self.mutant = mutant
        self.name = f"zoo:{mutant.name}"
        if mutant.name in _SAMPLER_MUTATIONS:  # hides its randomness: judged statistically
            self.profile = replace(self.profile, capabilities=self.profile.capabilities - {"reference-draws"})
            self.sampler = mutant_sampler(_SAMPLER_MUTATIONS[mutant.name])

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        batch_type = _SwapKeepsVacated if self.mutant.name == "swap-leaves-vacated-tracked" else tb.BudgetBatch
        batch = batch_type(start, end, max_num_reqs, scope)
        batch.request_type = _REQUEST_TYPES.get(self.mutant.name, tb.RequestBudget)
        return _MutantBudget(batch, self.mutant.name)

    def rejection_sample(self, case: rs.RejectionCase):
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
        if self.mutant.name != "count-non-placeholders":
            return super().count_emitted(token_ids, vocab_size)
        tokens = np.asarray(token_ids)
        return (tokens != -1).sum(axis=1), np.zeros(len(tokens), bool), np.zeros(len(tokens), bool)

    def acceptance_metrics(self, steps, eos_token_ids):
        return super().acceptance_metrics(
            steps, () if self.mutant.name == "mean-length-counts-after-eos" else eos_token_ids
        )


def make_mutant(name: str) -> MutantEngine:
    for mutant in MUTANTS:
        if mutant.name == name:
            return MutantEngine(mutant)
    raise UsageError(f"unknown mutant {name!r}; the zoo holds: {', '.join(m.name for m in MUTANTS)}")
