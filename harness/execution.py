"""How one run's checks are spread and cut short: several engine processes of one engine side by side
(``--workers``/``-n``), a stop after too many unexpected failures (``--maxfail``, ``-x``), and a re-run of only what
the last run failed (``--last-failed``). Shards (``--shard``) are a selection: ``RunConfig.selected``.

Parallelism is ``concurrent.futures``' thread pool over the existing isolation model: each worker thread owns one
``isolation.EngineProcess`` (the engine in its own child process) and draws the next check from a queue shared by
the workers, so a slow check holds one worker only. The threads only wait on their engine's pipe, so the checks
run side by side in the engine processes. With one worker the checks run in order in the calling thread, exactly
as a serial run does.
"""

from __future__ import annotations

import json
import queue
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import runner
from .config import RunConfig, words
from .core import Check, UsageError
from .expectations import Expectation
from .isolation import EngineProcess
from .schemas import RunRecord


class FailureLimit:
    """Counts the checks whose record holds an unexpected bad result (``RunRecord.regression``, what fails a run);
    ``reached`` once there are ``maxfail`` of them (never when ``maxfail`` is ``None``)."""

    def __init__(self, maxfail: int | None):
        self.maxfail = maxfail
        self.failed = 0

    def __call__(self, record: RunRecord) -> None:
        self.failed += record.regression

    @property
    def reached(self) -> bool:
        return self.maxfail is not None and self.failed >= self.maxfail


def run_engine(
    engine_spec: str,
    checks: list[Check],
    config: RunConfig,
    *,
    profile,
    expectations: list[Expectation],
    on_record: Callable[[RunRecord], None],
    limit: FailureLimit,
    run_dir: Path,
) -> list[Check]:
    """Run ``checks`` on ``engine_spec`` with ``config.workers`` engine processes, each record handed to
    ``on_record`` (one at a time, whichever worker made it) and counted by ``limit``; once ``limit`` is reached
    no further check starts. Returns the checks that never started."""
    pending: queue.SimpleQueue[Check] = queue.SimpleQueue()
    for check in checks:
        pending.put(check)
    stopping = threading.Event()
    recording = threading.Lock()

    def recorded(record: RunRecord) -> None:
        with recording:
            on_record(record)
            limit(record)

    def draw() -> Iterator[Check]:
        while not (limit.reached or stopping.is_set()):
            try:
                yield pending.get_nowait()
            except queue.Empty:
                return

    def work(_worker: int) -> None:
        engine = EngineProcess(engine_spec, config.engine_api_options)
        try:
            runner.run_checks(
                engine,
                draw(),
                lambda info: config.context(info, profile),
                expectations=expectations,
                timeout_s=config.timeout,
                on_record=recorded,
                reproduce=config.reproduce(engine_spec),
                run_dir=run_dir,
                engine_args=words(config.engine_options(engine_spec)),
            )
        finally:
            engine.stop()

    workers = max(1, min(config.workers, len(checks)))
    if workers == 1:
        work(0)
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"specconform {engine_spec}") as pool:
            futures = [pool.submit(work, worker) for worker in range(workers)]
            try:
                for future in futures:
                    future.result()
            except BaseException:  # Ctrl-C or a worker's own failure: no further check starts
                stopping.set()
                raise
    never_started = []
    while not pending.empty():
        never_started.append(pending.get_nowait())
    return never_started


RUN_FOLDER = re.compile(r"(\d{8}-\d{6})(?:-(\d+))?")


def last_run(report_dir: str | Path) -> Path:
    """The newest run folder (``YYYYmmdd-HHMMSS[-k]``, as ``specconform run`` names them) under ``report_dir``
    that holds results; a ``UsageError`` when there is none."""
    runs = []
    folder = Path(report_dir)
    for path in folder.iterdir() if folder.is_dir() else ():
        named = RUN_FOLDER.fullmatch(path.name)
        if named and (path / "results.jsonl").is_file():
            runs.append(((named[1], int(named[2] or 0)), path))
    if not runs:
        raise UsageError(f"--last-failed: no earlier run under --report-dir {str(report_dir)!r} to take failures from")
    return max(runs)[1]


def last_failures(run_dir: Path) -> set[tuple[str, str]]:
    """``(engine spec, check)`` of every check of the run at ``run_dir`` that failed unexpectedly (an unexpected
    FAIL, ERROR or TIMEOUT: what made the run exit 1) or that it planned and never recorded."""
    records = runner.read_records(run_dir)
    failed = {(r.engine_spec, r.check) for r in records if r.unexpected}
    manifest = run_dir / "run.json"
    if manifest.is_file():
        recorded = {(r.engine_spec, r.check) for r in records}
        failed |= {(engine, check) for engine, check in json.loads(manifest.read_text())["planned"]} - recorded
    return failed


def plan(config: RunConfig, selected: list[Check]) -> tuple[dict[str, list[Check]], Path | None]:
    """The checks each engine runs: every selected one, or with ``last_failed`` only those the last run under
    ``config.report_dir`` failed (an engine with none is left out); and that last run's folder (or ``None``)."""
    if not config.last_failed:
        return {engine: list(selected) for engine in config.planned_engines(selected)}, None
    source = last_run(config.report_dir)
    failed = last_failures(source)
    engines = config.planned_engines(selected)
    chosen = {engine: [c for c in selected if (engine, c.name) in failed] for engine in engines}
    return {engine: checks for engine, checks in chosen.items() if checks}, source
