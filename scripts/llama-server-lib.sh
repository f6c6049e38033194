# Shared by judge-llamacpp.sh and prove-llamacpp.sh (sourced, not run): the GGUF of a model variant, and
# llama-server started on $port the way the judged runs start it. Needs $log (a folder for server logs).
# llama-server serves the model under the name the checks ask for (--alias), so no path reaches a report;
# --verbose makes it return the generated ids (__verbose.tokens, asked with return_tokens).
pid=

gguf_of() {  # gguf_of SOURCE_TREE VARIANT: prints the GGUF of the tiny model's VARIANT (single or multi), converted once
  local source_tree=$1 variant=$2 cache=${SPECCONFORM_CACHE:-$HOME/.cache/specconform}/gguf model_dir gguf
  mkdir -p "$cache"
  model_dir=$(python -c "from specconform.embedded import model; print(model.build('$variant').path)")
  gguf=$cache/$(basename "$model_dir").gguf
  [ -f "$gguf" ] || python scripts/convert-to-gguf.py "$source_tree" "$model_dir" "$gguf" > "$log/convert-$variant.log" 2>&1 \
    || { echo "GGUF conversion failed; see $log/convert-$variant.log" >&2; return 1; }
  echo "$gguf"
}

start_server() {  # start_server SERVER NAME VARIANT ARGS...: llama-server on $port serving tiny-think-VARIANT, waits for /health
  local server=$1 name=$2 variant=$3
  shift 3
  if curl -s -o /dev/null "http://127.0.0.1:$port/health"; then
    echo "port $port already answers (another server); set PORT to a free port" >&2
    return 1
  fi
  "$server" --host 127.0.0.1 --port "$port" -c 4096 -np 4 --jinja --verbose --alias "tiny-think-$variant" "$@" \
    > "$log/$name.log" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + ${HEALTH_TIMEOUT_S:-300}))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2> /dev/null; then
      echo "llama-server ($name) exited before it was healthy; its log:" >&2
      tail -n 20 "$log/$name.log" >&2
      return 1
    fi
    if curl -sf "http://127.0.0.1:$port/health" > /dev/null; then return; fi
    sleep 0.5
  done
  echo "llama-server ($name) did not answer /health within ${HEALTH_TIMEOUT_S:-300} s (HEALTH_TIMEOUT_S); see $log/$name.log" >&2
  return 1
}

stop_server() {
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  pid=
}

server_args() {  # server_args GGUF RUN: llama-server's model arguments for a run (draft: the model as its own draft)
  if [ "$2" = draft ]; then
    echo -m "$1" --model-draft "$1" --spec-type draft-simple
  else
    echo -m "$1"
  fi
}
