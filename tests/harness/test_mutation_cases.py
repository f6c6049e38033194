"""Conformance cases added for survivors of the full mutation run fail an engine that breaks them, on the
requirement each judges: layouts that disagree with num_draft_tokens given as tensors (RS-INPUT-5), the mode
without validation (RS-INPUT-7), a fixed output width (RS-LAYOUT-2, RS-INPUT-5), markers holding the largest token
id (TB-API-3), a budget beyond 32 bits (TB-API-1), per-position acceptance rates (AC-METRIC-3), markers with
borders (TB-MARK-2, TB-MARK-3), slots outside the batch (TB-BATCH-4) and a forced token 0 (TB-FORCE-5)."""

from dataclasses import replace

import pytest

from specconform.harness import checks
from specconform.harness.adapters.oracle import OracleBudget, OracleEngine
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.core import BLOCKED, Context
from specconform.harness.profiles import canonical

BY_NAME = checks.by_name()


class KeepsFirstSeeds(ReferenceEngine):
    """Reads one seed per request and ignores the rest, instead of rejecting a seeds tensor of the wrong length."""

    def rejection_sample_tensors(
        self, target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, *rest
    ):
        seeds = None if seeds is None else seeds[: num_draft_tokens.shape[0]]
        return super().rejection_sample_tensors(
            target_logits, draft_token_ids, num_draft_tokens, draft_probs, temperature, seeds, *rest
        )


class ForgetsForcedIdsUnvalidated(ReferenceEngine):
    """Without validation, drops the forced ids instead of forcing the valid ones."""

    def rejection_sample_tensors(self, *fields, max_spec_len=None, validate=True):
        fields = fields if validate else (*fields[:7], None)
        return super().rejection_sample_tensors(*fields, max_spec_len=max_spec_len, validate=validate)


class IgnoresFixedWidth(ReferenceEngine):
    """Gives the ragged width whatever ``max_spec_len`` says, so a draft count above it is no error."""

    def rejection_sample_tensors(self, *fields, max_spec_len=None, validate=True):
        return super().rejection_sample_tensors(*fields, validate=validate)


class RatesOverAllDrafts(OracleEngine):
    """Divides the accepted count of every position by all drafts, not by those that proposed that far."""

    def acceptance_metrics(self, steps, eos_token_ids):
        metrics = super().acceptance_metrics(steps, eos_token_ids)
        drafts = sum(1 for k, row, _ in steps if k and row and row[0] != -1)
        rates = [a / drafts if drafts else float("nan") for a in metrics["accepted_per_position"]]
        return {**metrics, "per_position_rates": rates}


class MatchesWithoutBorders(ReferenceEngine):
    """Falls back to an empty match on every mismatch (a failure table of zeros) instead of the longest border."""

    def budget_state(self, *args, **kwargs):
        handle = super().budget_state(*args, **kwargs)
        state = handle.state
        state._start_fail.zero_()
        state._end_fail.zero_()
        for matcher in (state._start_matcher, state._end_matcher):
            matcher.failure = (0,) * len(matcher.failure)
        return handle


class WrapsNegativeSlots(OracleEngine):
    """Reads slot -1 as the last slot, as a Python list would, instead of rejecting it."""

    def budget_state(self, start, end, max_num_reqs, *args, **kwargs):
        handle = super().budget_state(start, end, max_num_reqs, *args, **kwargs)
        apply = handle.batch.apply

        def wrapped(update):
            if update is None:  # a step without an update
                return apply(update)
            added = tuple(replace(a, index=a.index % max_num_reqs) for a in update.added)
            apply(replace(update, added=added))

        handle.batch.apply = wrapped
        return handle


class SkipsTokenZero(OracleBudget):
    """Writes no forced row whose token is the id 0 (it tests forced > 0 for forced >= 0)."""

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        for row, token in enumerate(self.forced_tokens(num_draft_tokens, draft_token_ids)):
            if token > 0:
                logits[row] = float("-inf")
                logits[row, token] = 0.0
        return logits


class ForcesNoTokenZero(OracleEngine):
    def budget_state(self, *args, **kwargs):
        return SkipsTokenZero(super().budget_state(*args, **kwargs).batch)


class Int32Budgets(OracleEngine):
    """Keeps budgets in 32 bits and wraps larger ones (2**40 becomes 0)."""

    def budget_state(self, *args, **kwargs):
        handle = super().budget_state(*args, **kwargs)
        apply = handle.batch.apply

        def wrapped(update):
            if update is None:  # a step without an update
                return apply(update)
            added = tuple(
                replace(a, budget=a.budget % 2**32) if type(a.budget) is int and a.budget >= 0 else a
                for a in update.added
            )
            apply(replace(update, added=added))

        handle.batch.apply = wrapped
        return handle


class Int31MarkerIds(OracleEngine):
    """Rejects marker ids at or above 2**30 as out of range."""

    def budget_state(self, start, end, *args, **kwargs):
        if max([*start, *end], default=0) >= 2**30:
            raise ValueError(f"marker ids must lie below 2**30; got {start} and {end}")
        return super().budget_state(start, end, *args, **kwargs)


@pytest.mark.req("RS-INPUT-5")
def test_a_seeds_tensor_of_the_wrong_length_accepted_fails_rs_input_5():
    outcome = BY_NAME["rejection/invalid-layout"].run(KeepsFirstSeeds(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-INPUT-5"].fingerprint == "RS-INPUT-5/layout-disagreement-accepted"
    assert "two seeds for one request" in outcome.message


@pytest.mark.req("RS-INPUT-5")
def test_an_engine_without_tensors_leaves_the_layouts_not_run():
    outcome = BY_NAME["rejection/invalid-layout"].run(OracleEngine(), Context(canonical()))
    assert outcome.requirements["RS-INPUT-5"].status == "NOT_RUN"


@pytest.mark.req("RS-INPUT-7")
def test_forced_ids_dropped_without_validation_fail_rs_input_7():
    outcome = BY_NAME["rejection/unvalidated-mode"].run(ForgetsForcedIdsUnvalidated(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-7",), outcome.message
    assert outcome.requirements["RS-INPUT-7"].fingerprint == "RS-INPUT-7/valid-input-sampled-differently"


@pytest.mark.req("RS-INPUT-5")
def test_a_draft_count_above_the_fixed_width_accepted_fails_rs_input_5_only():
    outcome = BY_NAME["rejection/fixed-width"].run(IgnoresFixedWidth(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-LAYOUT-2"].status == "PASS"


@pytest.mark.req("TB-API-1")
def test_a_budget_wrapped_to_32_bits_fails_tb_api_1_only():
    outcome = BY_NAME["budget/api"].run(Int32Budgets(), Context(canonical()))
    assert outcome.violated == ("TB-API-1",), outcome.message
    assert outcome.requirements["TB-API-1"].fingerprint == "TB-API-1/large-budget-forced"


@pytest.mark.req("TB-API-3")
def test_rejecting_the_largest_marker_id_fails_tb_api_3_only():
    outcome = BY_NAME["budget/api"].run(Int31MarkerIds(), Context(canonical()))
    assert outcome.violated == ("TB-API-3",), outcome.message
    assert outcome.requirements["TB-API-3"].fingerprint == "TB-API-3/extreme-value-rejected"


@pytest.mark.req("AC-METRIC-3")
def test_rates_over_all_drafts_fail_ac_metric_3_only():
    outcome = BY_NAME["counting/metrics"].run(RatesOverAllDrafts(), Context(canonical()))
    assert outcome.violated == ("AC-METRIC-3",), outcome.message
    assert outcome.requirements["AC-METRIC-3"].fingerprint == "AC-METRIC-3/per-position-rates-differs"


@pytest.mark.req("TB-MARK-3")
def test_matching_without_borders_fails_tb_mark_3_and_blocks_tb_mark_2():
    """A zero failure table falls back to an empty match on a mismatch: it matches every marker without a border as
    KMP does (TB-MARK-2 holds on its own) and loses the longest border of the others, so its minimal case, E = [7, 7,
    8] after 7 7 7, is forced to E[1] where the oracle forces E[2]: TB-MARK-3's, which TB-MARK-2's streams meet too."""
    outcome = BY_NAME["budget/marker-borders"].run(MatchesWithoutBorders(), Context(canonical()))
    assert outcome.violated == ("TB-MARK-3",), outcome.message
    assert outcome.requirements["TB-MARK-3"].fingerprint == "TB-MARK-3/partial-match-lost"
    assert outcome.requirements["TB-MARK-2"].status == BLOCKED, outcome.requirements["TB-MARK-2"]


@pytest.mark.req("TB-BATCH-4")
def test_a_negative_slot_read_as_the_last_fails_tb_batch_4_only():
    outcome = BY_NAME["budget/batch-errors"].run(WrapsNegativeSlots(), Context(canonical()))
    assert outcome.violated == ("TB-BATCH-4",), outcome.message
    assert outcome.requirements["TB-BATCH-4"].fingerprint == "TB-BATCH-4/slot-out-of-range-accepted"


@pytest.mark.req("TB-FORCE-5")
def test_a_forced_token_0_left_unwritten_fails_tb_force_5_only():
    outcome = BY_NAME["budget/forced-logits"].run(ForcesNoTokenZero(), Context(canonical()))
    assert outcome.violated == ("TB-FORCE-5",), outcome.message
