#!/usr/bin/env bash
# The baseline gate: compare this run with the baseline's results (`specconform diff`).
#
#   BASELINE_DIR  a directory holding the baseline's results.jsonl (default: $REPORT_DIR/baseline)
#   REPORT_DIR    as for conformance.sh (default: specconform-reports); the run compared is the one
#                 conformance.sh recorded in $REPORT_DIR/ci/conformance.run-dir
#   PYTHON        the interpreter specconform is installed in (default: python3)
#
# Exits 1 when the run has failures the baseline did not have, 0 when it has none, and 0 with a
# plain "no baseline" line when there is nothing to compare with. The diff goes to $REPORT_DIR/ci/gate.md.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step gate
BASELINE_DIR=${BASELINE_DIR:-$REPORT_DIR/baseline}

if [ ! -f "$STATE_DIR/conformance.run-dir" ]; then
  say "no conformance run recorded in $STATE_DIR/conformance.run-dir (run conformance.sh first)" >&2
  exit 2
fi
run_dir=$(cat "$STATE_DIR/conformance.run-dir")
if [ ! -f "$BASELINE_DIR/results.jsonl" ]; then
  why="no $BASELINE_DIR/results.jsonl"
  [ ! -f "$STATE_DIR/fetch-baseline.line" ] || why=$(cat "$STATE_DIR/fetch-baseline.line")
  say "No baseline yet ($why): this run was compared with nothing; a later run compares with it once it" \
    "succeeds on the default branch."
  exit 0
fi
against="the baseline in $BASELINE_DIR"
[ ! -f "$BASELINE_DIR/SOURCE" ] || against=$(cat "$BASELINE_DIR/SOURCE")
set +e
"$PYTHON" -m specconform.harness.cli diff "$BASELINE_DIR/results.jsonl" "$run_dir" >"$STATE_DIR/gate.md"
status=$?
set -e
cat "$STATE_DIR/gate.md"
headline=$(head -n 1 "$STATE_DIR/gate.md")
say "${headline#\# specconform diff: } against $against"
exit "$status"
