"""pytest plugin: run the conformance checks inside an engine team's own pytest session.

    pytest --specconform-engine my_pkg.adapter:make [--specconform-profile p.yaml]
           [--specconform-check 'tb.*'] [--specconform-expectations known.yaml]

Each check becomes a test item named ``specconform[<check>]`` with its requirement ids as
``requirement`` markers (``-m`` cannot select on arguments, but ``-k`` can on the name). FAIL,
ERROR and TIMEOUT fail the item; NOT_CLAIMED, PRECONDITION_FAILED, NOT_APPLICABLE (outside the engine's
contract) and BLOCKED (another requirement's finding, which fails its own item) skip it; a failure listed
in the expectations file is an xfail, and its unexpected pass is reported as XPASS(strict).

With an engine named and no test paths given, the session judges the engine only: the tests of the
folder it runs in are collected only when their paths are named. Every mistake in the options (an
engine that cannot be named or built, a profile, an expectations file, a pattern that matches no
check) is one usage error: pytest's ``ERROR:`` line and exit status 4, before any check runs.
"""

from __future__ import annotations

import pytest

from . import checks as checks_module
from . import runner, stats
from .adapters import check_engine_spec
from .config import RunConfig
from .isolation import EngineFailure, EngineProcess, EngineUsageError
from .profiles import load_profile


def pytest_addoption(parser):
    group = parser.getgroup("specconform", "specconform conformance checks")
    group.addoption(
        "--specconform-engine",
        help="engine to judge: module:factory, reference, oracle, embedded, zoo:<mutant> (default: none, the "
        "plugin stays idle)",
    )
    group.addoption("--specconform-profile", help="profile name or YAML file (default: the engine's own)")
    group.addoption(
        "--specconform-check", action="append", default=[], help="only checks matching this glob (repeatable)"
    )
    group.addoption("--specconform-expectations", help="YAML file of known failures")
    group.addoption("--specconform-seed", type=int, default=20261121, help="seed of every generated case")
    group.addoption(
        "--specconform-trials",
        type=int,
        default=stats.DEFAULT_MAX_TRIALS,
        help="the most trials one statistical case runs",
    )
    group.addoption(
        "--specconform-deviation",
        type=float,
        default=None,
        help="the TV deviation statistical tests must certify (default: the engine's own, else "
        f"{stats.DEFAULT_POWER.deviation})",
    )
    group.addoption(
        "--specconform-timeout", type=float, default=600, help="seconds per check (and for the factory) before TIMEOUT"
    )


def pytest_configure(config):
    """Validate every specconform option before anything is collected: a mistake is one usage error."""
    config.addinivalue_line("markers", "requirement(id): a specconform requirement id the item covers")
    engine_spec = config.getoption("--specconform-engine")
    if not engine_spec:
        return
    option = config.getoption
    run = RunConfig.from_options(
        {
            "engine": [engine_spec],
            "profile": option("--specconform-profile"),
            "check": option("--specconform-check"),
            "expectations": option("--specconform-expectations"),
            "seed": option("--specconform-seed"),
            "trials": option("--specconform-trials"),
            "deviation": option("--specconform-deviation"),
            "timeout": option("--specconform-timeout"),
        }
    )
    try:
        check_engine_spec(engine_spec)
        profile = load_profile(run.profile) if run.profile else None
        expectations = runner.load_expectations(run.expectations)
    except (ValueError, OSError) as exc:  # UsageError is a ValueError; a missing file an OSError
        raise pytest.UsageError(f"specconform: {exc}") from None
    selected = runner.select(checks_module.all_checks(), run.checks)
    if not selected:
        raise pytest.UsageError(
            f"specconform: --specconform-check {' '.join(run.checks)} matches no check (`specconform list` shows them)"
        )
    if run.timeout <= 0:
        raise pytest.UsageError(f"specconform: --specconform-timeout must be > 0, got {run.timeout}")
    engine = EngineProcess(engine_spec)  # one engine process for the session, restarted if it dies
    config.add_cleanup(engine.stop)
    config._specconform = {
        "config": run,
        "engine": engine,
        "expectations": expectations,
        "profile": profile,
        "checks": selected,
    }


def pytest_ignore_collect(collection_path, config):
    """With an engine named and no test paths given, the session judges the engine only: the tests of
    the folder it runs in (``testpaths``, the invocation folder) are not collected. Named paths are."""
    if not config.getoption("--specconform-engine"):
        return None
    return True if config.args_source != pytest.Config.ArgsSource.ARGS else None


class SpecconformItem(pytest.Item):
    def __init__(self, *, check, engine_spec, **kwargs):
        super().__init__(**kwargs)
        self.check = check
        self.engine_spec = engine_spec
        for rid in check.requirements:
            self.add_marker(pytest.mark.requirement(rid))

    def runtest(self):
        state = self.config._specconform
        run: RunConfig = state["config"]
        (record,) = runner.run_checks(
            state["engine"],
            [self.check],
            lambda info: run.context(info, state["profile"]),
            expectations=state["expectations"],
            timeout_s=run.timeout,
            reproduce=run.reproduce(self.engine_spec, prefix="pytest", option_prefix="--specconform-"),
        )
        self.user_properties.append(("specconform", record.to_json()))
        if record.expected_status and record.expected_status != "PASS":
            if record.status == record.expected_status:
                pytest.xfail(f"expected {record.status}: {record.expectation_reason} {record.expectation_link}")
            if record.status == "PASS":
                pytest.fail(f"unexpected pass (expected {record.expected_status}: {record.expectation_reason})")
        if record.status in ("NOT_CLAIMED", "PRECONDITION_FAILED", "NOT_APPLICABLE", "BLOCKED"):
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


@pytest.hookimpl(tryfirst=True)  # before -k and -m deselect
def pytest_collection_modifyitems(session, config, items):
    state = getattr(config, "_specconform", None)
    if state is None:
        return
    checks = [
        SpecconformItem.from_parent(
            session,
            name=f"specconform[{check.name}]",
            nodeid=f"specconform[{check.name}]",
            check=check,
            engine_spec=state["engine"].engine_spec,
        )
        for check in state["checks"]
    ]
    # counted as collected, like the items of a file
    config.hook.pytest_collectreport(report=pytest.CollectReport("specconform", "passed", None, checks))
    items.extend(checks)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """Start the engine once before the first check: an engine that cannot be built (a factory that is
    missing or raises) is one usage error, not one failure per check."""
    state = getattr(session.config, "_specconform", None)
    if state is None or session.config.option.collectonly:
        return
    if not any(isinstance(item, SpecconformItem) for item in session.items):
        return
    try:
        state["engine"].start(session.config.getoption("--specconform-timeout"))
    except (EngineUsageError, EngineFailure) as exc:
        raise pytest.UsageError(
            f"specconform: engine {state['engine'].engine_spec!r} cannot be judged: {exc}"
        ) from None
