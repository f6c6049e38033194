"""The ``specconform`` command line."""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
import time
from pathlib import Path
from xml.sax.saxutils import escape

from . import replay, spec, vectors
from .engines import make_engine


def _write_reports(out_dir: Path, engine, results) -> None:
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines = [
        f"# specconform: {engine.name} ({engine.version})",
        "",
        " · ".join(f"{k}: {v}" for k, v in sorted(counts.items())),
        "",
        "| status | check | requirements | message |",
        "| --- | --- | --- | --- |",
    ]
    for r in sorted(results, key=lambda r: (r.status == replay.PASS, r.check)):
        message = r.message.splitlines()[0] if r.message else ""
        lines.append(f"| {r.status} | `{r.check}` | {', '.join(r.requirements)} | {message} |")
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    failures = sum(r.status == replay.FAIL for r in results)
    errors = sum(r.status == replay.ERROR for r in results)
    cases = []
    for r in results:
        body = ""
        tag = {replay.FAIL: "failure", replay.ERROR: "error"}.get(r.status)
        if tag:
            summary = escape(r.message[:200], {'"': "&quot;"})
            body = f'<{tag} message="{summary}">{escape(r.message)}</{tag}>'
        cases.append(
            f'  <testcase classname="{engine.name}" name="{escape(r.check)}" '
            f'time="{r.duration_s:.4f}">{body}</testcase>'
        )
    (out_dir / "junit.xml").write_text(
        f'<?xml version="1.0" encoding="utf-8"?>\n<testsuite name="specconform" tests="{len(results)}" '
        f'failures="{failures}" errors="{errors}">\n' + "\n".join(cases) + "\n</testsuite>\n"
    )


def cmd_run(args) -> int:
    engine = make_engine(args.engine)
    out_dir = Path(args.report_dir) / time.strftime("%Y%m%d-%H%M%S")
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = set(args.requirement or ())
    checks = [
        c for c in replay.replay_checks() if (not wanted or set(c[1]) & wanted) and (not args.only or c[0] in args.only)
    ]
    results = []
    with (out_dir / "results.jsonl").open("w") as record:
        for index, (name, requirements, runner) in enumerate(checks, 1):
            result = replay.run_check(engine, name, requirements, runner)
            results.append(result)
            reproduce = f"specconform run --engine {shlex.quote(args.engine)} --only {shlex.quote(name)}"
            record.write(
                json.dumps(
                    {
                        "check": name,
                        "requirements": requirements,
                        "engine": engine.name,
                        "engine_version": engine.version,
                        "device": str(engine.device),
                        "status": result.status,
                        "message": result.message,
                        "duration_s": round(result.duration_s, 6),
                        "python": platform.python_version(),
                        "reproduce": reproduce,
                    }
                )
                + "\n"
            )
            record.flush()
            if not args.quiet:
                print(f"[{index}/{len(checks)}] {result.status:5} {name}", file=sys.stderr)
    _write_reports(out_dir, engine, results)
    bad = [r for r in results if r.status != replay.PASS]
    print(f"{len(results) - len(bad)}/{len(results)} checks passed; reports in {out_dir}")
    return 1 if bad else 0


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


def cmd_bench(args) -> int:
    from . import bench

    return bench.main(args.out)


def cmd_list(args) -> int:
    for req in spec.load_registry().values():
        print(f"{req.id:14} {req.level:6} {req.cls:18} {req.summary}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="specconform", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="judge an engine against the specification")
    run.add_argument("--engine", default="oracle", help="oracle, reference[:cuda] or module:factory")
    run.add_argument("--report-dir", default="reports/runs")
    run.add_argument("--requirement", action="append", help="only checks covering this requirement id")
    run.add_argument("--only", action="append", help="only run this check (by name)")
    run.add_argument("--quiet", action="store_true")
    run.set_defaults(func=cmd_run)
    vec = sub.add_parser("vectors", help="verify (or --write) the golden vectors")
    vec.add_argument("--write", action="store_true")
    vec.set_defaults(func=cmd_vectors)
    ben = sub.add_parser("bench", help="GPU benchmarks of the reference implementation")
    ben.add_argument("--out", help="directory for the JSON results (default reports/perf/<gpu>)")
    ben.set_defaults(func=cmd_bench)
    lst = sub.add_parser("list", help="list the requirements")
    lst.set_defaults(func=cmd_list)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
