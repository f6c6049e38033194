#!/usr/bin/env bash
# The n-gram speculative server of scripts/judge-vllm-api.sh (its "spec" role: tiny-think-single-spec, K = 3),
# alone on 127.0.0.1:${PROOF_PORT:-8795}. The proofs of harness/products/vllm-cpu-api/expectations-0.32.yaml start it twice,
# unpatched and patched (specconform.harness.proof_servers): run from the repository root in the vllm-api environment,
#   specconform prove harness/products/vllm-cpu-api/expectations-0.32.yaml --engine openai --api-profile vllm \
#     --base-url http://127.0.0.1:8795/v1 --model tiny-think-single-spec --spec-model tiny-think-single-spec
set -euo pipefail
model_dir=$(python -c "from specconform.embedded import model; print(model.build('single', head_dim=64).path)")
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=1
exec python -m vllm.entrypoints.openai.api_server --host 127.0.0.1 --port "${PROOF_PORT:-8795}" --model "$model_dir" \
  --dtype float32 --max-model-len 512 --seed 0 --served-model-name tiny-think-single-spec \
  --reasoning-parser qwen3 --reasoning-config '{"reasoning_start_str":"<think>","reasoning_end_str":"</think>"}' \
  --speculative-config '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'
