#!/usr/bin/env bash
# The peer libraries next to the installed posemb wheel: a venv of conformance/peers/requirements.txt
# (torch first, as that file says), the wheel installed into it, then the pinned-departure tests,
# the gradients of q and k against the peers' autograd (gradients.py), the OLM drift example and
# the conformance matrix (non-zero when its set of non-pass rows changes).
#   conformance/peers/check.sh WHEEL     (e.g. the one .ci/check-wheel builds into build/check-wheel/dist)
# Work folder: build/peers-check (the venv; the reports in build/conformance/peers and
# build/conformance/peers-gradients).
set -euo pipefail
cd "$(dirname "$0")/../.."
wheel=$(realpath "$1")
venv=$PWD/build/peers-check/venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q -r conformance/peers/requirements.txt
"$venv/bin/pip" install -q --no-deps torchao==0.13.0
"$venv/bin/pip" uninstall -q -y torchvision
"$venv/bin/pip" install -q --no-deps "$wheel"
"$venv/bin/python" -c "import torch; assert torch.__version__ == '2.13.0+cpu', torch.__version__"
"$venv/bin/python" -m pytest -q -p no:cacheprovider conformance/peers/test_peers.py
"$venv/bin/python" conformance/peers/gradients.py --out build/conformance/peers-gradients
"$venv/bin/python" examples/python/drift_table.py > build/peers-check/drift_table.txt
"$venv/bin/python" conformance/peers/matrix.py --out build/conformance/peers
