#!/usr/bin/env bash
# Prove the cause of a finding of `specconform hunt` on a GPU machine: vLLM 0.33 emitting an id outside the target's
# support when the residual max(p - q, 0) has no mass (RS-PROB-4: the emitted token is then a sample of p), in Model
# Runner V2 (the default) or, with RUNNER=v1, the legacy runner. Runs from the repository root with the staged peers
# (scripts/stage-peers.sh), as scripts/hunt-gpu.sh:
#   bash scripts/prove-hunt-gpu.sh
#   RUNNER=v1 bash scripts/prove-hunt-gpu.sh
# 1. the record's violating request (RECORD, a hunt record) replayed alone through the unpatched sampler must still
#    emit an id outside the support (`specconform hunt --replay` exits 1, "REPRODUCED"). A legacy-runner record's
#    draws are its launch's (seed None): there the unpatched hunt is run again with the record's seed and must meet
#    the record's first violation at the same launch, request and row;
# 2. the same, with PATCH applied to the staged copy of vLLM, must emit an id inside it (exit 0, "breaks nothing");
#    the target's own draw at that position (the oracle's vllm-mrv2 scheme) is printed beside it (Model Runner V2);
# 3. patched, the hunt is run again with the record's seed and vocabulary over DRAWS draws (default 10^9), so it
#    redraws the launch that found the violation: it must find none (exit 0).
# Prints PROVEN or NOT PROVEN with the step that failed; exit 0 when proven. Logs go to $OUT (default
# reports/hunt/prove). The staged copy is a temporary folder, patched in place; nothing installed is touched.
set -uo pipefail
peers="${PEERS_DIR:-.peers}"
case "${RUNNER:-mrv2}" in
  mrv2) engine=specconform.harness.adapters.vllm_mrv2:make ;;
  v1) engine=specconform.harness.adapters.vllm:make ;;
  *) echo "unknown RUNNER ${RUNNER} (mrv2 or v1)" >&2; exit 2 ;;
esac
record="${RECORD:-proofs/vllm-0.33-${RUNNER:-mrv2}/empty-residual-emits-token-0.hunt.json}"
patch_file="${PATCH:-proofs/vllm-0.33-${RUNNER:-mrv2}/empty-residual-emits-token-0.diff}"
read -r seed vocab first < <(python3 - "$record" <<'PY'
import json, sys
record = json.load(open(sys.argv[1]))
first = record["violations"][0]
where = "alone" if first["seed"] is not None else f"launch {first['launch']}, request {first['request']}, row {first['row']}"
print(record["seed"], record["vocab_size"], where)
PY
)
out="${OUT:-reports/hunt/prove}"
mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$peers"/wheels/*.whl \
  && tar -xzf "$peers"/vllm-*-python.tar.gz -C "$site" \
  || { echo "could not unpack the peers in $peers" >&2; exit 1; }
# FlashInfer is not staged (as in hunt-gpu.sh); each phase compiles its kernels afresh into its own Triton cache
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0 TRITON_CACHE_DIR="$site/triton-unpatched"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
failed=()

hunt() {  # hunt again with the record's seed and vocabulary; $1: the report folder
  timeout "${RUN_LIMIT_S:-300}" python3 -m specconform.harness.cli hunt --engine "$engine" --draws "${DRAWS:-1e9}" \
    --rows "${ROWS:-1000000}" --vocab "$vocab" --seed "$seed" --max-seconds "${MAX_SECONDS:-120}" --report-dir "$1" \
    > "$1.log" 2>&1
}

if [ "$first" = alone ]; then
  echo "== 1. unpatched: replay $record"
  python3 -m specconform.harness.cli hunt --replay "$record" --engine "$engine" 2>&1 | tee "$out/replay-unpatched.log"
  code=${PIPESTATUS[0]}
  if [ "$code" -eq 1 ] && grep -q ": REPRODUCED" "$out/replay-unpatched.log"; then
    echo "unpatched: the violation reproduces"
  else
    failed+=("unpatched replay (exit $code) does not reproduce the violation")
  fi
else
  echo "== 1. unpatched: hunt again with the record's seed (its draws are its launch's): $first"
  hunt "$out/unpatched"
  grep -v "^  first " "$out/unpatched.log" | tail -8
  if grep -q "^  first .*: $first, " "$out/unpatched.log"; then
    echo "unpatched: the violation reproduces at $first"
  else
    failed+=("the unpatched hunt does not meet the violation at $first")
  fi
fi

echo "== patching the staged vLLM with $patch_file"
python3 - "$patch_file" "$site" <<'PY' || { echo "NOT PROVEN: $patch_file does not apply"; exit 1; }
import sys
from pathlib import Path
from specconform.harness.proofs import apply_hunks, parse_diff
patch, site = Path(sys.argv[1]), Path(sys.argv[2])
for file_patch in parse_diff(patch.read_text(), str(patch)):
    target = site / file_patch.path
    target.write_text(apply_hunks(target.read_text(), file_patch, str(patch)))
    print(f"patched {target.relative_to(site)}")
PY
export TRITON_CACHE_DIR="$site/triton-patched"

if [ "$first" = alone ]; then
  echo "== 2. patched: replay $record"
  python3 -m specconform.harness.cli hunt --replay "$record" --engine "$engine" 2>&1 | tee "$out/replay-patched.log"
  code=${PIPESTATUS[0]}
  if [ "$code" -eq 0 ] && ! grep -q "REPRODUCED" "$out/replay-patched.log" && grep -q "breaks nothing" "$out/replay-patched.log"; then
    echo "patched: the request emits inside the support"
  else
    failed+=("patched replay (exit $code) still breaks an invariant or did not run")
  fi
  python3 - "$record" <<'PY' | tee -a "$out/replay-patched.log"
# The target's own draw at each violating row: what the patch's fallback samples (the Gumbel argmax of the target's
# logits after temperature under vLLM's noise at that position), from the oracle's vllm-mrv2 scheme, for comparison.
import json, sys
import numpy as np
from specconform.harness.oracle.draws import vllm_mrv2
from specconform.harness.vectors import case_from_json
for n, violation in enumerate(json.load(open(sys.argv[1]))["violations"]):
    case = case_from_json(violation["case"])
    row = violation["num_emitted"] - 1  # the row whose resampled token broke the invariant
    logits = case.target_logits[row].astype(np.float32) / np.float32(case.temperature[0])
    token, gap = vllm_mrv2.gumbel_argmax(logits.astype(np.float64), int(case.seeds[0]), int(case.positions[0]) + row)
    print(f"violations[{n}] row {row}: the target's own draw there is {token} (lead {gap:.3g})")
PY
fi

echo "== 3. patched: hunt again with the record's seed"
hunt "$out/patched"
code=$?
grep -v "^  first " "$out/patched.log" | tail -12
if [ "$code" -ne 0 ]; then
  failed+=("patched hunt exit $code (1: a violation, see $out/patched.log)")
fi

if [ "${#failed[@]}" -eq 0 ]; then
  echo "PROVEN: $patch_file turns the empty residual into a sample of p (RS-PROB-4); the patched hunt finds no violation"
  exit 0
fi
printf 'NOT PROVEN: %s\n' "${failed[@]}"
exit 1
