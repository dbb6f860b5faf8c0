#!/usr/bin/env bash
# Build the pinned llama.cpp (llama-cpp-python's CPU libllama/libggml) once per machine and install
# it into the venv given as $1. Wheel and sdist are cached in $POSEMB_CACHE (default
# /var/cache/posemb), outside the checkout; a cached wheel is reused, never rebuilt.
#   usage: conformance/llamacpp/setup.sh VENV
set -euo pipefail
venv=${1:?usage: setup.sh VENV}
cache=${POSEMB_CACHE:-/var/cache/posemb}
here=$(cd "$(dirname "$0")" && pwd)
version=0.3.36
sdist=$cache/llama_cpp_python-$version.tar.gz
mkdir -p "$cache/wheels"
# The sdist carries convert_hf_to_gguf.py, gguf-py and test-backend-ops.cpp of the same llama.cpp.
if [ ! -f "$sdist" ]; then
  "$venv/bin/pip" download --no-binary llama-cpp-python --no-deps -d "$cache" \
    "llama-cpp-python==$version"
fi
if [ ! -d "$cache/src/llama_cpp_python-$version" ]; then
  mkdir -p "$cache/src" && tar xzf "$sdist" -C "$cache/src"
fi
wheel=$(ls "$cache"/wheels/llama_cpp_python-$version-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  # CPU only, portable (no -march=native), no BLAS/OpenMP/GPU, no multimodal library, no
  # tests/tools/examples/server/app. The package forces llama.cpp's `common` library on (a FORCEd
  # cache entry in its CMakeLists); the bindings never load it, so a project include run right
  # after llama.cpp's project() shadows it with a normal variable (skip-common.cmake).
  export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF \
-DGGML_METAL=OFF -DGGML_OPENMP=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF \
-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
-DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
-DCMAKE_PROJECT_llama.cpp_INCLUDE=$here/skip-common.cmake"
  if command -v ccache >/dev/null; then
    CMAKE_ARGS+=" -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  fi
  export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
  # scikit-build-core probes `cmake -E capabilities` with a 5 s timeout; a wrapper script (pyenv
  # shim, the PyPI cmake package's launcher) can miss it on a loaded machine. Put the real binary
  # (CMake's own CMAKE_COMMAND) first on PATH, and pin the build backend.
  bin=$cache/bin
  mkdir -p "$bin"
  echo 'message("${CMAKE_COMMAND}")' >"$bin/where.cmake"
  ln -sf "$(cmake -P "$bin/where.cmake" 2>&1)" "$bin/cmake"
  export PATH=$bin:$PATH CMAKE_GENERATOR="Unix Makefiles"
  echo "scikit-build-core==1.1.2" >"$bin/constraints.txt"
  export PIP_CONSTRAINT=$bin/constraints.txt
  start=$(date +%s)
  nice -n 10 "$venv/bin/pip" wheel --no-deps -w "$cache/wheels" "$sdist"
  echo "llama-cpp-python $version wheel built in $(($(date +%s) - start)) s"
  wheel=$(ls "$cache"/wheels/llama_cpp_python-$version-*.whl | head -1)
fi
# --no-deps: the venv already pins numpy, jinja2 and typing-extensions; `import llama_cpp` also
# imports its high-level API, which needs diskcache.
"$venv/bin/pip" install --no-deps "$wheel" diskcache==5.6.3
