// RoPE benchmarks: every fast path is first checked against the plain scalar reference (the
// RoFormer formula with libm cos/sin of the double angle), then timed with Google Benchmark.
// The summary at the end prints each figure as a RATIO to a baseline timed in the same process
// (memcpy of the same bytes, the scalar reference, one thread; harness.hpp), because the
// machines we run on are shared and their absolute times are not comparable across runs. See
// bench/README.md.
//
// The rows, by concern (bench/rope/): rope_rows.cpp (RoPE in every configuration, decode,
// rotate-and-transpose, inverse, the table build), fope_mrope_rows.cpp (FoPE, M-RoPE, fused
// scores), stream_rows.cpp (streaming stores, the caller's pool); their shapes and the scalar
// reference in rope/common.hpp. This file fixes the order of the checks, the rows and the
// summary.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <thread>

#include "harness.hpp"
#include "posemb/machine/isa.hpp"
#include "ratio_reporter.hpp"
#include "rope/rows.hpp"

namespace {

using namespace posemb::bench;
using namespace posemb::bench::rope;

// Checks every fast path against the scalar reference (one line each); false if one failed.
// The streaming rows are registered here, after their checks (they run first).
bool check_all() {
  bool ok = true;
  const CheckReport report = [&](const std::string& name, double error, double limit) {
    const bool pass = error <= limit;
    ok = ok && pass;
    std::printf("check %-62s %.2e (limit %.0e) %s\n", name.c_str(), error, limit,
                pass ? "ok" : "FAILED");
  };
  std::printf(
      "Checks against the scalar reference: the largest |fast - reference| over every value,\n"
      "divided by |a| + |b| of its pair for rotations, absolute where marked.\n");
  check_rope_rows(report);
  check_decode(report);
  ok = check_table() && ok;
  check_transpose_rows(report);
  check_fope_mrope_fused(report);
  ok = ok && register_stream_benchmarks(report);
  return ok;
}

void print_summary(const RatioReporter& reporter) {
  std::printf(
      "\nSummary (%s, %s, %u hardware threads; %s build, kernels at level %s).\n"
      "Ratio = baseline time / measured time for the same work, median over back-to-back\n"
      "pairs.\n",
      utc_date().c_str(), cpu_model().c_str(), std::thread::hardware_concurrency(),
      POSEMB_BENCH_BUILD, posemb::to_string(posemb::isa_level()));
  std::printf("%-60s %7s  %s\n", "benchmark", "ratio", "meaning, target");
  print_rope_summary(reporter);
  print_fope_mrope_fused_summary(reporter);
  print_table_summary(reporter);
  print_stream_summary(reporter);
}

}  // namespace

int main(int argc, char** argv) {
  parse_stream_threads(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  print_header(std::string(POSEMB_BENCH_BUILD) + " build, kernels at level " +
               posemb::to_string(posemb::isa_level()) +
               " (best on this CPU: " + posemb::to_string(posemb::best_isa_level()) + ")");
  if (!check_all()) {
    std::printf("a fast path disagrees with the scalar reference: not timing\n");
    return 1;
  }

  register_rope_rows();
  register_fope_mrope_fused();
  register_table_rows();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  print_summary(reporter);
  return 0;
}
