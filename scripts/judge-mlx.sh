#!/usr/bin/env bash
# Judge MLX-LM's `mlx_lm.server` (mlx-lm 0.32.2 on mlx-cpu) at API level on the embedded engine's tiny
# model, offline on loopback; reports go to reports/engines/mlx-lm-<version>/. MLX-LM loads the model's
# Hugging Face folder as it is. Its draft model is server-wide (--draft-model), so two servers run: the
# plain one on PORT and one with the model as its own draft on PORT+1 (the --spec-model's server). The
# adapter routes requests by model name, and the server names its model by the folder's resolved path, so
# the spec server loads a folder beside the model (MODEL-spec) that links to its files.
set -euo pipefail
# MODEL: the model folder when built elsewhere (building it needs torch and transformers)
model=${MODEL:-$(python -c "from specconform.embedded import model; print(model.build('single').path)")}
version=$(python -c "from importlib.metadata import version; print(version('mlx-lm'))")
port=${PORT:-8791}
spec_port=$((port + 1))
spec_model="$model-spec"
mkdir -p "$spec_model"
ln -sf "$model"/* "$spec_model"/
num_draft_tokens=${NUM_DRAFT_TOKENS:-3}
log=$(mktemp -d)
export HF_HUB_OFFLINE=1
python -m mlx_lm.server --host 127.0.0.1 --port "$port" --model "$model" > "$log/plain.log" 2>&1 &
plain=$!
python -m mlx_lm.server --host 127.0.0.1 --port "$spec_port" --model "$spec_model" --draft-model "$model" \
  --num-draft-tokens "$num_draft_tokens" > "$log/spec.log" 2>&1 &
spec=$!
trap 'kill $plain $spec 2> /dev/null; true' EXIT
health_timeout_s=${HEALTH_TIMEOUT_S:-300}
for server in "$plain:$port:plain" "$spec:$spec_port:spec"; do
  IFS=: read -r pid server_port name <<< "$server"
  healthy=0
  deadline=$((SECONDS + health_timeout_s))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "mlx_lm.server ($name) exited before it was healthy; its log:" >&2
      tail -n 20 "$log/$name.log" >&2
      exit 1
    fi
    if curl -sf "http://127.0.0.1:$server_port/health" > /dev/null; then healthy=1; break; fi
    sleep 0.5
  done
  if [ "$healthy" != 1 ]; then
    echo "mlx_lm.server ($name) did not answer /health on port $server_port within $health_timeout_s s (HEALTH_TIMEOUT_S); see $log/$name.log" >&2
    exit 1
  fi
done
specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "$model" \
  --spec-base-url "http://127.0.0.1:$spec_port/v1" --spec-model "$spec_model" \
  --engine-name "mlx-lm-$version" --api-profile mlx-lm --check 'api/*' \
  --expectations "harness/products/mlx-lm/expectations-$version.yaml" \
  --report-dir "reports/engines/mlx-lm-$version" "$@"
