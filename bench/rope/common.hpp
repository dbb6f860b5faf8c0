// bench_rope's shared ground: the shapes, the scalar reference every fast path is checked and
// timed against, the buffers (allocated and touched once), the specs and tables, and the one
// fast call the rope rows time. The rows themselves: rope_rows.cpp (RoPE, decode, transpose,
// inverse, table), fope_mrope_rows.cpp (FoPE, M-RoPE, fused scores), stream_rows.cpp
// (streaming stores and the caller's pool); main and the order of everything: bench_rope.cpp.
//
// Shapes: x [1, 2048, 32, 128] (BSHD) or [1, 32, 2048, 128] (BHSD), positions 0..2047;
// decode x [1, 1, 32, 128] at position 100000; table 131072 positions x 64 frequencies; and,
// larger than the last-level cache, x [1, 8192, 32, 128] (BSHD) or [1, 32, 8192, 128] (BHSD),
// positions 0..8191, float32 out of place (128 MiB each for x and out).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/rotary/rope.hpp"

namespace posemb::bench::rope {

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

// A check's line in the output: the benchmark's name, the error found and its limit.
using CheckReport = std::function<void(const std::string& name, double error, double limit)>;

// ---------------------------------------------------------------------------------------------
// The scalar reference: theta = remainder(p * inv_freq_i, 2 pi) in double, cos/sin by libm,
// rounded to float, then a' = a c - b s, b' = a s + b c for each pair of each head.
// Kept scalar on purpose: it is the baseline the fast paths are measured against.

// cos, sin: [pairs] for one position.
__attribute__((optimize("no-tree-vectorize"))) inline void reference_cos_sin(
    const posemb::RopeSpec& spec, std::int64_t position, float* cos, float* sin) {
  for (int i = 0; i < spec.pairs(); ++i) {
    const double angle = std::remainder(static_cast<double>(position) * spec.inv_freq[i], kTwoPi);
    cos[i] = static_cast<float>(spec.attention_scale * std::cos(angle));
    sin[i] = static_cast<float>(spec.attention_scale * std::sin(angle));
  }
}

// x: one head [head_dim], rotated in place with precomputed cos/sin [pairs].
template <class T>
__attribute__((optimize("no-tree-vectorize"))) inline void reference_rotate(
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
__attribute__((optimize("no-tree-vectorize"))) inline void reference_decode(
    const posemb::RopeSpec& spec, std::int64_t position, float* x) {
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
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const CacheLineAllocator<U>&) const {
    return false;
  }
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

inline Buffers& buffers() {
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
inline Pair<float>& large_f32() {
  static Pair<float> pair = [] {
    Pair<float> made;
    fill(made, 6u, kLargeElements);
    return made;
  }();
  return pair;
}

inline const posemb::RopeSpec& spec_for(Pairing pairing) {
  static const posemb::RopeSpec interleaved =
      posemb::default_rope_spec(128, 10000.0, Pairing::Interleaved);
  static const posemb::RopeSpec rotate_half =
      posemb::default_rope_spec(128, 10000.0, Pairing::RotateHalf);
  return pairing == Pairing::Interleaved ? interleaved : rotate_half;
}

template <class T>
const posemb::RopeTable<T>& table_for(Pairing pairing, Eigen::Index seq = kSeq) {
  static const posemb::RopeTable<T> interleaved(spec_for(Pairing::Interleaved), 0, kSeq);
  static const posemb::RopeTable<T> rotate_half(spec_for(Pairing::RotateHalf), 0, kSeq);
  if (seq == kLargeSeq) {
    static const posemb::RopeTable<T> large_interleaved(spec_for(Pairing::Interleaved), 0,
                                                        kLargeSeq);
    static const posemb::RopeTable<T> large_rotate_half(spec_for(Pairing::RotateHalf), 0,
                                                        kLargeSeq);
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

// memcpy of a tensor's bytes (read + write the same number of bytes as a rotation).
template <class T>
void copy_tensor(Pair<T>& p, Eigen::Index offset, Eigen::Index elements = kElements) {
  std::memcpy(p.out.data() + offset, p.x.data() + offset, elements * sizeof(T));
}

// memcpy of the float tensor on two threads, each copying one half: what the machine gives two
// threads for the same bytes.
inline void copy_two_threads(Pair<float>& p) {
  const Eigen::Index half = kElements / 2;
  posemb::detail::parallel_for(2, 2, [&](Eigen::Index begin, Eigen::Index end) {
    for (Eigen::Index part = begin; part < end; ++part) {
      std::memcpy(p.out.data() + part * half, p.x.data() + part * half, half * sizeof(float));
    }
  });
}

}  // namespace posemb::bench::rope
