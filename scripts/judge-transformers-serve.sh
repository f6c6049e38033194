#!/usr/bin/env bash
# Judge `transformers serve` (transformers >= 5.23, needs accelerate) at API level on the embedded
# engine's tiny model, offline on loopback; reports go to reports/engines/transformers-<version>/.
set -euo pipefail
model=$(python -c "from harness.server import model; print(model.build('single').path)")
version=$(python -c "import transformers; print(transformers.__version__)")
port=${PORT:-8771}
HF_HUB_OFFLINE=1 transformers serve --host 127.0.0.1 --port "$port" "$model" > /tmp/transformers-serve.log 2>&1 &
server=$!
trap 'kill $server' EXIT
for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/health" > /dev/null && break; sleep 0.5; done
specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "$model" \
  --api-profile transformers-serve --check 'api.*' --report-dir "reports/engines/transformers-$version" "$@"
