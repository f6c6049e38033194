"""pytest plugin: run the conformance checks inside an engine team's own pytest session.

    pytest --specconform-engine my_pkg.adapter:make [--specconform-profile p.yaml]
           [--specconform-check 'tb.*'] [--specconform-expectations known.yaml]
    pytest --specconform-engine openai --specconform-base-url http://127.0.0.1:8000/v1 --specconform-model m

Every ``specconform run`` option is an option here, as ``--specconform-<option>``, and ``[tool.specconform]`` in
the nearest pyproject.toml sets them as it does for the command line (those given here win). Where pytest has its
own (``-q``, ``-x``, ``--maxfail``, ``--lf``, pytest-xdist's ``-n``), they act on the items instead. With
``--specconform-report-dir`` (or ``report-dir`` in the file) the session also writes a run folder of the checks
that ran, as ``specconform run`` does.

Each check becomes a test item named ``specconform[<check>]``, marked by each of its requirement ids and by its class,
so that ``-m AC-COUNT-2``, ``-m "requirement(id='AC-COUNT-2')"``, ``-m rs.seeded``, ``-m
"conformance_class(name='rs.seeded')"`` and ``-k AC-COUNT-2`` select it. FAIL,
ERROR and TIMEOUT fail the item; NOT_CLAIMED, PRECONDITION_FAILED, NOT_APPLICABLE (outside the engine's
contract) and BLOCKED (another requirement's finding, which fails its own item) skip it; a failure listed
in the expectations file is an xfail, and its unexpected pass is reported as XPASS(strict).

With an engine named, the session judges it beside the tests it collects anyway (its ``testpaths``, or
the paths named). Every mistake in the options (an
engine that cannot be named or built, a profile, an expectations file, a pattern that matches no
check) is one usage error: pytest's ``ERROR:`` line and exit status 4, before any check runs, naming the options
as this plugin spells them (``--specconform-base-url``).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from . import checks as checks_module
from . import preflight, spec
from .config import RunConfig, file_options, find_pyproject, option_actions, select
from .core import UsageError
from .isolation import EngineFailure, EngineProcess, EngineUsageError
from .run_options import run_parser
from .session import Session

# run options that pytest itself provides: -q, -x, --maxfail, --lf and pytest-xdist's -n act on the items
PYTEST_OWN = frozenset({"quiet", "exitfirst", "maxfail", "last_failed", "workers"})


def _run_options(every: bool = False) -> dict:
    """``specconform run``'s options (``config.option_actions``) that the plugin takes as ``--specconform-*``
    (``every``: with those pytest provides, which a config file shared with the command line may set)."""
    return {name: a for name, a in option_actions(run_parser()).items() if every or a.dest not in PYTEST_OWN}


def pytest_addoption(parser):
    """Every ``specconform run`` option as ``--specconform-<option>``, typed and checked as the command line
    checks it; each defaults to nothing here, so that ``[tool.specconform]`` in pyproject.toml fills it in."""
    group = parser.getgroup("specconform", "specconform conformance checks")
    for name, action in _run_options().items():
        shown = action.default not in (None, False) and not isinstance(action.default, list)
        options = {
            "dest": f"specconform_{action.dest}",
            "default": None,
            "help": re.sub(r"(?<![\w-])--(?=[a-z])", "--specconform-", action.help or "")
            + (f" (default: {action.default})" if shown else ""),
        }
        if name == "engine":
            options["help"] = "the engine to judge, as `specconform run --engine` names it (default: none: the plugin "
            options["help"] += "stays idle)"
        if action.nargs == 0:
            options["action"] = "store_true"
        else:
            options.update(type=action.type, choices=action.choices)
            if isinstance(action, argparse._AppendAction):
                options["action"] = "append"
        group.addoption(f"--specconform-{name}", **options)


def own_names(message: str) -> str:
    """``message`` (a usage error's) with each ``specconform run`` option it names spelt as this plugin's
    (``--base-url`` as ``--specconform-base-url``), the options pytest provides left as they are."""
    names = set(_run_options())
    return re.sub(r"(?<![\w-])--([a-z][a-z-]*)", lambda m: f"--specconform-{m[1]}" if m[1] in names else m[0], message)


def usage_error(message: str) -> pytest.UsageError:
    return pytest.UsageError(f"specconform: {own_names(message)}")


def register_markers(config) -> None:
    """Each requirement id and class as a marker of its own name, as the items carry them, for ``-m`` (and ``-k``,
    which matches marker names)."""
    for name in sorted({*spec.classes(), *(rid for check in checks_module.all_checks() for rid in check.requirements)}):
        config.addinivalue_line("markers", f"{name}: a specconform requirement id or conformance class")


def pytest_configure(config):
    """Validate every specconform option before anything is collected: a mistake is one usage error. The options
    given here override those of ``[tool.specconform]`` in the nearest pyproject.toml."""
    config.addinivalue_line("markers", "requirement(id): a specconform requirement id the item covers")
    config.addinivalue_line("markers", "conformance_class(name): the specconform conformance class of the item")
    if not config.getoption("specconform_engine"):
        return
    register_markers(config)
    actions = _run_options()
    given = {a.dest: config.getoption(f"specconform_{a.dest}") for a in actions.values()}
    given = {dest: value for dest, value in given.items() if value is not None}
    try:
        from_file = file_options(find_pyproject(Path(config.rootpath)), _run_options(every=True))
        from_file = {dest: value for dest, value in from_file.items() if dest not in PYTEST_OWN}
        run = RunConfig.from_options({**from_file, **given})
        if len(run.engines) != 1:
            raise UsageError(f"the plugin judges one engine per session; got --engine {list(run.engines)}")
        (engine_spec,) = run.engines
        if not select(checks_module.all_checks(), run.checks, run.exclude):
            raise UsageError(
                f"--specconform-check {' '.join(run.checks)} matches no check (`specconform list` shows them)"
            )
        session = Session(run, reproduce_prefix="pytest", option_prefix="--specconform-")
        preflight.check_engines([engine_spec], session.api_options)  # the server answers and serves the model
    except (ValueError, OSError) as exc:  # UsageError is a ValueError; a missing file an OSError
        raise usage_error(str(exc)) from None
    engine = EngineProcess(engine_spec, session.api_options)  # one for the session, restarted if it dies
    config.add_cleanup(engine.stop)
    config._specconform = {
        "session": session,
        "engine": engine,
        "judged": [],  # the checks that ran
        # named here or in the file: a run folder as `specconform run` writes one, made by the first check
        "report_dir": "report_dir" in {**from_file, **given},
    }


class SpecconformItem(pytest.Item):
    def __init__(self, *, check, engine_spec, **kwargs):
        super().__init__(**kwargs)
        self.check = check
        self.engine_spec = engine_spec
        for rid in check.requirements:
            self.add_marker(pytest.mark.requirement(rid, id=rid))
            self.add_marker(getattr(pytest.mark, rid))
        self.add_marker(pytest.mark.conformance_class(check.cls, name=check.cls))
        self.add_marker(getattr(pytest.mark, check.cls))

    def runtest(self):
        state = self.config._specconform
        session: Session = state["session"]
        if state["report_dir"] and session.run_dir is None:
            session.open_run_folder()
        record = session.judge_check(state["engine"], self.check)
        state["judged"].append(self.check)
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
        for check in state["session"].selected
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
        info = state["engine"].start(state["session"].timeout)
    except (EngineUsageError, EngineFailure) as exc:
        raise usage_error(f"engine {state['engine'].engine_spec!r} cannot be judged: {exc}") from None
    run: Session = state["session"]
    profile_option = run.config.profile
    mismatch = (
        profile_option
        and run.profile
        and preflight.profile_mismatch(profile_option, run.profile, state["engine"].engine_spec, info)
    )
    if mismatch:  # every check of a capability the engine lacks would ERROR
        raise usage_error(mismatch)


def pytest_sessionfinish(session):
    """With a report folder: the run folder's reports (summary.md, junit.xml, report.html) of the checks that ran;
    those deselected or never reached are not planned in it."""
    state = getattr(session.config, "_specconform", None)
    run: Session | None = state and state["session"]
    if run is None or run.run_dir is None:
        return
    run.render(run.run_dir, judged={state["engine"].engine_spec: state["judged"]})
