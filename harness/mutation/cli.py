"""``python -m specconform.harness.mutation run|report``."""

from __future__ import annotations

import argparse
from pathlib import Path

import specconform.harness.mutation
from specconform.harness.config import RunConfig
from specconform.harness.mutation.mutator import OPERATORS
from specconform.harness.mutation.run import run
from specconform.harness.mutation.summary import load_classified, report
from specconform.harness.mutation.targets import REPO


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specconform.harness.mutation", description=specconform.harness.mutation.__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="generate, judge and report the mutants of every target")
    go.add_argument("--target", action="append", help="only this file (repeatable), e.g. impl/markers.py")
    go.add_argument("--operator", action="append", choices=OPERATORS, help="only this operator (repeatable)")
    go.add_argument("--key", action="append", help="only the mutant with this key (repeatable)")
    go.add_argument("--exclude", action="append", help="also leave out the checks matching this glob (repeatable)")
    go.add_argument("--skip-judged", action="append", help="leave out the mutants this run folder judged")
    go.add_argument("--survivors-of", action="append", help="only the mutants that survived in this run folder")
    go.add_argument("--fraction", type=float, default=1.0, help="judge this fraction of the mutants (stratified)")
    go.add_argument("--workers", type=int, default=1)
    go.add_argument("--timeout", type=float, default=10, help="seconds per check, plus --timeout-factor × its baseline")
    go.add_argument("--timeout-factor", type=float, default=10, help="times the check's seconds on the unmutated code")
    go.add_argument("--rejudge", type=float, default=5, help="a TIMEOUT is re-judged with this many times the limit")
    go.add_argument("--trials", type=int, default=2_000, help="trials per case of a statistical check")
    go.add_argument("--cases", type=int, default=30, help="generated cases per check, at most (0: all)")
    go.add_argument("--seed", type=int, default=RunConfig.seed)
    go.add_argument("--report-dir", default="reports/mutation")
    go.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    again = sub.add_parser("report", help="re-render a run's summary.md with the current classification")
    again.add_argument("run_dirs", nargs="+", help="one run, or several over disjoint targets")
    again.add_argument("--out", help="the summary file (default: the first run's summary.md)")
    again.add_argument("--rerun", action="append", default=[], help="a run of some of its mutants (--key)")
    again.add_argument("--note", default="", help="a paragraph on the runs, under the title (e.g. why one stopped)")
    again.add_argument("--equivalent", default=str(REPO / "expectations" / "mutation-equivalent.yaml"))
    args = parser.parse_args(argv)
    if args.command == "report":
        reruns = tuple(Path(d) for d in args.rerun)
        out = Path(args.out) if args.out else None
        classified = load_classified(Path(args.equivalent))
        print(report([Path(d) for d in args.run_dirs], classified, reruns, out, args.note))
        return 0
    return run(args)
