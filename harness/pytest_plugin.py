"""pytest plugin: run the conformance checks inside an engine team's own pytest session.

    pytest --specconform-engine my_pkg.adapter:make [--specconform-profile p.yaml]
           [--specconform-check 'tb.*'] [--specconform-expectations known.yaml]

Each check becomes a test item named ``specconform[<check>]`` with its requirement ids as
``requirement`` markers (``-m`` cannot select on arguments, but ``-k`` can on the name). FAIL,
ERROR and TIMEOUT fail the item; NOT_CLAIMED and PRECONDITION_FAILED skip it; a failure listed
in the expectations file is an xfail, and its unexpected pass is reported as XPASS(strict).
"""

from __future__ import annotations

import pytest

from . import checks as checks_module
from . import runner
from .adapters import check_engine_spec
from .core import Context
from .isolation import EngineProcess
from .profiles import load_profile


def pytest_addoption(parser):
    group = parser.getgroup("specconform", "specconform conformance checks")
    group.addoption("--specconform-engine", help="engine adapter to judge: module:factory, reference, oracle")
    group.addoption("--specconform-profile", help="profile name or YAML file (default: the engine's own)")
    group.addoption("--specconform-check", action="append", default=[], help="only checks matching this glob")
    group.addoption("--specconform-expectations", help="YAML file of known failures")
    group.addoption("--specconform-seed", type=int, default=20261121)
    group.addoption("--specconform-trials", type=int, default=100_000, help="the most trials one statistical case runs")
    group.addoption(
        "--specconform-deviation", type=float, default=0.05, help="the TV deviation statistical tests must certify"
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "requirement(id): a specconform requirement id the item covers")


class SpecconformItem(pytest.Item):
    def __init__(self, *, check, engine_spec, **kwargs):
        super().__init__(**kwargs)
        self.check = check
        self.engine_spec = engine_spec
        for rid in check.requirements:
            self.add_marker(pytest.mark.requirement(rid))

    def runtest(self):
        state = self.config._specconform
        option = self.config.getoption
        profile = load_profile(option("--specconform-profile")) if option("--specconform-profile") else None

        def ctx_for(info):
            return Context(
                profile=profile or info.profile,
                seed=option("--specconform-seed"),
                trials=option("--specconform-trials"),
                deviation=option("--specconform-deviation"),
            )

        (record,) = runner.run_checks(state["engine"], [self.check], ctx_for, expectations=state["expectations"])
        self.user_properties.append(("specconform", record.to_json()))
        if record.expected_status and record.expected_status != "PASS":
            if record.status == record.expected_status:
                pytest.xfail(f"expected {record.status}: {record.expectation_reason} {record.expectation_link}")
            if record.status == "PASS":
                pytest.fail(f"unexpected pass (expected {record.expected_status}: {record.expectation_reason})")
        if record.status in ("NOT_CLAIMED", "PRECONDITION_FAILED"):
            pytest.skip(f"{record.status}: {record.message}")
        if record.status != "PASS":
            raise SpecconformFailure(record)

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, SpecconformFailure):
            record = excinfo.value.record
            return (
                f"{record.status} {self.check.name} [{', '.join(record.violated or record.requirements)}]\n"
                f"{record.message}\nreproduce: {record.reproduce}"
            )
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"specconform[{self.check.name}]"


class SpecconformFailure(Exception):
    def __init__(self, record):
        super().__init__(record.message)
        self.record = record


def pytest_collection_modifyitems(session, config, items):
    engine_spec = config.getoption("--specconform-engine")
    if not engine_spec:
        return
    check_engine_spec(engine_spec)
    engine = EngineProcess(engine_spec)  # one engine process for the session, restarted if it dies
    config.add_cleanup(engine.stop)
    config._specconform = {
        "engine": engine,
        "expectations": runner.load_expectations(config.getoption("--specconform-expectations")),
    }
    selected = runner.select(checks_module.all_checks(), config.getoption("--specconform-check"))
    for check in selected:
        items.append(
            SpecconformItem.from_parent(
                session, name=f"specconform[{check.name}]", check=check, engine_spec=engine_spec
            )
        )
