"""Run checks against an engine and score them (specs/INTERPRETING.md).

Each result becomes one record, written to the JSON-lines file the moment it is known
(RUN-RECORD-1), so a crash or Ctrl-C loses nothing already measured.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from .checks import FAIL, PASS, PRECONDITION_FAILED, Check, Context, Outcome

ERROR, TIMEOUT, NOT_CLAIMED = "ERROR", "TIMEOUT", "NOT_CLAIMED"
STATUSES = (PASS, FAIL, NOT_CLAIMED, PRECONDITION_FAILED, ERROR, TIMEOUT)
BAD = (FAIL, ERROR, TIMEOUT)


@dataclass
class Expectation:
    check: str  # a check name or a glob
    status: str
    reason: str
    link: str = ""


def load_expectations(path: str | Path | None) -> list[Expectation]:
    """An engine's expectation file (RUN-EXPECT-1): ``expectations: [{check, status, reason, link}]``."""
    if not path:
        return []
    data = yaml.safe_load(Path(path).read_text()) or {}
    out = []
    for i, entry in enumerate(data.get("expectations", [])):
        for key in ("check", "status", "reason"):
            if key not in entry:
                raise ValueError(f"{path}: expectation {i} lacks {key!r}")
        if entry["status"] not in STATUSES:
            raise ValueError(f"{path}: expectation {i} has status {entry['status']!r}; one of {STATUSES}")
        out.append(Expectation(entry["check"], entry["status"], entry["reason"], entry.get("link", "")))
    return out


@dataclass
class Record:
    check: str
    cls: str
    requirements: list[str]
    status: str
    message: str
    violated: list[str]
    engine: str
    engine_version: str
    device: str
    profile: str
    seed: int
    duration_s: float
    reproduce: str
    statistic: float | None = None
    p_value: float | None = None
    alpha: float | None = None
    trials: int | None = None
    expected_status: str | None = None
    expectation_reason: str = ""
    expectation_link: str = ""
    plots: list = field(default_factory=list)

    @property
    def regression(self) -> bool:
        """A bad status that no expectation covers (RUN-EXPECT-2)."""
        return self.status in BAD and self.expected_status != self.status

    @property
    def unexpected_pass(self) -> bool:
        return self.status == PASS and self.expected_status not in (None, PASS)

    def to_json(self) -> dict:
        return asdict(self)


class _Timeout(Exception):
    pass


def _caused_by_timeout(exc: BaseException | None) -> bool:
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, _Timeout):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _call_with_limit(fn: Callable[[], Outcome], seconds: float | None) -> Outcome:
    if not seconds or threading.current_thread() is not threading.main_thread():
        return fn()

    def expire(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def select(checks: Iterable[Check], include: Iterable[str] = (), exclude: Iterable[str] = ()) -> list[Check]:
    """Checks whose name, class or requirement ids match any ``include`` glob and no ``exclude`` glob."""

    def matches(check: Check, patterns) -> bool:
        keys = [check.name, check.cls, *check.requirements]
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns for key in keys)

    include, exclude = list(include), list(exclude)
    return [c for c in checks if (not include or matches(c, include)) and not matches(c, exclude)]


def run_checks(
    engine,
    engine_spec: str,
    checks: list[Check],
    ctx: Context,
    *,
    expectations: list[Expectation] = (),
    timeout_s: float | None = 600,
    on_record: Callable[[Record], None] = lambda record: None,
    profile_arg: str = "",
    engine_args: str | None = None,
) -> list[Record]:
    """Run ``checks`` in order; ``engine_args`` is the command-line fragment that names the engine in
    each record's reproduction (default ``--engine ENGINE_SPEC``)."""
    engine_args = engine_args or f"--engine {shlex.quote(engine_spec)}"
    records = []
    for check in checks:
        started = time.perf_counter()
        if not ctx.profile.claims(check.cls):
            outcome = Outcome(NOT_CLAIMED, f"profile {ctx.profile.name} does not claim {check.cls}")
        elif missing := [n for n in check.needs if n not in ctx.profile.capabilities]:
            outcome = Outcome(PRECONDITION_FAILED, f"the engine lacks {', '.join(missing)}")
        else:
            try:
                outcome = _call_with_limit(lambda check=check: check.run(engine, ctx), timeout_s)
            except Exception as exc:  # a crash is not a spec violation (RUN-STATUS-1)
                if _caused_by_timeout(exc):  # also when an engine wrapped the timeout in its own error
                    outcome = Outcome(TIMEOUT, f"ran past {timeout_s} s")
                else:
                    outcome = Outcome(ERROR, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
        expectation = next((e for e in expectations if fnmatch.fnmatchcase(check.name, e.check)), None)
        reproduce = (
            f"specconform run {engine_args} --check {shlex.quote(check.name)} "
            f"--seed {ctx.seed} --trials {ctx.trials}" + (f" --profile {profile_arg}" if profile_arg else "")
        )
        record = Record(
            check=check.name,
            cls=check.cls,
            requirements=list(check.requirements),
            status=outcome.status,
            message=outcome.message,
            violated=list(outcome.violated),
            engine=engine.name,
            engine_version=str(engine.version),
            device=str(engine.device),
            profile=ctx.profile.name,
            seed=ctx.seed,
            duration_s=round(time.perf_counter() - started, 4),
            reproduce=reproduce,
            statistic=outcome.statistic,
            p_value=outcome.p_value,
            alpha=outcome.alpha,
            trials=outcome.trials,
            expected_status=expectation.status if expectation else None,
            expectation_reason=expectation.reason if expectation else "",
            expectation_link=expectation.link if expectation else "",
            plots=outcome.plots,
        )
        records.append(record)
        on_record(record)
    return records


class RecordWriter:
    """Appends each record to ``results.jsonl`` and flushes, so nothing measured is lost."""

    def __init__(self, path: Path):
        self.path = path
        self.file = path.open("a")

    def __call__(self, record: Record) -> None:
        self.file.write(json.dumps(record.to_json()) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def read_records(path: str | Path) -> list[dict]:
    path = Path(path)
    if path.is_dir():
        path = path / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
