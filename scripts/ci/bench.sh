#!/usr/bin/env bash
# The benchmarks (CUDA only): `specconform bench` (the side-by-side tables, to $REPORT_DIR/perf/), then
# `specconform bench-diff` against the baseline's bench run: a median is a regression only when it grew
# beyond the spread of the repeats both runs measured (and beyond PERF_MIN_CHANGE).
#
#   PERF_MIN_CHANGE  the smallest relative slowdown called a regression, whatever the spread (default: 0.05)
#   BASELINE_DIR     as for gate.sh; its perf/ folder holds the baseline's bench-*.json
#   REPORT_DIR       as for conformance.sh (default: specconform-reports)
#   PYTHON           the interpreter specconform is installed in (default: python3)
#
# This run's bench JSON is copied to $REPORT_DIR/baseline-next/perf/ for later runs; the comparison goes to
# $REPORT_DIR/ci/bench.md. Exits non-zero when the bench failed or one of specconform's kernels regressed;
# with no baseline yet it says so and passes.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step bench
BASELINE_DIR=${BASELINE_DIR:-$REPORT_DIR/baseline}
PERF_MIN_CHANGE=${PERF_MIN_CHANGE:-0.05}
perf_dir=$(mkdir -p "$REPORT_DIR/perf" && cd "$REPORT_DIR/perf" && pwd)
next_dir=$(mkdir -p "$REPORT_DIR/baseline-next/perf" && cd "$REPORT_DIR/baseline-next/perf" && pwd)

if ! "$PYTHON" -m specconform.harness.cli bench --out "$perf_dir"; then
  say "specconform bench failed; see the job log" >&2
  exit 1
fi
new=$(find "$perf_dir" -maxdepth 1 -name 'bench-*.json' | sort | tail -n 1)
cp "$new" "$next_dir/"
set +e
"$PYTHON" -m specconform.harness.cli bench-diff --min-change "$PERF_MIN_CHANGE" "$BASELINE_DIR/perf" "$new" >"$STATE_DIR/bench.md"
status=$?
set -e
cat "$STATE_DIR/bench.md"
headline=$(head -n 1 "$STATE_DIR/bench.md")
case $headline in
  "no baseline yet"*) say "No perf baseline yet: this bench run was compared with nothing; tables in $perf_dir" ;;
  "# specconform bench-diff: "*) say "${headline#\# specconform bench-diff: } beyond the measured spread; tables in $perf_dir" ;;
  *) say "specconform bench-diff failed (exit $status); see the job log" ;;
esac
exit "$status"
