"""The tensor-level API (thinking-budget.md section 10, rejection-sampling.md section 9, accepted-tokens.md
section 4): the reference, which declares it, passes its checks; each requirement fails alone under an engine
whose own entry points break only it; engines that do not declare it do not claim its classes."""

import pytest
import torch

from specconform.harness import checks, profiles
from specconform.harness.adapters import zoo
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.adapters.reference import ReferenceEngine
from specconform.harness.core import Context

BY_NAME = checks.by_name()
TENSOR_CHECKS = ("budget/tensor-api", "rejection/tensor-api", "counting/tensor-api")


def _judge(engine) -> dict:
    return {name: BY_NAME[name].run(engine, Context(engine.profile)) for name in TENSOR_CHECKS}


@pytest.mark.req("TB-TENSOR-1", "TB-TENSOR-2", "RS-TENSOR-1", "AC-TENSOR-1")
def test_the_reference_passes_every_tensor_level_check():
    outcomes = _judge(ReferenceEngine())
    assert {name: o.status for name, o in outcomes.items()} == dict.fromkeys(TENSOR_CHECKS, "PASS"), {
        name: o.message for name, o in outcomes.items()
    }


@pytest.mark.parametrize(
    ("mutant", "requirement", "mode"),
    [
        ("spec-len-cast-to-int", "TB-TENSOR-1", "invalid-value-accepted"),
        ("step-commits-after-its-rows", "TB-TENSOR-2", "committed-tokens-not-advanced"),
        ("sampler-spec-len-cast-to-int", "RS-TENSOR-1", "invalid-value-accepted"),
        ("vocab-size-cast-to-int", "AC-TENSOR-1", "invalid-value-accepted"),
    ],
)
def test_each_tensor_level_requirement_fails_alone(mutant, requirement, mode):
    outcomes = _judge(zoo.make_mutant(mutant))
    violated = {r for o in outcomes.values() for r in o.violated}
    assert violated == {requirement}, {name: o.message for name, o in outcomes.items()}
    check = next(o for o in outcomes.values() if o.violated)
    assert check.requirements[requirement].fingerprint == f"{requirement}/{mode}"


@pytest.mark.req("TB-TENSOR-1")
def test_a_half_applied_update_fails_tb_tensor_1():
    class AppliesTheMovesFirst(ReferenceEngine):
        """Applies an update's moves before validating its additions, so a bad add leaves a SWAP applied."""

        def __init__(self):
            super().__init__()
            budget_state = self.tensor_api.budget_state

            def half_applying(*args, **kwargs):
                state = budget_state(*args, **kwargs)
                sync = state.sync_batch

                def sync_batch(update):
                    if getattr(update, "moved", ()) and getattr(update, "added", ()):
                        sync(type(update)(update.batch_size, moved=update.moved))
                    sync(update)

                state.sync_batch = sync_batch
                return state

            self.tensor_api.budget_state = half_applying

    outcome = BY_NAME["budget/tensor-api"].run(AppliesTheMovesFirst(), Context(ReferenceEngine().profile))
    assert outcome.violated == ("TB-TENSOR-1",), outcome.message
    assert outcome.requirements["TB-TENSOR-1"].fingerprint == "TB-TENSOR-1/rejected-update-applied"


@pytest.mark.req("AC-TENSOR-1")
def test_canonical_metrics_that_part_from_the_oracle_on_the_first_call_only_are_judged_without_a_crash():
    """The tensor-level stats miscount discarded rows, and the canonical acceptance_metrics parts from the oracle on
    its first call only: the minimal stream's metrics then agree when asked again. AC-TENSOR-1 fails on the tensor
    stats (their own misjudgement), where the check used to unpack the minimal stream's missing violation (None) and
    crash; mypy found it."""

    class Miscounted:
        """The engine's stats, but one discarded row too many."""

        def __init__(self, stats):
            self._stats = stats

        def __getattr__(self, name):
            return getattr(self._stats, name)

        @property
        def num_discarded(self):
            return self._stats.num_discarded + 1

    class FlakyMetrics(ReferenceEngine):
        def __init__(self):
            super().__init__()
            self.calls = 0
            stats = self.tensor_api.acceptance_stats
            self.tensor_api.acceptance_stats = lambda *args, **kwargs: Miscounted(stats(*args, **kwargs))

        def acceptance_metrics(self, steps, eos_token_ids):
            self.calls += 1
            metrics = super().acceptance_metrics(steps, eos_token_ids)
            return {**metrics, "acceptance_rate": metrics["acceptance_rate"] + 0.5} if self.calls == 1 else metrics

    engine = FlakyMetrics()
    outcome = BY_NAME["counting/tensor-api"].run(engine, Context(ReferenceEngine().profile))
    assert engine.calls > 1  # the minimal stream was asked again
    assert outcome.violated == ("AC-TENSOR-1",), outcome.message
    assert outcome.requirements["AC-TENSOR-1"].fingerprint == "AC-TENSOR-1/legal-value-misjudged"


@pytest.mark.req("TB-TENSOR-2")
def test_ids_compared_in_32_bits_fail_tb_tensor_2():
    class Wraps32Bits(ReferenceEngine):
        """Casts committed ids to int32 before matching, so 2**32 + 2 is read as E = [2]."""

        def __init__(self):
            super().__init__()
            budget_state = self.tensor_api.budget_state

            def wrapping(*args, **kwargs):
                state = budget_state(*args, **kwargs)
                update = state.update_state
                state.update_state = lambda tokens: update(tokens.to(torch.int32).long())
                return state

            self.tensor_api.budget_state = wrapping

    outcome = BY_NAME["budget/tensor-api"].run(Wraps32Bits(), Context(ReferenceEngine().profile))
    assert outcome.violated == ("TB-TENSOR-2",), outcome.message
    assert outcome.requirements["TB-TENSOR-2"].fingerprint == "TB-TENSOR-2/id-compared-in-32-bits"


def test_engines_that_do_not_declare_the_tensor_api_do_not_claim_its_classes():
    assert not set(profiles.TENSOR_API_CLASSES) & set(profiles.canonical().classes)
    assert not set(profiles.TENSOR_API_CLASSES) & set(OracleEngine().profile.classes)
    reference = ReferenceEngine().profile
    assert set(profiles.TENSOR_API_CLASSES) <= set(reference.classes) and "tensor-api" in reference.capabilities
