#!/usr/bin/env bash
# Rare-event hunts on a GPU machine (`specconform hunt`): the reference's Triton sampler, then vLLM 0.33's Model
# Runner V2 sampler, each over DRAWS draws in all (default 10^9 per GPU) on every GPU of the machine, one engine
# process per GPU, batches of ROWS logits rows per launch (default 10^6), each GPU stopping after MAX_SECONDS
# (default 120) of launches. Runs from the repository root without installing (PYTHONPATH):
#   bash scripts/hunt-gpu.sh                      (PEERS_DIR defaults to .peers, made by scripts/stage-peers.sh)
#   ENGINES="reference mrv2 v1" bash scripts/hunt-gpu.sh   (v1: vLLM's legacy sampler too)
# Writes $OUT/hunt-<engine>.json and .md (default reports/hunt) and the logs; prints each engine's draws, seconds
# and the rate of violations per draw its draws would have missed at 95 % confidence.
set -uo pipefail
peers="${PEERS_DIR:-.peers}"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$peers"/wheels/*.whl \
  && tar -xzf "$peers"/vllm-*-python.tar.gz -C "$site" \
  || { echo "could not unpack the peers in $peers" >&2; exit 1; }
# FlashInfer (vLLM's fused top-k/top-p sampler) is not staged; the hunt hands vLLM truncated logits instead.
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0
out="${OUT:-reports/hunt}"
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
draws="${DRAWS:-$((gpus * 1000000000))}"
status=0
for name in ${ENGINES:-reference mrv2}; do
  case "$name" in
    reference) engine=reference:cuda:triton ;;
    mrv2) engine=specconform.harness.adapters.vllm_mrv2:make ;;
    v1) engine=specconform.harness.adapters.vllm:make ;;
    *) echo "unknown engine $name (reference, mrv2 or v1)" >&2; exit 2 ;;
  esac
  echo "== $name ($engine): $draws draws on $gpus GPU(s)"
  start=$(date +%s)
  timeout "${RUN_LIMIT_S:-420}" python3 -m specconform.harness.cli hunt --engine "$engine" --draws "$draws" \
    --rows "${ROWS:-1000000}" --max-seconds "${MAX_SECONDS:-120}" --report-dir "$out" "$@" > "$out/hunt-$name.log" 2>&1
  code=$?
  grep -v "^  first " "$out/hunt-$name.log" | tail -12
  echo "$name exit $code (0: no violation, 1: violations, see $out/hunt-$name.log), $(( $(date +%s) - start )) s wall"
  [ "$code" -le 1 ] || status=$code
done
exit $status
