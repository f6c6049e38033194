"""The ``specconform`` command line."""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import yaml

from . import checks as checks_module
from . import console, execution, preflight, reports, runner, spec, vectors
from .adapters import ENGINE_FORMS, UsageError, check_engine_spec, require_extra
from .adapters.http import API_PROFILES
from .config import RunConfig, Shard, file_options, find_pyproject, option_actions
from .isolation import EngineUsageError
from .profiles import load_profile


def _run_dir(base: str) -> Path:
    path = Path(base) / time.strftime("%Y%m%d-%H%M%S")
    suffix = 0
    while path.exists():
        suffix += 1
        path = Path(base) / f"{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    path.mkdir(parents=True)
    return path


# the environment that silences third-party chatter (transformers' logging and its "Loading weights"
# bars, huggingface_hub's bars) in this process and in every engine process it starts
QUIET_ENVIRONMENT = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
}

HEARTBEAT_S = 10.0  # without a bar, the longest silence on stderr while a check runs


class Progress:
    """Progress on stderr over ``plan`` (``[(engine spec, check name)]`` in run order): a tqdm bar with
    the running check and an estimate when stderr is a terminal (and ``CI`` is unset); otherwise one
    line per finished check but the NOT_CLAIMED ones, which the closing lines count, and a line every
    ``HEARTBEAT_S`` seconds naming the check still running; nothing when ``quiet``. A check's line says why
    when it did not pass (``console.progress_line``); a terminal keeps those lines above the bar. Use as a
    context manager; call it with each record. With ``workers`` engine processes side by side (``-n``), the checks
    running are the first ``workers`` of the plan not yet finished, which is the order they are handed out in."""

    def __init__(self, plan: list[tuple[str, str]], quiet: bool, stream=None, workers: int = 1):
        self.plan = plan
        self.workers = workers
        self.finished: set[tuple[str, str]] = set()
        self.stream = stream or sys.stderr
        self.enabled = not quiet
        self.done = 0
        self.bar = None
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker = None
        if self.enabled and self.stream.isatty() and not os.environ.get("CI"):
            from tqdm import tqdm

            self.bar = tqdm(total=len(plan), file=self.stream, unit="check", dynamic_ncols=True, disable=False)

    def __enter__(self):
        if self.enabled:
            self._announce()
            self._ticker = threading.Thread(target=self._tick, name="specconform-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.bar is not None:
            self.bar.close()

    def _running(self) -> str:
        running = [entry for entry in self.plan if entry not in self.finished][: self.workers]
        return ", ".join(f"{engine}: {check}" for engine, check in running)

    def _announce(self) -> None:
        """Name the check now running in the bar's postfix (a log hears of it from the heartbeat: a line
        at the start would precede the one line of a usage error found when the engine starts)."""
        if self.bar is not None:
            self.bar.set_postfix_str(self._running(), refresh=True)

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _tick(self) -> None:
        """Keep the bar's clock moving, or say every ``HEARTBEAT_S`` which check is still running."""
        last = self.done
        since = time.monotonic()
        interval = 1.0 if self.bar is not None else HEARTBEAT_S
        while not self._stop.wait(interval):
            with self._lock:
                if self.done >= len(self.plan):
                    continue
                if self.bar is not None:
                    self.bar.refresh()
                    continue
                if self.done != last:
                    last, since = self.done, time.monotonic()
                self._line(
                    f"[{self.done}/{len(self.plan)}] still running {self._running()} "
                    f"({time.monotonic() - since:.0f} s; run {time.monotonic() - self.started:.0f} s)"
                )

    def __call__(self, record: runner.Record) -> None:
        with self._lock:
            self.done += 1
            self.finished.add((getattr(record, "engine_spec", record.engine), record.check))
            if not self.enabled:
                return
            line = console.progress_line(record, self.done, len(self.plan))
            if self.bar is not None:
                if record.status not in ("PASS", "NOT_CLAIMED"):
                    self.bar.write(line, file=self.stream)  # what needs a look stays on screen
                self.bar.update(1)
                self._announce()
            elif record.status != "NOT_CLAIMED":  # a log says what was judged; the closing lines sum up the rest
                self._line(line)


def quiet_third_parties() -> None:
    """Silence third-party chatter here and in the engine processes started from now on."""
    os.environ.update(QUIET_ENVIRONMENT)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()


def run_config(args) -> RunConfig:
    """The run configuration of a command's parsed options."""
    return RunConfig.from_options(vars(args))


def judge(config: RunConfig, run_dir: Path, plan: dict[str, list] | None = None) -> list[dict]:
    """Run each engine's checks of ``plan`` (default: every selected check on every engine), each engine in its
    own processes (``execution.run_engine``), streaming records into ``run_dir``; whatever happens, the reports
    are rendered from what was recorded. Stops early once ``config.maxfail`` checks failed unexpectedly."""
    if plan is None:
        selected = config.selected(checks_module.all_checks())
        plan = {engine_spec: selected for engine_spec in config.planned_engines(selected)}
    expectations = runner.load_expectations(config.expectations)
    profile = load_profile(config.profile) if config.profile else None
    for engine_spec, checks in plan.items():
        runner.write_manifest(run_dir, [engine_spec], checks)
    writer = runner.RecordWriter(run_dir / "results.jsonl")
    if config.quiet:
        quiet_third_parties()
    limit = execution.FailureLimit(config.maxfail)
    try:
        planned = [(e, check.name) for e, checks in plan.items() for check in checks]
        with Progress(planned, config.quiet, workers=config.workers) as progress:

            def on_record(record):
                writer(record)
                progress(record)

            for engine_spec, checks in plan.items():
                execution.run_engine(
                    engine_spec,
                    checks,
                    config,
                    profile=profile,
                    expectations=expectations,
                    on_record=on_record,
                    limit=limit,
                    run_dir=run_dir,
                )
                if limit.reached:
                    break
    finally:  # whatever happened, render what was measured
        writer.close()
        records = runner.read_records(run_dir)
        reports.write_all(
            run_dir, records, checks_module.uncovered_requirements(), runner.missing_records(run_dir, records)
        )
    return records


def cmd_run(args) -> int:
    config = run_config(args)
    for engine_spec in config.engines:
        check_engine_spec(engine_spec, dict(config.api_options))
    if config.profile:
        load_profile(config.profile)
    selected = config.selected(checks_module.all_checks())
    runner.load_expectations(config.expectations)
    plan, last = execution.plan(config, selected)
    if not plan:
        print(f"nothing to re-run: the last run ({last}) has no unexpected failure among the selected checks")
        return 0
    # a mistake is a usage error before any folder is made
    preflight.check_engines(list(plan), dict(config.api_options))
    made = [p for p in (Path(config.report_dir), *Path(config.report_dir).parents) if not p.exists()]
    run_dir = _run_dir(config.report_dir)
    try:
        records = judge(config, run_dir, plan)
    except EngineUsageError:  # an engine's factory refused how it was named: nothing was measured, nothing stays
        if not runner.read_records(run_dir):
            shutil.rmtree(run_dir)
            for folder in made:  # the report folders this run made, innermost first
                folder.rmdir()
        raise
    missing = runner.missing_records(run_dir, records)
    stopped = config.maxfail is not None and sum(bool(r.get("unexpected")) for r in records) >= config.maxfail
    passed, closing = console.closing(records, missing, run_dir, stopped_after=config.maxfail if stopped else None)
    print(closing)
    return 0 if passed else 1


def cmd_doctor(args) -> int:
    """The preflight alone: whether each engine can be judged, and what each selected check will judge."""
    config = run_config(args)
    for engine_spec in config.engines:
        check_engine_spec(engine_spec, dict(config.api_options))
    profile = load_profile(config.profile) if config.profile else None
    selected = config.selected(checks_module.all_checks())
    engines = list(config.planned_engines(selected))
    print(preflight.doctor(engines, dict(config.api_options), selected, profile, config.timeout), end="")
    return 0


def cmd_zoo(args) -> int:
    """Run every mutant of the bug zoo; each must FAIL on the requirement it breaks."""
    from .adapters import zoo

    known = {m.name for m in zoo.MUTANTS}
    unknown = [name for name in args.mutant or () if name not in known]
    if unknown:
        raise UsageError(f"unknown mutant {unknown[0]!r}; the zoo holds: {', '.join(sorted(known))}")
    config = run_config(args)
    mutants = [m for m in zoo.MUTANTS if not args.mutant or m.name in args.mutant]
    for mutant in mutants:  # a mutant that needs an extra this Python lacks says so before any is judged
        check_engine_spec(f"zoo:{mutant.name}")
    run_dir = _run_dir(config.report_dir)
    records = []
    for mutant in mutants:  # each mutant is judged by the checks of its own area
        own = replace(config, engines=(f"zoo:{mutant.name}",), checks=config.checks or tuple(mutant.area))
        records = judge(own, run_dir)  # the run's records so far
    table = []
    for mutant in mutants:
        failing = [r for r in records if r["engine"] == f"zoo:{mutant.name}" and r["status"] == "FAIL"]
        caught_by = [r["check"] for r in failing if mutant.breaks in r["violated"]]
        table.append(
            {
                "mutant": mutant.name,
                "description": mutant.description,
                "breaks": mutant.breaks,
                "caught": bool(caught_by),
                "caught_by": caught_by or [r["check"] for r in failing],
            }
        )
    reports.write_all(
        run_dir,
        records,
        checks_module.uncovered_requirements(),
        runner.missing_records(run_dir, records),
        zoo_table=table,
    )
    lines = ["| mutant | breaks | caught | by |", "| --- | --- | --- | --- |"]
    lines += [
        f"| {z['mutant']} | {z['breaks']} | {'yes' if z['caught'] else 'NO'} | {', '.join(z['caught_by'])} |"
        for z in table
    ]
    (run_dir / "catch-table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"reports in {run_dir}")
    return 0 if all(z["caught"] for z in table) else 1


def cmd_replay(args) -> int:
    """Re-run a standalone vector file (a minimal reproduction) against one engine."""
    from . import reproductions
    from .adapters import make_engine

    api_options = dict(RunConfig.from_options(vars(args)).api_options)
    check_engine_spec(args.engine, api_options)
    preflight.check_engines([args.engine], api_options)
    try:
        document = reproductions.load(args.file)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    engine = make_engine(args.engine, api_options)
    failed = 0
    recorded = document.get("fingerprint", "")
    for result in reproductions.replay(engine, document):
        if result.fingerprint:
            failed += 1
            same = (
                ""
                if not recorded
                else (" (as recorded)" if result.fingerprint == recorded else f" (recorded {recorded})")
            )
            print(f"FAIL {result.fingerprint}{same} {result.name}: {result.evidence}")
        else:
            print(f"PASS {result.name}: {result.evidence}")
    return 1 if failed else 0


def cmd_prove(args) -> int:
    """Prove each published cause that has a proof (``harness.proofs``)."""
    from . import proofs

    return proofs.cmd_prove(args, dict(RunConfig.from_options(vars(args)).api_options))


def cmd_report(args) -> int:
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{args.run_dir!r} is not a run folder (one holds results.jsonl)")
    records = runner.read_records(run_dir)
    if args.expectations:
        try:
            expectations = runner.load_expectations(args.expectations)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        records = runner.reexpect(records, expectations)
        (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    reports.write_all(
        run_dir, records, checks_module.uncovered_requirements(), runner.missing_records(run_dir, records)
    )
    print(f"rendered {run_dir / 'summary.md'}, {run_dir / 'junit.xml'}, {run_dir / 'report.html'}")
    return 0


def cmd_summary(args) -> int:
    records = [r for run_dir in args.run_dirs for r in runner.read_records(run_dir)]
    print(reports.engines_summary(records), end="")
    return 0


def cmd_diff(args) -> int:
    text, new_failures = reports.diff(runner.read_records(args.old), runner.read_records(args.new))
    print(text)
    return 1 if new_failures else 0


def cmd_bench_diff(args) -> int:
    from . import benchdiff

    new = benchdiff.resolve(args.new)
    if new is None:
        raise UsageError(f"{args.new!r} is neither a bench JSON file nor a folder holding bench-*.json")
    old = benchdiff.resolve(args.baseline, exclude=new)
    if old is None:
        print(f"no baseline yet: {args.baseline} holds no other bench run to compare {new} with; nothing compared")
        return 0
    text, regressions = benchdiff.markdown(old, new, args.min_change)
    print(text, end="")
    return 1 if regressions else 0


def cmd_history(args) -> int:
    from . import history

    md, page = history.write(args.dirs, Path(args.out))
    print(f"wrote {md} and {page}")
    return 0


def cmd_pin(args) -> int:
    """Rewrite an expectation file so that it pins today's failures by requirement and fingerprint."""
    path = Path(args.expectations)
    records = [r for run_dir in args.run_dirs for r in runner.read_records(run_dir)]
    entries = runner.pin_expectations(records, runner.load_expectations(path))
    text = path.read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    engine = (yaml.safe_load(text) or {}).get("engine")
    body = yaml.safe_dump(
        {**({"engine": engine} if engine else {}), "expectations": entries},
        sort_keys=False,
        allow_unicode=True,
        width=120,
    )
    if args.write:
        path.write_text(header + body)
        print(f"pinned {len(entries)} expectation(s) in {path}")
    else:
        print(header + body, end="")
    return 0


def cmd_vectors(args) -> int:
    if args.write:
        for path in vectors.write_all():
            print(f"wrote {path}")
        return 0
    stale = vectors.stale()
    if stale:
        print(f"stale golden vectors: {', '.join(stale)} (run `specconform vectors --write`)")
        return 1
    print("golden vectors are up to date")
    return 0


def cmd_schema(args) -> int:
    from . import schemas

    for path in schemas.write_schemas(Path(args.out) if args.out else spec.spec_dir() / "schemas"):
        print(f"wrote {path}")
    return 0


def cmd_bench(args) -> int:
    require_extra("triton", "specconform bench")
    from . import bench

    return bench.main(args.out)


def cmd_serve(args) -> int:
    require_extra("serve", "specconform serve")
    import uvicorn

    from embedded import build_app

    app = build_app(
        num_speculative_tokens=args.speculative_tokens,
        device=args.device,
        engine_processes=True,
        engine_threads=args.engine_threads,
        engine_replicas=args.engine_replicas,
    )
    print(f"serving on http://{args.host}:{args.port}/v1", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def cmd_list(args) -> int:
    if args.what in ("engines", "profiles"):
        from . import listing

        print("\n".join(listing.engine_lines() if args.what == "engines" else listing.profile_lines()))
    elif args.what == "requirements":
        for req in spec.load_registry().values():
            print(f"{req.id:14} {req.level:6} {req.cls:18} {req.summary}")
        print("\npermissions (no requirements: declared in the profile, honoured by every check):")
        for permission in spec.load_permissions().values():
            print(f"{permission.id:14} {'MAY':6} {permission.cls:18} {permission.summary} ({permission.declared_by})")
    else:
        for check in RunConfig.from_options(vars(args)).selected(checks_module.all_checks()):
            print(f"{check.name:58} {check.cls:18} {','.join(check.requirements)}")
        if not (args.check or args.exclude or args.shard):
            print(f"\nnot yet covered: {', '.join(checks_module.uncovered_requirements())}")
    return 0


def _bounded(kind, low, high, open_interval=False):
    """An argparse type: a ``kind`` in ``[low, high]`` (``(low, high)`` when ``open_interval``)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        inside = low < value < high if open_interval else low <= value <= high
        if not inside or value != value:
            bounds = f"({low}, {high})" if open_interval else f"[{low}, {high}]"
            raise argparse.ArgumentTypeError(f"must be in {bounds}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _header(text: str) -> str:
    """An argparse type: ``NAME:VALUE``, a non-empty header name without spaces."""
    name, colon, _ = text.partition(":")
    if not colon or not name.strip() or any(c.isspace() for c in name):
        raise argparse.ArgumentTypeError(f"expected NAME:VALUE, got {text!r}")
    return text


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one (not for flags and options that default to nothing)."""

    def _get_help_string(self, action):
        if action.default in (None, False) or isinstance(action.default, list):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``specconform run: ...``) and exit 2, and
    whose help shows every option's default."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _add_api_options(parser) -> None:
    """The options that name an OpenAI-compatible server (``--engine openai``)."""
    parser.add_argument("--base-url", help="with --engine openai: the server's base URL, e.g. http://host:8000/v1")
    parser.add_argument("--model", help="with --engine openai: the model to judge")
    parser.add_argument("--spec-model", help="with --engine openai: the same model served with speculative decoding")
    parser.add_argument("--plain-model", help="with --engine openai: a model without reasoning markers")
    parser.add_argument(
        "--spec-base-url", help="with --engine openai: the base URL of the --spec-model's server (default: --base-url)"
    )
    parser.add_argument(
        "--plain-base-url",
        help="with --engine openai: the base URL of the --plain-model's server (default: --base-url)",
    )
    parser.add_argument(
        "--restart-command",
        help="with --engine openai: a shell command that restarts a server that stopped answering (a check killed "
        "it), run with SPECCONFORM_BASE_URL set to that server's base URL; the check that killed it stays ERROR, the "
        "next check runs once the server answers GET /models again (without it, later checks on that server ERROR)",
    )
    parser.add_argument(
        "--engine-name",
        help="with --engine openai: the engine's name in reports (default: <api profile>:<model>@<host:port>, "
        "or openai:<model>@<host:port> without --api-profile)",
    )
    parser.add_argument(
        "--api-profile",
        choices=tuple(API_PROFILES),
        help="with --engine openai: the engine's request and reasoning fields (default: vLLM's fields)",
    )
    parser.add_argument(
        "--api-key",
        help="with --engine openai: the bearer token every request carries (default: $OPENAI_API_KEY); never written "
        "to reports",
    )
    parser.add_argument(
        "--header",
        action="append",
        type=_header,
        help="with --engine openai: NAME:VALUE, a header every request carries (repeatable); its value is never "
        "written to reports",
    )


def _add_run_options(parser) -> None:
    parser.add_argument(
        "--seed", type=_bounded(int, 0, 2**63 - 1), default=20261121, help="seed of every generated case"
    )
    parser.add_argument(
        "--trials",
        type=_bounded(int, 1, 10**10),
        default=None,
        help="the most trials one case of a statistical check may run (default 1,000,000; --thorough 40,000,000); "
        "positions it leaves short of the declared deviation are NOT_RUN, naming the --trials that would certify them",
    )
    parser.add_argument(
        "--deviation",
        type=_bounded(float, 0, 1, open_interval=True),
        default=None,
        help="the total-variation deviation every counted statistical test must detect and certify "
        "(default 0.03, or the engine's own where it declares one: oracle 0.05; --thorough 0.003)",
    )
    parser.add_argument(
        "--power",
        type=_bounded(float, 0, 1, open_interval=True),
        default=None,
        help="probability of detecting --deviation, and of a conforming engine certifying it (default 0.9)",
    )
    parser.add_argument(
        "--thorough",
        action="store_true",
        help="for GPUs: statistical checks sized for TV 0.003 with up to 40,000,000 trials per case",
    )
    parser.add_argument(
        "--alpha",
        type=_bounded(float, 0, 1, open_interval=True),
        default=1e-6,
        help="family-wise α of each statistical check, in (0, 1)",
    )
    parser.add_argument(
        "--timeout",
        type=_bounded(float, 0, 7 * 86400, open_interval=True),
        default=600,
        help="seconds per check before TIMEOUT, in (0, 604800): there is no 'no limit'",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr and no third-party chatter (progress is a bar on a terminal, "
        "one line per check otherwise)",
    )


def _shard(text: str) -> Shard:
    """An argparse type: ``i/N``."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_selection_options(parser) -> None:
    """What ``run`` and ``list checks`` select: globs, and one shard of what they match."""
    parser.add_argument(
        "--check",
        action="append",
        help="only checks whose name, class or requirement id "
        "matches this glob (repeatable), e.g. 'rs.*' or 'TB-FORCE-*' (default: every check)",
    )
    parser.add_argument("--exclude", action="append", help="skip checks matching this glob (repeatable)")
    parser.add_argument(
        "--shard",
        type=_shard,
        help="only the i-th of N parts of the selected checks, e.g. 1/4: every N-th check from the i-th on, in "
        "catalogue order, so that N jobs with 1/N .. N/N judge every selected check once (merge their runs with "
        "`specconform summary`)",
    )


def _add_distribution_options(parser) -> None:
    """How ``run`` spreads its checks and when it stops early."""
    parser.add_argument(
        "-n",
        "--workers",
        type=_bounded(int, 1, 256),
        default=1,
        help="engine processes of each engine that run its checks side by side (each check still runs once)",
    )
    parser.add_argument(
        "--maxfail",
        type=_bounded(int, 1, 10**9),
        help="start no further check once this many checks failed unexpectedly (the rest are reported as having "
        "no record)",
    )
    parser.add_argument("-x", "--exitfirst", action="store_true", help="--maxfail 1: stop at the first failing check")
    parser.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="only the selected checks that the newest run under --report-dir failed unexpectedly (FAIL, ERROR, "
        "TIMEOUT) or never recorded; nothing to re-run is said so, with exit 0",
    )


def _version() -> str:
    """The installed distribution's version (``unknown`` when run from a tree that was never installed)."""
    try:
        return importlib.metadata.version("specconform")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="specconform",
        description="Conformance harness for thinking budgets, "
        "speculative-decoding rejection sampling and accepted-token counting. Exit status: 0 conforming "
        "(or as expected), 1 an unexpected failure or a missing record, 2 a usage error.",
    )
    parser.add_argument("--version", action="version", version=f"specconform {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser(
        "run",
        help="judge engines against the specification",
        description="Judge engines against the specification. Every option but --shard, -n, --maxfail, -x, --lf and "
        "--api-key (a secret: $OPENAI_API_KEY) may be set in [tool.specconform] of the nearest pyproject.toml by its "
        'long name (base-url = "http://127.0.0.1:8000/v1", check = ["api/*"], seed = 7); the command line overrides '
        "it.",
    )
    run.add_argument(
        "--engine",
        action="append",
        help=f"{', '.join(ENGINE_FORMS)} (repeatable; default: reference, oracle and the "
        "embedded engine with both tokenizer variants)",
    )
    _add_api_options(run)
    run.add_argument("--profile", help="a built-in profile name or a YAML file (default: the engine's own)")
    _add_selection_options(run)
    run.add_argument("--expectations", help="YAML file of known failures (RUN-EXPECT-1)")
    run.add_argument(
        "--report-dir",
        default="reports/runs",
        help="where each run's folder (results.jsonl, summary.md, junit.xml, report.html) is made",
    )
    _add_run_options(run)
    _add_distribution_options(run)
    run.set_defaults(func=cmd_run)
    doc = sub.add_parser(
        "doctor",
        help="the preflight alone: whether each engine can be judged, and what each selected check will judge",
        description="The preflight alone: whether each engine can be judged, and what each selected check will "
        "judge. It reads [tool.specconform] of the nearest pyproject.toml as run does (the options it has).",
    )
    doc.add_argument("--engine", action="append", help="as for run (repeatable; default: run's default engines)")
    _add_api_options(doc)
    doc.add_argument("--profile", help="a built-in profile name or a YAML file (default: the engine's own)")
    _add_selection_options(doc)
    doc.add_argument(
        "--timeout",
        type=_bounded(float, 0, 7 * 86400, open_interval=True),
        default=600,
        help="seconds each engine may take to be built",
    )
    doc.set_defaults(func=cmd_doctor)
    zoo = sub.add_parser("zoo", help="run the bug zoo: every mutant must be caught on its requirement")
    zoo.add_argument("--report-dir", default="reports/zoo", help="where each zoo run's folder is made")
    zoo.add_argument("--mutant", action="append", help="only this mutant (repeatable; default: every mutant)")
    zoo.add_argument(
        "--check", action="append", help="only checks matching this glob (repeatable; default: the mutant's area)"
    )
    _add_run_options(zoo)
    zoo.set_defaults(func=cmd_zoo)
    rpl = sub.add_parser("replay", help="re-run a standalone vector file (a minimal reproduction) against an engine")
    rpl.add_argument("file", help="a vector file, e.g. RUN_DIR/reproductions/<engine>--<check>--<requirement>.json")
    rpl.add_argument(
        "--engine",
        required=True,
        help="oracle, reference[:cuda[:triton]], zoo:<mutant>, module:factory, or for an api reproduction "
        "embedded:single|multi or openai with its options",
    )
    _add_api_options(rpl)
    rpl.set_defaults(func=cmd_replay)
    prv = sub.add_parser(
        "prove", help="check each expectation's proof: its reproduction fails unpatched and passes patched"
    )
    prv.add_argument("expectations", help="an expectations YAML file whose entries carry proof: {patch, reproduction}")
    prv.add_argument("--engine", required=True, help="the engine the entries are of, e.g. harness.adapters.vllm:make")
    prv.add_argument("--entry", help="only this entry: CHECK or CHECK:REQUIREMENT")
    _add_api_options(prv)
    prv.set_defaults(func=cmd_prove)
    rep = sub.add_parser("report", help="render summary.md, junit.xml and report.html from a run's results.jsonl")
    rep.add_argument("run_dir", help="a run folder (one that holds results.jsonl)")
    rep.add_argument(
        "--expectations",
        help="attach this expectations file's causes anew (rewrites results.jsonl) before rendering",
    )
    rep.set_defaults(func=cmd_report)
    summ = sub.add_parser("summary", help="the cross-engine table of several runs (Markdown on stdout)")
    summ.add_argument("run_dirs", nargs="+", help="run folders (each holds results.jsonl)")
    summ.set_defaults(func=cmd_summary)
    dif = sub.add_parser("diff", help="compare two runs: new failures first, then fixes, then statistics")
    dif.add_argument("old", help="the earlier run folder")
    dif.add_argument("new", help="the later run folder")
    dif.set_defaults(func=cmd_diff)
    bdiff = sub.add_parser(
        "bench-diff", help="compare two `specconform bench` runs: a regression only beyond the measured spread"
    )
    bdiff.add_argument("baseline", help="a bench-*.json, or a folder (its newest bench-*.json other than NEW)")
    bdiff.add_argument("new", help="a bench-*.json, or a folder (its newest bench-*.json)")
    bdiff.add_argument(
        "--min-change",
        type=_bounded(float, 0, 10),
        default=0.05,
        help="smallest relative change called a regression, whatever the spread (default: %(default)s)",
    )
    bdiff.set_defaults(func=cmd_bench_diff)
    hist = sub.add_parser("history", help="trends across conformance and bench runs (Markdown and HTML)")
    hist.add_argument("dirs", nargs="+", help="folders holding run folders (results.jsonl) and bench-*.json files")
    hist.add_argument(
        "--out", default="reports/history", help="where history.md and history.html go (default: %(default)s)"
    )
    hist.set_defaults(func=cmd_history)
    pin = sub.add_parser(
        "pin", help="pin an expectation file's failures by requirement and fingerprint, from runs' results"
    )
    pin.add_argument("run_dirs", nargs="+", help="run folders whose failures the file must cover")
    pin.add_argument("--expectations", required=True, help="the YAML file whose reasons are carried over")
    pin.add_argument("--write", action="store_true", help="rewrite the file (default: print it)")
    pin.set_defaults(func=cmd_pin)
    vec = sub.add_parser("vectors", help="verify (or --write) the golden vectors")
    vec.add_argument("--write", action="store_true", help="regenerate the golden vectors instead of verifying them")
    vec.set_defaults(func=cmd_vectors)
    sch = sub.add_parser("schema", help="write the JSON Schema of profile, expectation and record files")
    sch.add_argument("--out", help="the folder to write them to (default: specs/schemas)")
    sch.set_defaults(func=cmd_schema)
    ben = sub.add_parser("bench", help="GPU benchmarks of the reference implementation")
    ben.add_argument("--out", help="directory for the JSON results (default: reports/perf/<gpu>)")
    ben.set_defaults(func=cmd_bench)
    srv = sub.add_parser(
        "serve", help="serve the embedded reference engine (OpenAI-compatible) on loopback, each engine in a process"
    )
    srv.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    srv.add_argument("--port", type=_bounded(int, 1, 65535), default=8000, help="the TCP port to listen on")
    srv.add_argument(
        "--speculative-tokens",
        type=_bounded(int, 1, 64),
        default=3,
        help="draft tokens per step of the -spec models",
    )
    srv.add_argument("--device", default="cpu", help="the torch device the tiny models run on (cpu, cuda)")
    srv.add_argument(
        "--engine-threads",
        type=_bounded(int, 1, 256),
        default=1,
        help="intra-op threads of each engine process (docs/embedded-server.md: more is not faster)",
    )
    srv.add_argument(
        "--engine-replicas",
        type=_bounded(int, 1, 64),
        default=1,
        help="processes of each engine; a request goes to the one with the fewest in flight (for many cores)",
    )
    srv.set_defaults(func=cmd_serve)
    lst = sub.add_parser("list", help="list the checks, the requirements, the engines or the profiles")
    lst.add_argument(
        "what",
        choices=("checks", "requirements", "engines", "profiles"),
        nargs="?",
        default="checks",
        help="what to list",
    )
    _add_selection_options(lst)
    lst.set_defaults(func=cmd_list)
    return parser


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices[command]


def run_parser() -> argparse.ArgumentParser:
    """The parser of ``specconform run``'s options (the pytest plugin takes the same options)."""
    return _subparser(build_parser(), "run")


def parse(argv=None) -> argparse.Namespace:
    """``argv`` parsed; for ``run`` and ``doctor``, the options ``[tool.specconform]`` of the nearest
    ``pyproject.toml`` sets (``config.file_options``, those of ``run``; ``doctor`` takes the ones it has) are the
    defaults that the command line overrides (a repeatable option's list is replaced, not extended)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in ("run", "doctor"):
        return args
    command = _subparser(parser, args.command)
    try:
        from_file = file_options(find_pyproject(Path.cwd()), option_actions(_subparser(parser, "run")))
    except UsageError as exc:
        command.error(str(exc))
    own = {a.dest for a in command._actions}
    from_file = {dest: value for dest, value in from_file.items() if dest in own}
    lists = {a.dest for a in command._actions if isinstance(a, argparse._AppendAction)}
    command.set_defaults(**{dest: value for dest, value in from_file.items() if dest not in lists})
    args = parser.parse_args(argv)
    for dest in lists & set(from_file):
        if getattr(args, dest) is None:
            setattr(args, dest, from_file[dest])
    return args


def main(argv=None) -> int:
    args = parse(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # the reader went away (`specconform list | head`): stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit must not fail again
        return 128 + signal.SIGPIPE
    except (UsageError, EngineUsageError, FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        print(f"specconform {args.command}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a profile, expectations file or argument the user gave is malformed
        print(f"specconform {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
