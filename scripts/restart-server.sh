#!/usr/bin/env bash
# restart-server.sh DIR: the --restart-command of scripts/judge-vllm-api.sh. Restarts the server on the
# port of $SPECCONFORM_BASE_URL (set by specconform) by the script DIR/PORT.sh that started it, appending
# to its log DIR/PORT.log and recording its pid in DIR/PORT.pid; specconform then waits until it answers.
# restart-server.sh --stop PID: end a server (SIGTERM, SIGKILL after 30 s).
set -euo pipefail

stop() {
  local pid=$1 waited=0
  kill "$pid" 2> /dev/null || return 0
  # an exited server whose parent has not reaped it still answers kill -0: ps says Z
  while kill -0 "$pid" 2> /dev/null && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ]; do
    if [ "$waited" -ge 30 ]; then
      kill -9 "$pid" 2> /dev/null || true
      return 0
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

if [ "$1" = --stop ]; then
  stop "$2"
  exit 0
fi
dir=$1
port=${SPECCONFORM_BASE_URL#*://}
port=${port#*:}
port=${port%%/*}
if [ ! -f "$dir/$port.sh" ]; then
  echo "no server was started on port $port (no $dir/$port.sh)" >&2
  exit 1
fi
stop "$(cat "$dir/$port.pid")" # a server that stopped answering may still run
echo "--- restarted by specconform ($(date -u +%FT%TZ)) ---" >> "$dir/$port.log"
bash "$dir/$port.sh" >> "$dir/$port.log" 2>&1 < /dev/null &
echo "$!" > "$dir/$port.pid"
