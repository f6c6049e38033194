"""The acceptance-rule check's mixed batches compare their greedy requests with the oracle exactly, except where a
request's argmax is a tie at an engine's float32 precision (RS-RNG-3's boundary tolerance): a normal draw of logits
once put two of them 4e-8 apart (SGLang on an H200, through FlashInfer's top-k renormalisation, emitted the other),
and the oracle's float64 argmax is no requirement there. A gap above the tolerance is still compared."""

from dataclasses import replace

import numpy as np
import pytest

from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.checks.rejection import rule
from specconform.harness.oracle import rejection as rs
from specconform.harness.profiles import canonical

# the case, layout, trials and seed of the lead (rejection/acceptance-rule's residual case, mixed batch)
LOGITS = [[2.0, 1.0, 0.5, 0.0, -1.0, float("-inf")], [0.0] * 6]
Q = np.array([0.05, 0.1, 0.5, 0.2, 0.15, 0.0])
DRAFT, TRIALS, SEED = 2, 30298, 20261123


class BreaksTiesHigh(ReferenceEngine):
    """The reference, except that a greedy request whose first row's two largest logits lie within ``gap`` of each
    other emits the larger id of the two, as a float32 sampler that sees them equal may, and stops there."""

    def __init__(self, gap: float):
        super().__init__()
        self.gap = gap

    def rejection_sample(self, case):
        tokens, num = super().rejection_sample(case)
        tokens, num = np.array(tokens), np.array(num)
        for i, t in enumerate(case.temperature):
            rows, _ = rs.request_slices(case, i)
            first = case.target_logits[rows][0]
            best, second = np.argsort(first)[-1], np.argsort(first)[-2]
            if t == 0 and first[best] - first[second] < self.gap:
                tokens[i] = -1
                tokens[i, 0], num[i] = max(best, second), 1
        return tokens, num


def _run(engine):
    profile = replace(canonical(), capabilities=canonical().capabilities - {"reference-draws"})
    return rule.run_rule(engine, profile, LOGITS, Q, DRAFT, "mixed", TRIALS, SEED)


@pytest.mark.req("RS-MIXED-1")
def test_a_greedy_request_tied_at_float32_precision_is_not_compared():
    # the lead's batch holds one greedy request whose first row's two largest logits are 3.7e-8 apart
    assert _run(BreaksTiesHigh(gap=1e-7)).greedy_failure is None


@pytest.mark.req("RS-MIXED-1")
def test_a_greedy_request_apart_beyond_the_tolerance_is_still_compared():
    # breaking ties up to 0.01 apart reaches requests whose argmax is no tie at any precision
    failure = _run(BreaksTiesHigh(gap=1e-2)).greedy_failure
    assert failure is not None and failure.startswith("greedy request ")
