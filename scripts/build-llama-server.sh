#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (CPU) from the llama.cpp that llama-cpp-python's source distribution
# vendors, and keep the sources with it: its GGUF converter comes from the same tree. The build is
# cached: a second call prints the paths at once. Prints two lines: the server binary, the source tree.
set -euo pipefail
version=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
cache=${SPECCONFORM_CACHE:-$HOME/.cache/specconform}/llama.cpp-python-$version
source_tree=$cache/llama_cpp_python-$version/vendor/llama.cpp
server=$cache/build/bin/llama-server
if [ ! -x "$server" ]; then
  mkdir -p "$cache"
  if [ ! -d "$source_tree" ]; then
    echo "downloading the llama-cpp-python $version source distribution" >&2
    python -m pip download --quiet --no-deps --no-binary llama-cpp-python -d "$cache" "llama-cpp-python==$version"
    tar -xzf "$cache/llama_cpp_python-$version.tar.gz" -C "$cache"
  fi
  echo "building llama-server from $source_tree (several minutes on two cores)" >&2
  cmake -S "$source_tree" -B "$cache/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
  cmake --build "$cache/build" --target llama-server -j "$(nproc)" >&2
fi
echo "$server"
echo "$source_tree"
