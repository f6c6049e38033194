#!/usr/bin/env bash
# The whole recipe, for CI systems other than GitHub Actions (the composite action in
# .github/actions/specconform runs the same scripts as separate steps). Every step runs even when an
# earlier one failed, so the verdict sees them all; the exit status is the verdict's.
#
#   INSTALL=0           skip install.sh (specconform is installed already)
#   FETCH_BASELINE=1    fetch the baseline from GitHub (fetch-baseline.sh); elsewhere put the last good
#                       run's results.jsonl (and perf/bench-*.json) into BASELINE_DIR yourself
#   BENCH=1             run the benchmarks (CUDA)
# and the variables of each script (install.sh, conformance.sh, gate.sh, bench.sh).
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
if [ "${INSTALL:-1}" != 0 ]; then bash "$here/install.sh" || exit; fi
if [ "${FETCH_BASELINE:-0}" = 1 ]; then bash "$here/fetch-baseline.sh"; fi
bash "$here/conformance.sh"
bash "$here/gate.sh"
if [ "${BENCH:-0}" = 1 ]; then bash "$here/bench.sh"; fi
bash "$here/verdict.sh"
