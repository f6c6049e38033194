"""The conformance cases added for the mutation run's survivors fail an engine that breaks them, and only the
requirement each judges: fractional draft ids given as tensors (RS-INPUT-5), a budget step before the first
batch update (TB-BATCH-5), acceptance metrics over zero steps (AC-METRIC-1)."""

import pytest

from harness import checks
from harness.adapters.oracle import OracleBudget, OracleEngine
from harness.adapters.reference import ReferenceEngine
from harness.core import Context
from harness.profiles import canonical

BY_NAME = checks.by_name()


class TruncatesFractionalDrafts(ReferenceEngine):
    """Casts float draft ids to integers instead of rejecting them (1.5 becomes the id 1)."""

    def rejection_sample_tensors(self, target_logits, draft_token_ids, *rest):
        return super().rejection_sample_tensors(target_logits, draft_token_ids.long(), *rest)


class RowBeforeFirstUpdate(OracleBudget):
    """Lays out one forced row for slot 0 before any update has put a request there."""

    updated = False

    def sync_batch(self, update):
        self.updated = True
        super().sync_batch(update)

    def forced_tokens(self, num_draft_tokens=None, draft_token_ids=None):
        rows = super().forced_tokens(num_draft_tokens, draft_token_ids)
        return rows if self.updated else [2]


class ForcesBeforeFirstUpdate(OracleEngine):
    def budget_state(self, *args, **kwargs):
        return RowBeforeFirstUpdate(super().budget_state(*args, **kwargs).batch)


class ZeroRateWithoutDrafts(OracleEngine):
    """Reports an acceptance rate of 0 where nothing was drafted (AC-METRIC-1 asks for NaN)."""

    def acceptance_metrics(self, steps, eos_token_ids):
        metrics = super().acceptance_metrics(steps, eos_token_ids)
        return metrics if steps else {**metrics, "acceptance_rate": 0.0}


@pytest.mark.req("RS-INPUT-5")
def test_fractional_draft_ids_accepted_fail_rs_input_5():
    outcome = BY_NAME["rejection/invalid-ids"].run(TruncatesFractionalDrafts(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-INPUT-5"].fingerprint == "RS-INPUT-5/invalid-id-accepted"


@pytest.mark.req("TB-BATCH-5")
def test_a_row_before_the_first_update_fails_tb_batch_5_only():
    outcome = BY_NAME["budget/batch-errors"].run(ForcesBeforeFirstUpdate(), Context(canonical()))
    assert outcome.violated == ("TB-BATCH-5",), outcome.message
    assert outcome.requirements["TB-BATCH-4"].status == "PASS"


@pytest.mark.req("AC-METRIC-1")
def test_a_defined_rate_over_zero_steps_fails_ac_metric_1_only():
    outcome = BY_NAME["counting/metrics"].run(ZeroRateWithoutDrafts(), Context(canonical()))
    assert outcome.violated == ("AC-METRIC-1",), outcome.message
    assert outcome.requirements["AC-METRIC-1"].fingerprint == "AC-METRIC-1/rate-defined-without-drafts"
