#!/usr/bin/env bash
# The benchmarks (CUDA only): `specconform bench` (the side-by-side tables, to $REPORT_DIR/perf/) and
# specconform's pytest-benchmark suite, whose medians are compared with the baseline's.
#
#   PERF_FAIL        pytest-benchmark's --benchmark-compare-fail expression (default: median:15%)
#   BASELINE_DIR     as for gate.sh; its pytest-benchmark/ folder holds the baseline's saved runs
#   REPORT_DIR       as for conformance.sh (default: specconform-reports)
#   PYTHON           the interpreter specconform is installed in, with its `test` extra (default: python3)
#   SPECCONFORM_SRC  the specconform checkout whose tests/bench is run (default: the one this script is in)
#
# This run's medians are saved to $REPORT_DIR/baseline-next/pytest-benchmark/ (with the baseline's
# history) for later runs. Exits non-zero when a benchmark fails or a median regressed beyond PERF_FAIL.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step bench
SPECCONFORM_SRC=${SPECCONFORM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BASELINE_DIR=${BASELINE_DIR:-$REPORT_DIR/baseline}
PERF_FAIL=${PERF_FAIL:-median:15%}
storage=$(mkdir -p "$REPORT_DIR/baseline-next/pytest-benchmark" && cd "$REPORT_DIR/baseline-next/pytest-benchmark" && pwd)
perf_dir=$(mkdir -p "$REPORT_DIR/perf" && cd "$REPORT_DIR/perf" && pwd)

if ! "$PYTHON" -m harness.cli bench --out "$perf_dir"; then
  say "specconform bench failed; see the job log" >&2
  exit 1
fi
# pytest-benchmark refuses --benchmark-compare-fail when it finds nothing to compare with
compare=()
against="no perf baseline yet: medians saved, nothing compared"
if [ -d "$BASELINE_DIR/pytest-benchmark" ] && [ -n "$(ls -A "$BASELINE_DIR/pytest-benchmark")" ]; then
  cp -R "$BASELINE_DIR/pytest-benchmark/." "$storage/"
  compare=(--benchmark-compare --benchmark-compare-fail="$PERF_FAIL")
  against="medians compared with the baseline's (fail on $PERF_FAIL)"
fi
set +e
(cd "$SPECCONFORM_SRC" && "$PYTHON" -m pytest tests/bench -m gpu -p no:cacheprovider --benchmark-autosave \
  --benchmark-storage="file://$storage" "${compare[@]}")
status=$?
set -e
if [ "$status" -eq 0 ]; then say "benchmarks passed; $against; tables in $perf_dir"; else
  say "benchmarks failed (pytest exit $status); $against; see the job log"; fi
exit "$status"
