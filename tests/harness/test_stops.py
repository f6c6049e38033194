"""Stops inside an accepted run (specs/accepted-tokens.md AC-STOP-1..2): metrics over committed tokens,
or, under the declared ``acceptance_counting: verified`` variant, over the rows the sampler verified."""

from dataclasses import replace

import pytest

from harness import checks
from harness.adapters.oracle import OracleEngine
from harness.core import Context
from harness.profiles import canonical

BY_NAME = checks.by_name()
METRIC_CHECKS = ["counting/metrics"] + [n for n in BY_NAME if n.startswith("vectors/counting/metrics-")]


class CountsVerifiedRows(OracleEngine):
    """Counts what the sampler verified, before stops trim it (the rule vLLM 0.33's scheduler follows)."""

    def acceptance_metrics(self, steps, eos_token_ids):
        return super().acceptance_metrics([(k, row, None) for k, row, _ in steps], ())


@pytest.mark.req("AC-STOP-2")
@pytest.mark.parametrize("name", METRIC_CHECKS)
def test_verified_counting_passes_where_it_is_declared(name):
    engine = CountsVerifiedRows()
    profile = replace(canonical(), acceptance_counting="verified")
    outcome = BY_NAME[name].run(engine, Context(profile))
    assert outcome.status == "PASS", outcome.message
    assert "AC-STOP-2" in outcome.requirements and "AC-STOP-1" not in outcome.requirements


@pytest.mark.req("AC-STOP-1")
def test_verified_counting_fails_the_canonical_profile_on_the_trimmed_runs():
    outcome = BY_NAME["counting/metrics"].run(CountsVerifiedRows(), Context(canonical()))
    assert outcome.requirements["AC-METRIC-4"].fingerprint == "AC-METRIC-4/counts-tokens-after-eos"
    assert outcome.requirements["AC-STOP-1"].status == "FAIL", outcome.message
    stops = BY_NAME["vectors/counting/metrics-with-stops"].run(CountsVerifiedRows(), Context(canonical()))
    assert stops.violated == ("AC-STOP-1",), stops.message


@pytest.mark.req("AC-STOP-1", "AC-STOP-2")
def test_the_oracle_passes_with_committed_counting():
    for name in METRIC_CHECKS:
        outcome = BY_NAME[name].run(OracleEngine(), Context(canonical()))
        assert outcome.status == "PASS", (name, outcome.message)
