"""Each product has one spelling, its folder's name (``harness/products/<name>/``), in every place that names it: the
``--product`` a user gives, the tox environments that install and judge it, its adapter's folder, the profile's name
(the engine name its runs record), the names its releases are judged as, the ``engine:`` its expectation files are
for, its published report folders, its proofs' folders and the matrix's product column.

A name that carries a release sets it in as a word of its own (``vllm-0.33-v1`` is ``vllm-v1`` at 0.33,
``llamacpp-b1-0c1e570-multi`` is ``llamacpp`` at build b1-0c1e570, variant ``multi``): with that word taken out, it is
the product's name, or that name and a qualifier after a dash (``vllm-mrv2-cpu-verify``). The published names keep
the release where they were published with it; what may not appear is another spelling of the product (the tox
environment ``vllm`` for ``vllm-v1``, the expectations of ``vllm-0.33.0 legacy-model-runner``)."""

from __future__ import annotations

import configparser
import importlib
import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "harness" / "products"
NAMES = sorted(p.parent.name for p in FOLDER.glob("*/product.yaml"))
RECORDS = {name: yaml.safe_load((FOLDER / name / "product.yaml").read_text()) for name in NAMES}
# a release as a word of a name: 0.33, 0.7.2.post1, llama.cpp's build b1-0c1e570, or a releases file's {series}
RELEASE = re.compile(r"-(?:\d+(?:\.\d+)+(?:\.?post\d+)?|b\d+-[0-9a-f]{7,40}|\{series\})(?=-|$)")
OWN_ADAPTERS = {p.stem for p in (ROOT / "harness" / "adapters").glob("*.py")}  # specconform's own engines


def spelt_as(name: str, product: str) -> bool:
    """Whether ``name`` spells ``product``: with its release word taken out, the product's name, or that name, a
    dash and a qualifier."""
    bare = RELEASE.sub("", name, count=1)
    return bare == product or bare.startswith(product + "-")


def family(product: str) -> list[str]:
    """The product and the products it is a variant of (``vllm-mrv2-block``: ``vllm-mrv2``), whose install and
    adapter it may share."""
    return [other for other in NAMES if product == other or product.startswith(other + "-")]


def test_the_rule_tells_a_spelling_from_another():
    assert spelt_as("vllm-0.33-v1", "vllm-v1") and spelt_as("vllm-0.33-mrv2-cpu-verify", "vllm-mrv2")
    assert spelt_as("llamacpp-b1-0c1e570-multi", "llamacpp") and spelt_as("flashinfer-0.7.2.post1", "flashinfer")
    assert not spelt_as("vllm", "vllm-v1") and not spelt_as("vllm-0.33.0", "vllm-mrv2")
    assert not spelt_as("vllm-mrv2x-0.33", "vllm-mrv2") and not spelt_as("mlx", "mlx-lm")


def _tox_envs() -> set[str]:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    return {section.partition(":")[2] for section in tox.sections() if section.startswith("testenv:")}


@pytest.mark.parametrize("name", NAMES)
def test_the_tox_environments_that_install_and_judge_a_product_spell_it(name):
    record = RECORDS[name]
    envs = [record.get("install", {}).get("tox_env")]
    envs += [words[2] for words in map(shlex.split, record["judge"]) if words[:2] == ["tox", "-e"]]
    for env in filter(None, envs):
        assert env in _tox_envs(), env
        assert any(env == owner or env.startswith(owner + "-") for owner in family(name)), (name, env)


@pytest.mark.parametrize("name", NAMES)
def test_a_products_adapter_lives_in_its_folder_or_its_familys(name):
    for engine in RECORDS[name]["engines"]:
        module, _, _ = engine.partition(":")
        if not module.startswith("specconform.harness.adapters."):
            continue
        stem = module.rpartition(".")[2]
        if stem in OWN_ADAPTERS:
            continue
        homes = [owner for owner in family(name) if (FOLDER / owner / f"{stem}.py").is_file()]
        assert homes, f"{name}: {engine} is in no folder of {family(name)}"
        # the import name published runs give it finds that file
        assert Path(importlib.import_module(module).__file__) == FOLDER / homes[0] / f"{stem}.py"


@pytest.mark.parametrize("name", [n for n in NAMES if RECORDS[n].get("profile")])
def test_the_profile_names_the_engine_as_its_product(name):
    profile = yaml.safe_load((FOLDER / name / RECORDS[name]["profile"]).read_text())
    assert spelt_as(profile["name"], name), profile["name"]


def test_the_names_each_release_is_judged_as_spell_the_product_of_that_factory():
    releases = yaml.safe_load((FOLDER / "vllm-mrv2" / "releases.yaml").read_text())
    product_of = {
        engine.partition(":")[2]: name
        for name in family("vllm-mrv2") + [n for n in NAMES if n.startswith("vllm-mrv2-")]
        for engine in RECORDS[name]["engines"]
        if engine.startswith("specconform.harness.adapters.vllm_mrv2:")
    }
    for release in releases["ranges"]:
        for factory, judged_as in release["names"].items():
            assert spelt_as(judged_as, product_of[factory]), (factory, judged_as)


@pytest.mark.parametrize("name", NAMES)
def test_expectations_report_folders_and_proofs_spell_the_product(name):
    record = RECORDS[name]
    for folder in record.get("reports", []):
        assert spelt_as(folder, name), folder
    for path in (FOLDER / name).glob("expectations*.yaml"):
        expectations = yaml.safe_load(path.read_text())
        assert spelt_as(expectations["engine"].split()[0], name), (path.name, expectations["engine"])
        for entry in expectations["expectations"]:
            for files in (entry.get("proof") or {}).values():  # a file, or a list of them (a combined patch)
                for file in [files] if isinstance(files, str) else files:
                    folder = Path(file).parts[1]  # proofs/<folder>/...
                    assert spelt_as(folder, name), (path.name, file)


def test_every_published_folder_is_one_products_and_the_matrix_names_products_alone():
    listed = [folder for record in RECORDS.values() for folder in record.get("reports", [])]
    published = sorted(p.name for p in (ROOT / "reports" / "engines").iterdir() if p.is_dir())
    assert sorted(listed) == published  # each folder listed once, by one product
    rows = [line for line in (ROOT / "reports" / "matrix" / "matrix.md").read_text().splitlines()]
    header = rows.index(next(line for line in rows if line.startswith("| engine | release |")))
    table = rows[header + 2 : rows.index("", header)]
    assert table and {row.split(" | ")[0].removeprefix("| ") for row in table} <= set(NAMES)
