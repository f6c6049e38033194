#!/usr/bin/env bash
# Judge `transformers serve` (transformers >= 5.23, needs accelerate) at API level on the embedded
# engine's tiny model, offline on loopback; reports go to reports/engines/transformers-<version>/.
set -euo pipefail
source scripts/transformers-serve-lib.sh
cache_model
model=$MODEL_NAME
version=$(python -c "import transformers; print(transformers.__version__)")
port=${PORT:-8771}
transformers serve --host 127.0.0.1 --port "$port" "$model" > /tmp/transformers-serve.log 2>&1 &
server=$!
trap 'kill $server 2> /dev/null' EXIT
healthy=0
health_timeout_s=${HEALTH_TIMEOUT_S:-300}  # importing transformers takes minutes on a loaded two-core machine
deadline=$((SECONDS + health_timeout_s))
while [ "$SECONDS" -lt "$deadline" ]; do
  if ! kill -0 "$server" 2> /dev/null; then
    echo "transformers serve exited before it was healthy; its log:" >&2
    tail -n 20 /tmp/transformers-serve.log >&2
    exit 1
  fi
  if curl -sf "http://127.0.0.1:$port/health" > /dev/null; then healthy=1; break; fi
  sleep 0.5
done
if [ "$healthy" != 1 ]; then
  echo "transformers serve did not answer /health on port $port within $health_timeout_s s (HEALTH_TIMEOUT_S); see /tmp/transformers-serve.log" >&2
  exit 1
fi
specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "$model" \
  --engine-name "transformers-serve-$version" --api-profile transformers-serve --check 'api.*' --expectations harness/products/transformers/expectations-5.23.yaml \
  --report-dir "reports/engines/transformers-$version" "$@"
