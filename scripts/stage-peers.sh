#!/usr/bin/env bash
# Stage the peers that `specconform bench` times beside ours (vLLM 0.33.0's sampler and budget holder,
# FlashInfer 0.7.2.post1's chain speculative sampling) for a GPU machine without a package registry:
#   bash scripts/stage-peers.sh DIR        (here, where pip reaches a registry)
#   PEERS_DIR=DIR bash scripts/gpu-check.sh (there; DIR travels with the checkout, under 64 MiB)
# Only Python files travel. vLLM's compiled extensions are built for another torch and neither module
# timed here calls them, so `vllm._C_stable_libtorch`, which vLLM's CUDA platform imports at start,
# is staged as an empty module. FlashInfer's package root imports every kernel family eagerly; it is
# replaced by an empty one, and only the sampling sources its JIT build compiles are kept.
set -euo pipefail
out=$(mkdir -p "${1:?usage: stage-peers.sh DIR}" && cd "$1" && pwd)
mkdir -p "$out/wheels"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "${PEERS_PYTHON:-3.12}" \
    --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_31_x86_64 --platform manylinux1_x86_64 -d "$@"
}
# what vLLM's sampler, budget holder and their imports need beyond a CUDA PyTorch image
download "$out/wheels" annotated-types==0.8.0 apache-tvm-ffi==0.1.15.post2 cachetools==8.0.1 cbor2==6.2.1 \
  fastapi==0.165.0 httpcore2==2.16.2 httpx2==2.16.2 llguidance==1.9.1 msgspec==0.22.0 openai==3.54.0 \
  openai-harmony==0.0.8 opentelemetry-api==1.45.2 partial-json-parser==0.2.1.1.post7 pybase64==1.5.1 \
  pydantic==2.14.3 pydantic_core==2.50.4 pyzmq==27.3.0 sniffio==1.3.1 starlette==1.10.0 truststore==0.10.5 \
  typing-inspection==0.4.5 xgrammar==0.2.8
download "$work" vllm==0.33.0 flashinfer-python==0.7.2.post1
mkdir -p "$work/vllm" "$work/flashinfer"
(cd "$work/vllm" && python3 -m zipfile -e "$work"/vllm-0.33.0-*.whl . \
  && find vllm -type f ! \( -name '*.py' -o -name '*.json' -o -name '*.jinja' -o -name '*.txt' \) -delete \
  && find vllm -type d -empty -delete \
  && echo '"""Stands in for the compiled extension, which the timed modules never call."""' > vllm/_C_stable_libtorch.py \
  && tar -czf "$out/vllm-0.33.0-python.tar.gz" vllm vllm-0.33.0.dist-info)
(cd "$work/flashinfer" && python3 -m zipfile -e "$work"/flashinfer_python-0.7.2.post1-*.whl . \
  && { find flashinfer -name '*.py' ! -path 'flashinfer/data/*'; find flashinfer/data/include flashinfer/data/cccl flashinfer/data/spdlog -type f; \
       ls flashinfer/data/csrc/*.h flashinfer/data/csrc/{sampling,renorm,flashinfer_sampling_binding}.cu; } > files.txt \
  && echo '"""FlashInfer, sampling only."""' > flashinfer/__init__.py \
  && tar -cJf "$out/flashinfer-0.7.2.post1-sampling.tar.xz" -T files.txt)
# lmdeploy's and SGLang's wheels are built for CPython 3.11 only; just their Python files travel, so that build serves
source_wheel() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 -d "$work" "$@"
}
# lmdeploy's verifiers at the releases its adapter is taught (specconform.harness.adapters.lmdeploy): their Python files
# only; the adapter stands in for the package root, so neither the compiled TurboMind extension nor the serving
# dependencies are needed
for v in 0.15.0 0.16.0 0.17.0 0.18.0; do
  source_wheel "lmdeploy==$v"
  mkdir -p "$work/lmdeploy-$v"
  (cd "$work/lmdeploy-$v" && python3 -m zipfile -e "$work"/lmdeploy-"$v"-*.whl . \
    && find lmdeploy -type f ! -name '*.py' -delete && find lmdeploy -type d -empty -delete \
    && tar -cJf "$out/lmdeploy-$v-python.tar.xz" lmdeploy "lmdeploy-$v.dist-info")
done
# SGLang 0.5.23 at kernel level (specconform.harness.adapters.sglang): its Python sources (but its model, multimodal-generation,
# test and benchmark trees, which the adapter never imports) and the JIT CUDA sources of its kernels, plus the
# packages its modules import beyond a CUDA PyTorch image with transformers, in a folder of their own (SGLang pins
# apache-tvm-ffi 0.1.11, vLLM's set above another); its greedy kernel and top-k renormalisation build with nvcc from
# these sources and FlashInfer's headers (the FlashInfer tarball above)
download "$out/sglang-wheels" dill==0.4.1 orjson==3.13.0 msgspec==0.22.0 pybase64==1.5.1 pyzmq==27.3.0 \
  ipython==9.18.1 pygments==2.21.0 traitlets==5.16.1 apache-tvm-ffi==0.1.11 sentencepiece==0.2.1 compressed-tensors==0.18.0 \
  loguru==0.7.3 gguf==0.19.0 psutil==7.2.2
source_wheel sglang==0.5.23
mkdir -p "$work/sglang"
(cd "$work/sglang" && python3 -m zipfile -e "$work"/sglang-0.5.23-*.whl . \
  && { find sglang -name '*.py' ! -path 'sglang/multimodal_gen/*' ! -path 'sglang/srt/models/*' \
         ! -path 'sglang/test/*' ! -path 'sglang/benchmark/*'; \
       find sglang/kernels/jit/csrc sglang/kernels/jit/include -type f \( -name '*.cuh' -o -name '*.h' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cpp' \); \
       find sglang-0.5.23.dist-info -type f; } > files.txt \
  && tar -cJf "$out/sglang-0.5.23-python.tar.xz" -T files.txt)
du -sh "$out"
