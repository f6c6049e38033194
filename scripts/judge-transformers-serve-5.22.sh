#!/usr/bin/env bash
# Judge `transformers serve` 5.22.2 at API level on the embedded engine's tiny model, offline on loopback, into
# reports/engines/transformers-5.22.2/, then prove its finding (tox -e transformers-5.22). 5.22.2 lists only the
# Hugging Face cache's repositories at /v1/models, so the model is served by a repository name from a cache folder
# (proofs/transformers-5.22.2/serve.sh, the proof's own server), not by its path as
# scripts/judge-transformers-serve.sh serves 5.23's.
set -euo pipefail
port=${PORT:-8771}
model=specconform/tiny-think-single
log=$(mktemp)
PROOF_PORT=$port bash proofs/transformers-5.22.2/serve.sh > "$log" 2>&1 &
server=$!
trap 'kill $server 2> /dev/null || true; rm -f "$log"' EXIT
deadline=$((SECONDS + ${HEALTH_TIMEOUT_S:-300}))  # importing transformers takes minutes on a loaded two-core machine
until curl -sf "http://127.0.0.1:$port/health" > /dev/null; do
  if ! kill -0 "$server" 2> /dev/null || [ "$SECONDS" -ge "$deadline" ]; then
    echo "transformers serve did not answer /health on port $port; its log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
  sleep 0.5
done
specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "$model" \
  --engine-name transformers-serve-5.22.2 --api-profile transformers-serve --check 'api.*' \
  --expectations harness/products/transformers/expectations-5.22.yaml \
  --report-dir reports/engines/transformers-5.22.2 "$@"
kill "$server" && wait "$server" 2> /dev/null || true
# the proof starts the same server twice itself, on the port it is given
PROOF_PORT=$port specconform prove harness/products/transformers/expectations-5.22.yaml --engine openai \
  --api-profile transformers-serve --base-url "http://127.0.0.1:$port/v1" --model "$model"
