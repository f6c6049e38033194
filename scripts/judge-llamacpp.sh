#!/usr/bin/env bash
# Judge llama.cpp's llama-server at API level on the embedded engine's tiny model (both tokenizer
# variants), offline on loopback. llama-server is built from the llama.cpp that llama-cpp-python's
# source distribution vendors (scripts/build-llama-server.sh, cached); the model is converted with
# that tree's own GGUF converter. Three runs, one report directory each under reports/engines/:
#   llamacpp-<build>-single   `</think>` one token
#   llamacpp-<build>-multi    `</think>` several tokens
#   llamacpp-<build>-draft    the single variant with speculative decoding (the model as its own
#                             draft; llama-server's draft is server-wide): the budget checks
# --verbose makes llama-server return the generated ids (__verbose.tokens, asked with return_tokens).
set -euo pipefail
{ read -r server; read -r source_tree; } < <(bash scripts/build-llama-server.sh)
port=${PORT:-8781}
cache=${SPECCONFORM_CACHE:-$HOME/.cache/specconform}/gguf
mkdir -p "$cache"
log=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; true' EXIT

start_server() {  # start_server NAME ARGS...: llama-server on $port, waits for /health
  local name=$1
  shift
  "$server" --host 127.0.0.1 --port "$port" -c 4096 -np 4 --jinja --verbose "$@" > "$log/$name.log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + ${HEALTH_TIMEOUT_S:-300}))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "llama-server ($name) exited before it was healthy; its log:" >&2
      tail -n 20 "$log/$name.log" >&2
      exit 1
    fi
    if curl -sf "http://127.0.0.1:$port/health" > /dev/null; then return; fi
    sleep 0.5
  done
  echo "llama-server ($name) did not answer /health within ${HEALTH_TIMEOUT_S:-300} s (HEALTH_TIMEOUT_S); see $log/$name.log" >&2
  exit 1
}

stop_server() {
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  pid=
}

status=0
build=
for variant in single multi draft; do
  model_variant=${variant/draft/single}
  model_dir=$(python -c "from embedded import model; print(model.build('$model_variant').path)")
  gguf=$cache/$(basename "$model_dir").gguf
  [ -f "$gguf" ] || python scripts/convert-to-gguf.py "$source_tree" "$model_dir" "$gguf" > "$log/convert-$model_variant.log" 2>&1 \
    || { echo "GGUF conversion failed; see $log/convert-$model_variant.log" >&2; exit 1; }
  checks=(--check 'api.*')
  if [ "$variant" = draft ]; then
    start_server "$variant" -m "$gguf" --model-draft "$gguf" --spec-type draft-simple
    checks=(--check 'api/budget-*' --check 'api/concurrent-*')
  else
    start_server "$variant" -m "$gguf"
  fi
  build=${build:-$(curl -s "http://127.0.0.1:$port/props" | python -c "import json, sys; print(json.load(sys.stdin)['build_info'])")}
  specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "tiny-think-$model_variant" \
    --api-profile llamacpp --engine-name "llamacpp-$build-$variant" "${checks[@]}" --expectations "expectations/llamacpp-$build.yaml" \
    --report-dir "reports/engines/llamacpp-$build-$variant" "$@" || status=$?
  stop_server
done
exit $status
