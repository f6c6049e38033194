"""Conformance cases added for survivors of the full mutation run fail an engine that breaks them, on the
requirement each judges: layouts that disagree with num_draft_tokens given as tensors (RS-INPUT-5), the mode
without validation (RS-INPUT-6), a fixed output width (RS-LAYOUT-3, RS-INPUT-5), markers holding the largest token
id (TB-API-3), a budget beyond 32 bits (TB-API-1) and per-position acceptance rates (AC-METRIC-3)."""

from dataclasses import replace

import pytest

from harness import checks
from harness.adapters.oracle import OracleEngine
from harness.adapters.reference import ReferenceEngine
from harness.core import Context
from harness.profiles import canonical

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


class Int32Budgets(OracleEngine):
    """Keeps budgets in 32 bits and wraps larger ones (2**40 becomes 0)."""

    def budget_state(self, *args, **kwargs):
        handle = super().budget_state(*args, **kwargs)
        apply = handle.batch.apply

        def wrapped(update):
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


@pytest.mark.req("RS-INPUT-6")
def test_forced_ids_dropped_without_validation_fail_rs_input_6():
    outcome = BY_NAME["rejection/unvalidated-mode"].run(ForgetsForcedIdsUnvalidated(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-6",), outcome.message
    assert outcome.requirements["RS-INPUT-6"].fingerprint == "RS-INPUT-6/valid-input-sampled-differently"


@pytest.mark.req("RS-INPUT-5")
def test_a_draft_count_above_the_fixed_width_accepted_fails_rs_input_5_only():
    outcome = BY_NAME["rejection/fixed-width"].run(IgnoresFixedWidth(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-LAYOUT-3"].status == "PASS"


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
