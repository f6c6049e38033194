#!/usr/bin/env bash
# Judge SGLang 0.5.23 at kernel level on a GPU without a package registry (specconform.harness.adapters.sglang; Triton compiles
# its chain sampler there, so the statistical checks that read NOT_RUN under the CPU's interpreter are certified, and
# nvcc builds its JIT CUDA greedy kernel and FlashInfer's top-k renormalisation, which judge greedy and mixed batches).
#   bash scripts/stage-peers.sh DIR                             (where pip reaches a registry)
#   PEERS_DIR=DIR OUT=results bash scripts/judge-sglang-gpu.sh   (on the GPU machine, repository root)
# DIR/wheels may hold the harness's own wheels; a project there that DIR/sglang-wheels holds too (vLLM's apache-tvm-ffi,
# msgspec, ...) is taken from the latter. Writes $OUT/sglang-0.5.23.log and reports/engines/sglang-0.5.23/<run>/ (with
# PROVE_XPU=1, also $OUT/sglang-0.5.23-xpu-prove.log: the sglang-xpu vector proofs left to a GPU).
set -uo pipefail
shopt -s nullglob
site=$(mktemp -d)
# a project in both folders (vLLM's set and SGLang's share some) is taken from SGLang's
own=" "
for wheel in "${PEERS_DIR:?}"/sglang-wheels/*.whl; do own+="$(basename "$wheel" | cut -d- -f1) "; done
wheels=()
for wheel in "$PEERS_DIR"/wheels/*.whl; do
  [[ "$own" == *" $(basename "$wheel" | cut -d- -f1) "* ]] || wheels+=("$wheel")
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    "${wheels[@]}" "$PEERS_DIR"/sglang-wheels/*.whl \
  && tar -xJf "$PEERS_DIR"/sglang-0.5.23-python.tar.xz -C "$site" \
  && tar -xJf "$PEERS_DIR"/flashinfer-0.7.2.post1-sampling.tar.xz -C "$site" \
  || { echo "could not unpack the peers in $PEERS_DIR" >&2; exit 1; }
# sglang-kernel is built for another torch and does not travel; eagle_utils' imports reach quantization modules that
# import its ops at load (compressed_tensors_w8a8_int8: int8_scaled_mm). A stand-in lets them load; calling one of its
# ops raises, naming it. Verification on CUDA calls none: its kernels are JIT (kernels/ops/speculative/tree.py) and Triton.
mkdir -p "$site/sgl_kernel"
cat > "$site/sgl_kernel/__init__.py" <<'PY'
"""Stands in for sglang-kernel, which is not staged: it and its submodules load, their names load as stand-ins,
and calling one raises, naming it."""

import importlib.abc
import importlib.machinery
import sys
import types


class _Missing:
    """An op or value of sglang-kernel: its attributes are more of them, and calling one raises."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self._name}.{name}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} was called, but sglang-kernel is not staged")


class _StandIn(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self.__name__}.{name}")


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        return importlib.machinery.ModuleSpec(name, self, is_package=True) if name.startswith(__name__ + ".") else None

    def create_module(self, spec):
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Submodules())
sys.modules[__name__].__class__ = _StandIn
PY
# FlashInfer travels with its sampling kernels alone; SGLang's own switch keeps the quantization layers that eagle_utils'
# imports pull in (fp8_utils: FlashInfer's GEMMs) from asking for the rest. Verification reads no such switch: its
# top-k renormalisation still takes flashinfer.sampling (kernels/ops/sampling/renorm.py).
export PYTHONPATH="$PWD:$site" PYTHONUNBUFFERED=1 SGLANG_IS_FLASHINFER_AVAILABLE=false
out="${OUT:-reports/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
timeout "${RUN_LIMIT_S:-400}" python3 -m specconform.harness.cli run --engine specconform.harness.adapters.sglang:make \
  --expectations harness/products/sglang/expectations-0.5.23.yaml --report-dir reports/engines/sglang-0.5.23 --exclude "api.*" "$@" \
  > "$out/sglang-0.5.23.log" 2>&1
status=$?
echo "sglang-0.5.23 exit $status" | tee -a "$out/gpu.txt"
tail -5 "$out/sglang-0.5.23.log"
# PROVE_XPU=1: the XPU platform's three vector proofs (harness/products/sglang-xpu/expectations-0.5.23.yaml). Each re-runs
# a whole vector; patched, its cases take the chain sampler, too slow under the CPU's interpreter. make_xpu runs XPU's
# Triton kernels on this GPU. Each line of $out/sglang-0.5.23-xpu-prove.log says PROVEN or NOT PROVEN.
if [[ -n "${PROVE_XPU:-}" ]]; then
  for entry in vectors/rejection/residual vectors/rejection/draft-with-zero-target vectors/rejection/one-hot; do
    timeout "${PROVE_LIMIT_S:-300}" python3 -m specconform.harness.cli prove \
      harness/products/sglang-xpu/expectations-0.5.23.yaml --engine specconform.harness.adapters.sglang:make_xpu \
      --entry "$entry" >> "$out/sglang-0.5.23-xpu-prove.log" 2>&1 || status=1
  done
  grep -E "PROVEN|proven" "$out/sglang-0.5.23-xpu-prove.log"
fi
exit $status
