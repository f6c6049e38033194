#!/usr/bin/env bash
# Judge vLLM 0.33 at kernel level on a GPU without a package registry: Model Runner V2 (the default
# runner: specconform.harness.adapters.vllm_mrv2) and the legacy runner (specconform.harness.adapters.vllm), both on CUDA; RUNNERS=mrv2-block
# judges Model Runner V2's block verification (specconform.harness.adapters.vllm_mrv2:make_block).
#   bash scripts/stage-peers.sh DIR                          (where pip reaches a registry)
#   PEERS_DIR=DIR OUT=results bash scripts/judge-vllm-gpu.sh  (on the GPU machine, from the repository root)
# The statistical checks are sized by the declared deviation (default 0.03 at power 0.9, at most 1,000,000 trials per
# case; pass --deviation/--trials to change it). Writes $OUT/gpu.txt, the two runs' logs and $OUT/vllm-gpu-reports.tar.gz (reports/engines/vllm-0.33-*/).
set -uo pipefail
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${PEERS_DIR:?}"/wheels/*.whl \
  && tar -xzf "$PEERS_DIR"/vllm-*-python.tar.gz -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
# FlashInfer (vLLM's fused top-k/top-p sampler) is not staged; the cases use neither top-k nor top-p.
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
out="${OUT:-reports/gpu}"
mkdir -p "$out" reports/engines
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
status=0
for runner in ${RUNNERS:-mrv2 v1}; do
  case "$runner" in
    v1) engine=specconform.harness.adapters.vllm:make ;;
    mrv2) engine=specconform.harness.adapters.vllm_mrv2:make ;;
    mrv2-block) engine=specconform.harness.adapters.vllm_mrv2:make_block ;;  # rejection_sample_method=block
    *) echo "unknown runner $runner (v1, mrv2 or mrv2-block)" >&2; exit 2 ;;
  esac
  expectations="harness/products/vllm-$runner/expectations-0.33.yaml"
  known=(); [ -f "$expectations" ] && known=(--expectations "$expectations")
  timeout "${RUN_LIMIT_S:-280}" python3 -m specconform.harness.cli run --engine "$engine" "${known[@]}" \
    --report-dir "reports/engines/vllm-0.33-$runner" --exclude "api.*" "$@" \
    > "$out/vllm-0.33-$runner.log" 2>&1
  echo "vllm-0.33-$runner exit $?" | tee -a "$out/gpu.txt"
  tail -5 "$out/vllm-0.33-$runner.log"
done
tar -czf "$out/vllm-gpu-reports.tar.gz" reports/engines/vllm-0.33-*
exit $status
