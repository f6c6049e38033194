"""An engine team registers its adapter from its own package (entry-point group ``specconform.engines``), and
``specconform run --engine my-engine`` judges it once the package is installed; an entry point that does not load is a
usage error naming it, its distribution and the cause, with no run folder left behind.

The package is installed as pip installs one, without a network: its module and a ``.dist-info`` folder holding
``METADATA`` and ``entry_points.txt``, in a folder put on the Python path (the engine processes inherit the path)."""

from __future__ import annotations

import json

import pytest

from specconform.harness import cli
from specconform.harness.adapters import check_engine_spec, make_engine, registered
from specconform.harness.adapters.oracle import OracleEngine
from specconform.harness.core import UsageError

ENTRY_POINTS = """\
[specconform.engines]
my-engine = my_engine:make
broken-engine = my_broken_engine:make
not-a-factory = my_engine:VERSION
missing-engine = no_such_module_of_my_engine:make
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """A distribution ``my-engine`` 0.1 installed into ``tmp_path/site`` and that folder put on the Python path."""
    site = tmp_path / "site"
    (site / "my_engine").mkdir(parents=True)
    (site / "my_engine" / "__init__.py").write_text(
        "from specconform.harness.adapters.oracle import OracleEngine\n\n"
        'VERSION = "0.1"\n\n\n'
        "def make():\n    return OracleEngine()\n"
    )
    (site / "my_broken_engine").mkdir()
    (site / "my_broken_engine" / "__init__.py").write_text("import no_such_dependency_of_my_engine  # noqa: F401\n")
    info = site / "my_engine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-engine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    return site


def invoke(argv, capsys) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def test_the_installed_distribution_registers_its_engines(installed):
    engines = registered.engines()
    assert {"my-engine", "broken-engine", "not-a-factory", "missing-engine"} <= set(engines)
    assert engines["my-engine"].value == "my_engine:make" and engines["my-engine"].dist.name == "my-engine"


def test_a_registered_name_builds_the_engine_its_factory_returns(installed):
    check_engine_spec("my-engine")
    assert isinstance(make_engine("my-engine"), OracleEngine)


def test_run_judges_a_registered_engine_by_its_name(installed, tmp_path, capsys):
    argv = ["run", "--engine", "my-engine", "--check", "rejection/invalid-ids", "--report-dir", str(tmp_path / "runs")]
    status, out, err = invoke([*argv, "--quiet"], capsys)
    assert status == 0, err
    (run_dir,) = (tmp_path / "runs").iterdir()
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert [(r["engine_spec"], r["check"], r["status"]) for r in records] == [
        ("my-engine", "rejection/invalid-ids", "PASS")
    ]
    assert records[0]["engine"] == OracleEngine.name  # the engine the factory built


def test_an_entry_point_that_fails_to_load_names_itself_its_distribution_and_the_cause(installed, tmp_path, capsys):
    with pytest.raises(UsageError) as raised:
        make_engine("broken-engine")
    said = str(raised.value)
    for word in ("'broken-engine'", "my-engine 0.1", "specconform.engines", "'my_broken_engine:make'"):
        assert word in said, (word, said)
    assert "ModuleNotFoundError" in said and "no_such_dependency_of_my_engine" in said
    argv = ["run", "--engine", "broken-engine", "--check", "rejection/invalid-ids", "--quiet"]
    status, out, err = invoke([*argv, "--report-dir", str(tmp_path / "runs")], capsys)
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "'broken-engine'" in err and "failed to load" in err and "no_such_dependency_of_my_engine" in err
    assert not (tmp_path / "runs").exists()  # nothing was measured: no run folder stays


def test_an_entry_point_that_names_no_factory_or_no_module_is_a_usage_error(installed, capsys):
    with pytest.raises(UsageError, match=r"'not-a-factory' .* is a str, not a factory"):
        make_engine("not-a-factory")
    with pytest.raises(UsageError, match=r"'missing-engine' .*no module named 'no_such_module_of_my_engine'"):
        check_engine_spec("missing-engine")
    status, out, err = invoke(["run", "--engine", "nosuch"], capsys)
    assert status == 2 and "'nosuch'" in err and "specconform.engines here: broken-engine, missing-engine" in err


def test_specconforms_own_names_come_before_a_registered_one(installed, tmp_path):
    info = installed / "my_engine-0.1.dist-info" / "entry_points.txt"
    info.write_text(ENTRY_POINTS + "oracle = my_broken_engine:make\n")
    assert isinstance(make_engine("oracle"), OracleEngine)  # the broken registration is never loaded
