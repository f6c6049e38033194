"""The SGLang adapters across releases (issue 40): ``harness/products/sglang/releases.yaml`` teaches the kernel-level
adapter each judged release, an untaught one is refused naming those taught, and each taught release is judged under
its own name with the product's profile. Nothing here imports SGLang; with a release installed
(``tox -e sglang-0.5.22``) ``test_the_installed_release_is_loaded_as_its_range_declares`` drives its code."""

from __future__ import annotations

import importlib.util
import os

import pytest
import yaml

from specconform.harness import products
from specconform.harness.adapters import sglang, sglang_strict
from specconform.harness.core import UsageError
from specconform.harness.expectations import load_expectations
from specconform.harness.products import releases

FOLDER = products.registry.FOLDER / "sglang"
RAW = yaml.safe_load((FOLDER / "releases.yaml").read_text())
TAUGHT = [v for r in RAW["ranges"] for v in r["versions"]]


def test_at_least_three_releases_are_taught_and_each_names_its_expectations():
    assert len(TAUGHT) >= 3
    for version in TAUGHT:
        release = releases.release("sglang", version)
        assert release.expectations_path.name == f"expectations-{version}.yaml"
        expectations = load_expectations(release.expectations_path)  # checks each proof's files too
        assert expectations  # the file's engine is the release's own name (load_expectations reads it)
        assert yaml.safe_load(release.expectations_path.read_text())["engine"] == f"sglang-{version}"


@pytest.mark.parametrize("version", ["0.5.20", "0.5.23.post1", "0.5", "0.6.0"])
def test_an_untaught_release_is_refused_naming_those_taught(version):
    with pytest.raises(UsageError) as refused:
        sglang.load_release(version)
    message = str(refused.value)
    assert f"not taught sglang {version};" in message
    assert all(v in message for v in TAUGHT), message
    assert "releases.yaml" in message


def test_the_strict_adapter_refuses_a_release_it_was_not_taught(monkeypatch):
    monkeypatch.setattr(sglang_strict, "import_sglang", lambda: "0.5.22")
    with pytest.raises(UsageError, match=r"sglang-strict's adapter is not taught sglang 0.5.22; it judges 0.5.23 "):
        sglang_strict.import_strict()


@pytest.mark.parametrize("version", TAUGHT)
def test_each_taught_release_is_judged_under_its_own_name(version):
    release = releases.release("sglang", version)
    assert release.name_of("make") == f"sglang-{version}"
    profile = release.profile("make", products.registry.product("sglang").profile_path)
    assert profile.name == f"sglang-{version}"
    shared = products.profile_of("sglang").to_json()
    assert {**profile.to_json(), "name": shared["name"]} == shared


def test_the_greedy_verifiers_moved_in_0_5_23_and_torchs_softmax_is_0_5_21s_alone():
    by_version = {v: releases.release("sglang", v) for v in TAUGHT}
    assert by_version["0.5.21"].imports["verify_tree_greedy_triton"].startswith("sglang.srt.speculative.eagle_utils:")
    assert by_version["0.5.23"].imports["verify_tree_greedy_triton"].startswith("sglang.kernels.ops.speculative.")
    assert by_version["0.5.21"].signatures["softmax"] == ["input", "dim"]
    assert (
        by_version["0.5.22"].signatures["softmax"]
        == by_version["0.5.23"].signatures["softmax"]
        == RAW["signatures"]["softmax"]
    )


@pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="sglang is not installed")
def test_the_installed_release_is_loaded_and_named_as_its_range_declares():
    """Every role is where its range puts it and takes what it declares (else ``make`` raises naming it)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("SGLang's Triton kernels import on a CPU only with TRITON_INTERPRET=1 set before start")
    installed = sglang.import_sglang()
    if installed not in TAUGHT:
        pytest.skip(f"sglang {installed} is not taught")
    engine = sglang.make()
    assert engine.name == engine.profile.name == f"sglang-{installed}"
    assert engine.version.startswith(f"sglang-{installed} ")
