#!/usr/bin/env bash
# Judge lmdeploy 0.18.0's Triton verifier on a GPU without a package registry (specconform.harness.adapters.lmdeploy:make_triton):
# Triton compiles its kernels there, so the statistical checks that read NOT_RUN under the interpreter are certified.
#   bash scripts/stage-peers.sh DIR                             (where pip reaches a registry)
#   PEERS_DIR=DIR OUT=results bash scripts/judge-lmdeploy-gpu.sh   (on the GPU machine, repository root)
# Writes $OUT/lmdeploy-0.18.0-triton.log and reports/engines/lmdeploy-0.18.0-triton/<run>/.
set -uo pipefail
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${PEERS_DIR:?}"/wheels/*.whl \
  && tar -xJf "$PEERS_DIR"/lmdeploy-0.18.0-python.tar.xz -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
timeout "${RUN_LIMIT_S:-400}" python3 -m specconform.harness.cli run --engine specconform.harness.adapters.lmdeploy:make_triton \
  --expectations harness/products/lmdeploy-triton/expectations-0.18.0.yaml --report-dir reports/engines/lmdeploy-0.18.0-triton --exclude "api.*" "$@" \
  > "$out/lmdeploy-0.18.0-triton.log" 2>&1
status=$?
echo "lmdeploy-0.18.0-triton exit $status" | tee -a "$out/gpu.txt"
tail -5 "$out/lmdeploy-0.18.0-triton.log"
exit $status
