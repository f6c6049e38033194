"""The acceptance-rule check's two-draft case in a batch ordered by policy (``two-drafts``, ``greedy-first``): a
verifier that reads each request's greedy flag from a per-draft-row array at the request's index (lmdeploy 0.16.0's
``reject_sampler.py``) verifies the sampled requests greedily once K >= 2, and the check blames RS-MIXED-1; the
reference passes it."""

from dataclasses import replace

import numpy as np
import pytest

from specconform.harness import checks, reproductions
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.core import FAIL, PASS, Context
from specconform.harness.profiles import canonical

CHECK = checks.by_name()["rejection/acceptance-rule"]


class ReadsPolicyPerDraftRow(ReferenceEngine):
    """The reference whose request ``i`` takes its policy from draft row ``i`` of a per-draft-row flag array (one
    flag per draft, ``np.repeat(temperature == 0, K)``), as lmdeploy 0.16.0's kernels read ``is_greedy``: with K = 1
    rows and requests coincide; with K >= 2 row ``i`` belongs to request ``i // K``. A sampled request that reads a
    greedy flag is verified greedily (at temperature 0)."""

    def rejection_sample(self, case):
        temperature = np.asarray(case.temperature, dtype=np.float64)  # [B]
        flags = np.repeat(temperature == 0, np.asarray(case.num_draft_tokens))  # [sum K_i] bool
        read = np.array([flags[i] if i < len(flags) else t == 0 for i, t in enumerate(temperature)])
        return super().rejection_sample(replace(case, temperature=np.where(read, 0.0, temperature)))


def _statuses(outcome) -> dict[str, str]:
    return {rid: result.status for rid, result in outcome.requirements.items()}


def _own_draws(profile):
    """``profile`` without the reference draws, as lmdeploy's: its sampled rows are judged by the statistics alone."""
    return replace(profile, capabilities=profile.capabilities - {"reference-draws"})


@pytest.mark.req("RS-MIXED-1")
def test_a_policy_read_per_draft_row_fails_rs_mixed_1_on_the_two_draft_case_alone():
    engine = ReadsPolicyPerDraftRow()
    outcome = CHECK.run(engine, Context(_own_draws(canonical())))
    statuses = _statuses(outcome)
    result = outcome.requirements["RS-MIXED-1"]
    assert result.status == FAIL, outcome.message
    assert result.fingerprint == "RS-MIXED-1/acceptance-rate", result.evidence
    assert "two-drafts (greedy-first" in result.evidence
    # alone, and in the one-draft mixed batch (rows and requests coincide), the same engine conforms
    assert statuses["RS-ONEHOT-1"] == PASS and statuses["RS-PROB-1"] == PASS, outcome.message
    document = result.reproduction
    assert document["acceptance_rule"][0]["layout"] == "greedy-first"
    assert [r.fingerprint for r in reproductions.replay(engine, document)] == ["RS-MIXED-1/acceptance-rate"]
    assert [r.fingerprint for r in reproductions.replay(ReferenceEngine(), document)] == [""]


@pytest.mark.req("RS-MIXED-1")
def test_with_the_reference_draws_the_two_draft_batch_parts_from_the_oracle_exactly():
    outcome = CHECK.run(ReadsPolicyPerDraftRow(), Context(canonical()))
    result = outcome.requirements["RS-MIXED-1"]
    assert result.fingerprint == "RS-MIXED-1/request-verified-by-another-rule", result.evidence
    assert "two-drafts (greedy-first)" in result.evidence


@pytest.mark.req("RS-MIXED-1")
def test_the_reference_passes_the_two_draft_case_in_a_batch_ordered_by_policy():
    outcome = CHECK.run(ReferenceEngine(), Context(canonical()))
    assert _statuses(outcome)["RS-MIXED-1"] == PASS, outcome.message
    assert "two-drafts greedy-first" in outcome.message
