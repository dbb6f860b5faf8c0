// bench_rope's rows, by concern. Each group checks its fast paths against the scalar reference
// (check_*: one line per check, through CheckReport), registers its Google Benchmark rows
// (register_*) and prints its summary rows (print_*_summary); bench_rope.cpp calls them in the
// order the output has.
#pragma once

#include <string>

#include "../ratio_reporter.hpp"
#include "common.hpp"

namespace posemb::bench::rope {

// rope_rows.cpp: rope/..., decode/..., table/...
void check_rope_rows(const CheckReport& report);
void check_decode(const CheckReport& report);
bool check_table();  // prints its own line (ulps from libm); false if it failed
void check_transpose_rows(const CheckReport& report);
void register_rope_rows();
void register_table_rows();
void print_rope_summary(const RatioReporter& reporter);
void print_table_summary(const RatioReporter& reporter);

// fope_mrope_rows.cpp: fope/..., memcpy/f32/threads:2, mrope/..., fused/...
void check_fope_mrope_fused(const CheckReport& report);
void register_fope_mrope_fused();
void print_fope_mrope_fused_summary(const RatioReporter& reporter);

// stream_rows.cpp: stream/...
// Takes --stream_threads=1,2,4 out of argv (else POSEMB_BENCH_THREADS; by default 1 .. the
// core count) before Google Benchmark sees it.
void parse_stream_threads(int& argc, char** argv);
// Checks, then registers the section's benchmarks; false if a check failed.
bool register_stream_benchmarks(const CheckReport& report);
void print_stream_summary(const RatioReporter& reporter);

}  // namespace posemb::bench::rope
