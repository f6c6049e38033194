#!/usr/bin/env bash
# The server of scripts/judge-transformers-serve.sh (`transformers serve` on the embedded engine's tiny Qwen3 model),
# alone on 127.0.0.1:${PROOF_PORT:-8772}. The proof of harness/products/transformers/expectations-5.23.yaml starts it twice, unpatched
# and patched (specconform.harness.proof_servers): run from the repository root in the transformers environment,
#   specconform prove harness/products/transformers/expectations-5.23.yaml --engine openai --api-profile transformers-serve \
#     --base-url http://127.0.0.1:8772/v1 --model specconform/tiny-think-single
set -euo pipefail
source scripts/transformers-serve-lib.sh
cache_model
exec transformers serve --host 127.0.0.1 --port "${PROOF_PORT:-8772}" "$MODEL_NAME"
