#!/usr/bin/env bash
# Judge llama.cpp's llama-server at API level on the embedded engine's tiny model (both tokenizer
# variants), offline on loopback. llama-server is built from the llama.cpp that llama-cpp-python's
# source distribution vendors (scripts/build-llama-server.sh, cached); the model is converted with
# that tree's own GGUF converter. Three runs, one report directory each under reports/engines/:
#   llamacpp-<build>-single   `</think>` one token
#   llamacpp-<build>-multi    `</think>` several tokens
#   llamacpp-<build>-draft    the single variant with speculative decoding (the model as its own
#                             draft; llama-server's draft is server-wide): the budget checks
# The servers are started as scripts/llama-server-lib.sh says.
set -euo pipefail
{ read -r server; read -r source_tree; } < <(bash scripts/build-llama-server.sh)
port=${PORT:-8781}
log=$(mktemp -d)
source scripts/llama-server-lib.sh
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; true' EXIT

status=0
build=
for variant in single multi draft; do
  model_variant=${variant/draft/single}
  gguf=$(gguf_of "$source_tree" "$model_variant")
  checks=(--check 'api.*')
  [ "$variant" = draft ] && checks=(--check 'api/budget-*' --check 'api/concurrent-*')
  # shellcheck disable=SC2046  # server_args prints separate words
  start_server "$server" "$variant" "$model_variant" $(server_args "$gguf" "$variant")
  build=${build:-$(curl -s "http://127.0.0.1:$port/props" | python -c "import json, sys; print(json.load(sys.stdin)['build_info'])")}
  specconform run --engine openai --base-url "http://127.0.0.1:$port/v1" --model "tiny-think-$model_variant" \
    --api-profile llamacpp --engine-name "llamacpp-$build-$variant" "${checks[@]}" --expectations "harness/products/llamacpp/expectations-$build.yaml" \
    --report-dir "reports/engines/llamacpp-$build-$variant" "$@" || status=$?
  stop_server
done
exit $status
