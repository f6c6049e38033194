#!/usr/bin/env bash
# Run `specconform run` against an engine and keep what the verdict needs.
#
#   ENGINE        engine specs, space-separated: module:factory, openai, reference, oracle, ...
#                 (default: those [tool.specconform] of ./pyproject.toml names, else reference on DEVICE)
#   BASE_URL MODEL API_PROFILE SPEC_MODEL SPEC_BASE_URL PLAIN_MODEL PLAIN_BASE_URL ENGINE_NAME
#                 with ENGINE=openai: the servers' base URLs, models and API profile (`specconform run --help`)
#   PROFILE       a built-in profile name or a YAML file (default: the engine's own)
#   EXPECTATIONS  a YAML file of known failures
#   DEVICE        cuda (default: fails unless torch sees a CUDA device) or cpu
#   TRIALS        trials per case in statistical checks (default: specconform's)
#   CHECKS        check globs, space-separated (default: every check)
#   ARGS          further `specconform run` options, split as the shell splits words (nothing in them runs)
#   REPORT_DIR    where everything goes (default: specconform-reports)
#   PYTHON        the interpreter specconform is installed in (default: python3)
#
# Writes the run to $REPORT_DIR/runs/<time>/, its results to $REPORT_DIR/baseline-next/ (what a later
# run compares with) and its status, summary line and run directory to $REPORT_DIR/ci/. Exits with
# `specconform run`'s status: 0 when nothing failed that the expectations do not cover.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step conformance
DEVICE=${DEVICE:-cuda}
mkdir -p "$REPORT_DIR/runs" "$REPORT_DIR/baseline-next"

case $DEVICE in
  cuda)
    if ! "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
      say "DEVICE=cuda but the torch of $PYTHON sees no CUDA device (DEVICE=cpu judges on the CPU)" >&2
      exit 2
    fi ;;
  cpu) export TRITON_INTERPRET=1 ;;  # Triton kernels run on CPU tensors only in the interpreter
  *) say "DEVICE must be cuda or cpu, got '$DEVICE'" >&2; exit 2 ;;
esac

# without ENGINE, the engines of [tool.specconform] in pyproject.toml, else the reference on DEVICE
if [ -z "${ENGINE:-}" ] && ! "$PYTHON" -c 'import sys; from specconform.harness import cli; sys.exit(cli.parse(["run"]).engine is None)' \
  2>/dev/null; then
  ENGINE=reference:$DEVICE
fi
# lists are split on spaces and newlines (`read` returns 1 at the end of its input)
read -r -d '' -a engines <<<"${ENGINE:-}" || true
args=()
for engine in "${engines[@]}"; do args+=(--engine "$engine"); done
read -r -d '' -a checks <<<"${CHECKS:-}" || true
for check in "${checks[@]}"; do args+=(--check "$check"); done
for option in BASE_URL MODEL API_PROFILE SPEC_MODEL SPEC_BASE_URL PLAIN_MODEL PLAIN_BASE_URL ENGINE_NAME PROFILE \
  EXPECTATIONS TRIALS; do
  value=${!option:-}
  if [ -n "$value" ]; then
    flag=${option,,}
    args+=("--${flag//_/-}" "$value")
  fi
done

if [ -n "${ARGS:-}" ]; then  # split by Python's shlex, NUL-separated: quotes work and nothing is evaluated
  words=$STATE_DIR/conformance.args
  if ! "$PYTHON" -c 'import shlex, sys; sys.stdout.write("".join(w + "\0" for w in shlex.split(sys.argv[1])))' \
    "$ARGS" >"$words"; then
    say "ARGS cannot be split into words as a shell would: $ARGS" >&2
    exit 2
  fi
  mapfile -d '' -t extra <"$words"
  args+=("${extra[@]}")
fi

before=$(ls "$REPORT_DIR/runs")
set +e
"$PYTHON" -m specconform.harness.cli run "${args[@]}" --report-dir "$REPORT_DIR/runs" | tee "$STATE_DIR/conformance.line"
status=${PIPESTATUS[0]}
set -e
run_dir=$(comm -13 <(echo "$before") <(ls "$REPORT_DIR/runs") | tail -n 1)
if [ -z "$run_dir" ]; then
  say "specconform run wrote no run directory under $REPORT_DIR/runs (exit $status)" >&2
  exit "$status"
fi
run_dir=$REPORT_DIR/runs/$run_dir
echo "$run_dir" >"$STATE_DIR/conformance.run-dir"
if [ -f "$run_dir/results.jsonl" ]; then cp "$run_dir/results.jsonl" "$REPORT_DIR/baseline-next/"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "run-dir=$run_dir" >>"$GITHUB_OUTPUT"; fi
exit "$status"
