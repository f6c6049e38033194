"""The zoo's engines: the oracle with one deliberate bug, built by mutant name."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from specconform.specs.interface import InvalidCase, RejectionCase

from ... import profiles
from ...core import UsageError
from ...oracle import budget as tb
from ...oracle import rejection as rs
from ..oracle import OracleEngine
from . import coins
from .budget import BATCH_TYPES, REQUEST_TYPES, MutantBudget
from .counting import CountingMutants
from .registry import MUTANTS, SAMPLER_MUTATIONS, Mutant
from .rejection import (
    VERIFY_MUTATIONS,
    ProcessWideDraws,
    StatefulDraws,
    ids_as_given,
    mutant_sample_case,
    noise_from_acceptance_stream,
    shifted_draws,
)
from .sampler import mutant_sampler
from .tensor_api import TENSOR_API_MUTATIONS, tensor_api_mutant

# Mutants whose draws are their own (not the reference draws): their profile leaves out ``reference-draws``.
_OWN_DRAWS = ("stateful-generator", "generator-seeded-per-call", "seed-ignored")


class MutantEngine(CountingMutants, OracleEngine):
    """The oracle with one deliberate bug (``Mutant.name``)."""

    def __init__(self, mutant: Mutant):
        super().__init__()
        self.mutant = mutant
        self.name = f"zoo:{mutant.name}"
        profile = replace(profiles.canonical(mutant.scope), forced_logit=mutant.forced_logit)
        profile = profiles.with_variant(profile, "forced_end", mutant.forced_end)
        self.profile = profiles.with_variant(profile, "end_markers", mutant.end_markers)
        hides_draws = mutant.name in SAMPLER_MUTATIONS or mutant.name in _OWN_DRAWS
        if hides_draws:  # its randomness is not the reference's: judged statistically
            capabilities = self.profile.capabilities - {"reference-draws"}
            self.profile = replace(self.profile, capabilities=capabilities, draws=None)
        if mutant.name == coins.NAME:
            # SGLang's own draws, judged exactly under them (rejection/own-draws); its coins are keyed by the step's
            # position and the draft's column, not by each draft's position (SGLang's RS-RNG-1 finding, judged on
            # SGLang itself), so it claims no rs.seeded
            self.profile = replace(
                self.profile,
                classes=self.profile.classes - {"rs.seeded"},
                capabilities=self.profile.capabilities - {"reference-draws"},
                draws="sglang-seeded",
            )
        if mutant.name == "unvalidated-ids-emitted":  # uses the permission RS-INPUT-6
            capabilities = self.profile.capabilities - {"input-validation"} | {"unvalidated-mode"}
            self.profile = replace(self.profile, capabilities=capabilities)
        if mutant.name in SAMPLER_MUTATIONS:
            self.sampler = mutant_sampler(SAMPLER_MUTATIONS[mutant.name])
        self.draws_for = {
            "stateful-generator": StatefulDraws(),
            "generator-seeded-per-call": StatefulDraws(per_call=True),
            "seed-ignored": ProcessWideDraws(),
            "draws-not-the-reference": shifted_draws,
            "sampling-noise-from-acceptance-stream": noise_from_acceptance_stream,
        }.get(mutant.name, rs.counter_draws)

    def budget_state(
        self, start, end, max_num_reqs, scope="request", max_spec_len=0, forced_token_ids=None, other_end_token_ids=()
    ):
        if self.mutant.name == "empty-marker-accepted":
            start, end = list(start) or [2**31 - 1], list(end) or [2**31 - 1]
        batch = BATCH_TYPES.get(self.mutant.name, tb.BudgetBatch)(
            start, end, max_num_reqs, scope, forced_token_ids, other_end_token_ids
        )
        batch.request_type = REQUEST_TYPES.get(self.mutant.name, tb.RequestBudget)
        return MutantBudget(batch, self.mutant.name)

    def rejection_sample(self, case: RejectionCase):
        if self.mutant.name == coins.NAME:
            return coins.zero_coin_sample_case(case)
        if self.mutant.name in VERIFY_MUTATIONS:
            return mutant_sample_case(case, self.mutant.name, self.draws_for)
        if self.mutant.name == "num-emitted-is-k-plus-one":
            tokens, _ = super().rejection_sample(case)
            return tokens, np.asarray(case.num_draft_tokens) + 1
        if self.mutant.name == "unvalidated-ids-emitted":
            try:
                case.validate()
            except InvalidCase:
                return ids_as_given(case)
        case.validate()
        if self.mutant.name not in SAMPLER_MUTATIONS or case.forced_token_ids is not None:
            return super().rejection_sample(case)
        tokens = np.full((case.batch_size, int(case.num_draft_tokens.max(initial=0)) + 1), -1, dtype=np.int64)
        seeds = _seeds_or_fresh(case)
        positions = np.zeros(case.batch_size, dtype=np.int64) if case.positions is None else case.positions
        for members, sub in _groups(case, seeds, positions):
            # the sampler takes one draft count and one temperature per call; a greedy group is the oracle's
            rows = (
                self.sampler(
                    sub.target_logits,
                    sub.draft_token_ids,
                    sub.num_draft_tokens,
                    sub.draft_probs,
                    sub.temperature,
                    sub.seeds,
                    sub.positions,
                )
                if sub.temperature[0] > 0
                else super().rejection_sample(sub)[0]
            )
            tokens[members, : rows.shape[1]] = rows
        return tokens, (np.asarray(tokens) != -1).sum(axis=1)


# Where a request without a seed draws (section 6): one generator for the process, as the oracle's fresh draws
_FRESH = np.random.default_rng(1)


def _seeds_or_fresh(case: RejectionCase) -> np.ndarray:
    """``[B]`` int64: each request's seed, or a fresh one from the process's generator where it has none (the
    sampler keys every request's draws by its seed, RS-RNG-1; an unseeded request draws fresh randomness)."""
    fresh = _FRESH.integers(0, 2**62, size=case.batch_size)
    if case.seeds is None:
        return fresh
    unseeded = np.zeros(case.batch_size, dtype=bool) if case.seeded is None else ~np.asarray(case.seeded, dtype=bool)
    return np.where(unseeded, fresh, case.seeds)


def _groups(case: RejectionCase, seeds: np.ndarray, positions: np.ndarray):
    """``(members [n] int, sub-case)`` for each group of ``case``'s requests that share one draft count and one
    temperature, the sub-case holding their rows in their order. Each request's draws are keyed by its own seed and
    position, so grouping changes no request's tokens (RS-RNG-1): the mutant's bug shows whatever the batch holds."""
    num, temperature = case.num_draft_tokens, case.temperature
    rows, drafts = np.asarray(case.row_offsets()), np.asarray(case.draft_offsets())
    for k, t in sorted(set(zip(num.tolist(), temperature.tolist()))):
        members = np.flatnonzero((num == k) & (temperature == t))
        row_index = (rows[members][:, None] + np.arange(k + 1)).reshape(-1)
        draft_index = (drafts[members][:, None] + np.arange(k)).reshape(-1)
        q = None if case.draft_probs is None else case.draft_probs[draft_index]
        yield (
            members,
            RejectionCase(
                case.target_logits[row_index],
                case.draft_token_ids[draft_index],
                num[members],
                temperature[members],
                q,
                seeds=seeds[members],
                positions=positions[members],
            ),
        )


def needs_torch(name: str) -> bool:
    """Whether mutant ``name`` is the reference engine (torch) rather than the oracle (numpy)."""
    return name in TENSOR_API_MUTATIONS


def make_mutant(name: str):
    """The zoo's engine for mutant ``name``: the oracle with its bug, or for the tensor-level API's mutants the
    reference engine whose own entry points carry it."""
    for mutant in MUTANTS:
        if mutant.name == name:
            return tensor_api_mutant(mutant) if name in TENSOR_API_MUTATIONS else MutantEngine(mutant)
    raise UsageError(f"unknown mutant {name!r}; the zoo holds: {', '.join(m.name for m in MUTANTS)}")
