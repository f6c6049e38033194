#!/usr/bin/env bash
# Judge FlashInfer 0.7.2's chain speculative sampling at kernel level on a GPU without a package registry
# (specconform.harness.adapters.flashinfer_chain; FlashInfer JIT-compiles its sampling module on first use).
#   bash scripts/stage-peers.sh DIR                                (where pip reaches a registry)
#   PEERS_DIR=DIR OUT=results bash scripts/judge-flashinfer-gpu.sh  (on the GPU machine, repository root)
# Writes $OUT/flashinfer-0.7.2.log and reports/engines/flashinfer-0.7.2/<run>/.
set -uo pipefail
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${PEERS_DIR:?}"/wheels/*.whl \
  && tar -xJf "$PEERS_DIR"/flashinfer-*-sampling.tar.xz -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
timeout "${RUN_LIMIT_S:-400}" python3 -m specconform.harness.cli run --engine specconform.harness.adapters.flashinfer_chain:make \
  --expectations harness/products/flashinfer/expectations-0.7.2.yaml --report-dir reports/engines/flashinfer-0.7.2 --exclude "api.*" "$@" \
  > "$out/flashinfer-0.7.2.log" 2>&1
status=$?
echo "flashinfer-0.7.2 exit $status" | tee -a "$out/gpu.txt"
tail -5 "$out/flashinfer-0.7.2.log"
exit $status
