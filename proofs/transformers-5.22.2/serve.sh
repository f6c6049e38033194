#!/usr/bin/env bash
# The server of reports/engines/transformers-5.22.2/ (`transformers serve` 5.22.2 on the embedded engine's tiny Qwen3
# model), alone on 127.0.0.1:${PROOF_PORT:-8772}. 5.22.2 lists only the Hugging Face cache's repositories at
# /v1/models, so the model is served by the repository name specconform/tiny-think-single from a cache folder that
# holds its files. The proof of harness/products/transformers/expectations-5.22.yaml starts it twice, unpatched and
# patched (specconform.harness.proof_servers): run from the repository root where transformers 5.22.2 is installed,
#   specconform prove harness/products/transformers/expectations-5.22.yaml --engine openai --api-profile transformers-serve \
#     --base-url http://127.0.0.1:8772/v1 --model specconform/tiny-think-single
set -euo pipefail
model_dir=$(python -c "from specconform.embedded import model; print(model.build('single').path)")
export HF_HUB_CACHE="${HF_HUB_CACHE:-$(mktemp -d)}" HF_HUB_OFFLINE=1
repo="$HF_HUB_CACHE/models--specconform--tiny-think-single"
revision=0000000000000000000000000000000000000000
mkdir -p "$repo/refs" "$repo/blobs" "$repo/snapshots/$revision"
cp -r "$model_dir/." "$repo/snapshots/$revision/"
printf '%s' "$revision" > "$repo/refs/main"
exec transformers serve --host 127.0.0.1 --port "${PROOF_PORT:-8772}" specconform/tiny-think-single
