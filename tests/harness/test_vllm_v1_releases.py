"""vLLM's legacy runner across releases (``harness/products/vllm-v1/releases.yaml``, issue 40): one adapter judges
0.30.0 to 0.33.0, each under its own name and expectations, and refuses any other release naming those it judges.
Nothing here imports vLLM; tests/harness/test_vllm_adapters.py drives the installed release."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
import yaml

from specconform.harness import products
from specconform.harness.adapters import vllm as vllm_v1
from specconform.harness.core import UsageError
from specconform.harness.expectations import load_expectations
from specconform.harness.products import releases

V1_RELEASES = products.registry.FOLDER / "vllm-v1" / "releases.yaml"


def _taught() -> list[str]:
    return [v for r in yaml.safe_load(V1_RELEASES.read_text())["ranges"] for v in r["versions"]]


def test_the_file_fits_its_schema_and_names_expectations_that_exist():
    for r in releases.read(V1_RELEASES).ranges:
        assert (V1_RELEASES.parent / r.expectations).is_file(), r.expectations
        assert load_expectations(V1_RELEASES.parent / r.expectations)  # checks each proof's files too


@pytest.mark.parametrize("version", ["0.29.0", "0.33.1", "0.32", "1.0.0"])
def test_the_adapter_refuses_a_release_it_was_not_taught_naming_those_it_was(version):
    with pytest.raises(UsageError) as refused:
        vllm_v1.release_of(version)
    message = str(refused.value)
    assert f"not taught vllm {version};" in message
    assert all(v in message for v in _taught()), message
    assert "releases.yaml" in message


@pytest.mark.parametrize(
    ("version", "name", "expectations"),
    [
        ("0.30.0", "vllm-0.30-v1", "expectations-0.30.yaml"),
        ("0.31.0", "vllm-0.31-v1", "expectations-0.31-0.32.yaml"),
        ("0.32.0", "vllm-0.32-v1", "expectations-0.31-0.32.yaml"),
        ("0.33.0", "vllm-0.33-v1", "expectations-0.33.yaml"),
    ],
)
def test_each_taught_release_is_judged_under_its_own_name_and_expectations(version, name, expectations):
    release = vllm_v1.release_of(version)
    assert release.name_of(releases.STANDARD) == name
    assert release.expectations_path.name == expectations
    profile = release.profile(releases.STANDARD, products.registry.product("vllm-v1").profile_path)
    shared = products.profile_of("vllm-v1").to_json()
    assert profile.name == name
    assert {**profile.to_json(), "name": shared["name"]} == shared  # the claims are the product's, renamed


def _identities(path) -> list[tuple]:
    """Each entry's check, requirement, fingerprint, minimal case and the name of its proof's patch."""
    return [
        (
            e["check"],
            e["requirement"],
            str(e["fingerprint"]),
            e["proof"]["reproduction"],
            Path(e["proof"]["patch"]).name,
        )
        for e in yaml.safe_load(path.read_text())["expectations"]
    ]


@pytest.mark.parametrize(
    ("older", "rebased_into"),
    [("expectations-0.30.yaml", "vllm-0.30-v1"), ("expectations-0.31-0.32.yaml", "vllm-0.31-v1")],
)
def test_an_older_range_keeps_each_findings_identity_and_proof(older, rebased_into):
    """A finding keeps one identity across releases (issue 40): the same check, requirement, fingerprint, minimal case
    and proof in every range whose run showed it; a patch may be rebased onto the release's lines (its own folder)."""
    assert _identities(V1_RELEASES.parent / older) == _identities(V1_RELEASES.parent / "expectations-0.33.yaml")
    rebased = [e["proof"]["patch"] for e in yaml.safe_load((V1_RELEASES.parent / older).read_text())["expectations"]]
    assert {p for p in rebased if not p.startswith("proofs/vllm-0.33-v1/")} == {
        f"proofs/{rebased_into}/counter-based-draws.diff"
    }


def _tox() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(Path(__file__).resolve().parents[2] / "tox.ini")
    return parser


@pytest.mark.parametrize("version", ["0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_each_taught_release_has_a_tox_env_that_installs_judges_and_proves_it(version):
    tox = _tox()
    series = releases.series(version)
    env = tox[f"testenv:vllm-v1-{series}"]
    install = env["commands_pre"]
    if "{[testenv:vllm-v1]commands_pre}" in install:  # the newest release: the legacy runner's own env installs it
        install = tox["testenv:vllm-v1"]["commands_pre"]
    assert f"vllm=={version}" in install
    commands = env["commands"]
    assert "{[vllm-release]judge_v1}" in commands and f"reports/engines/vllm-{series}-v1-cpu" in commands
    assert f"prove harness/products/vllm-v1/{vllm_v1.release_of(version).expectations_path.name}" in commands
