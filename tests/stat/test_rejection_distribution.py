"""Statistical checks of the reference sampler and the mutant zoo (specs/statistics.md).

Family-wise α = 1e-6 over every test of a run (Šidák), fixed seeds: a correct sampler fails this
file with probability at most 1e-6 per sampler, and a rerun is bit-identical. At 20,000 trials per
case the position tests of position 0 detect TV deviations of about 0.02 (power 0.9; printed per position).
"""

import numpy as np
import pytest
import torch

from specconform import impl
from specconform.harness import stats
from specconform.harness.adapters import zoo

TRIALS = 20_000
FAMILY_ALPHA = 1e-6
CASES = stats.standard_cases(large_vocab=1000) + stats.one_hot_cases(stats.standard_cases(large_vocab=1000))
ALPHA_TEST = stats.family_alpha_test(FAMILY_ALPHA, CASES)


def impl_sampler(device="cpu", backend="torch"):
    def sample(logits, drafts, num, q, temperature, seeds, positions):
        out = impl.rejection_sample(
            torch.tensor(logits, dtype=torch.float32, device=device),
            torch.tensor(drafts, device=device),
            torch.tensor(num, device=device),
            draft_probs=None if q is None else torch.tensor(q, dtype=torch.float32, device=device),
            temperature=torch.tensor(temperature, dtype=torch.float32, device=device),
            seeds=torch.tensor(seeds, device=device),
            positions=torch.tensor(positions, device=device),
            validate=False,
            backend=backend,
        )
        return out.token_ids.cpu().numpy()

    return sample


def run_suite(sampler, trials=TRIALS, seed=2026):
    return [stats.distribution_check(sampler, case, trials, ALPHA_TEST, seed + i) for i, case in enumerate(CASES)]


@pytest.mark.req(
    "STAT-CASE-1",
    "STAT-CASE-2",
    "STAT-TEST-1",
    "STAT-TEST-4",
    "STAT-POWER-1",
    "STAT-CERT-1",
    "STAT-SEED-1",
    "RS-PROB-5",
    "RS-PROB-6",
    "RS-ONEHOT-1",
)
def test_reference_sampler_passes_every_case():
    reports = run_suite(impl_sampler())
    failures = {r.case: sorted(r.violations()) for r in reports if not r.passed}
    assert failures == {}
    print(f"alpha per test {ALPHA_TEST:.2e}")
    print("\n".join(line for r in reports for line in r.position_lines()))


def test_the_correct_textbook_sampler_passes():
    reports = run_suite(zoo.mutant_sampler(None))
    assert {r.case: sorted(r.violations()) for r in reports if not r.passed} == {}


@pytest.mark.parametrize("mutation", zoo.REJECTION_MUTANTS)
def test_every_mutant_is_caught_on_the_requirement_it_breaks(mutation):
    reports = run_suite(zoo.mutant_sampler(mutation))
    found = set().union(*(r.violations() for r in reports))
    assert zoo.MUTANT_REQUIREMENTS[mutation] in found, found


def impl_device_sampler(device="cpu", ignore_temperature=False):
    """``impl.rejection_sample`` on tensors already on ``device`` (a ``stats.DeviceSampler``); with
    ``ignore_temperature`` every request is sampled at temperature 1."""

    def sample(logits, drafts, num, q, temperature, seeds, positions):
        temperature = torch.ones_like(temperature) if ignore_temperature else temperature
        return impl.rejection_sample(
            logits, drafts, num, draft_probs=q, temperature=temperature, seeds=seeds, positions=positions
        ).token_ids

    return sample


@pytest.mark.req("STAT-POWER-1", "STAT-CERT-1", "RS-PROB-5", "RS-PROB-6")
def test_trials_on_the_device_certify_the_reference_and_catch_an_ignored_temperature():
    target = stats.Power(0.05, 0.9)
    for case in (CASES[0], CASES[-2]):  # reverse-ranked; temperature 0.5 verified as one-hot
        trials = stats.planned_trials(case, target, ALPHA_TEST, 10**6)
        report = stats.distribution_check_on_device(
            impl_device_sampler(), case, trials, ALPHA_TEST, 5, target, batch=8192
        )
        assert report.passed and all(j.counted for j in report.positions), report.position_lines()
        assert report.positions[0].result.trials == trials  # every trial reaches position 0
    wrong = stats.distribution_check_on_device(
        impl_device_sampler(ignore_temperature=True), CASES[6], 20_000, ALPHA_TEST, 5
    )
    assert CASES[6].name == "temperature-0.5" and "RS-PROB-5" in wrong.violations(), wrong.position_lines()


def test_reruns_are_reproducible():
    sampler = impl_sampler()
    a = stats.distribution_check(sampler, CASES[0], 5000, ALPHA_TEST, seed=9)
    b = stats.distribution_check(sampler, CASES[0], 5000, ALPHA_TEST, seed=9)
    assert [r.result.statistic for r in a.positions] == [r.result.statistic for r in b.positions]


@pytest.mark.gpu
@pytest.mark.slow
def test_cuda_kernel_passes_every_case_at_250k_trials():
    reports = [
        stats.distribution_check(impl_sampler("cuda", "triton"), case, 250_000, ALPHA_TEST, 77 + i, batch=65_536)
        for i, case in enumerate(CASES)
    ]
    assert {r.case: sorted(r.violations()) for r in reports if not r.passed} == {}
    print("\n".join(line for r in reports for line in r.position_lines()))


def test_detectable_deviation_is_stated():
    eps = stats.detectable_deviation(TRIALS, 32, ALPHA_TEST, power=0.9)
    assert 0.01 < eps < 0.1
    assert np.isfinite(eps)
