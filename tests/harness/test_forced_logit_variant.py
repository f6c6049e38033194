"""The ``forced_logit: large-constant`` profile variant (TB-FORCE-6) against the oracle's forced rows."""

from dataclasses import replace

import pytest

from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.checks import all_checks
from specconform.harness.core import Context
from specconform.harness.profiles import canonical, load_profile

FORCED_LOGITS_CHECK = next(c for c in all_checks() if c.name == "budget/forced-logits")


class LargeConstantEngine(OracleEngine):
    """The oracle's forced rows written as vLLM writes them: the forced cell set to ``1e9``, the rest
    of the row left as it was (``spill`` also changes a free cell of each forced row; ``first_only`` forces
    only the first forced row of a step, as vLLM's legacy holder does with a multi-token end marker over drafts)."""

    def __init__(self, spill=False, first_only=False):
        super().__init__()
        self.spill = spill
        self.first_only = first_only

    def budget_state(self, start, end, max_num_reqs, scope="request", max_spec_len=0):
        handle = super().budget_state(start, end, max_num_reqs, scope, max_spec_len)
        spill, first_only = self.spill, self.first_only

        def apply_to_logits(logits, num_draft_tokens=None, draft_token_ids=None):
            forced = 0
            for row, token in enumerate(handle.forced_tokens(num_draft_tokens, draft_token_ids)):
                if token != -1 and not (first_only and forced):
                    forced += 1
                    logits[row, token] = 1e9
                    if spill:
                        logits[row, (token + 1) % logits.shape[1]] -= 1.0
            return logits

        handle.apply_to_logits = apply_to_logits
        return handle


def _profile(forced_logit):
    return replace(canonical(), forced_logit=forced_logit)


@pytest.mark.req("TB-FORCE-5", "TB-FORCE-6")
def test_large_constant_passes_only_where_declared():
    engine = LargeConstantEngine()
    assert FORCED_LOGITS_CHECK.run(engine, Context(_profile("large-constant"))).status == "PASS"
    outcome = FORCED_LOGITS_CHECK.run(engine, Context(_profile("one-hot")))
    assert outcome.status == "FAIL" and outcome.violated == ("TB-FORCE-5",)


@pytest.mark.req("TB-FORCE-6")
def test_large_constant_that_changes_other_cells_fails():
    outcome = FORCED_LOGITS_CHECK.run(LargeConstantEngine(spill=True), Context(_profile("large-constant")))
    assert outcome.status == "FAIL" and outcome.violated == ("TB-FORCE-6",)
    assert "other than" in outcome.message


@pytest.mark.req("TB-SPEC-1", "TB-FORCE-6", "RUN-FINDING-1")
def test_a_forced_row_after_drafts_left_free_is_tb_spec_1_and_blocks_the_variant():
    outcome = FORCED_LOGITS_CHECK.run(LargeConstantEngine(first_only=True), Context(_profile("large-constant")))
    assert outcome.violated == ("TB-SPEC-1",), outcome.message
    assert outcome.requirements["TB-FORCE-6"].status == "BLOCKED"
    assert outcome.requirements["TB-SPEC-1"].fingerprint == "TB-SPEC-1/left-a-forced-row-free"
    assert outcome.requirements["TB-SPEC-1"].reproduction["scenarios"][0]["end_token_ids"] == [7, 8]


@pytest.mark.req("RUN-PROFILE-1")
def test_forced_logit_variant_loads_and_is_validated(tmp_path):
    path = tmp_path / "engine.yaml"
    path.write_text("name: e\nforced_logit: large-constant\n")
    assert load_profile(str(path)).forced_logit == "large-constant"
    assert canonical().forced_logit == "one-hot"
    path.write_text("name: e\nforced_logit: huge\n")
    with pytest.raises(ValueError, match="forced_logit.*'huge'"):
        load_profile(str(path))


def test_oracle_still_passes_canonically():
    assert FORCED_LOGITS_CHECK.run(OracleEngine(), Context(canonical())).status == "PASS"
