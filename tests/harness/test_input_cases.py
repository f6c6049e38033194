"""The conformance cases added for the mutation run's survivors fail an engine that breaks them, and only the
requirement each judges: fractional draft ids and integer logits given as tensors (RS-INPUT-5), a budget step
before the first batch update (TB-BATCH-5), logits with more rows than the batch lays out (TB-BATCH-4),
acceptance metrics over zero steps (AC-METRIC-1)."""

import pytest

from specconform.harness import checks
from specconform.harness.adapters.oracle import OracleBudget, OracleEngine
from specconform.harness.adapters.reference import ReferenceBudget, ReferenceEngine
from specconform.harness.core import Context
from specconform.harness.profiles import canonical

BY_NAME = checks.by_name()


class TruncatesFractionalDrafts(ReferenceEngine):
    """Casts float draft ids to integers instead of rejecting them (1.5 becomes the id 1)."""

    def rejection_sample_tensors(self, target_logits, draft_token_ids, *rest):
        return super().rejection_sample_tensors(target_logits, draft_token_ids.long(), *rest)


class CastsIntegerLogits(ReferenceEngine):
    """Casts integer target logits to float32 instead of rejecting them."""

    def rejection_sample_tensors(self, target_logits, *rest):
        return super().rejection_sample_tensors(target_logits.float(), *rest)


class TrimsExtraLogitRows(ReferenceBudget):
    """Writes the forced rows into the first rows of logits that have more rows than the batch lays out."""

    def apply_to_logits(self, logits, num_draft_tokens=None, draft_token_ids=None):
        rows = len(self.forced_tokens(num_draft_tokens, draft_token_ids))
        logits[:rows] = super().apply_to_logits(logits[:rows], num_draft_tokens, draft_token_ids)
        return logits


class AcceptsExtraLogitRows(ReferenceEngine):
    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        return TrimsExtraLogitRows(self, start, end, max_num_reqs, scope, max_spec_len)


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


@pytest.mark.req("RS-INPUT-5")
def test_integer_logits_accepted_fail_rs_input_5():
    outcome = BY_NAME["rejection/invalid-ids"].run(CastsIntegerLogits(), Context(canonical()))
    assert outcome.violated == ("RS-INPUT-5",), outcome.message
    assert outcome.requirements["RS-INPUT-5"].fingerprint == "RS-INPUT-5/integer-logits-accepted"


@pytest.mark.req("TB-BATCH-4")
def test_logits_with_an_extra_row_accepted_fail_tb_batch_4_only():
    outcome = BY_NAME["budget/batch-errors"].run(AcceptsExtraLogitRows(), Context(canonical()))
    assert outcome.violated == ("TB-BATCH-4",), outcome.message
    assert outcome.requirements["TB-BATCH-4"].fingerprint == "TB-BATCH-4/logits-row-count-accepted"
    assert outcome.requirements["TB-BATCH-5"].status == "PASS"


@pytest.mark.parametrize("engine", [ReferenceEngine(), OracleEngine()], ids=["reference", "oracle"])
@pytest.mark.parametrize("name", ["rejection/invalid-ids", "budget/batch-errors"])
def test_the_reference_and_the_oracle_pass_the_input_cases(engine, name):
    outcome = BY_NAME[name].run(engine, Context(canonical()))
    assert outcome.violated == (), outcome.message


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
