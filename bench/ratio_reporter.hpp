// The paired harness (harness.hpp) under Google Benchmark, for bench_rope: run_paired() times
// a baseline and the measured code in every iteration, RatioReporter keeps each benchmark's
// ratios and times for the summary, print_ratio() and print_info() print its rows.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"

namespace posemb::bench {

// Each iteration runs the baseline and then the measured code, timing both; the reported time
// is the measured code's, and the counter "ratio" is the median over iterations of baseline
// time / measured time. Register with ->UseManualTime().
template <class Baseline, class Measured>
void run_paired(benchmark::State& state, const Baseline& baseline, const Measured& measured) {
  PairSeries series;
  for (auto _ : state) {
    const PairTimes times = time_pair(baseline, measured);
    state.SetIterationTime(times.measured);
    series.add(times);
  }
  state.counters["ratio"] = series.measured.empty() ? 0.0 : series.median_speedup();
}

// The summary's source: from the fastest repetition of each benchmark (times) and the median
// repetition (ratios).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  struct Result {
    double real = -1, cpu = -1;  // seconds per iteration
    std::vector<double> ratios;
    double ratio() const { return ratios.empty() ? -1 : median(ratios); }
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred || run.iterations == 0) continue;
      Result& r = results_[base_name(run.benchmark_name())];
      const double real = run.real_accumulated_time / double(run.iterations);
      const double cpu = run.cpu_accumulated_time / double(run.iterations);
      r.real = r.real < 0 ? real : std::min(r.real, real);
      r.cpu = r.cpu < 0 ? cpu : std::min(r.cpu, cpu);
      const auto ratio = run.counters.find("ratio");
      if (ratio != run.counters.end()) r.ratios.push_back(ratio->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  const Result* find(const std::string& name) const {
    const auto found = results_.find(name);
    return found == results_.end() ? nullptr : &found->second;
  }

 private:
  // "memcpy/f32/manual_time" or ".../repeats:3" -> "memcpy/f32"
  static std::string base_name(std::string name) {
    for (const char* suffix : {"/repeats:", "/manual_time", "/real_time"}) {
      const auto at = name.find(suffix);
      if (at != std::string::npos) name.erase(at);
    }
    return name;
  }

  std::map<std::string, Result> results_;
};

// A summary row with a target: "<name> <ratio>  <meaning> >= <target>  met" (or MISSED); nothing
// when the benchmark did not run (filtered out).
inline void print_ratio(const RatioReporter& reporter, const std::string& name, const char* meaning,
                        double target) {
  const RatioReporter::Result* r = reporter.find(name);
  if (r == nullptr) return;
  const double ratio = r->ratio();
  std::printf("%-60s %7.3f  %s >= %.2f  %s\n", name.c_str(), ratio, meaning, target,
              ratio >= target ? "met" : "MISSED");
}

// A summary row without a target.
inline void print_info(const RatioReporter& reporter, const std::string& name,
                       const char* meaning) {
  const RatioReporter::Result* r = reporter.find(name);
  if (r == nullptr) return;
  std::printf("%-60s %7.3f  %s (informative)\n", name.c_str(), r->ratio(), meaning);
}

}  // namespace posemb::bench
