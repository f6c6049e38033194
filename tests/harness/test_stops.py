"""Stops inside an accepted run (specs/accepted-tokens.md AC-STOP-1): the acceptance metrics count
committed tokens only, never what the sampler accepted past ``max_tokens`` or a stop string."""

import pytest

from specconform.harness import checks
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.core import Context
from specconform.harness.profiles import canonical

BY_NAME = checks.by_name()
METRIC_CHECKS = ["counting/metrics"] + [n for n in BY_NAME if n.startswith("vectors/counting/metrics-")]


class CountsVerifiedRows(OracleEngine):
    """Counts what the sampler verified, before stops trim it (what vLLM 0.33's scheduler counts)."""

    def acceptance_metrics(self, steps, eos_token_ids):
        return super().acceptance_metrics([(k, row, None) for k, row, _ in steps], ())


@pytest.mark.req("AC-STOP-1", "AC-METRIC-4")
def test_counting_verified_rows_fails_on_the_trimmed_runs():
    outcome = BY_NAME["counting/metrics"].run(CountsVerifiedRows(), Context(canonical()))
    assert outcome.requirements["AC-METRIC-4"].fingerprint == "AC-METRIC-4/counts-tokens-after-eos"
    assert outcome.requirements["AC-STOP-1"].fingerprint == "AC-STOP-1/counts-tokens-past-commit-limit"
    assert outcome.requirements["AC-METRIC-1"].status == "PASS", outcome.message  # untrimmed streams agree
    stops = BY_NAME["vectors/counting/metrics-with-stops"].run(CountsVerifiedRows(), Context(canonical()))
    assert stops.violated == ("AC-STOP-1",), stops.message


@pytest.mark.req("AC-STOP-1")
@pytest.mark.parametrize("name", METRIC_CHECKS)
def test_the_oracle_passes_with_committed_counting(name):
    outcome = BY_NAME[name].run(OracleEngine(), Context(canonical()))
    assert outcome.status == "PASS", outcome.message
