"""One run of the harness, as every front end makes it: the command line (``specconform run``), the pytest plugin
and, through the command line, the GitHub action.

A ``Session`` is built from a ``RunConfig`` and validates it once: each engine's name, the profile and the
expectations file (each loaded once, then kept), and the selection. It then plans (``plan``: every selected check,
or with ``--last-failed`` those the last run failed), checks the engines before any folder is made
(``preflight``), opens the run folder (``open_run_folder``), runs the checks (``judge`` for a whole plan,
``judge_check`` for one check on an engine the front end holds) and renders the reports (``render``). A front end
only turns its own options into a ``RunConfig`` and says what happens on its console.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from . import checks as checks_module
from . import execution, preflight, reports, runner
from .adapters import check_engine_spec
from .config import RunConfig, words
from .core import Check
from .expectations import Expectation, load_expectations
from .isolation import EngineProcess, EngineUsageError
from .profiles import Profile, load_profile
from .schemas import RunRecord

Plan = dict[str, list[Check]]  # engine spec -> the checks it runs, in catalogue order


def new_run_dir(base: str | Path) -> Path:
    """A new run folder under ``base``, named by the time (``-1``, ``-2``, ... when that name is taken)."""
    path = Path(base) / time.strftime("%Y%m%d-%H%M%S")
    suffix = 0
    while path.exists():
        suffix += 1
        path = Path(base) / f"{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    path.mkdir(parents=True)
    return path


class Session:
    """One run: ``config`` validated once (a ``UsageError`` or ``ValueError`` names the mistake, before anything
    runs), with its profile, expectations and selected checks kept for the run.

    ``catalogue``: the checks to select from (default: every check). ``reproduce_prefix`` and ``option_prefix``
    spell the command that re-runs a check (``specconform run --seed 1``, or the plugin's ``pytest
    --specconform-seed 1``)."""

    def __init__(
        self,
        config: RunConfig,
        catalogue: list[Check] | None = None,
        *,
        reproduce_prefix: str = "specconform run",
        option_prefix: str = "--",
    ) -> None:
        self.config = config
        self.api_options: dict = config.engine_api_options  # the headers parsed once, here
        for engine_spec in config.engines:
            check_engine_spec(engine_spec, self.api_options)
        self.profile: Profile | None = load_profile(config.profile) if config.profile else None
        self.expectations: list[Expectation] = load_expectations(config.expectations)
        self.selected: list[Check] = config.selected(checks_module.all_checks() if catalogue is None else catalogue)
        self.reproduce_prefix = reproduce_prefix
        self.option_prefix = option_prefix
        self.run_dir: Path | None = None
        self.made: list[Path] = []  # the report folders ``open_run_folder`` made, innermost first

    def plan(self) -> tuple[Plan, Path | None]:
        """The checks each engine runs (``execution.plan``) and, with ``--last-failed``, the run they come from."""
        return execution.plan(self.config, self.selected)

    def preflight(self, engine_specs: list[str]) -> None:
        """Each engine checked before any folder is made: its server answers, its factory exists, and the run's
        ``--profile`` claims no capability it lacks (each engine built in its own process). A ``UsageError``
        names the first mistake."""
        preflight.check_engines(engine_specs, self.api_options)
        if self.profile is not None and self.config.profile:
            preflight.check_profile(engine_specs, self.api_options, self.config.profile, self.profile, self.timeout)

    @property
    def timeout(self) -> float:
        return self.config.timeout

    def open_run_folder(self) -> Path:
        """A new run folder under the configured report folder (and whatever folders above it were missing)."""
        base = Path(self.config.report_dir)
        self.made = [p for p in (base, *base.parents) if not p.exists()]
        self.run_dir = new_run_dir(base)
        return self.run_dir

    @contextmanager
    def run_folder(self) -> Iterator[Path]:
        """``open_run_folder`` for the length of a run; when an engine's factory refuses how it was named before
        anything was recorded, nothing stays: the run folder and the report folders it made are removed."""
        run_dir = self.open_run_folder()
        try:
            yield run_dir
        except EngineUsageError:
            if not (run_dir / "results.jsonl").is_file() or not runner.read_records(run_dir):
                shutil.rmtree(run_dir)
                for folder in self.made:
                    folder.rmdir()
            raise

    def judge(
        self, run_dir: Path, plan: Plan | None = None, on_record: Callable[[RunRecord], None] = lambda record: None
    ) -> list[RunRecord]:
        """Run each engine's checks of ``plan`` (default: every selected check on every planned engine), each engine
        in its own processes (``execution.run_engine``), each record written to ``run_dir`` as it comes and then
        handed to ``on_record``; whatever happens, the reports are rendered from what was recorded. Stops early once
        ``maxfail`` checks failed unexpectedly. Returns the run folder's records."""
        if plan is None:
            plan = {engine_spec: self.selected for engine_spec in self.config.planned_engines(self.selected)}
        for engine_spec, checks in plan.items():
            runner.write_manifest(run_dir, [engine_spec], checks)
        writer = runner.RecordWriter(run_dir / "results.jsonl")
        limit = execution.FailureLimit(self.config.maxfail)

        def recorded(record: RunRecord) -> None:
            writer(record)
            on_record(record)

        try:
            for engine_spec, checks in plan.items():
                execution.run_engine(
                    engine_spec,
                    checks,
                    self.config,
                    profile=self.profile,
                    expectations=self.expectations,
                    on_record=recorded,
                    limit=limit,
                    run_dir=run_dir,
                )
                if limit.reached:
                    break
        finally:  # whatever happened, render what was measured
            writer.close()
            records = self.render(run_dir)
        return records

    def judge_check(self, engine: EngineProcess, check: Check) -> RunRecord:
        """One check on ``engine`` (started on first use, restarted if it died), recorded into the session's run
        folder when one is open."""
        writer = runner.RecordWriter(self.run_dir / "results.jsonl") if self.run_dir else None
        try:
            (record,) = runner.run_checks(
                engine,
                [check],
                lambda info: self.config.context(info, self.profile),
                expectations=self.expectations,
                timeout_s=self.timeout,
                reproduce=self.config.reproduce(engine.engine_spec, self.reproduce_prefix, self.option_prefix),
                on_record=writer or (lambda record: None),
                run_dir=self.run_dir,
                engine_args=words(self.config.engine_options(engine.engine_spec)),
            )
        finally:
            if writer:
                writer.close()
        return record

    def render(self, run_dir: Path, judged: Plan | None = None) -> list[RunRecord]:
        """The run folder's reports (summary.md, junit.xml, report.html) rendered from its records, which are
        returned; ``judged``: the checks that ran, each engine's, added to what the run planned (a front end that
        plans as it goes, as pytest does)."""
        for engine_spec, checks in (judged or {}).items():
            runner.write_manifest(run_dir, [engine_spec], checks)
        records = runner.read_records(run_dir)
        reports.write_all(
            run_dir, records, checks_module.uncovered_requirements(), runner.missing_records(run_dir, records)
        )
        return records

    def missing(self, run_dir: Path, records: list[RunRecord]) -> list[str]:
        """``engine: check`` for every planned check of the run that has no record."""
        return runner.missing_records(run_dir, records)
