#!/usr/bin/env bash
# One call on a GPU machine: the tests marked gpu, then the benchmarks; a short table last.
# Runs from the repository root without installing (PYTHONPATH); results go to $OUT or reports/gpu.
# PEERS_DIR: a folder made by scripts/stage-peers.sh; its peers are unpacked and timed beside ours.
set -uo pipefail
if [ -n "${PEERS_DIR:-}" ]; then
  site=$(mktemp -d)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$PEERS_DIR"/wheels/*.whl \
    && tar -xzf "$PEERS_DIR"/vllm-*-python.tar.gz -C "$site" \
    && tar -xJf "$PEERS_DIR"/flashinfer-*-sampling.tar.xz -C "$site" \
    || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
# The staged FlashInfer is its sampling module alone: vLLM's own sampler, which would otherwise import FlashInfer's
# attention backend for its top-k/top-p path (vllm/v1/sample/ops/topk_topp_sampler.py), keeps to its native path.
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python3 -m pytest -q -m gpu -p no:cacheprovider -s tests 2>&1 | tee "$out/gpu-tests.log" | tail -25
tests=${PIPESTATUS[0]}
python3 -m specconform.harness.bench "$out" 2>&1 | tee "$out/bench.log" | tail -60
bench=${PIPESTATUS[0]}
echo "gpu tests exit $tests; bench exit $bench"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
