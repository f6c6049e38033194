#!/usr/bin/env bash
# The verdict: one Markdown report of the steps that ran (verdict first, then the baseline and bench diffs, then
# the run's summary.md), appended to $GITHUB_STEP_SUMMARY when set and written to
# $REPORT_DIR/ci/verdict.md. Exits 1 unless the conformance run ran and every step that ran passed.
#
#   REPORT_DIR  as for conformance.sh (default: specconform-reports)
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$STATE_DIR"
steps=(install fetch-baseline conformance gate bench)
verdict=PASS
lines=()
for step in "${steps[@]}"; do
  [ -f "$STATE_DIR/$step.status" ] || continue
  status=$(cat "$STATE_DIR/$step.status")
  line=""
  [ ! -f "$STATE_DIR/$step.line" ] || line=$(tail -n 1 "$STATE_DIR/$step.line")
  if [ "$status" = 0 ]; then mark=passed; else mark="**failed** (exit $status)"; verdict=FAIL; fi
  lines+=("- $step: $mark${line:+: $line}")
done
if [ ! -f "$STATE_DIR/conformance.status" ]; then
  verdict=FAIL
  lines+=("- conformance: **did not run**")
fi
{
  echo "# specconform: $verdict"
  echo
  printf '%s\n' "${lines[@]}"
  echo
  for details in gate bench; do
    if [ -f "$STATE_DIR/$details.md" ]; then
      sed 's/^#/##/' "$STATE_DIR/$details.md"
      echo
    fi
  done
  if [ -f "$STATE_DIR/conformance.run-dir" ] && [ -f "$(cat "$STATE_DIR/conformance.run-dir")/summary.md" ]; then
    sed 's/^#/##/' "$(cat "$STATE_DIR/conformance.run-dir")/summary.md"
  fi
} >"$STATE_DIR/verdict.md"
cat "$STATE_DIR/verdict.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$STATE_DIR/verdict.md" >>"$GITHUB_STEP_SUMMARY"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "verdict=$verdict" >>"$GITHUB_OUTPUT"; fi
[ "$verdict" = PASS ]
