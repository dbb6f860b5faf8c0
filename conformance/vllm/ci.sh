#!/usr/bin/env bash
# The vLLM harness end to end, from the checkout's root, on a test build and its venv (.ci/run
# calls it with build/venv build/test after the llama.cpp harness): the vLLM venv (setup.sh: made
# once per machine, cached in $POSEMB_CACHE), then run.py, a full run.
#   usage: conformance/vllm/ci.sh VENV BUILD
# Exit status: run.py's (0 only when the rows that do not pass are the pinned departures; 2 when
# there is no vLLM 0.33.0 to run).
set -euo pipefail
venv=${1:?usage: ci.sh VENV BUILD}
build=${2:?usage: ci.sh VENV BUILD}
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
vllm_python=$("$here/setup.sh")
"$venv/bin/python" "$here/run.py" --posemb-build "$build" --vllm-python "$vllm_python" \
  --out build/conformance/vllm
echo "conformance/vllm/ci.sh: $(($(date +%s) - start)) s"
