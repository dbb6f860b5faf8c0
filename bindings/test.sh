#!/usr/bin/env bash
# The Rust crate's and the Go package's tests against a CMake build of posemb that has the C API
# and its reference results (the targets posemb_c and posemb_c_reference, e.g. the test preset):
#   bindings/test.sh build/test        (needs cargo and Debian's golang-go)
# cargo runs offline (the crate has no dependencies); both keep their caches under BUILD.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "$1" && pwd)
export POSEMB_C_REFERENCE=$build/tests/c/reference.txt POSEMB_TEST_DATA=$PWD/tests/data
export POSEMB_C_GRAD_REFERENCE=$build/tests/c/grad_reference.txt
test -f "$POSEMB_C_REFERENCE" || { echo "bindings/test.sh: no $POSEMB_C_REFERENCE (build posemb_c_reference)" >&2; exit 1; }
(cd bindings/rust && POSEMB_C_LIB_DIR=$build/src/c_api CARGO_TARGET_DIR=$build/rust cargo test --offline)
(cd bindings/go && CGO_LDFLAGS="-L$build/src/c_api -Wl,-rpath,$build/src/c_api" GOCACHE=$build/gocache \
  go test -count=1 ./...)
