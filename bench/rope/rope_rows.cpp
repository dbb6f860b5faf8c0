// bench_rope's RoPE rows: the large tensor in every configuration (pairing, layout, in place or
// not, table or cos/sin in the call, threads, alignment, storage type, larger than the cache)
// against memcpy of the same bytes; decode against the scalar reference; rotate-and-transpose;
// the inverse rotation against the forward one; the table build.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../ratio_reporter.hpp"
#include "common.hpp"
#include "rows.hpp"

namespace posemb::bench::rope {
namespace {

template <class T>
void run_fast(const Config& c, Pair<T>& p) {
  auto x = map(p.x.data() + c.offset, c.layout, c.seq);
  auto out = map(p.out.data() + c.offset, c.layout, c.seq);
  const posemb::Threads threads{c.threads};
  if (c.use_table) {
    const auto& table = table_for<T>(c.pairing, c.seq);
    if (c.in_place) posemb::rotate_inplace(out, 0, table, posemb::RotateOptions{c.layout, threads});
    else posemb::rotate(x, out, 0, table, posemb::RotateOptions{c.layout, threads});
  } else {
    const auto& spec = spec_for(c.pairing);
    if (c.in_place) posemb::rotate_inplace(out, 0, spec, posemb::RotateOptions{c.layout, threads});
    else posemb::rotate(x, out, 0, spec, posemb::RotateOptions{c.layout, threads});
  }
}

// Runs the fast path once (out of place, or in place on a copy of x) and compares every element
// with the scalar reference; returns the largest |fast - reference| / (|a| + |b|) of a pair.
template <class T>
double check(const Config& c) {
  Pair<T>& p = pair_for<T>(c);
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  run_fast(c, p);
  const posemb::RopeSpec& spec = spec_for(c.pairing);
  std::vector<float> cos(spec.pairs()), sin(spec.pairs());
  std::vector<T> head(kDim);
  double worst = 0;
  for (Eigen::Index s = 0; s < c.seq; ++s) {
    reference_cos_sin(spec, s, cos.data(), sin.data());
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = c.offset + (c.layout == TensorLayout::BSHD ? (s * kHeads + h) * kDim
                                                                         : (h * c.seq + s) * kDim);
      std::copy(p.x.begin() + at, p.x.begin() + at + kDim, head.begin());
      reference_rotate(spec, cos.data(), sin.data(), head.data());
      for (int i = 0; i < spec.pairs(); ++i) {
        const int ia = c.pairing == Pairing::Interleaved ? 2 * i : i;
        const int ib = c.pairing == Pairing::Interleaved ? 2 * i + 1 : i + spec.pairs();
        const double norm = std::abs(float(p.x[at + ia])) + std::abs(float(p.x[at + ib])) + 1e-30;
        for (int e : {ia, ib}) {
          worst = std::max(worst, std::abs(double(float(p.out[at + e])) - float(head[e])) / norm);
        }
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

std::string name_of(const Config& c, const char* type) {
  std::string name = std::string("rope/") + (c.use_table ? "table/" : "in_call/") + type + "/" +
                     posemb::to_string(c.pairing) +
                     (c.layout == TensorLayout::BSHD ? "/bshd" : "/bhsd") +
                     (c.in_place ? "/in_place" : "/out_of_place");
  if (c.seq != kSeq) name += "/seq:" + std::to_string(c.seq);
  if (c.threads > 1) name += "/threads:" + std::to_string(c.threads);
  if (c.offset != 0) name += "/unaligned";
  return name;
}

// Large tensor against memcpy of the same bytes.
template <class T>
void bm_rope_vs_memcpy(benchmark::State& state, Config c) {
  Pair<T>& p = pair_for<T>(c);
  run_paired(
      state, [&] { copy_tensor(p, c.offset, c.elements()); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(c.elements() * sizeof(T)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// BHSD (c) against BSHD with otherwise the same configuration, on the same buffers: the ratio is
// BSHD time / BHSD time.
void bm_bhsd_vs_bshd(benchmark::State& state, Config c) {
  Pair<float>& p = pair_for<float>(c);
  Config bshd = c;
  bshd.layout = TensorLayout::BSHD;
  run_paired(
      state, [&] { run_fast(bshd, p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(c.elements() * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// Two threads against one, same configuration.
void bm_rope_threads(benchmark::State& state, Config c) {
  Pair<float>& p = buffers().f32;
  Config one = c;
  one.threads = 1;
  run_paired(
      state, [&] { run_fast(one, p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// Two threads against memcpy on two threads.
void bm_rope_threads_vs_memcpy(benchmark::State& state, Config c) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_two_threads(p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// Decode [1, 1, 32, 128] at position 100000 with cos/sin formed in the call, against the
// scalar reference doing the same.
void bm_decode(benchmark::State& state, Pairing pairing) {
  AlignedVector<float>& x = buffers().decode;
  const posemb::RopeSpec& spec = spec_for(pairing);
  posemb::TensorMap4<float> map4(x.data(), 1, 1, kHeads, kDim);
  run_paired(
      state, [&] { reference_decode(spec, kDecodePosition, x.data()); },
      [&] { posemb::rotate_inplace(map4, kDecodePosition, spec); });
}

// ---------------------------------------------------------------------------------------------
// Rotate while changing layout (BSHD in, BHSD out), and the inverse rotation.

void run_transpose(Pairing pairing, bool use_table, Pair<float>& p) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BHSD);
  const posemb::Layouts layouts(TensorLayout::BSHD, TensorLayout::BHSD);
  if (use_table)
    posemb::rotate(x, out, 0, table_for<float>(pairing),
                   posemb::RotateOptions().with_layouts(layouts));
  else posemb::rotate(x, out, 0, spec_for(pairing), posemb::RotateOptions().with_layouts(layouts));
}

// The BSHD -> BHSD rotation against the scalar reference, read at the transposed offsets.
double check_transpose(Pairing pairing, bool use_table) {
  Pair<float>& p = buffers().f32;
  run_transpose(pairing, use_table, p);
  const posemb::RopeSpec& spec = spec_for(pairing);
  std::vector<float> cos(spec.pairs()), sin(spec.pairs()), head(kDim);
  double worst = 0;
  for (Eigen::Index s = 0; s < kSeq; ++s) {
    reference_cos_sin(spec, s, cos.data(), sin.data());
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index from = (s * kHeads + h) * kDim, to = (h * kSeq + s) * kDim;
      std::copy(p.x.begin() + from, p.x.begin() + from + kDim, head.begin());
      reference_rotate(spec, cos.data(), sin.data(), head.data());
      for (Eigen::Index e = 0; e < kDim; ++e) {
        worst = std::max(worst, double(std::abs(p.out[to + e] - head[e])) / 4.0);
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

void bm_rope_transpose_vs_memcpy(benchmark::State& state, Pairing pairing, bool use_table) {
  Pair<float>& p = buffers().f32;
  run_paired(
      state, [&] { copy_tensor(p, 0); }, [&] { run_transpose(pairing, use_table, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// The inverse rotation against the forward one, out of place, same configuration.
void bm_rope_inverse_vs_forward(benchmark::State& state, Pairing pairing, bool use_table) {
  Pair<float>& p = buffers().f32;
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BSHD);
  const auto rotate = [&](posemb::Rotation rotation) {
    if (use_table) {
      posemb::rotate(x, out, 0, table_for<float>(pairing),
                     posemb::RotateOptions().with_rotation(rotation));
    } else {
      posemb::rotate(x, out, 0, spec_for(pairing), posemb::RotateOptions().with_rotation(rotation));
    }
  };
  run_paired(
      state, [&] { rotate(posemb::Rotation::Forward); },
      [&] { rotate(posemb::Rotation::Inverse); });
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

std::string transpose_name(Pairing pairing, bool use_table) {
  return std::string("rope/") + (use_table ? "table" : "in_call") + "/f32/" +
         posemb::to_string(pairing) + "/bshd_to_bhsd/out_of_place";
}

std::string inverse_name(Pairing pairing, bool use_table) {
  return std::string("rope/") + (use_table ? "table" : "in_call") + "/f32/" +
         posemb::to_string(pairing) + "/bshd/out_of_place/inverse/vs_forward";
}

// Table build into preallocated buffers: `positions` x 64 entries per iteration. No baseline:
// the figure is ns per entry (wall and CPU time, see the summary).
void bm_table_fill(benchmark::State& state) {
  const Eigen::Index positions = state.range(0);
  Buffers& b = buffers();
  const posemb::RopeSpec& spec = spec_for(Pairing::RotateHalf);
  for (auto _ : state) {
    posemb::detail::fill_cos_sin_table(spec.inv_freq.data(), kTablePairs, 1.0, 0, positions,
                                       b.table_cos.data(), b.table_sin.data());
    benchmark::ClobberMemory();
  }
}

// The public constructor (allocates its two matrices: page faults included).
void bm_table_construct(benchmark::State& state) {
  const Eigen::Index positions = state.range(0);
  const posemb::RopeSpec& spec = spec_for(Pairing::RotateHalf);
  for (auto _ : state) {
    posemb::RopeTable<float> table(spec, 0, positions);
    benchmark::DoNotOptimize(table.cos().data());
  }
}

std::vector<Config> large_configs(bool use_table) {
  std::vector<Config> configs;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf})
    for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD})
      for (bool in_place : {false, true})
        configs.push_back({pairing, layout, in_place, use_table, 1});
  return configs;
}

// The large-tensor rows: every configuration of rope/... and its storage type.
std::vector<std::pair<Config, std::string>> rope_rows() {
  std::vector<std::pair<Config, std::string>> rows;
  for (bool use_table : {true, false}) {
    for (const Config& c : large_configs(use_table)) rows.push_back({c, "f32"});
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    rows.push_back({{pairing, TensorLayout::BSHD, false, true, 1, kUnaligned}, "f32"});
    rows.push_back({{pairing, TensorLayout::BSHD, false, true, 2}, "f32"});
    rows.push_back({{pairing, TensorLayout::BSHD, true, true, 2}, "f32"});
    for (bool in_place : {false, true}) {
      rows.push_back({{pairing, TensorLayout::BSHD, in_place, true, 1}, "bf16"});
      rows.push_back({{pairing, TensorLayout::BSHD, in_place, true, 1}, "f16"});
    }
  }
  // Larger than the last-level cache, out of place, both layouts (BHSD is also timed against BSHD).
  for (bool use_table : {true, false}) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
        rows.push_back({{pairing, layout, false, use_table, 1, 0, kLargeSeq}, "f32"});
      }
    }
  }
  return rows;
}

// Largest difference in units in the last place between two floats.
std::int64_t ulps(float a, float c) {
  std::int32_t ia, ic;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ic, &c, 4);
  const std::int64_t la = ia < 0 ? std::int64_t(INT32_MIN) - ia : ia;
  const std::int64_t lc = ic < 0 ? std::int64_t(INT32_MIN) - ic : ic;
  return la > lc ? la - lc : lc - la;
}

}  // namespace

void check_rope_rows(const CheckReport& report) {
  for (const auto& [c, type] : rope_rows()) {
    const std::string name = name_of(c, type.c_str());
    if (type == "f32") report(name, check<float>(c), 4e-7);
    else if (type == "f16") report(name, check<Eigen::half>(c), 1.0 / 1024);
    else report(name, check<Eigen::bfloat16>(c), 1.0 / 128);
  }
}

void check_decode(const CheckReport& report) {
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    AlignedVector<float> fast = buffers().decode, reference = buffers().decode;
    posemb::TensorMap4<float> map4(fast.data(), 1, 1, kHeads, kDim);
    posemb::rotate_inplace(map4, kDecodePosition, spec_for(pairing));
    reference_decode(spec_for(pairing), kDecodePosition, reference.data());
    double worst = 0;
    for (std::size_t i = 0; i < fast.size(); ++i)
      worst = std::max(worst, double(std::abs(fast[i] - reference[i])));
    report(std::string("decode/") + posemb::to_string(pairing) + " (absolute, |x| <= 2)", worst,
           2e-6);
  }
}

// The table: every entry of 131072 positions x 64 frequencies against libm.
bool check_table() {
  Buffers& b = buffers();
  const posemb::RopeSpec& spec = spec_for(Pairing::RotateHalf);
  posemb::detail::fill_cos_sin_table(spec.inv_freq.data(), kTablePairs, 1.0, 0, kTablePositions,
                                     b.table_cos.data(), b.table_sin.data());
  std::int64_t worst = 0, off_by_one = 0;
  for (Eigen::Index p = 0; p < kTablePositions; ++p) {
    for (Eigen::Index i = 0; i < kTablePairs; ++i) {
      const double angle = std::remainder(double(p) * spec.inv_freq[i], kTwoPi);
      const std::int64_t dc = ulps(b.table_cos[p * kTablePairs + i], float(std::cos(angle)));
      const std::int64_t ds = ulps(b.table_sin[p * kTablePairs + i], float(std::sin(angle)));
      worst = std::max({worst, dc, ds});
      off_by_one += (dc > 0) + (ds > 0);
    }
  }
  const bool pass = worst <= 1;
  std::printf(
      "check table 131072 x 64 float: max %lld ulp from libm cos/sin of the double angle "
      "(%lld of %lld values differ by 1 ulp) %s\n",
      (long long)worst, (long long)off_by_one, (long long)(2 * kTablePositions * kTablePairs),
      pass ? "ok" : "FAILED");
  return pass;
}

void check_transpose_rows(const CheckReport& report) {
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (bool use_table : {true, false}) {
      report(transpose_name(pairing, use_table) + " (absolute / 4)",
             check_transpose(pairing, use_table), 4e-7);
    }
  }
}

void register_rope_rows() {
  for (const auto& [c, type] : rope_rows()) {
    const std::string name = name_of(c, type.c_str());
    if (c.threads > 1) {
      benchmark::RegisterBenchmark((name + "/vs_one_thread").c_str(), bm_rope_threads, c)
          ->UseManualTime();
      benchmark::RegisterBenchmark((name + "/vs_memcpy").c_str(), bm_rope_threads_vs_memcpy, c)
          ->UseManualTime();
    } else if (type == "f32") {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<float>, c)->UseManualTime();
      if (c.seq == kLargeSeq && c.layout == TensorLayout::BHSD) {
        benchmark::RegisterBenchmark((name + "/vs_bshd").c_str(), bm_bhsd_vs_bshd, c)
            ->UseManualTime();
      }
    } else if (type == "f16") {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<Eigen::half>, c)
          ->UseManualTime();
    } else {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<Eigen::bfloat16>, c)
          ->UseManualTime();
    }
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    benchmark::RegisterBenchmark((std::string("decode/") + posemb::to_string(pairing)).c_str(),
                                 bm_decode, pairing)
        ->UseManualTime();
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (bool use_table : {true, false}) {
      benchmark::RegisterBenchmark(transpose_name(pairing, use_table).c_str(),
                                   bm_rope_transpose_vs_memcpy, pairing, use_table)
          ->UseManualTime();
      benchmark::RegisterBenchmark(inverse_name(pairing, use_table).c_str(),
                                   bm_rope_inverse_vs_forward, pairing, use_table)
          ->UseManualTime();
    }
  }
}

void register_table_rows() {
  benchmark::RegisterBenchmark("table/fill", bm_table_fill)->Arg(kTablePositions)->Arg(kSeq);
  benchmark::RegisterBenchmark("table/construct", bm_table_construct)->Arg(kSeq);
}

void print_rope_summary(const RatioReporter& reporter) {
  for (const auto& [c, type] : rope_rows()) {
    const std::string name = name_of(c, type.c_str());
    if (c.threads > 1) {
      print_ratio(reporter, name + "/vs_memcpy", "of 2-thread memcpy bandwidth,", 0.9);
      print_info(reporter, name + "/vs_one_thread", "speedup over 1 thread");
    } else if (type == "f32") {
      print_ratio(reporter, name, "of memcpy bandwidth,", c.use_table ? 0.8 : 0.6);
      if (c.seq == kLargeSeq && c.layout == TensorLayout::BHSD) {
        print_ratio(reporter, name + "/vs_bshd", "BSHD time / BHSD time,", 0.9);
      }
    } else {
      print_ratio(reporter, name, "of memcpy bandwidth (same bytes),", 0.7);
    }
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    print_ratio(reporter, std::string("decode/") + posemb::to_string(pairing),
                "speedup over the scalar reference,", 4.0);
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (bool use_table : {true, false}) {
      print_ratio(reporter, transpose_name(pairing, use_table), "of memcpy bandwidth,", 0.8);
      print_ratio(reporter, inverse_name(pairing, use_table), "forward time / inverse time,", 0.9);
    }
  }
}

void print_table_summary(const RatioReporter& reporter) {
  for (Eigen::Index positions : {kTablePositions, kSeq}) {
    const std::string name = "table/fill/" + std::to_string(positions);
    if (const RatioReporter::Result* r = reporter.find(name)) {
      const double entries = double(positions * kTablePairs);
      const double ns = r->real * 1e9 / entries;
      std::printf(
          "%-60s %7.3f  ns per (position, frequency) entry (CPU time: %.3f), target <= 1.50  %s\n",
          name.c_str(), ns, r->cpu * 1e9 / entries, ns <= 1.5 ? "met" : "MISSED");
    }
  }
  if (const RatioReporter::Result* r = reporter.find("table/construct/2048")) {
    const double entries = double(kSeq * kTablePairs);
    std::printf(
        "%-60s %7.3f  ns per entry, RopeTable constructor incl. allocation (CPU time: %.3f)\n",
        "table/construct/2048", r->real * 1e9 / entries, r->cpu * 1e9 / entries);
  }
}

}  // namespace posemb::bench::rope
