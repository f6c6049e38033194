"""Judging: ``run``, ``doctor`` and ``zoo``."""

from __future__ import annotations

import sys
from dataclasses import replace

from .. import checks as checks_module
from .. import console, preflight, reports, runner
from ..adapters import check_engine_spec
from ..config import RunConfig
from ..core import UsageError
from ..run_options import (
    add_api_options,
    add_product_option,
    add_run_arguments,
    add_run_options,
    add_selection_options,
    bounded,
)
from ..schemas import RunRecord
from ..session import Session, new_run_dir
from .progress import Progress, quiet_third_parties


def run_config(args) -> RunConfig:
    """The run configuration of a command's parsed options."""
    return RunConfig.from_options(vars(args))


def cmd_run(args) -> int:
    """``specconform run``: a ``Session`` of the options, with progress on stderr and the closing lines on stdout."""
    config = run_config(args)
    session = Session(config)
    plan, last = session.plan()
    if not plan:
        print(f"nothing to re-run: the last run ({last}) has no unexpected failure among the selected checks")
        return 0
    session.preflight(list(plan))  # a mistake is a usage error before any folder is made
    if config.quiet:
        quiet_third_parties()
    planned = [(engine, check.name) for engine, checks in plan.items() for check in checks]
    with session.run_folder() as run_dir, Progress(planned, config.quiet, workers=config.workers) as progress:
        records = session.judge(run_dir, plan, on_record=progress)
    missing = session.missing(run_dir, records)
    stopped = config.maxfail is not None and sum(r.regression for r in records) >= config.maxfail
    passed, closing = console.closing(
        records,
        missing,
        run_dir,
        checks_module.uncovered_requirements(),
        stopped_after=config.maxfail if stopped else None,
    )
    print(closing)
    return 0 if passed else 1


def cmd_doctor(args) -> int:
    """The preflight alone: whether each engine can be judged, and what each selected check will judge."""
    config = run_config(args)
    session = Session(config)
    engines = list(config.planned_engines(session.selected))
    report = preflight.doctor(
        engines, session.api_options, session.selected, session.profile, config.timeout, config.profile
    )
    print(report, end="")
    return 0


def cmd_zoo(args) -> int:
    """Run every mutant of the bug zoo; each must FAIL on the requirement it breaks."""
    from ..adapters import zoo

    known = {m.name for m in zoo.MUTANTS}
    unknown = [name for name in args.mutant or () if name not in known]
    if unknown:
        raise UsageError(f"unknown mutant {unknown[0]!r}; the zoo holds: {', '.join(sorted(known))}")
    config = run_config(args)
    mutants = [m for m in zoo.MUTANTS if not args.mutant or m.name in args.mutant]
    for mutant in mutants:  # a mutant that needs an extra this Python lacks says so before any is judged
        check_engine_spec(f"zoo:{mutant.name}")
    if args.findings:
        return zoo_findings(mutants, config, args.findings_out)
    run_dir = new_run_dir(config.report_dir)
    records: list[RunRecord] = []
    for mutant in mutants:  # each mutant is judged by the checks of its own area
        own = replace(config, engines=(f"zoo:{mutant.name}",), checks=config.checks or tuple(mutant.area))
        records = Session(own).judge(run_dir)  # the run's records so far
    table = []
    for mutant in mutants:
        failing = [r for r in records if r.engine == f"zoo:{mutant.name}" and r.status == "FAIL"]
        caught_by = [r.check for r in failing if mutant.breaks in r.violated]
        table.append(
            {
                "mutant": mutant.name,
                "description": mutant.description,
                "breaks": mutant.breaks,
                "caught": bool(caught_by),
                "caught_by": caught_by or [r.check for r in failing],
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


def zoo_findings(mutants, config: RunConfig, out: str) -> int:
    """``specconform zoo --findings``: each mutant judged as a first run judges it (``harness/zoo_findings.py``),
    a line per mutant on stderr, the table printed and written to ``out``; 0 only if every mutant gives exactly one
    finding under the requirement it declares."""
    from .. import zoo_findings as bench

    def on_mutant(done, total, judged):
        if not config.quiet:
            print(bench.progress_line(done, total, judged), file=sys.stderr, flush=True)

    chosen = config.selected(checks_module.kernel_checks()) if config.checks else None  # --check: these for all
    judged = bench.judge_zoo(mutants, config, on_mutant, selected_for=lambda mutant: chosen)
    how = (
        f"Each mutant judged in its own engine process with no expectations file (seed {config.seed}, at most "
        f"{config.trials:,} trials per statistical case), by "
        + (f"the checks matching {', '.join(config.checks)}." if config.checks else bench.FIRST_RUN)
    )
    path = bench.write_report(judged, how, out)
    print(bench.render_markdown(judged, how), end="")
    print(f"written to {path}")
    return 0 if all(j.one_finding_where_declared for j in judged) else 1


def add_run_parser(sub) -> None:
    """``specconform run``: judge engines against the specification."""
    run = sub.add_parser(
        "run",
        help="judge engines against the specification",
        description="Judge engines against the specification. Every option but --shard, -n, --maxfail, -x, --lf and "
        "--api-key (a secret: $OPENAI_API_KEY) may be set in [tool.specconform] of the nearest pyproject.toml by its "
        'long name (base-url = "http://127.0.0.1:8000/v1", check = ["api/*"], seed = 7); the command line overrides '
        "it.",
    )
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)


def add_doctor_parser(sub) -> None:
    """``specconform doctor``: the preflight alone."""
    doc = sub.add_parser(
        "doctor",
        help="the preflight alone: whether each engine can be judged, and what each selected check will judge",
        description="The preflight alone: whether each engine can be judged, and what each selected check will "
        "judge. It reads [tool.specconform] of the nearest pyproject.toml as run does (the options it has).",
    )
    doc.add_argument("--engine", action="append", help="as for run (repeatable; default: run's default engines)")
    add_product_option(doc)
    add_api_options(doc)
    doc.add_argument("--profile", help="a built-in profile name or a YAML file (default: the engine's own)")
    add_selection_options(doc)
    doc.add_argument(
        "--timeout",
        type=bounded(float, 0, 7 * 86400, open_interval=True),
        default=RunConfig.timeout,
        help="seconds each engine may take to be built",
    )
    doc.set_defaults(func=cmd_doctor)


def add_zoo_parser(sub) -> None:
    """``specconform zoo``: the bug zoo, every mutant caught on its requirement."""
    zoo = sub.add_parser("zoo", help="run the bug zoo: every mutant must be caught on its requirement")
    zoo.add_argument("--report-dir", default="reports/zoo", help="where each zoo run's folder is made")
    zoo.add_argument("--mutant", action="append", help="only this mutant (repeatable; default: every mutant)")
    zoo.add_argument(
        "--check", action="append", help="only checks matching this glob (repeatable; default: the mutant's area)"
    )
    zoo.add_argument(
        "--findings",
        action="store_true",
        help="judge each mutant as a first run of its family would, with no expectations file, and say whether it "
        "gives exactly one finding under the requirement it declares; the table goes to --findings-out",
    )
    zoo.add_argument(
        "--findings-out", default="reports/zoo/findings.md", help="with --findings: where the table is written"
    )
    add_run_options(zoo)
    zoo.set_defaults(func=cmd_zoo)
