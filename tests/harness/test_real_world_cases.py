"""The cases drawn for what real models and requests have (issue 29): mass on the vocabulary's last ids only, forced
rows whose logits are NaN or +inf or no finite value, two end tokens, NaN and ±inf budgets and temperatures. Each
is valid where the spec says so, passes the oracle, and fails an engine that mishandles it on the requirement it
breaks; the cases the checks drew before are drawn as they were, the new ones after them."""

from dataclasses import replace

import numpy as np
import pytest

from specconform.harness import checks
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.cases import draw
from specconform.harness.cases.rejection import (
    LAST_IDS,
    TILE_REMAINDER_VOCABS,
    RejectionFamily,
    rejection_cases,
    reordered,
)
from specconform.harness.checks.rejection.exact import drawn_cases
from specconform.harness.core import Context
from specconform.harness.oracle import rejection as rs
from specconform.harness.oracle.rejection_judge import non_finite_forced_rows
from specconform.harness.profiles import canonical

BY_NAME = checks.by_name()
LAST = RejectionFamily(greedy="all", masks=(LAST_IDS,), vocabs=TILE_REMAINDER_VOCABS)
NON_FINITE = RejectionFamily(greedy="all", forced=True, forced_logits="non-finite")


def _last_partial_tiles(V: int) -> set[int]:
    """The sizes of the last partial tile of every power-of-two tiling of ``V`` ids (1 where none leaves one)."""
    return {V % (1 << b) for b in range(1, V.bit_length()) if V % (1 << b)} or {1}


def test_last_ids_cases_keep_mass_on_the_last_partial_tile_only():
    for case in draw(rejection_cases(LAST), 11, 12):
        case.validate()
        V = case.vocab_size
        finite = np.flatnonzero(np.isfinite(case.target_logits).any(axis=0))
        assert V - finite[0] in _last_partial_tiles(V), (V, finite[0])
        assert (case.draft_token_ids >= finite[0]).all()  # greedy drafts among the last ids too


def test_non_finite_forced_rows_are_valid_input_and_leave_free_rows_valid():
    drawn = list(draw(rejection_cases(NON_FINITE), 12, 10))
    assert sum(len(non_finite_forced_rows(case)) for case in drawn) >= 10
    for case in drawn:
        case.validate()  # a forced row's logits are not read: never RS-INPUT-3's input
        assert non_finite_forced_rows(case) == [
            row for row in np.flatnonzero(case.forced_token_ids != -1) if not np.isfinite(case.target_logits[row]).all()
        ]


def test_boundary_cases_come_after_the_drawn_ones():
    family = RejectionFamily(greedy="all", ties=True)
    first = list(draw(rejection_cases(family), 13, 3))
    chained = list(drawn_cases(13, (family, 3), (LAST, 2)))
    assert len(chained) == 5
    assert all(np.array_equal(a.target_logits, b.target_logits) for a, b in zip(first, chained))


class NanTemperatureAccepted(OracleEngine):
    """Validates temperatures with ``T < 0`` alone: NaN and +inf pass and are sampled at temperature 1."""

    def rejection_sample(self, case):
        T = case.temperature
        if (T < 0).any():
            raise ValueError(f"temperature must be >= 0; got {T.tolist()}")
        return super().rejection_sample(replace(case, temperature=np.where(np.isfinite(T), T, 1.0)))


class ForcedRowsValidated(OracleEngine):
    """Rejects NaN, +inf and rows without a finite logit in every row, forced ones included."""

    def rejection_sample(self, case):
        if non_finite_forced_rows(case):
            raise ValueError(f"target_logits rows {non_finite_forced_rows(case)} are not finite")
        return super().rejection_sample(case)


class LastTileDropped(OracleEngine):
    """Tiles the vocabulary by 1024 ids and never reads the last partial tile; a row left with no finite logit gives
    the id 0 (the argmax of an all -inf accumulator)."""

    def rejection_sample(self, case):
        kept = case.vocab_size // 1024 * 1024
        if not kept or kept == case.vocab_size:
            return super().rejection_sample(case)
        logits = case.target_logits.copy()
        logits[:, kept:] = -np.inf
        logits[~np.isfinite(logits).any(axis=1), 0] = 0.0
        return super().rejection_sample(replace(case, target_logits=logits))


class FirstEndTokenOnly(OracleEngine):
    """Ends an accepted run at the first of its end tokens only."""

    def acceptance_metrics(self, steps, eos_token_ids):
        return super().acceptance_metrics(steps, list(eos_token_ids)[:1])


class NonFiniteBudgetUntracked(OracleEngine):
    """Validates budgets with ``B < -1`` and ``B % 1 > 0``: NaN and +inf pass (every comparison with NaN is false)
    and are kept untracked."""

    def budget_state(self, *args, **kwargs):
        state = super().budget_state(*args, **kwargs)
        apply = state.batch.apply

        def lenient(update):
            if update is None:  # a step without an update
                return apply(update)
            added = [
                replace(a, budget=None) if isinstance(a.budget, float) and not a.budget < np.inf else a
                for a in update.added
            ]
            apply(replace(update, added=tuple(added)))

        state.batch.apply = lenient
        return state


@pytest.mark.req("RS-INPUT-5")
def test_a_nan_temperature_accepted_fails_rs_input_5():
    outcome = BY_NAME["rejection/invalid-ids"].run(NanTemperatureAccepted(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-INPUT-5"].fingerprint == "RS-INPUT-5/invalid-id-accepted"
    assert "temperature" in outcome.message


@pytest.mark.req("RS-FORCE-1")
def test_non_finite_logits_of_a_forced_row_rejected_fail_rs_force_1():
    outcome = BY_NAME["rejection/forced"].run(ForcedRowsValidated(), Context(canonical()))
    assert outcome.violated == ("RS-FORCE-1",), outcome.message
    assert outcome.requirements["RS-FORCE-1"].fingerprint == "RS-FORCE-1/forced-row-logits-read"


@pytest.mark.req("RS-PROB-3")
def test_a_dropped_last_tile_fails_the_output_contract():
    outcome = BY_NAME["rejection/output-contract"].run(LastTileDropped(), Context(canonical()))
    assert outcome.violated == ("RS-PROB-3",), outcome.message


@pytest.mark.req("AC-METRIC-4")
def test_a_second_end_token_ignored_fails_ac_metric_4_only():
    outcome = BY_NAME["counting/metrics"].run(FirstEndTokenOnly(), Context(canonical()))
    assert outcome.violated == ("AC-METRIC-4",), outcome.message
    assert outcome.requirements["AC-METRIC-4"].fingerprint == "AC-METRIC-4/counts-tokens-after-another-end-token"


@pytest.mark.req("TB-API-2")
def test_a_nan_budget_accepted_fails_tb_api_2():
    outcome = BY_NAME["budget/api"].run(NonFiniteBudgetUntracked(), Context(canonical()))
    assert outcome.violated == ("TB-API-2",), outcome.message
    assert "nan" in outcome.message


class DrawsKeyedByRequestsAfter(OracleEngine):
    """Keys a seeded request's draws by its seed plus the number of requests after it: the same alone and in the
    last slot, other in any slot before it."""

    def rejection_sample(self, case):
        B, V = case.batch_size, case.vocab_size
        draws = [rs.counter_draws(int(case.seeds[i]) + B - 1 - i, int(case.positions[i]), V) for i in range(B)]
        tokens, num, _ = rs.sample_case(case, draws)
        return tokens, num


@pytest.mark.req("RS-RNG-1")
def test_draws_that_depend_on_the_slot_fail_rs_rng_1_once_the_request_moves():
    outcome = BY_NAME["rejection/seeded-independence"].run(DrawsKeyedByRequestsAfter(), Context(canonical()))
    assert outcome.violated == ("RS-RNG-1",), outcome.message
    assert "slot 0" in outcome.message


def test_a_reordered_case_moves_each_request_with_its_rows_and_fields():
    family = RejectionFamily(draft_probs="given", greedy="none")
    case = next(c for c in draw(rejection_cases(family), 14, 10) if c.batch_size >= 2 and len(c.draft_token_ids))
    order = list(range(case.batch_size))[::-1]
    moved = reordered(case, order)
    for slot, i in enumerate(order):
        own, there = rs.request_slices(case, i), rs.request_slices(moved, slot)
        assert np.array_equal(moved.target_logits[there[0]], case.target_logits[own[0]])
        assert np.array_equal(moved.draft_probs[there[1]], case.draft_probs[own[1]])
        assert (moved.seeds[slot], moved.positions[slot]) == (case.seeds[i], case.positions[i])


class ForcedByLargeConstant(OracleEngine):
    """Forces a row as the large-constant variant does (TB-FORCE-6): the forced logit raised by 1e9 beside the row's
    own logits, then the oracle verifies the row as it stands."""

    def rejection_sample(self, case):
        if case.forced_token_ids is None:
            return super().rejection_sample(case)
        logits = np.array(case.target_logits, dtype=np.float64)
        rows = np.flatnonzero(case.forced_token_ids != -1)
        logits[rows, case.forced_token_ids[rows]] = 1e9
        return super().rejection_sample(replace(case, target_logits=logits, forced_token_ids=None))


@pytest.mark.req("RS-FORCE-1", "TB-FORCE-6")
def test_forced_rows_holding_nan_or_inf_are_outside_the_large_constant_variant():
    check = BY_NAME["rejection/forced"]
    canonical_outcome = check.run(ForcedByLargeConstant(), Context(canonical()))
    assert canonical_outcome.violated == ("RS-FORCE-1",), canonical_outcome.message  # NaN or +inf beats the constant
    variant = replace(canonical(), forced_logit="large-constant")
    outcome = check.run(ForcedByLargeConstant(), Context(variant))
    assert outcome.status == "PASS", outcome.message
    assert "outside the engine's contract" in outcome.message  # the rows the variant does not reach, counted apart
