#!/usr/bin/env bash
# The llama.cpp harness end to end, from the checkout's root, on a test build and its venv (.ci/run
# calls it with build/venv build/test after the peer libraries' step): the llama.cpp wheel
# (setup.sh: built once per machine, cached in $POSEMB_CACHE), the harness's own tests, then
# run.py, a full run: the tiny models, their conversions, the ROPE nodes, the diff verdicts and
# the rope grid; then deepseek4.py.
#   usage: conformance/llamacpp/ci.sh VENV BUILD
# Exit status: 0 only when run.py passes (the rows that do not pass are the pinned departures) and
# every deepseek4.py node does.
set -euo pipefail
venv=${1:?usage: ci.sh VENV BUILD}
build=${2:?usage: ci.sh VENV BUILD}
cache=${POSEMB_CACHE:-/var/cache/posemb}
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
"$here/setup.sh" "$venv"
# The harness's own tests (its float64 ggml reference on ggml's vectors, the pinned verdict).
PYTHONPATH="$build/python" "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here"
PYTHONPATH="$build/python" "$venv/bin/python" "$here/run.py" \
  --llama-cpp "$cache/src/llama_cpp_python-0.3.36/vendor/llama.cpp" \
  --posemb "$build/tools/posemb" --posemb-c "$build/src/c_api/libposemb_c.so" \
  --work build/llamacpp --out build/conformance/llamacpp
# deepseek4 on a file written with the sdist's gguf-py (the converter converts no model
# transformers builds to it; deepseek4.py says why).
PYTHONPATH="$build/python" "$venv/bin/python" "$here/deepseek4.py" \
  --llama-cpp "$cache/src/llama_cpp_python-0.3.36/vendor/llama.cpp" \
  --posemb "$build/tools/posemb" --posemb-c "$build/src/c_api/libposemb_c.so" \
  --out build/conformance/llamacpp-deepseek4
echo "conformance/llamacpp/ci.sh: $(($(date +%s) - start)) s"
