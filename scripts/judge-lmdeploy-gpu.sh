#!/usr/bin/env bash
# Judge lmdeploy's Triton verifier on a GPU without a package registry (specconform.harness.adapters.lmdeploy:make_triton):
# Triton compiles its kernels there, so the statistical checks that read NOT_RUN under the interpreter are certified.
#   bash scripts/stage-peers.sh DIR                             (where pip reaches a registry)
#   PEERS_DIR=DIR OUT=results bash scripts/judge-lmdeploy-gpu.sh   (on the GPU machine, repository root)
# Writes $OUT/lmdeploy-0.18.0-triton.log and reports/engines/lmdeploy-0.18.0-triton/<run>/. Another release and factory:
# LMDEPLOY_VERSION=0.16.0 FACTORY=make (0.16.0's one verifier is Triton kernels: reports/engines/lmdeploy-0.16.0/).
set -uo pipefail
version="${LMDEPLOY_VERSION:-0.18.0}"
factory="${FACTORY:-make_triton}"
case "$factory" in
  make) name="lmdeploy-$version" product=lmdeploy ;;
  make_triton) name="lmdeploy-$version-triton" product=lmdeploy-triton ;;
  *) echo "FACTORY is $factory: make or make_triton" >&2; exit 2 ;;
esac
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${PEERS_DIR:?}"/wheels/*.whl \
  && tar -xJf "$PEERS_DIR/lmdeploy-$version-python.tar.xz" -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
timeout "${RUN_LIMIT_S:-400}" python3 -m specconform.harness.cli run --engine "specconform.harness.adapters.lmdeploy:$factory" \
  --expectations "harness/products/$product/expectations-$version.yaml" --report-dir "reports/engines/$name" --exclude "api.*" "$@" \
  > "$out/$name.log" 2>&1
status=$?
echo "$name exit $status" | tee -a "$out/gpu.txt"
tail -5 "$out/$name.log"
exit $status
