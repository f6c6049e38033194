#!/usr/bin/env bash
# Prove the cause published against FlashInfer (harness/products/flashinfer/expectations-0.7.2.yaml) on a GPU: replay the entry's
# reproduction against the staged FlashInfer, then against the same copy with the entry's patch applied to its JIT
# sources (the staged copy is a temporary folder; nothing installed is touched). The kernel is rebuilt from the
# patched source because FlashInfer's JIT cache is moved aside for the run.
#   PEERS_DIR=DIR bash scripts/prove-flashinfer-gpu.sh PATCH REPRODUCTION   (from the repository root)
# Exit 0 when the reproduction fails unpatched and passes patched (the cause is proven), 1 otherwise.
set -uo pipefail
patch_file=${1:?usage: prove-flashinfer-gpu.sh PATCH REPRODUCTION}
reproduction=${2:?usage: prove-flashinfer-gpu.sh PATCH REPRODUCTION}
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${PEERS_DIR:?}"/wheels/*.whl \
  && tar -xJf "$PEERS_DIR"/flashinfer-*-sampling.tar.xz -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1 FLASHINFER_WORKSPACE_BASE="$site/jit-unpatched"
engine=specconform.harness.adapters.flashinfer_chain:make
python3 -m specconform.harness.cli replay "$reproduction" --engine "$engine"
unpatched=$?
python3 - "$patch_file" "$site" <<'PY' || exit 1
import sys
from pathlib import Path
from specconform.harness.proofs import apply_hunks, parse_diff
patch, site = Path(sys.argv[1]), Path(sys.argv[2])
for file_patch in parse_diff(patch.read_text(), str(patch)):
    target = site / file_patch.path
    target.write_text(apply_hunks(target.read_text(), file_patch, str(patch)))
    print(f"patched {target.relative_to(site)}")
PY
export FLASHINFER_WORKSPACE_BASE="$site/jit-patched"
python3 -m specconform.harness.cli replay "$reproduction" --engine "$engine"
patched=$?
echo "unpatched exit $unpatched (1: fails as recorded), patched exit $patched (0: passes)"
[ "$unpatched" -eq 1 ] && [ "$patched" -eq 0 ]
