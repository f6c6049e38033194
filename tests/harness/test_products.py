"""The product registry (``harness/products/``): each published engine's record is valid and what it names exists,
its tox environment installs the pins it declares, and the profiles moved out of the adapters into its folder are the
profiles the adapters built before the move (``product_profiles_snapshot.json``, written from the adapters' own
expressions and ``API_PROFILES`` before they became data, and checked against the live adapters of vLLM 0.33, lmdeploy
0.18.0 and SGLang 0.5.23)."""

from __future__ import annotations

import configparser
import json
import re
import shlex
from pathlib import Path

import pytest

from specconform.harness import products
from specconform.harness.adapters.http import API_PROFILES
from specconform.harness.expectations import load_expectations
from specconform.harness.products import releases

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("product_profiles_snapshot.json")
PRODUCTS = products.products()


def _tox_env(name: str) -> str:
    """The text of tox.ini's ``[testenv:name]``, with every ``{[section]key}`` it borrows written out."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    assert tox.has_section(f"testenv:{name}"), f"tox.ini has no [testenv:{name}]"

    def expand(text: str) -> str:
        return re.sub(r"\{\[([^\]]+)\](\w+)\}", lambda m: expand(tox.get(m[1], m[2])), text)

    return "\n".join(expand(value) for value in tox[f"testenv:{name}"].values())


def test_every_folder_holds_a_record_named_as_the_folder():
    folders = sorted(p.name for p in products.registry.FOLDER.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert list(PRODUCTS) == folders


@pytest.mark.parametrize("name", PRODUCTS)
def test_what_a_record_names_exists(name):
    product = PRODUCTS[name]
    record = product.record
    for path in (product.profile_path, product.expectations_path):
        assert path is None or path.is_file(), path
    if product.expectations_path:
        assert load_expectations(product.expectations_path)  # checks each proof's files too
    for folder in record.reports:
        assert (ROOT / "reports/engines" / folder).is_dir(), folder
    for command in record.judge:
        words = shlex.split(command)
        if "bash" in words:
            assert (ROOT / words[words.index("bash") + 1]).is_file(), command
        if words[:2] == ["tox", "-e"]:
            _tox_env(words[2])
    if record.api_profile is not None:
        assert "openai" in record.engines and product.api_profile_path.is_file()
        assert record.api_profile in API_PROFILES
    for engine in record.engines:
        module, _, factory = engine.partition(":")
        if module.startswith("specconform.harness.adapters."):
            assert callable(getattr(__import__(module, fromlist=[factory]), factory)), engine


@pytest.mark.parametrize("name", [n for n, p in PRODUCTS.items() if p.record.install.tox_env])
def test_the_tox_environment_installs_the_declared_pins(name):
    install = PRODUCTS[name].record.install
    env = _tox_env(install.tox_env)
    for package in install.packages:
        assert package in env, f"[testenv:{install.tox_env}] does not install {package}"
    if install.constraints:
        constraints = (PRODUCTS[name].folder / install.constraints).resolve()
        assert constraints.is_file() and str(constraints.relative_to(ROOT)) in env


def test_the_profiles_are_those_the_adapters_built_before_they_became_data():
    before = json.loads(SNAPSHOT.read_text())
    assert {name: products.profile_of(name).to_json() for name in before["profiles"]} == before["profiles"]
    assert {n for n, p in PRODUCTS.items() if p.profile_path} == set(before["profiles"])
    # products added since (their API profiles were data from the start) are not in the snapshot
    assert {name: API_PROFILES[name] for name in before["api_profiles"]} == before["api_profiles"]


def test_a_misspelt_key_in_an_api_profile_is_an_error_that_names_it(tmp_path, monkeypatch):
    from specconform.harness.adapters import http

    (tmp_path / "api-profile.yaml").write_text("budget_feld: thinking_token_budget\n")
    stand_in = products.Product(PRODUCTS["vllm-cpu-api"].record, tmp_path)
    monkeypatch.setattr(products, "products", lambda: {"vllm-cpu-api": stand_in})
    with pytest.raises(ValueError, match=r"api-profile.yaml.*unknown key 'budget_feld'"):
        http.declared_api_profiles()


def test_a_misspelt_key_in_a_record_is_an_error_that_names_it(tmp_path):
    folder = tmp_path / "my-engine"
    folder.mkdir()
    (folder / "product.yaml").write_text("name: my-engine\ndescription: d\nengines: [openai]\njudge: []\nreprots: []\n")
    with pytest.raises(ValueError, match=r"my-engine/product.yaml.*unknown key 'reprots'"):
        products.registry.read(tmp_path)
    (folder / "product.yaml").write_text("name: other\ndescription: d\nengines: [openai]\njudge: []\n")
    with pytest.raises(ValueError, match="name must be its folder's, 'my-engine'; got 'other'"):
        products.registry.read(tmp_path)


def test_an_unknown_product_is_an_error_that_lists_the_products():
    with pytest.raises(ValueError, match="unknown product 'vllm'; products are: .*vllm-v1"):
        products.profile_of("vllm")


@pytest.mark.parametrize("version", releases.taught("vllm-mrv2"))
def test_each_taught_vllm_release_has_a_tox_environment_that_installs_and_judges_it(version):
    release = releases.release("vllm-mrv2", version)
    env = _tox_env(f"vllm-mrv2-{releases.series(version)}")
    assert f"pip install --no-deps vllm=={version}\n" in env
    # --product judges the installed release with its range's expectations (test_product_option.py)
    assert "specconform run --product vllm-mrv2 " in env
    assert f" --report-dir reports/engines/{release.name_of('make')}-cpu" in env
    expectations = str(release.expectations_path.relative_to(ROOT))
    assert f"specconform prove {expectations} --engine specconform.harness.adapters.vllm_mrv2:make" in env


@pytest.mark.parametrize("version", releases.taught("sglang"))
def test_each_taught_sglang_release_has_a_tox_environment_that_installs_and_judges_it(version):
    release = releases.release("sglang", version)
    env = _tox_env(f"sglang-{version}")
    assert f"pip install --no-deps sglang=={version}\n" in env
    expectations = str(release.expectations_path.relative_to(ROOT))
    assert f"--expectations {expectations} --report-dir reports/engines/{release.name_of('make')} " in env
    assert f"specconform prove {expectations} --engine specconform.harness.adapters.sglang:make" in env
