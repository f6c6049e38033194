"""Adapters that span releases (issue 40): a product's ``releases.yaml`` declares per range of releases what differs,
an unknown key in it is an error that names it, a release it does not teach is refused naming those it does, and a
range's signatures are checked against the engine's own code before anything is judged. Nothing here imports vLLM;
tests/harness/test_vllm_adapters.py drives the installed release."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from specconform.harness import products, schemas
from specconform.harness.adapters import vllm_mrv2
from specconform.harness.core import UsageError
from specconform.harness.expectations import load_expectations
from specconform.harness.products import releases

VLLM_RELEASES = products.registry.FOLDER / "vllm-mrv2" / "releases.yaml"
RANGE = {"versions": ["1.0.0"], "names": {"make": "x-{series}"}}


def _file(**fields) -> dict:
    return {"engine": "x", "ranges": [dict(RANGE)], **fields}


def test_an_unknown_key_in_a_range_is_an_error_that_names_it():
    data = _file()
    data["ranges"][0]["expectation"] = "expectations-1.0.yaml"
    with pytest.raises(ValueError, match=r"unknown key 'ranges.0.expectation'; known keys: .*'expectations'"):
        schemas.parse(schemas.ReleasesFile, data, "releases")


def test_an_unknown_key_at_the_top_is_an_error_that_names_it():
    with pytest.raises(ValueError, match=r"unknown key 'range'"):
        schemas.parse(schemas.ReleasesFile, {**_file(), "range": []}, "releases")


def test_a_release_in_two_ranges_is_an_error_that_names_it():
    data = _file()
    data["ranges"].append({"versions": ["1.1.0", "1.0.0"], "names": {"make": "y"}})
    with pytest.raises(ValueError, match="releases in more than one range: 1.0.0"):
        schemas.parse(schemas.ReleasesFile, data, "releases")


def test_a_range_without_releases_or_names_is_an_error():
    for key in ("versions", "names"):
        data = _file()
        data["ranges"][0][key] = [] if key == "versions" else {}
        with pytest.raises(ValueError, match=f"ranges.0.{key}"):
            schemas.parse(schemas.ReleasesFile, data, "releases")


def test_the_schema_file_is_the_models_own(tmp_path):
    written = {p.name: p.read_text() for p in schemas.write_schemas(tmp_path)}
    committed = Path(__file__).resolve().parents[2] / "specs" / "schemas" / "releases.schema.json"
    assert written["releases.schema.json"] == committed.read_text()


def test_vllms_file_fits_its_schema_and_names_files_that_exist():
    data = releases.read(VLLM_RELEASES)
    for r in data.ranges:
        for name in (r.expectations, r.profile):
            assert name is None or (VLLM_RELEASES.parent / name).is_file(), name
        if r.expectations:
            assert load_expectations(VLLM_RELEASES.parent / r.expectations)  # checks each proof's files too


def _taught_in_the_file() -> list[str]:
    return [v for r in yaml.safe_load(VLLM_RELEASES.read_text())["ranges"] for v in r["versions"]]


@pytest.mark.parametrize("version", ["0.29.0", "0.33.1", "0.32", "1.0.0"])
def test_the_adapter_refuses_a_release_it_was_not_taught_naming_those_it_was(version):
    with pytest.raises(UsageError) as refused:
        vllm_mrv2.release_of(version, "make")
    message = str(refused.value)
    assert f"not taught vllm {version};" in message
    assert all(v in message for v in _taught_in_the_file()), message
    assert "releases.yaml" in message


def test_a_mode_a_release_lacks_is_refused_naming_the_modes_it_has():
    with pytest.raises(UsageError, match="vllm-mrv2 0.32.0 has no 'make_fly' to judge; it has make, make_block, "):
        vllm_mrv2.release_of("0.32.0", "make_fly")


@pytest.mark.parametrize(
    ("version", "name"),
    [
        ("0.30.0", "vllm-0.30-mrv2"),
        ("0.31.0", "vllm-0.31-mrv2"),
        ("0.32.0", "vllm-0.32-mrv2"),
        ("0.33.0", "vllm-0.33-mrv2"),
    ],
)
def test_each_taught_release_is_judged_under_its_own_name(version, name):
    release, judged_as = vllm_mrv2.release_of(version, "make")
    assert judged_as == name
    profile = release.profile("make", products.registry.product("vllm-mrv2").profile_path)
    assert profile.name == name
    # the profile is the product's, renamed: same claims and variants; the draws are the range's
    shared = products.profile_of("vllm-mrv2").to_json()
    assert {**profile.to_json(), "name": shared["name"], "draws": shared["draws"]} == shared


@pytest.mark.parametrize(
    ("version", "draws"),
    # vLLM's sample/gumbel.py: 0.30 draws its Gumbel noise from Philox (tl_rand64), 0.31 on from murmur3; the block
    # mode's step seeds (spec_step_seed) came in 0.33, and the scheme was held against 0.33's kernels alone
    [("0.30.0", None), ("0.31.0", None), ("0.32.0", None), ("0.33.0", "vllm-mrv2")],
)
def test_each_release_is_judged_by_the_draws_its_range_declares_in_every_mode(version, draws):
    release = releases.release("vllm-mrv2", version)
    for factory in release.names:
        default = products.registry.product(
            release.name_of(factory).replace(f"-{releases.series(version)}", "")
        ).profile_path
        assert release.profile(factory, default).draws == draws


def test_a_range_naming_draws_no_scheme_computes_is_an_error_that_names_them():
    with pytest.raises(ValueError, match=r"releases.yaml: x 1.0.0: draws must be one of reference, .*; got 'vllm-v2'"):
        releases.range_draws("vllm-v2", "releases.yaml: x 1.0.0")
    assert releases.range_draws(schemas.UNMODELLED_DRAWS, "here") == schemas.UNMODELLED_DRAWS
    assert releases.range_draws(None, "here") is None


def test_a_range_overrides_the_shared_signatures_and_keeps_the_rest():
    raw = yaml.safe_load(VLLM_RELEASES.read_text())
    older = releases.release("vllm-mrv2", "0.30.0")
    newer = releases.release("vllm-mrv2", "0.32.0")
    assert older.signatures["ThinkingBudgetState.apply"] == raw["ranges"][0]["signatures"]["ThinkingBudgetState.apply"]
    assert newer.signatures["ThinkingBudgetState.apply"] == raw["signatures"]["ThinkingBudgetState.apply"]
    assert (
        older.signatures["rejection_sample"]
        == newer.signatures["rejection_sample"]
        == raw["signatures"]["rejection_sample"]
    )
    assert "LogitsContext" not in older.imports and "LogitsContext" in newer.imports
    assert older.imports["RequestState"] == newer.imports["RequestState"] == raw["imports"]["RequestState"]


def _release(**signatures) -> releases.Release:
    return releases.Release("p", "1.0.0", {"make": "p-1.0"}, {}, signatures, Path("profile.yaml"), None)


def test_a_signature_that_matches_the_declared_parameters_is_accepted():
    def apply(self, logits, ctx, extra=None):
        return None

    _release(apply=["logits", "ctx"]).check_signature("apply", apply)


def test_a_signature_lacking_a_declared_parameter_is_refused_naming_it():
    def apply(self, logits, expanded_idx_mapping, idx_mapping):  # an older release's form
        return None

    with pytest.raises(releases.UntaughtRelease, match=r"p 1.0.0: apply takes .*lacks ctx; also needs "):
        _release(apply=["logits", "ctx"]).check_signature("apply", apply)


def test_a_signature_needing_an_undeclared_parameter_is_refused_naming_it():
    def rejection_sample(target_logits, seed, fly_window_size):
        return None

    with pytest.raises(releases.UntaughtRelease, match="also needs fly_window_size$"):
        _release(rejection_sample=["target_logits", "seed"]).check_signature("rejection_sample", rejection_sample)


def test_a_call_passes_the_declared_parameters_alone_by_name():
    seen = {}

    def apply(logits, ctx=None, idx_mapping=None):
        seen.update(logits=logits, ctx=ctx, idx_mapping=idx_mapping)

    _release(apply=["logits", "idx_mapping"]).call("apply", apply, {"logits": 1, "ctx": 2, "idx_mapping": 3})
    assert seen == {"logits": 1, "ctx": None, "idx_mapping": 3}


def test_a_product_without_a_releases_file_is_named():
    with pytest.raises(ValueError, match="product 'flashinfer' declares no releases file"):
        releases.release("flashinfer", "0.7.2")


def test_an_import_the_release_lacks_is_refused_naming_where_its_range_put_it():
    release = dataclasses.replace(_release(), imports={"Context": "json:LogitsContext", "gone": "json.no_such_module"})
    with pytest.raises(releases.UntaughtRelease, match=r"p 1.0.0: Context is not at json:LogitsContext, where its "):
        release.load("Context")
    with pytest.raises(releases.UntaughtRelease, match=r"gone is not at json.no_such_module, .*ModuleNotFoundError"):
        release.load("gone")
    assert dataclasses.replace(release, imports={"dumps": "json:dumps"}).load("dumps") is json.dumps
