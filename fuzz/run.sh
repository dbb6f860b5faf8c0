#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/CMakeLists.txt) with clang and runs each for a bounded
# time. Fails on any crash, sanitizer report (ASan, UBSan), leak, timeout or out-of-memory;
# libFuzzer then leaves the input that triggered it in build/fuzz/fuzz/crash-<target>-*.
#
# Usage: fuzz/run.sh [SECONDS_PER_TARGET]   (default 60)
# Needs: clang-14 and libclang-rt-14-dev (Debian), plus the project's build dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
build=build/fuzz
cxx="${POSEMB_FUZZ_CXX:-clang++-14}"

cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOSEMB_BUILD_FUZZ=ON -DPOSEMB_BUILD_TESTS=OFF -DPOSEMB_BUILD_EXAMPLES=OFF \
  -DPOSEMB_BUILD_TOOLS=OFF >/dev/null
cmake --build "$build" --target fuzz_npy fuzz_config fuzz_gguf fuzz_safetensors -j2

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for target in npy config gguf safetensors; do
  # New inputs go to a scratch corpus under build/; the seeds in fuzz/corpus are only read.
  work="$build/fuzz/corpus-$target"
  mkdir -p "$work"
  echo "== fuzz_$target for ${seconds}s"
  "$build/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -dict="fuzz/$target.dict" -artifact_prefix="$build/fuzz/crash-$target-" -print_final_stats=1 \
    "$work" "fuzz/corpus/$target"
done
echo "== fuzzing found nothing in ${seconds}s per target"
