"""``--product NAME``: a product judged as its folder says (``harness/products/<name>/``), its engines, API profile and
expectations read from the folder's files (here with YAML directly, not through the registry under test); the
installed release's expectations where ``releases.yaml`` teaches several; every mistake a usage error, exit 2, naming
the value."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from specconform.harness import cli
from specconform.harness.cli.entry import build_parser
from specconform.harness.config import RunConfig, file_options, option_actions
from specconform.harness.core import UsageError

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "harness" / "products"
NAMES = sorted(p.parent.name for p in FOLDER.glob("*/product.yaml"))
RECORDS = {name: yaml.safe_load((FOLDER / name / "product.yaml").read_text()) for name in NAMES}


def invoke(argv, capsys) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def install(monkeypatch, tmp_path: Path, name: str, version: str) -> None:
    """The distribution ``name`` at ``version`` as installed metadata alone (its release is read, never imported)."""
    info = tmp_path / "site" / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


@pytest.mark.parametrize("name", NAMES)
def test_a_product_is_judged_through_its_engines_with_its_expectations(name):
    record = RECORDS[name]
    config = RunConfig.from_options({"product": name})
    in_process = [engine for engine in record["engines"] if engine != "openai"]
    assert config.engines == tuple(in_process or ["openai"])
    expected = FOLDER / name / record["expectations"] if record.get("expectations") else None
    assert (config.expectations and Path(config.expectations)) == expected


@pytest.mark.parametrize("name", [n for n in NAMES if "openai" in RECORDS[n]["engines"]])
def test_a_product_at_a_server_is_judged_with_its_api_profile(name):
    server = {"product": name, "base_url": "http://127.0.0.1:8000/v1", "model": "m"}
    config = RunConfig.from_options(server)
    assert config.engines == ("openai",)
    assert config.api_options["api_profile"] == RECORDS[name]["api_profile"]
    assert RunConfig.from_options({**server, "api_profile": "vllm"}).api_options["api_profile"] == "vllm"


def test_a_product_with_releases_is_judged_with_the_installed_releases_expectations(monkeypatch, tmp_path):
    releases = yaml.safe_load((FOLDER / "vllm-mrv2" / "releases.yaml").read_text())
    (version, *_), expectations = releases["ranges"][1]["versions"], releases["ranges"][1]["expectations"]
    install(monkeypatch, tmp_path, "vllm", version)
    config = RunConfig.from_options({"product": "vllm-mrv2"})
    assert (
        Path(config.expectations)
        == FOLDER / "vllm-mrv2" / expectations
        != FOLDER / "vllm-mrv2" / "expectations-0.33.yaml"
    )
    given = RunConfig.from_options({"product": "vllm-mrv2", "expectations": "mine.yaml"})
    assert given.expectations == "mine.yaml"  # a file the user names wins


def test_an_installed_release_the_adapter_is_not_taught_is_refused_naming_those_it_is(monkeypatch, tmp_path):
    install(monkeypatch, tmp_path, "vllm", "0.29.0")
    taught = [
        v for r in yaml.safe_load((FOLDER / "vllm-mrv2" / "releases.yaml").read_text())["ranges"] for v in r["versions"]
    ]
    with pytest.raises(UsageError) as raised:
        RunConfig.from_options({"product": "vllm-mrv2"})
    assert "--product vllm-mrv2" in str(raised.value) and "0.29.0" in str(raised.value)
    assert ", ".join(taught) in str(raised.value)


def test_a_product_with_engines_or_in_process_at_a_server_is_a_usage_error():
    with pytest.raises(UsageError, match=r"--product specconform .*give --product or --engine oracle, not both"):
        RunConfig.from_options({"product": "specconform", "engine": ["oracle"]})
    with pytest.raises(UsageError, match=r"--product vllm-v1 is judged in process .*not at a --base-url"):
        RunConfig.from_options({"product": "vllm-v1", "base_url": "http://127.0.0.1:8000/v1"})


def test_an_unknown_product_is_exit_2_naming_the_value_and_listing_the_products(tmp_path, capsys):
    status, out, err = invoke(["run", "--product", "vllm", "--report-dir", str(tmp_path / "runs")], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "--product" in err and "unknown product 'vllm'" in err
    assert f"products are: {', '.join(NAMES)}" in err
    assert not (tmp_path / "runs").exists()


def test_a_product_whose_engine_is_not_installed_is_exit_2_before_any_folder(tmp_path, capsys):
    pytest.importorskip("torch")  # the adapter's extra; without it the error names the extra instead
    if importlib.util.find_spec(RECORDS["vllm-v1"]["imports"]):
        pytest.skip("vLLM is installed here")
    status, out, err = invoke(["run", "--product", "vllm-v1", "--report-dir", str(tmp_path / "runs")], capsys)
    assert status == 2 and "specconform.harness.adapters.vllm:make" in err and "no vllm" in err, err
    assert not (tmp_path / "runs").exists()


def test_a_product_in_pyproject_is_checked_as_on_the_command_line(tmp_path):
    (subcommands,) = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    actions = option_actions(subcommands.choices["run"])
    (tmp_path / "pyproject.toml").write_text('[tool.specconform]\nproduct = "vllm-mrv2"\n')
    assert file_options(tmp_path / "pyproject.toml", actions) == {"product": "vllm-mrv2"}
    (tmp_path / "pyproject.toml").write_text('[tool.specconform]\nproduct = "vllm"\n')
    with pytest.raises(UsageError, match=r"pyproject.toml \[tool.specconform\] product: unknown product 'vllm'"):
        file_options(tmp_path / "pyproject.toml", actions)
