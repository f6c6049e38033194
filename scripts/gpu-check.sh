#!/usr/bin/env bash
# One call on a GPU machine: the tests marked gpu, then the benchmarks; a short table last.
# Runs from the repository root without installing (PYTHONPATH); results go to $OUT or reports/gpu.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider -s tests 2>&1 | tee "$out/gpu-tests.log" | tail -25
tests=${PIPESTATUS[0]}
python3 -m harness.bench "$out" 2>&1 | tee "$out/bench.log" | tail -40
bench=${PIPESTATUS[0]}
echo "gpu tests exit $tests; bench exit $bench"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
