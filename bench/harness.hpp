// The paired-timing harness of every posemb benchmark (bench_rope, bench_attention, bench_ggml).
//
// The machines we run on are shared, so no figure is an absolute time: each is a RATIO of the
// measured code to a baseline doing comparable work (memcpy of the same bytes, the scalar
// reference, Eigen's GEMM, ggml), timed back to back in the same process so that both see the
// same load from other processes. time_pair() is that one back-to-back measurement; PairSeries
// collects many and gives their medians; print_header() is the one place where a bench prints
// what it ran on.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "posemb/machine/streaming_stores.hpp"

// Which of the two bench builds this is (bench/CMakeLists.txt): "default" or "native".
#ifndef POSEMB_BENCH_BUILD
#define POSEMB_BENCH_BUILD "unnamed"
#endif

namespace posemb::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point begin, Clock::time_point end) {
  return std::chrono::duration<double>(end - begin).count();
}

// The median (the upper one of an even count); values must not be empty.
inline double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Keeps the compiler from moving memory accesses across the point (what Google Benchmark's
// ClobberMemory does), so a timed call's stores land inside its own interval.
inline void clobber_memory() { asm volatile("" : : : "memory"); }

// One back-to-back measurement, seconds.
struct PairTimes {
  double baseline = 0, measured = 0;
};

// Runs baseline then measured (measured first when `measured_first`), timing each.
template <class Baseline, class Measured>
PairTimes time_pair(Baseline&& baseline, Measured&& measured, bool measured_first = false) {
  PairTimes times;
  const auto t0 = Clock::now();
  if (measured_first) measured();
  else baseline();
  clobber_memory();
  const auto t1 = Clock::now();
  if (measured_first) baseline();
  else measured();
  clobber_memory();
  const auto t2 = Clock::now();
  times.baseline = measured_first ? seconds(t1, t2) : seconds(t0, t1);
  times.measured = measured_first ? seconds(t0, t1) : seconds(t1, t2);
  return times;
}

// Which code runs first in each pair: always the baseline, or alternating (the baseline first in
// even pairs), which cancels a cache the first call warms for the second.
enum class Order { BaselineFirst, Alternate };

// Many back-to-back measurements and their medians.
struct PairSeries {
  std::vector<double> baseline, measured;  // seconds, one per pair

  void add(const PairTimes& times) {
    baseline.push_back(times.baseline);
    measured.push_back(times.measured);
  }
  // The median over pairs of baseline time / measured time (> 1: the measured code is faster).
  double median_speedup() const { return median(ratios(baseline, measured)); }
  // The median over pairs of measured time / baseline time (< 1: the measured code is faster).
  double median_cost() const { return median(ratios(measured, baseline)); }
  double median_baseline() const { return median(baseline); }
  double median_measured() const { return median(measured); }
  double fastest_baseline() const { return *std::min_element(baseline.begin(), baseline.end()); }
  double fastest_measured() const { return *std::min_element(measured.begin(), measured.end()); }

 private:
  static std::vector<double> ratios(const std::vector<double>& over,
                                    const std::vector<double>& under) {
    std::vector<double> out(over.size());
    for (std::size_t i = 0; i < over.size(); ++i) out[i] = over[i] / under[i];
    return out;
  }
};

// `pairs` back-to-back measurements of baseline and measured.
template <class Baseline, class Measured>
PairSeries time_pairs(int pairs, Baseline&& baseline, Measured&& measured, Order order) {
  PairSeries series;
  for (int pair = 0; pair < pairs; ++pair) {
    series.add(time_pair(baseline, measured, order == Order::Alternate && pair % 2 == 1));
  }
  return series;
}

// ---------------------------------------------------------------------------------------------
// What a run ran on.

// The CPU's model name from /proc/cpuinfo, "unknown" without one.
inline std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

// "2025-01-31 14:05 UTC"
inline std::string utc_date() {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

// The first lines of every bench's output: the bench's own line (its build, what it compares),
// then the facts about this machine every bench reports. The one place such header lines are
// printed: a new fact about the machine goes here, for all benches at once.
inline void print_header(const std::string& bench_line) {
  std::printf("%s\n%s\n", bench_line.c_str(), posemb::describe_streaming_stores().c_str());
}

}  // namespace posemb::bench
