#!/usr/bin/env bash
# The vLLM venv of this harness, made once per machine outside the checkout: $POSEMB_CACHE
# (default /var/cache/posemb)/venv-vllm, torch 2.13.0 (CPU) first, then requirements.txt with
# --no-deps. A venv whose stamp matches requirements.txt is reused as it is; one whose stamp
# differs gets requirements.txt installed over it (pins changed or added; a package dropped from
# the list stays); prints its python.
#   usage: conformance/vllm/setup.sh [PYTHON]   (PYTHON: the interpreter to make it from, python3)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${POSEMB_CACHE:-/var/cache/posemb}
venv=$cache/venv-vllm
stamp=$venv/requirements.sha256
want=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  start=$(date +%s)
  if [ ! -x "$venv/bin/pip" ]; then
    rm -rf "$venv"
    "${1:-python3}" -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.13.0 >&2
  fi
  "$venv/bin/pip" install -q --no-deps -r "$here/requirements.txt" >&2
  echo "$want" >"$stamp"
  echo "conformance/vllm/setup.sh: $venv made in $(($(date +%s) - start)) s" >&2
fi
echo "$venv/bin/python"
