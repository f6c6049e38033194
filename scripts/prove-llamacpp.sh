#!/usr/bin/env bash
# Prove a cause published against llama.cpp's llama-server (harness/products/llamacpp/expectations-<build>.yaml): replay the entry's
# reproduction against llama-server built from the vendored tree, then against llama-server built from a copy of
# that tree with the entry's patch applied, each started the way judge-llamacpp.sh starts it.
#   bash scripts/prove-llamacpp.sh PATCH REPRODUCTION [RUN]   (from the repository root; RUN: single, multi or
#                                                              draft, the run that published the entry; default single)
# PATCH is a unified diff of the vendored tree (a/common/reasoning-budget.cpp ...). The patched build is cached
# per patch under the build's cache (proofs/NAME-HASH): the copy starts from the unpatched build folder and is
# built in a private mount namespace in which the copies sit at the original paths (unshare, as root), so ninja
# rebuilds only what the patch touches.
# Exit 0 when the reproduction fails unpatched and passes patched (the cause is proven), 1 otherwise.
set -euo pipefail
patch_file=${1:?usage: prove-llamacpp.sh PATCH REPRODUCTION [RUN]}
reproduction=${2:?usage: prove-llamacpp.sh PATCH REPRODUCTION [RUN]}
run=${3:-single}
case $run in single | multi | draft) ;; *) echo "RUN must be single, multi or draft; got '$run'" >&2; exit 2 ;; esac
[ -f "$patch_file" ] || { echo "PATCH '$patch_file' does not exist" >&2; exit 2; }
[ -f "$reproduction" ] || { echo "REPRODUCTION '$reproduction' does not exist" >&2; exit 2; }
{ read -r server; read -r source_tree; } < <(bash scripts/build-llama-server.sh)
build_dir=$(dirname "$(dirname "$server")")
port=${PORT:-$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
log=$(mktemp -d)
source scripts/llama-server-lib.sh
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; true' EXIT

name=$(basename "$patch_file" .diff)-$(sha256sum "$patch_file" | cut -c1-12)
proof_dir=$(dirname "$build_dir")/proofs/$name
patched_server=$proof_dir/build/bin/llama-server
if [ ! -x "$patched_server" ]; then
  rm -rf "$proof_dir" && mkdir -p "$proof_dir"
  cp -a "$source_tree" "$proof_dir/src"
  cp -a "$build_dir" "$proof_dir/build"
  patch -p1 --no-backup-if-mismatch -d "$proof_dir/src" < "$patch_file" >&2
  echo "building the patched llama-server in $proof_dir" >&2
  unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && mount --bind "$3" "$4" && cmake --build "$4" --target llama-server' \
    sh "$proof_dir/src" "$source_tree" "$proof_dir/build" "$build_dir" > "$log/build.log" 2>&1 \
    || { tail -n 30 "$log/build.log" >&2; rm -rf "$proof_dir"; exit 1; }
  grep -c 'Building' "$log/build.log" | sed 's/^/objects rebuilt: /' >&2
fi

model_variant=${run/draft/single}
gguf=$(gguf_of "$source_tree" "$model_variant")
replay() {  # replay SERVER NAME: the reproduction's exit status against SERVER
  # shellcheck disable=SC2046  # server_args prints separate words
  start_server "$1" "$2" "$model_variant" $(server_args "$gguf" "$run")
  local status=0
  python -m specconform.harness.cli replay "$reproduction" --engine openai --base-url "http://127.0.0.1:$port/v1" \
    --model "tiny-think-$model_variant" --api-profile llamacpp || status=$?
  stop_server
  return $status
}
unpatched=0 patched=0
echo "unpatched:"
replay "$server" unpatched || unpatched=$?
echo "patched ($(basename "$patch_file")):"
replay "$patched_server" patched || patched=$?
echo "unpatched exit $unpatched (1: fails as recorded), patched exit $patched (0: passes)"
[ "$unpatched" -eq 1 ] && [ "$patched" -eq 0 ]
