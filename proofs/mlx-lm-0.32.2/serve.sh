#!/usr/bin/env bash
# The two servers of scripts/judge-mlx.sh, alone: the plain one on 127.0.0.1:${PROOF_PORT:-8797} and the one with the
# model as its own draft (--num-draft-tokens 3) on PROOF_PORT+1. The proofs of
# harness/products/mlx-lm/expectations-0.32.2.yaml start them twice, unpatched and patched (specconform.harness.proof_servers):
# run from the repository root with the mlx-lm environment's python first on PATH and MODEL set to the model folder,
#   specconform prove harness/products/mlx-lm/expectations-0.32.2.yaml --engine openai --api-profile mlx-lm \
#     --base-url http://127.0.0.1:8797/v1 --model "$MODEL" --spec-base-url http://127.0.0.1:8798/v1 \
#     --spec-model "$MODEL-spec"
set -euo pipefail
model=${MODEL:-$(python -c "from specconform.embedded import model; print(model.build('single').path)")}
port=${PROOF_PORT:-8797}
mkdir -p "$model-spec"
ln -sf "$model"/* "$model-spec"/
export HF_HUB_OFFLINE=1
# the plain server runs in the script's process group, so stopping the group stops both
python -m mlx_lm.server --host 127.0.0.1 --port "$port" --model "$model" &
exec python -m mlx_lm.server --host 127.0.0.1 --port "$((port + 1))" --model "$model-spec" --draft-model "$model" \
  --num-draft-tokens 3
