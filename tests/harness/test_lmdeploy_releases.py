"""lmdeploy's releases (``harness/products/lmdeploy/releases.yaml``, issue 40): one adapter judges 0.15.0 to 0.18.0,
refuses any other release naming those, and hands the sampler of 0.15.0 and 0.16.0 the draft rows' inputs as their
``spec_agent.py`` slices them. Nothing here imports lmdeploy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
import yaml

from specconform.harness import products
from specconform.harness.adapters import lmdeploy
from specconform.harness.core import UsageError
from specconform.harness.expectations import load_expectations
from specconform.harness.products import releases

LMDEPLOY_RELEASES = products.registry.FOLDER / "lmdeploy" / "releases.yaml"


def test_lmdeploys_file_fits_its_schema_and_names_files_that_exist():
    data = releases.read(LMDEPLOY_RELEASES)
    for r in data.ranges:
        assert (LMDEPLOY_RELEASES.parent / r.expectations).is_file(), r.expectations
        assert load_expectations(LMDEPLOY_RELEASES.parent / r.expectations)  # checks each proof's files too


@pytest.mark.parametrize("version", ["0.14.0", "0.19.0", "0.17", "0.18.1"])
def test_the_adapter_refuses_a_release_it_was_not_taught_naming_those_it_was(version):
    with pytest.raises(UsageError) as refused:
        lmdeploy.release_of(version, "make")
    message = str(refused.value)
    taught = [v for r in yaml.safe_load(LMDEPLOY_RELEASES.read_text())["ranges"] for v in r["versions"]]
    assert f"not taught lmdeploy {version};" in message
    assert all(v in message for v in taught), message


@pytest.mark.parametrize("version", ["0.15.0", "0.16.0", "0.17.0", "0.18.0"])
def test_each_taught_release_is_judged_under_its_own_name_with_its_expectations(version):
    release, name = lmdeploy.release_of(version, "make")
    assert name == f"lmdeploy-{version}"
    assert release.name_of("make_triton") == f"lmdeploy-{version}-triton"
    assert release.expectations_path.name == f"expectations-{version}.yaml"
    assert yaml.safe_load(release.expectations_path.read_text())["engine"] == name


@pytest.mark.parametrize("version", ["0.15.0", "0.16.0"])
def test_the_sampler_before_0_17_takes_the_bonus_token_and_the_draft_rows(version):
    old, _ = lmdeploy.release_of(version, "make")
    new, _ = lmdeploy.release_of("0.17.0", "make")
    assert "bonus_token_ids" in old.signatures["RejectionSampler.forward"]
    assert "expanded_sampling_inputs" in new.signatures["RejectionSampler.forward"]
    assert "torch.verifier" not in old.imports and "torch.verifier" in new.imports


@dataclass
class _Inputs:
    """The shape of lmdeploy's ``SamplingInputs`` that matters here: per-row tensors, arrays and lists, and scalars."""

    batch_size: int
    random_seeds: torch.Tensor
    top_k: np.ndarray
    names: list
    max_top_k: int


@pytest.mark.parametrize("num_tokens", [2, 3])
def test_rows_are_split_into_each_requests_bonus_row_and_its_draft_rows(num_tokens):
    requests = 3
    rows = requests * num_tokens
    inputs = _Inputs(rows, torch.arange(rows) * 10, np.arange(rows) + 100, [f"r{i}" for i in range(rows)], 7)
    bonus = [i * num_tokens + num_tokens - 1 for i in range(requests)]  # each request's last row
    drafts = [i for i in range(rows) if i not in bonus]

    last = lmdeploy.rows_of(inputs, num_tokens, bonus=True)
    assert last.batch_size == requests
    assert last.random_seeds.tolist() == [10 * i for i in bonus]
    assert last.top_k.tolist() == [100 + i for i in bonus]
    assert last.names == [f"r{i}" for i in bonus]
    assert last.max_top_k == 7

    rest = lmdeploy.rows_of(inputs, num_tokens, bonus=False)
    assert rest.batch_size == requests * (num_tokens - 1)
    assert rest.random_seeds.tolist() == [10 * i for i in drafts]
    assert rest.top_k.tolist() == [100 + i for i in drafts]
    assert rest.names == [f"r{i}" for i in drafts]
    assert rest.max_top_k == 7
