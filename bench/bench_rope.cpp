// RoPE benchmarks: every fast path is first checked against the plain scalar reference (the
// RoFormer formula with libm cos/sin of the double angle), then timed with Google Benchmark.
// The summary at the end prints each figure as a RATIO to a baseline timed in the same process
// (memcpy of the same bytes, the scalar reference, one thread), because the machines we run on
// are shared and their absolute times are not comparable across runs. See bench/README.md.
//
// Shapes: x [1, 2048, 32, 128] (BSHD) or [1, 32, 2048, 128] (BHSD), positions 0..2047 (RoPE,
// and FoPE with 8 key-value heads of coefficients, training length 4096, a prebuilt table;
// M-RoPE with Qwen2-VL's sections [16, 24, 24] or Qwen3-VL's interleaved [24, 20, 20] at the
// positions of a prompt text:64, image 1x64x64, text:960, from a prebuilt table);
// decode x [1, 1, 32, 128] at position 100000; table 131072 positions x 64 frequencies; and,
// larger than the last-level cache, x [1, 8192, 32, 128] (BSHD) or [1, 32, 8192, 128] (BHSD),
// positions 0..8191, float32 out of place (128 MiB each for x and out).
// Eigen's ThreadPoolDevice (the caller's pool rows) needs this before Eigen is included.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "posemb/eigen_threads.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/attention/fused.hpp"
#include "posemb/isa.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/streaming_stores.hpp"

// Which of the two bench builds this is (bench/CMakeLists.txt): "default" or "native".
#ifndef POSEMB_BENCH_BUILD
#define POSEMB_BENCH_BUILD "unnamed"
#endif

namespace {

using posemb::Pairing;
using posemb::TensorLayout;

constexpr Eigen::Index kBatch = 1, kSeq = 2048, kHeads = 32, kDim = 128;
constexpr Eigen::Index kElements = kBatch * kSeq * kHeads * kDim;  // 2^23: 32 MiB in float
// Larger than the last-level cache: x [1, 8192, 32, 128] (BSHD) or [1, 32, 8192, 128] (BHSD),
// 128 MiB in float, so x and out stream from memory.
constexpr Eigen::Index kLargeSeq = 8192;
constexpr Eigen::Index kLargeElements = kBatch * kLargeSeq * kHeads * kDim;
constexpr std::int64_t kDecodePosition = 100000;
constexpr Eigen::Index kTablePositions = 131072, kTablePairs = 64;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// ---------------------------------------------------------------------------------------------
// The scalar reference: theta = remainder(p * inv_freq_i, 2 pi) in double, cos/sin by libm,
// rounded to float, then a' = a c - b s, b' = a s + b c for each pair of each head.
// Kept scalar on purpose: it is the baseline the fast paths are measured against.

// cos, sin: [pairs] for one position.
__attribute__((optimize("no-tree-vectorize"))) void reference_cos_sin(
    const posemb::RopeSpec& spec, std::int64_t position, float* cos, float* sin) {
  for (int i = 0; i < spec.pairs(); ++i) {
    const double angle = std::remainder(static_cast<double>(position) * spec.inv_freq[i], kTwoPi);
    cos[i] = static_cast<float>(spec.attention_scale * std::cos(angle));
    sin[i] = static_cast<float>(spec.attention_scale * std::sin(angle));
  }
}

// x: one head [head_dim], rotated in place with precomputed cos/sin [pairs].
template <class T>
__attribute__((optimize("no-tree-vectorize"))) void reference_rotate(
    const posemb::RopeSpec& spec, const float* cos, const float* sin, T* x) {
  const int half = spec.pairs();
  for (int i = 0; i < half; ++i) {
    const int ia = spec.pairing == Pairing::Interleaved ? 2 * i : i;
    const int ib = spec.pairing == Pairing::Interleaved ? 2 * i + 1 : i + half;
    const float a = static_cast<float>(x[ia]), b = static_cast<float>(x[ib]);
    x[ia] = static_cast<T>(a * cos[i] - b * sin[i]);
    x[ib] = static_cast<T>(a * sin[i] + b * cos[i]);
  }
}

// The decode step the way the scalar reference does it: cos/sin once, then every head.
// x: [heads, head_dim]
__attribute__((optimize("no-tree-vectorize"))) void reference_decode(const posemb::RopeSpec& spec,
                                                                     std::int64_t position,
                                                                     float* x) {
  float cos[64], sin[64];
  reference_cos_sin(spec, position, cos, sin);
  for (Eigen::Index h = 0; h < kHeads; ++h) reference_rotate(spec, cos, sin, x + h * kDim);
}

// ---------------------------------------------------------------------------------------------
// Buffers, allocated and touched once (first touch of fresh pages costs more than a rotation).

// Tensors start on a 64-byte boundary, as PyTorch allocates them (and Eigen in a build whose
// vectors are 512 bits wide); the "unaligned" benchmarks map them kUnaligned elements further
// on. The alignment is asked for explicitly: Eigen::aligned_allocator aligns to the build's own
// vector width, 16 bytes in a default x86-64 build, which would leave the default bench build's
// tensors 16 bytes past a cache line (glibc's large blocks) and its 512-bit accesses split in
// two, a different workload from the native build's.
constexpr Eigen::Index kPadding = 16, kUnaligned = 4;
constexpr std::size_t kAlignment = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kAlignment)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kAlignment)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const { return false; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

template <class T>
struct Pair {
  AlignedVector<T> x, out;  // [elements + kPadding]
};

struct Buffers {
  Pair<float> f32;
  Pair<Eigen::half> f16;
  Pair<Eigen::bfloat16> bf16;
  std::vector<float> table_cos, table_sin;  // [kTablePositions, kTablePairs]
  AlignedVector<float> decode;              // [kHeads, kDim]
};

template <class T>
void fill(Pair<T>& pair, std::uint32_t seed, Eigen::Index elements = kElements) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  pair.x.resize(elements + kPadding);
  pair.out.resize(elements + kPadding);
  for (auto& v : pair.x) v = static_cast<T>(dist(gen));
  std::copy(pair.x.begin(), pair.x.end(), pair.out.begin());
}

Buffers& buffers() {
  static Buffers b = [] {
    Buffers made;
    fill(made.f32, 1u);
    fill(made.f16, 2u);
    fill(made.bf16, 3u);
    made.table_cos.assign(kTablePositions * kTablePairs, 0.0f);
    made.table_sin.assign(kTablePositions * kTablePairs, 0.0f);
    made.decode.resize(kHeads * kDim);
    std::mt19937 gen(4u);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (auto& v : made.decode) v = dist(gen);
    return made;
  }();
  return b;
}

// The float pair for the larger-than-cache shape, allocated and touched at its first use.
Pair<float>& large_f32() {
  static Pair<float> pair = [] {
    Pair<float> made;
    fill(made, 6u, kLargeElements);
    return made;
  }();
  return pair;
}

const posemb::RopeSpec& spec_for(Pairing pairing) {
  static const posemb::RopeSpec interleaved = posemb::default_rope_spec(128, 10000.0, Pairing::Interleaved);
  static const posemb::RopeSpec rotate_half = posemb::default_rope_spec(128, 10000.0, Pairing::RotateHalf);
  return pairing == Pairing::Interleaved ? interleaved : rotate_half;
}

template <class T>
const posemb::RopeTable<T>& table_for(Pairing pairing, Eigen::Index seq = kSeq) {
  static const posemb::RopeTable<T> interleaved(spec_for(Pairing::Interleaved), 0, kSeq);
  static const posemb::RopeTable<T> rotate_half(spec_for(Pairing::RotateHalf), 0, kSeq);
  if (seq == kLargeSeq) {
    static const posemb::RopeTable<T> large_interleaved(spec_for(Pairing::Interleaved), 0, kLargeSeq);
    static const posemb::RopeTable<T> large_rotate_half(spec_for(Pairing::RotateHalf), 0, kLargeSeq);
    return pairing == Pairing::Interleaved ? large_interleaved : large_rotate_half;
  }
  return pairing == Pairing::Interleaved ? interleaved : rotate_half;
}

template <class T>
Pair<T>& pair_of(Buffers& b) {
  if constexpr (std::is_same_v<T, float>) return b.f32;
  else if constexpr (std::is_same_v<T, Eigen::half>) return b.f16;
  else return b.bf16;
}

template <class T>
posemb::TensorMap4<T> map(T* data, TensorLayout layout, Eigen::Index seq = kSeq) {
  return layout == TensorLayout::BSHD ? posemb::TensorMap4<T>(data, kBatch, seq, kHeads, kDim)
                                      : posemb::TensorMap4<T>(data, kBatch, kHeads, seq, kDim);
}

// One configuration of the large benchmark.
struct Config {
  Pairing pairing;
  TensorLayout layout;
  bool in_place;
  bool use_table;  // false: cos/sin formed inside the call
  int threads;
  Eigen::Index offset = 0;  // elements from the 64-byte boundary where the buffers start
  Eigen::Index seq = kSeq;  // kSeq or kLargeSeq (float only)
  Eigen::Index elements() const { return kBatch * seq * kHeads * kDim; }
};

// The buffers of a configuration: the kSeq pair of T, or the larger-than-cache float pair.
template <class T>
Pair<T>& pair_for(const Config& c) {
  if constexpr (std::is_same_v<T, float>) {
    if (c.seq == kLargeSeq) return large_f32();
  }
  return pair_of<T>(buffers());
}

template <class T>
void run_fast(const Config& c, Pair<T>& p) {
  auto x = map(p.x.data() + c.offset, c.layout, c.seq);
  auto out = map(p.out.data() + c.offset, c.layout, c.seq);
  const posemb::Threads threads{c.threads};
  if (c.use_table) {
    const auto& table = table_for<T>(c.pairing, c.seq);
    if (c.in_place) posemb::apply_rope_inplace(out, 0, table, c.layout, threads);
    else posemb::apply_rope(x, out, 0, table, c.layout, threads);
  } else {
    const auto& spec = spec_for(c.pairing);
    if (c.in_place) posemb::apply_rope_inplace(out, 0, spec, c.layout, threads);
    else posemb::apply_rope(x, out, 0, spec, c.layout, threads);
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
                     posemb::to_string(c.pairing) + (c.layout == TensorLayout::BSHD ? "/bshd" : "/bhsd") +
                     (c.in_place ? "/in_place" : "/out_of_place");
  if (c.seq != kSeq) name += "/seq:" + std::to_string(c.seq);
  if (c.threads > 1) name += "/threads:" + std::to_string(c.threads);
  if (c.offset != 0) name += "/unaligned";
  return name;
}

// ---------------------------------------------------------------------------------------------
// Benchmarks. Each iteration runs the baseline and then the measured code, timing both; the
// reported time is the measured code's, and the counter "ratio" is the median over iterations
// of baseline time / measured time. Measured back to back, both see the same load from other
// processes, which wall times taken minutes apart on a shared machine do not.

using Clock = std::chrono::steady_clock;

template <class Baseline, class Measured>
void run_paired(benchmark::State& state, const Baseline& baseline, const Measured& measured) {
  std::vector<double> ratios;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    baseline();
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    measured();
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    const double base = std::chrono::duration<double>(t1 - t0).count();
    const double time = std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(time);
    ratios.push_back(base / time);
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  state.counters["ratio"] = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
}

// memcpy of a tensor's bytes (read + write the same number of bytes as a rotation).
template <class T>
void copy_tensor(Pair<T>& p, Eigen::Index offset, Eigen::Index elements = kElements) {
  std::memcpy(p.out.data() + offset, p.x.data() + offset, elements * sizeof(T));
}

// Large tensor against memcpy of the same bytes.
template <class T>
void bm_rope_vs_memcpy(benchmark::State& state, Config c) {
  Pair<T>& p = pair_for<T>(c);
  run_paired(state, [&] { copy_tensor(p, c.offset, c.elements()); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(c.elements() * sizeof(T)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// BHSD (c) against BSHD with otherwise the same configuration, on the same buffers: the ratio is
// BSHD time / BHSD time.
void bm_bhsd_vs_bshd(benchmark::State& state, Config c) {
  Pair<float>& p = pair_for<float>(c);
  Config bshd = c;
  bshd.layout = TensorLayout::BSHD;
  run_paired(state, [&] { run_fast(bshd, p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(c.elements() * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// Two threads against one, same configuration.
void bm_rope_threads(benchmark::State& state, Config c) {
  Pair<float>& p = buffers().f32;
  Config one = c;
  one.threads = 1;
  run_paired(state, [&] { run_fast(one, p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// memcpy of the float tensor on two threads, each copying one half: what the machine gives two
// threads for the same bytes.
void copy_two_threads(Pair<float>& p) {
  const Eigen::Index half = kElements / 2;
  posemb::detail::parallel_for(2, 2, [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index part = begin; part < end; ++part) {
      std::memcpy(p.out.data() + part * half, p.x.data() + part * half, half * sizeof(float));
    }
  });
}

// Two threads against memcpy on two threads.
void bm_rope_threads_vs_memcpy(benchmark::State& state, Config c) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { copy_two_threads(p); }, [&] { run_fast(c, p); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// memcpy on two threads against one: how much a second thread can gain on this machine at all.
void bm_memcpy_threads(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { copy_tensor(p, 0); }, [&] { copy_two_threads(p); });
}

// Decode [1, 1, 32, 128] at position 100000 with cos/sin formed in the call, against the
// scalar reference doing the same.
void bm_decode(benchmark::State& state, Pairing pairing) {
  AlignedVector<float>& x = buffers().decode;
  const posemb::RopeSpec& spec = spec_for(pairing);
  posemb::TensorMap4<float> map4(x.data(), 1, 1, kHeads, kDim);
  run_paired(state, [&] { reference_decode(spec, kDecodePosition, x.data()); },
             [&] { posemb::apply_rope_inplace(map4, kDecodePosition, spec); });
}

// ---------------------------------------------------------------------------------------------
// Rotate while changing layout (BSHD in, BHSD out), and the inverse rotation.

void run_transpose(Pairing pairing, bool use_table, Pair<float>& p) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BHSD);
  const posemb::Layouts layouts(TensorLayout::BSHD, TensorLayout::BHSD);
  if (use_table) posemb::apply_rope(x, out, 0, table_for<float>(pairing), layouts);
  else posemb::apply_rope(x, out, 0, spec_for(pairing), layouts);
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
  run_paired(state, [&] { copy_tensor(p, 0); }, [&] { run_transpose(pairing, use_table, p); });
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
      posemb::apply_rope(x, out, 0, table_for<float>(pairing), TensorLayout::BSHD, {}, rotation);
    } else {
      posemb::apply_rope(x, out, 0, spec_for(pairing), TensorLayout::BSHD, {}, rotation);
    }
  };
  run_paired(state, [&] { rotate(posemb::Rotation::Forward); },
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

// ---------------------------------------------------------------------------------------------
// FoPE through the rotary engine: queries [1, 2048, 32, 128] with 8 coefficient heads
// (grouped-query attention), training length 4096, a prebuilt FopeTable for positions 0..2047.

constexpr int kFopeKvHeads = 8;

const posemb::Fope& fope_model() {
  static const posemb::Fope fope = [] {
    posemb::FopeConfig config;
    config.head_dim = int(kDim);
    config.n_heads = int(kHeads);
    config.n_kv_heads = kFopeKvHeads;
    config.train_length = 4096;
    config.seed = 5;
    return posemb::make_fope(config);
  }();
  return fope;
}

const posemb::FopeTable<float>& fope_table() {
  static const posemb::FopeTable<float> table(fope_model(), 0, kSeq);
  return table;
}

void run_fope(Pair<float>& p, int threads) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BSHD);
  posemb::apply_fope(x, out, 0, fope_table(), TensorLayout::BSHD, posemb::Threads{threads});
}

// FoPE on `threads` threads against a plain scalar evaluation: C and S of every coefficient
// head from fope_cos_sin (double), then the rotate-half rotation of each query head with its
// group's row. Returns the largest |fast - reference| / (|a| + |b|) of a pair.
double check_fope(int threads) {
  Pair<float>& p = buffers().f32;
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  run_fope(p, threads);
  const posemb::Fope& fope = fope_model();
  const int slots = fope.slots();
  const Eigen::Index group = kHeads / kFopeKvHeads;
  double worst = 0;
  for (Eigen::Index s = 0; s < kSeq; ++s) {
    const auto [cos, sin] = posemb::fope_cos_sin(fope, s);
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      for (int j = 0; j < slots; ++j) {
        const double c = float(cos(h / group, j)), n = float(sin(h / group, j));
        const double a = p.x[at + j], b = p.x[at + j + slots];
        const double norm = std::abs(a) + std::abs(b) + 1e-30;
        worst = std::max(worst, std::abs(p.out[at + j] - (a * c - b * n)) / norm);
        worst = std::max(worst, std::abs(p.out[at + j + slots] - (b * c + a * n)) / norm);
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

// FoPE (one thread) against memcpy of the same bytes.
void bm_fope_vs_memcpy(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { copy_tensor(p, 0); }, [&] { run_fope(p, 1); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// FoPE on two threads against one.
void bm_fope_threads(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { run_fope(p, 1); }, [&] { run_fope(p, 2); });
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// FoPE on two threads against memcpy on two threads.
void bm_fope_threads_vs_memcpy(benchmark::State& state) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { copy_two_threads(p); }, [&] { run_fope(p, 2); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

// ---------------------------------------------------------------------------------------------
// M-RoPE through the rotary engine: x [1, 2048, 32, 128], rotate-half, the (t, h, w) positions
// of text:64, an image of 32 x 32 merged patches (1x64x64), text:960, gathered per pair from a
// prebuilt 1-D table (MropeTable<float>).

const posemb::MropeIndex& mrope_prompt() {
  static const posemb::MropeIndex index = posemb::mrope_position_ids(
      {posemb::MropeSegment::text(64), posemb::MropeSegment::image(1, 64, 64),
       posemb::MropeSegment::text(960)},
      {posemb::MropeFamily::Qwen2VL, 2});
  return index;
}

const posemb::MropeSpec& mrope_spec(posemb::MropeLayout layout) {
  static const posemb::MropeSpec chunked = posemb::make_mrope_spec(
      spec_for(Pairing::RotateHalf), {16, 24, 24}, posemb::MropeLayout::Chunked);
  static const posemb::MropeSpec interleaved = posemb::make_mrope_spec(
      spec_for(Pairing::RotateHalf), {24, 20, 20}, posemb::MropeLayout::Interleaved);
  return layout == posemb::MropeLayout::Chunked ? chunked : interleaved;
}

const posemb::MropeTable<float>& mrope_table(posemb::MropeLayout layout) {
  const std::int64_t count = mrope_prompt().positions.maxCoeff() + 1;
  static const posemb::MropeTable<float> chunked(mrope_spec(posemb::MropeLayout::Chunked), 0, count);
  static const posemb::MropeTable<float> interleaved(mrope_spec(posemb::MropeLayout::Interleaved), 0, count);
  return layout == posemb::MropeLayout::Chunked ? chunked : interleaved;
}

void run_mrope(Pair<float>& p, posemb::MropeLayout layout) {
  auto x = map(p.x.data(), TensorLayout::BSHD);
  auto out = map(p.out.data(), TensorLayout::BSHD);
  posemb::apply_mrope(x, out, mrope_prompt().positions, mrope_table(layout));
}

// M-RoPE against the scalar reference: each pair's cos/sin from reference_cos_sin at its axis'
// position, then the rotate-half rotation. Returns the largest |fast - reference| / (|a| + |b|).
double check_mrope(posemb::MropeLayout layout) {
  Pair<float>& p = buffers().f32;
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  run_mrope(p, layout);
  const posemb::MropeSpec& spec = mrope_spec(layout);
  const posemb::PositionMatrix& thw = mrope_prompt().positions;
  float axis_cos[3][64], axis_sin[3][64], cos[64], sin[64];
  std::vector<float> head(kDim);
  double worst = 0;
  for (Eigen::Index s = 0; s < kSeq; ++s) {
    for (int a = 0; a < 3; ++a) reference_cos_sin(spec.rope, thw(a, s), axis_cos[a], axis_sin[a]);
    for (int j = 0; j < spec.rope.pairs(); ++j) {
      const int a = posemb::mrope_axis(spec, j);
      cos[j] = axis_cos[a][j];
      sin[j] = axis_sin[a][j];
    }
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      std::copy(p.x.begin() + at, p.x.begin() + at + kDim, head.begin());
      reference_rotate(spec.rope, cos, sin, head.data());
      for (int i = 0; i < spec.rope.pairs(); ++i) {
        const double norm = std::abs(p.x[at + i]) + std::abs(p.x[at + i + 64]) + 1e-30;
        for (int e : {i, i + 64}) worst = std::max(worst, double(std::abs(p.out[at + e] - head[e])) / norm);
      }
    }
  }
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
  return worst;
}

// M-RoPE (one thread, out of place) against memcpy of the same bytes.
void bm_mrope_vs_memcpy(benchmark::State& state, posemb::MropeLayout layout) {
  Pair<float>& p = buffers().f32;
  run_paired(state, [&] { copy_tensor(p, 0); }, [&] { run_mrope(p, layout); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(kElements * sizeof(float)));
  std::copy(p.x.begin(), p.x.end(), p.out.begin());
}

std::string mrope_name(posemb::MropeLayout layout) {
  return std::string("mrope/table/f32/rotate_half/bshd/out_of_place/") + posemb::to_string(layout);
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

// Fused scores [2048 x 128] x [2048 x 128], one head, RoPE inside the product (cos/sin from a
// table), against Eigen's GEMM of the same shape on q and k rotated beforehand.
constexpr Eigen::Index kScoreSeq = 2048;
using RowsF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct ScoreInputs {
  RowsF q, k, q_rotated, k_rotated, scores;
  posemb::PositionVector positions;
  posemb::RopeTable<float> table{spec_for(Pairing::RotateHalf), 0, kScoreSeq};
  ScoreInputs() {
    std::mt19937 gen(5u);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    q.resize(kScoreSeq, kDim);
    k.resize(kScoreSeq, kDim);
    for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = dist(gen);
    for (Eigen::Index i = 0; i < k.size(); ++i) k.data()[i] = dist(gen);
    positions.resize(kScoreSeq);
    for (Eigen::Index i = 0; i < kScoreSeq; ++i) positions[i] = i;
    q_rotated = q;
    k_rotated = k;
    posemb::apply_rope_inplace(q_rotated, positions, table);
    posemb::apply_rope_inplace(k_rotated, positions, table);
    scores.resize(kScoreSeq, kScoreSeq);
  }
};

ScoreInputs& score_inputs() {
  static ScoreInputs inputs;
  return inputs;
}

// scores = scale * q_rotated k_rotatedᵀ, the unfused baseline.
void gemm_scores(ScoreInputs& in, RowsF& scores) {
  const float scale = 1.0f / std::sqrt(float(kDim));
  scores.noalias() = scale * (in.q_rotated * in.k_rotated.transpose());
}

constexpr double kScoreSlope = 0.0625;

posemb::ScoreOptions score_options(bool alibi_causal) {
  posemb::ScoreOptions options;
  if (alibi_causal) {
    options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, kScoreSlope)};
    options.causal = true;
  }
  return options;
}

void bm_fused_scores(benchmark::State& state, bool alibi_causal) {
  ScoreInputs& in = score_inputs();
  RowsF baseline(kScoreSeq, kScoreSeq);
  const posemb::ScoreOptions options = score_options(alibi_causal);
  run_paired(state, [&] { gemm_scores(in, baseline); },
             [&] { posemb::fused_rope_scores(in.q, in.positions, in.k, in.positions, in.scores, in.table, options); });
}

// Largest |fused - (GEMM on rotated q, k + bias, mask)| over all scores.
double check_fused(bool alibi_causal) {
  ScoreInputs& in = score_inputs();
  const posemb::ScoreOptions options = score_options(alibi_causal);
  posemb::fused_rope_scores(in.q, in.positions, in.k, in.positions, in.scores, in.table, options);
  RowsF expected(kScoreSeq, kScoreSeq);
  gemm_scores(in, expected);
  double worst = 0;
  for (Eigen::Index i = 0; i < kScoreSeq; ++i) {
    for (Eigen::Index j = 0; j < kScoreSeq; ++j) {
      if (options.causal && j > i) {
        if (in.scores(i, j) != -std::numeric_limits<float>::infinity()) return 1e30;
        continue;
      }
      const double want = double(expected(i, j)) - (alibi_causal ? kScoreSlope : 0.0) * double(i - j);
      worst = std::max(worst, std::abs(double(in.scores(i, j)) - want));
    }
  }
  return worst;
}

// ---------------------------------------------------------------------------------------------
// Summary, from the fastest repetition of each benchmark (times) and the median repetition
// (ratios).

class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred || run.iterations == 0) continue;
      // "memcpy/f32/manual_time" or ".../repeats:3" -> "memcpy/f32"
      std::string name = run.benchmark_name();
      for (const char* suffix : {"/repeats:", "/manual_time", "/real_time"}) {
        const auto at = name.find(suffix);
        if (at != std::string::npos) name.erase(at);
      }
      Result& r = results_[name];
      const double real = run.real_accumulated_time / double(run.iterations);
      const double cpu = run.cpu_accumulated_time / double(run.iterations);
      r.real = r.real < 0 ? real : std::min(r.real, real);
      r.cpu = r.cpu < 0 ? cpu : std::min(r.cpu, cpu);
      const auto ratio = run.counters.find("ratio");
      if (ratio != run.counters.end()) r.ratios.push_back(ratio->second.value);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  struct Result {
    double real = -1, cpu = -1;  // seconds per iteration
    std::vector<double> ratios;
    double ratio() const {
      std::vector<double> sorted = ratios;
      std::sort(sorted.begin(), sorted.end());
      return sorted.empty() ? -1 : sorted[sorted.size() / 2];
    }
  };
  const Result* find(const std::string& name) const {
    const auto found = results_.find(name);
    return found == results_.end() ? nullptr : &found->second;
  }

 private:
  std::map<std::string, Result> results_;
};

void print_ratio(const RatioReporter& reporter, const std::string& name, const char* meaning,
                 double target) {
  const RatioReporter::Result* r = reporter.find(name);
  if (r == nullptr) return;
  const double ratio = r->ratio();
  std::printf("%-60s %7.3f  %s >= %.2f  %s\n", name.c_str(), ratio, meaning, target,
              ratio >= target ? "met" : "MISSED");
}

// A figure reported without a target.
void print_info(const RatioReporter& reporter, const std::string& name, const char* meaning) {
  const RatioReporter::Result* r = reporter.find(name);
  if (r == nullptr) return;
  std::printf("%-60s %7.3f  %s (informative)\n", name.c_str(), r->ratio(), meaning);
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

std::vector<Config> large_configs(bool use_table) {
  std::vector<Config> configs;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf})
    for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD})
      for (bool in_place : {false, true}) configs.push_back({pairing, layout, in_place, use_table, 1});
  return configs;
}


// ---------------------------------------------------------------------------------------------
// Streaming stores and the caller's thread pool (posemb/streaming_stores.hpp, Threads::pool).
// Out of place, x [1, tokens, 32, 128] float32 BSHD, positions 0..tokens-1, at 2048 tokens
// (32 MiB) and 16384 tokens (256 MiB, at least twice the last-level cache), each against a
// streaming-store copy of the same bytes (the limit: it reads x and writes out without reading
// out first) and against memcpy. Threads come from an Eigen::ThreadPoolDevice through
// posemb::eigen_threads, the streaming copy on the same threads split the same way; the counts
// to try are --stream_threads=1,2 (or POSEMB_BENCH_THREADS), by default 1 .. the core count.

constexpr Eigen::Index kStreamTokens[] = {2048, 16384};

// x and out of one size, 64-byte aligned, written once before any timing (first touch of fresh
// pages costs more than a pass over them).
struct StreamTensor {
  Eigen::Index tokens = 0;
  float* x = nullptr;
  float* out = nullptr;
  Eigen::Index elements() const { return tokens * kHeads * kDim; }
  std::size_t bytes() const { return std::size_t(elements()) * sizeof(float); }
};

StreamTensor& stream_tensor(Eigen::Index tokens) {
  static std::map<Eigen::Index, StreamTensor> made;
  StreamTensor& t = made[tokens];
  if (t.x == nullptr) {
    t.tokens = tokens;
    t.x = static_cast<float*>(std::aligned_alloc(64, t.bytes()));
    t.out = static_cast<float*>(std::aligned_alloc(64, t.bytes()));
    std::mt19937 gen(9u);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (Eigen::Index i = 0; i < t.elements(); ++i) t.x[i] = dist(gen);
    std::memcpy(t.out, t.x, t.bytes());
  }
  return t;
}

template <class T>
const posemb::RopeTable<T>& stream_table(Pairing pairing) {
  constexpr Eigen::Index longest = kStreamTokens[1];
  static const posemb::RopeTable<T> interleaved(spec_for(Pairing::Interleaved), 0, longest);
  static const posemb::RopeTable<T> rotate_half(spec_for(Pairing::RotateHalf), 0, longest);
  return pairing == Pairing::Interleaved ? interleaved : rotate_half;
}

// Thread counts to try: --stream_threads=1,2,4 (taken out of argv before Google Benchmark sees
// it) or POSEMB_BENCH_THREADS; by default 1 .. hardware_concurrency.
std::vector<int>& stream_thread_counts() {
  static std::vector<int> counts;
  return counts;
}

void parse_stream_threads(int& argc, char** argv) {
  std::string list;
  if (const char* env = std::getenv("POSEMB_BENCH_THREADS")) list = env;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--stream_threads=", 0) == 0) list = arg.substr(17);
    else argv[kept++] = argv[i];
  }
  argc = kept;
  std::vector<int>& counts = stream_thread_counts();
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const int n = std::atoi(list.substr(at, comma - at).c_str());
    if (n >= 1) counts.push_back(n);
    at = comma + 1;
  }
  if (counts.empty()) {
    for (int n = 1; n <= int(std::max(1u, std::thread::hardware_concurrency())); ++n) counts.push_back(n);
  }
}

// An Eigen pool of n threads, made once per count, and its posemb::Threads.
struct StreamPool {
  std::unique_ptr<Eigen::ThreadPool> pool;
  std::unique_ptr<Eigen::ThreadPoolDevice> device;
  posemb::Threads threads;
};

const posemb::Threads& stream_threads(int n) {
  static std::map<int, StreamPool> pools;
  StreamPool& p = pools[n];
  if (!p.pool) {
    p.pool = std::make_unique<Eigen::ThreadPool>(n);
    p.device = std::make_unique<Eigen::ThreadPoolDevice>(p.pool.get(), n);
    p.threads = n == 1 ? posemb::Threads{} : posemb::eigen_threads(*p.device);
  }
  return p.threads;
}

// A streaming-store copy of t's bytes, on the threads of `threads` (contiguous 64-byte aligned
// parts), each part fenced.
void stream_copy_tensor(StreamTensor& t, const posemb::Threads& threads) {
  const std::size_t lines = t.bytes() / 64;
  const auto copy_part = [&](std::size_t part, std::size_t parts) {
    const std::size_t begin = lines * part / parts * 64, end = lines * (part + 1) / parts * 64;
    posemb::detail::stream_copy(reinterpret_cast<char*>(t.out) + begin,
                                reinterpret_cast<const char*>(t.x) + begin, end - begin);
    posemb::detail::stream_fence();
  };
  if (!threads.pool || threads.count == 1) {
    copy_part(0, 1);
    return;
  }
  const std::size_t parts = std::size_t(threads.count);
  threads.pool(parts, [&](std::size_t part) { copy_part(part, parts); });
}

void memcpy_tensor(StreamTensor& t) { std::memcpy(t.out, t.x, t.bytes()); }

struct StreamConfig {
  Eigen::Index tokens;
  Pairing pairing;
  bool use_table;
  int threads;
  posemb::StreamingStores mode = posemb::StreamingStores::Auto;
};

void run_stream_rope(const StreamConfig& c, StreamTensor& t) {
  posemb::TensorMap4<float> x(t.x, 1, t.tokens, kHeads, kDim), out(t.out, 1, t.tokens, kHeads, kDim);
  const posemb::StreamingStores saved = posemb::streaming_stores();
  posemb::set_streaming_stores(c.mode);
  const posemb::Threads& threads = stream_threads(c.threads);
  if (c.use_table) posemb::apply_rope(x, out, 0, stream_table<float>(c.pairing), TensorLayout::BSHD, threads);
  else posemb::apply_rope(x, out, 0, spec_for(c.pairing), TensorLayout::BSHD, threads);
  posemb::set_streaming_stores(saved);
}

// "stream/table/f32/rotate_half/bshd/out_of_place/tokens:2048/threads:1", then "/vs_<baseline>"
// unless baseline is empty.
std::string stream_name(const StreamConfig& c, const char* baseline) {
  std::string name = "stream/" + std::string(c.use_table ? "table" : "in_call") + "/f32/" +
                     posemb::to_string(c.pairing) + "/bshd/out_of_place/tokens:" + std::to_string(c.tokens) +
                     "/threads:" + std::to_string(c.threads);
  if (c.mode != posemb::StreamingStores::Auto) name += std::string("/streaming:") + posemb::to_string(c.mode);
  return *baseline == '\0' ? name : name + "/vs_" + baseline;
}

// Every 61st token and the last against the scalar reference (largest |fast - reference| /
// (|a| + |b|) of a pair).
double check_stream(const StreamConfig& c) {
  StreamTensor& t = stream_tensor(c.tokens);
  std::memset(t.out, 0, t.bytes());
  run_stream_rope(c, t);
  const posemb::RopeSpec& spec = spec_for(c.pairing);
  std::vector<float> cos(spec.pairs()), sin(spec.pairs()), head(kDim);
  double worst = 0;
  for (Eigen::Index s = 0; s < t.tokens; s += (s + 61 < t.tokens ? 61 : std::max<Eigen::Index>(1, t.tokens - 1 - s))) {
    reference_cos_sin(spec, s, cos.data(), sin.data());
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      std::copy(t.x + at, t.x + at + kDim, head.begin());
      reference_rotate(spec, cos.data(), sin.data(), head.data());
      for (int i = 0; i < spec.pairs(); ++i) {
        const int ia = c.pairing == Pairing::Interleaved ? 2 * i : i;
        const int ib = c.pairing == Pairing::Interleaved ? 2 * i + 1 : i + spec.pairs();
        const double norm = std::abs(t.x[at + ia]) + std::abs(t.x[at + ib]) + 1e-30;
        for (int e : {ia, ib}) worst = std::max(worst, std::abs(double(t.out[at + e]) - head[e]) / norm);
      }
    }
    if (s == t.tokens - 1) break;
  }
  return worst;
}

// Against the streaming copy on the same threads, or against memcpy (one thread).
void bm_stream_vs_stream_copy(benchmark::State& state, StreamConfig c) {
  StreamTensor& t = stream_tensor(c.tokens);
  const posemb::Threads& threads = stream_threads(c.threads);
  run_paired(state, [&] { stream_copy_tensor(t, threads); }, [&] { run_stream_rope(c, t); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(t.bytes()));
}

void bm_stream_vs_memcpy(benchmark::State& state, StreamConfig c) {
  StreamTensor& t = stream_tensor(c.tokens);
  run_paired(state, [&] { memcpy_tensor(t); }, [&] { run_stream_rope(c, t); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(t.bytes()));
}

// The streaming copy itself against memcpy (one thread): what streaming stores gain here.
void bm_stream_copy_vs_memcpy(benchmark::State& state, Eigen::Index tokens) {
  StreamTensor& t = stream_tensor(tokens);
  const posemb::Threads& one = stream_threads(1);
  run_paired(state, [&] { memcpy_tensor(t); }, [&] { stream_copy_tensor(t, one); });
}

std::vector<StreamConfig> stream_configs() {
  std::vector<StreamConfig> configs;
  for (Eigen::Index tokens : kStreamTokens)
    for (int threads : stream_thread_counts())
      for (bool use_table : {true, false})
        for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf})
          configs.push_back({tokens, pairing, use_table, threads});
  return configs;
}

// Checks, then registers the section's benchmarks; false if a check failed.
bool register_stream_benchmarks(const std::function<void(const std::string&, double, double)>& report_check) {
  bool ok = true;
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (bool use_table : {true, false}) {
        const StreamConfig c{tokens, pairing, use_table, stream_thread_counts().back()};
        const double error = check_stream(c);
        report_check(stream_name(c, "") + " (every 61st token)", error, 4e-7);
        ok = ok && error <= 4e-7;
      }
    }
  }
  if (!ok) return false;
  for (Eigen::Index tokens : kStreamTokens) {
    benchmark::RegisterBenchmark(("stream/copy/f32/tokens:" + std::to_string(tokens) + "/vs_memcpy").c_str(),
                                 bm_stream_copy_vs_memcpy, tokens)->UseManualTime();
  }
  for (const StreamConfig& c : stream_configs()) {
    benchmark::RegisterBenchmark(stream_name(c, "stream_copy").c_str(), bm_stream_vs_stream_copy, c)->UseManualTime();
    if (c.threads == 1) {
      benchmark::RegisterBenchmark(stream_name(c, "memcpy").c_str(), bm_stream_vs_memcpy, c)->UseManualTime();
    }
  }
  // Ordinary stores forced, for comparison (one thread, table).
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      const StreamConfig c{tokens, pairing, true, 1, posemb::StreamingStores::Never};
      benchmark::RegisterBenchmark(stream_name(c, "stream_copy").c_str(), bm_stream_vs_stream_copy, c)->UseManualTime();
    }
  }
  return true;
}

void print_stream_summary(const RatioReporter& reporter) {
  std::printf("\nStreaming stores (threshold %zu bytes, last-level cache %zu bytes) and the caller's pool\n",
              posemb::streaming_store_threshold(), posemb::last_level_cache_bytes());
  for (Eigen::Index tokens : kStreamTokens) {
    print_info(reporter, "stream/copy/f32/tokens:" + std::to_string(tokens) + "/vs_memcpy",
               "streaming copy / memcpy bandwidth");
  }
  for (const StreamConfig& c : stream_configs()) {
    print_ratio(reporter, stream_name(c, "stream_copy"), "of the streaming copy on as many threads,",
                c.threads == 1 ? 0.9 : 0.85);
    if (c.threads == 1) print_info(reporter, stream_name(c, "memcpy"), "of memcpy bandwidth");
  }
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      const StreamConfig c{tokens, pairing, true, 1, posemb::StreamingStores::Never};
      print_info(reporter, stream_name(c, "stream_copy"), "of the streaming copy, ordinary stores forced");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  parse_stream_threads(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // ---- checks against the scalar reference, before any timing ----
  bool ok = true;
  const auto report_check = [&](const std::string& name, double error, double limit) {
    const bool pass = error <= limit;
    ok = ok && pass;
    std::printf("check %-62s %.2e (limit %.0e) %s\n", name.c_str(), error, limit, pass ? "ok" : "FAILED");
  };
  std::printf("%s build, kernels at level %s (best on this CPU: %s)\n", POSEMB_BENCH_BUILD,
              posemb::to_string(posemb::isa_level()), posemb::to_string(posemb::best_isa_level()));
  std::printf("Checks against the scalar reference: the largest |fast - reference| over every value,\n"
              "divided by |a| + |b| of its pair for rotations, absolute where marked.\n");
  std::vector<std::pair<Config, std::string>> registered;
  for (bool use_table : {true, false}) {
    for (const Config& c : large_configs(use_table)) registered.push_back({c, "f32"});
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    registered.push_back({{pairing, TensorLayout::BSHD, false, true, 1, kUnaligned}, "f32"});
    registered.push_back({{pairing, TensorLayout::BSHD, false, true, 2}, "f32"});
    registered.push_back({{pairing, TensorLayout::BSHD, true, true, 2}, "f32"});
    for (bool in_place : {false, true}) {
      registered.push_back({{pairing, TensorLayout::BSHD, in_place, true, 1}, "bf16"});
      registered.push_back({{pairing, TensorLayout::BSHD, in_place, true, 1}, "f16"});
    }
  }
  // Larger than the last-level cache, out of place, both layouts (BHSD is also timed against BSHD).
  for (bool use_table : {true, false}) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
        registered.push_back({{pairing, layout, false, use_table, 1, 0, kLargeSeq}, "f32"});
      }
    }
  }
  for (const auto& [c, type] : registered) {
    const std::string name = name_of(c, type.c_str());
    if (type == "f32") report_check(name, check<float>(c), 4e-7);
    else if (type == "f16") report_check(name, check<Eigen::half>(c), 1.0 / 1024);
    else report_check(name, check<Eigen::bfloat16>(c), 1.0 / 128);
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    AlignedVector<float> fast = buffers().decode, reference = buffers().decode;
    posemb::TensorMap4<float> map4(fast.data(), 1, 1, kHeads, kDim);
    posemb::apply_rope_inplace(map4, kDecodePosition, spec_for(pairing));
    reference_decode(spec_for(pairing), kDecodePosition, reference.data());
    double worst = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) worst = std::max(worst, double(std::abs(fast[i] - reference[i])));
    report_check(std::string("decode/") + posemb::to_string(pairing) + " (absolute, |x| <= 2)", worst, 2e-6);
  }
  {
    // The table: every entry of 131072 positions x 64 frequencies against libm.
    Buffers& b = buffers();
    const posemb::RopeSpec& spec = spec_for(Pairing::RotateHalf);
    posemb::detail::fill_cos_sin_table(spec.inv_freq.data(), kTablePairs, 1.0, 0, kTablePositions,
                                    b.table_cos.data(), b.table_sin.data());
    std::int64_t worst = 0;
    const auto ulps = [](float a, float c) {
      std::int32_t ia, ic;
      std::memcpy(&ia, &a, 4);
      std::memcpy(&ic, &c, 4);
      const std::int64_t la = ia < 0 ? std::int64_t(INT32_MIN) - ia : ia;
      const std::int64_t lc = ic < 0 ? std::int64_t(INT32_MIN) - ic : ic;
      return la > lc ? la - lc : lc - la;
    };
    std::int64_t off_by_one = 0;
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
    ok = ok && pass;
    std::printf("check table 131072 x 64 float: max %lld ulp from libm cos/sin of the double angle "
                "(%lld of %lld values differ by 1 ulp) %s\n",
                (long long)worst, (long long)off_by_one, (long long)(2 * kTablePositions * kTablePairs),
                pass ? "ok" : "FAILED");
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (bool use_table : {true, false}) {
      report_check(transpose_name(pairing, use_table) + " (absolute / 4)",
                   check_transpose(pairing, use_table), 4e-7);
    }
  }
  for (int threads : {1, 2}) {
    report_check("fope/table/f32/rotate_half/bshd/out_of_place (threads " + std::to_string(threads) + ")",
                 check_fope(threads), 4e-7);
  }
  for (const posemb::MropeLayout layout : {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    report_check(mrope_name(layout), check_mrope(layout), 4e-7);
  }
  for (bool alibi_causal : {false, true}) {
    report_check(alibi_causal ? "fused/rope_alibi_causal (absolute)" : "fused/rope (absolute)",
                 check_fused(alibi_causal), 1e-4);
  }
  ok = ok && register_stream_benchmarks(report_check);
  if (!ok) {
    std::printf("a fast path disagrees with the scalar reference: not timing\n");
    return 1;
  }

  // ---- timing ----
  for (const auto& [c, type] : registered) {
    const std::string name = name_of(c, type.c_str());
    if (c.threads > 1) {
      benchmark::RegisterBenchmark((name + "/vs_one_thread").c_str(), bm_rope_threads, c)->UseManualTime();
      benchmark::RegisterBenchmark((name + "/vs_memcpy").c_str(), bm_rope_threads_vs_memcpy, c)->UseManualTime();
    } else if (type == "f32") {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<float>, c)->UseManualTime();
      if (c.seq == kLargeSeq && c.layout == TensorLayout::BHSD) {
        benchmark::RegisterBenchmark((name + "/vs_bshd").c_str(), bm_bhsd_vs_bshd, c)->UseManualTime();
      }
    } else if (type == "f16") {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<Eigen::half>, c)->UseManualTime();
    } else {
      benchmark::RegisterBenchmark(name.c_str(), bm_rope_vs_memcpy<Eigen::bfloat16>, c)->UseManualTime();
    }
  }
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    benchmark::RegisterBenchmark((std::string("decode/") + posemb::to_string(pairing)).c_str(), bm_decode, pairing)
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
  const std::string fope_name = "fope/table/f32/rotate_half/bshd/out_of_place/kv_heads:8";
  benchmark::RegisterBenchmark(fope_name.c_str(), bm_fope_vs_memcpy)->UseManualTime();
  benchmark::RegisterBenchmark((fope_name + "/threads:2/vs_one_thread").c_str(), bm_fope_threads)
      ->UseManualTime();
  benchmark::RegisterBenchmark((fope_name + "/threads:2/vs_memcpy").c_str(), bm_fope_threads_vs_memcpy)
      ->UseManualTime();
  benchmark::RegisterBenchmark("memcpy/f32/threads:2/vs_one_thread", bm_memcpy_threads)->UseManualTime();
  for (const posemb::MropeLayout layout : {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    benchmark::RegisterBenchmark(mrope_name(layout).c_str(), bm_mrope_vs_memcpy, layout)->UseManualTime();
  }
  benchmark::RegisterBenchmark("fused/rope", bm_fused_scores, false)->UseManualTime();
  benchmark::RegisterBenchmark("fused/rope_alibi_causal", bm_fused_scores, true)->UseManualTime();
  benchmark::RegisterBenchmark("table/fill", bm_table_fill)->Arg(kTablePositions)->Arg(kSeq);
  benchmark::RegisterBenchmark("table/construct", bm_table_construct)->Arg(kSeq);

  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // ---- summary ----
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("\nSummary (%s, %s, %u hardware threads; %s build, kernels at level %s).\n"
              "Ratio = baseline time / measured time for the same work, median over back-to-back\n"
              "pairs.\n",
              date, cpu_model().c_str(), std::thread::hardware_concurrency(), POSEMB_BENCH_BUILD,
              posemb::to_string(posemb::isa_level()));
  std::printf("%-60s %7s  %s\n", "benchmark", "ratio", "meaning, target");
  for (const auto& [c, type] : registered) {
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
      print_ratio(reporter, inverse_name(pairing, use_table),
                  "forward time / inverse time,", 0.9);
    }
  }
  print_ratio(reporter, fope_name, "of memcpy bandwidth,", 0.6);
  print_ratio(reporter, fope_name + "/threads:2/vs_memcpy", "of 2-thread memcpy bandwidth,", 0.9);
  print_info(reporter, fope_name + "/threads:2/vs_one_thread", "speedup over 1 thread");
  print_info(reporter, "memcpy/f32/threads:2/vs_one_thread",
             "memcpy's own speedup on 2 threads: what a second thread can gain here");
  // M-RoPE: of memcpy, and relative to 1-D RoPE's ratio on the same tensor and table path.
  const RatioReporter::Result* rope_1d = reporter.find("rope/table/f32/rotate_half/bshd/out_of_place");
  for (const posemb::MropeLayout layout : {posemb::MropeLayout::Chunked, posemb::MropeLayout::Interleaved}) {
    print_ratio(reporter, mrope_name(layout), "of memcpy bandwidth,", 0.8);
    const RatioReporter::Result* r = reporter.find(mrope_name(layout));
    if (r != nullptr && rope_1d != nullptr) {
      const double relative = r->ratio() / rope_1d->ratio();
      std::printf("%-60s %7.3f  of 1-D RoPE's ratio (rope/table/f32/rotate_half/bshd/out_of_place), >= 0.90  %s\n",
                  (mrope_name(layout) + "/vs_rope").c_str(), relative, relative >= 0.9 ? "met" : "MISSED");
    }
  }
  for (const char* name : {"fused/rope", "fused/rope_alibi_causal"}) {
    if (const RatioReporter::Result* r = reporter.find(name)) {
      const double cost = 1.0 / r->ratio();  // fused time / GEMM time
      std::printf("%-60s %7.3f  time relative to Eigen GEMM on pre-rotated q, k, <= 1.10  %s\n",
                  name, cost, cost <= 1.10 ? "met" : "MISSED");
    }
  }
  for (Eigen::Index positions : {kTablePositions, kSeq}) {
    const std::string name = "table/fill/" + std::to_string(positions);
    if (const RatioReporter::Result* r = reporter.find(name)) {
      const double entries = double(positions * kTablePairs);
      const double ns = r->real * 1e9 / entries;
      std::printf("%-60s %7.3f  ns per (position, frequency) entry (CPU time: %.3f), target <= 1.50  %s\n",
                  name.c_str(), ns, r->cpu * 1e9 / entries, ns <= 1.5 ? "met" : "MISSED");
    }
  }
  if (const RatioReporter::Result* r = reporter.find("table/construct/2048")) {
    const double entries = double(kSeq * kTablePairs);
    std::printf("%-60s %7.3f  ns per entry, RopeTable constructor incl. allocation (CPU time: %.3f)\n",
                "table/construct/2048", r->real * 1e9 / entries, r->cpu * 1e9 / entries);
  }
  print_stream_summary(reporter);
  return 0;
}
