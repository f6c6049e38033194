"""Reading runs: ``report``, ``summary``, ``diff``, ``bench-diff``, ``history`` and ``pin``."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .. import checks as checks_module
from .. import reports, runner
from ..core import UsageError
from ..expectations import load_expectations
from ..run_options import bounded


def cmd_report(args) -> int:
    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{args.run_dir!r} is not a run folder (one holds results.jsonl)")
    records = runner.read_records(run_dir)
    if args.html:  # the page alone, on demand: the published data (results.jsonl, summary.md) is left as it is
        if args.expectations:
            raise UsageError(
                "--html renders the page from results.jsonl as it is; --expectations rewrites it: give one"
            )
        reports.write_html(
            run_dir / "report.html",
            records,
            checks_module.uncovered_requirements(),
            runner.missing_records(run_dir, records),
        )
        print(f"rendered {run_dir / 'report.html'}")
        return 0
    if args.expectations:
        try:
            expectations = load_expectations(args.expectations)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        records = runner.reexpect(records, expectations)
        (run_dir / "results.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
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
    from .. import benchdiff

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
    from .. import history

    md, page = history.write(args.dirs, Path(args.out))
    print(f"wrote {md} and {page}")
    return 0


def cmd_matrix(args) -> int:
    from .. import matrix

    products = Path(args.products) if args.products else None
    md, page = matrix.write(Path(args.engines), Path(args.out), Path(args.root), products)
    print(f"wrote {md} and {page}")
    return 0


def cmd_pin(args) -> int:
    """Rewrite an expectation file so that it pins today's failures by requirement and fingerprint."""
    path = Path(args.expectations)
    records = [r for run_dir in args.run_dirs for r in runner.read_records(run_dir)]
    entries = runner.pin_expectations(records, load_expectations(path))
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


def add_report_parser(sub) -> None:
    """``specconform report``: render a run's reports from its results.jsonl."""
    rep = sub.add_parser("report", help="render summary.md, junit.xml and report.html from a run's results.jsonl")
    rep.add_argument("run_dir", help="a run folder (one that holds results.jsonl)")
    rep.add_argument(
        "--expectations",
        help="attach this expectations file's causes anew (rewrites results.jsonl) before rendering",
    )
    rep.add_argument(
        "--html",
        action="store_true",
        help="render report.html alone (a published run keeps its data; its page is rendered on demand)",
    )
    rep.set_defaults(func=cmd_report)


def add_summary_parser(sub) -> None:
    """``specconform summary``: the cross-engine table of several runs."""
    summ = sub.add_parser("summary", help="the cross-engine table of several runs (Markdown on stdout)")
    summ.add_argument("run_dirs", nargs="+", help="run folders (each holds results.jsonl)")
    summ.set_defaults(func=cmd_summary)


def add_diff_parser(sub) -> None:
    """``specconform diff``: compare two runs."""
    dif = sub.add_parser("diff", help="compare two runs: new failures first, then fixes, then statistics")
    dif.add_argument("old", help="the earlier run folder")
    dif.add_argument("new", help="the later run folder")
    dif.set_defaults(func=cmd_diff)


def add_bench_diff_parser(sub) -> None:
    """``specconform bench-diff``: compare two bench runs."""
    bdiff = sub.add_parser(
        "bench-diff", help="compare two `specconform bench` runs: a regression only beyond the measured spread"
    )
    bdiff.add_argument("baseline", help="a bench-*.json, or a folder (its newest bench-*.json other than NEW)")
    bdiff.add_argument("new", help="a bench-*.json, or a folder (its newest bench-*.json)")
    bdiff.add_argument(
        "--min-change",
        type=bounded(float, 0, 10),
        default=0.05,
        help="smallest relative change called a regression, whatever the spread (default: %(default)s)",
    )
    bdiff.set_defaults(func=cmd_bench_diff)


def add_history_parser(sub) -> None:
    """``specconform history``: trends across runs."""
    hist = sub.add_parser("history", help="trends across conformance and bench runs (Markdown and HTML)")
    hist.add_argument("dirs", nargs="+", help="folders holding run folders (results.jsonl) and bench-*.json files")
    hist.add_argument(
        "--out", default="reports/history", help="where history.md and history.html go (default: %(default)s)"
    )
    hist.set_defaults(func=cmd_history)


def add_matrix_parser(sub) -> None:
    """``specconform matrix``: engines x releases x conformance classes, from the published runs."""
    mat = sub.add_parser(
        "matrix",
        help="the matrix of engines, releases and conformance classes from the published runs "
        "(index.html, sortable and filterable, and matrix.md)",
    )
    mat.add_argument(
        "--engines", default="reports/engines", help="the folder of published report folders (default: %(default)s)"
    )
    mat.add_argument("--out", default="reports/matrix", help="where index.html and matrix.md go (default: %(default)s)")
    mat.add_argument("--root", default=".", help="the project root, which proof paths name (default: %(default)s)")
    mat.add_argument(
        "--products", help="the product records, which group report folders by engine (default: the harness's)"
    )
    mat.set_defaults(func=cmd_matrix)


def add_pin_parser(sub) -> None:
    """``specconform pin``: pin an expectation file's failures."""
    pin = sub.add_parser(
        "pin", help="pin an expectation file's failures by requirement and fingerprint, from runs' results"
    )
    pin.add_argument("run_dirs", nargs="+", help="run folders whose failures the file must cover")
    pin.add_argument("--expectations", required=True, help="the YAML file whose reasons are carried over")
    pin.add_argument("--write", action="store_true", help="rewrite the file (default: print it)")
    pin.set_defaults(func=cmd_pin)
