// append_rotated (posemb/kv/append.hpp) against its baselines, each a ratio from back-to-back
// pairs (harness.hpp; run_paired's "ratio" is baseline time / append time):
//
//   kv/prefill/<dtype>/vs_two_passes   posemb::rotate of the keys into a float32 buffer, then a
//                                      second pass converting it and the values into the cache,
//                                      both on --kv_threads threads (goal >= 1.5)
//   kv/prefill/<dtype>/vs_stream_copy  a streaming pass over the bytes moved: the float32 keys and
//                                      values read whole, the cache's bytes written with
//                                      non-temporal stores (stream_moved; for float32 a streaming
//                                      copy) (goal >= 0.9 on one thread, 0.85 on two)
//   kv/decode/<dtype>/vs_rotation      one token into a 32k-slot paged cache (block 16) against
//                                      posemb's in-place rotation of that token alone (goal >=
//                                      1 / 1.2 = 0.83)
//
// Prefill: keys and values [1, 2048, 8, 128] float32, RoPE from a spec at positions 0..2047, into
// a BHSD cache [1, 8, 2048, 128]. Threads: --kv_threads=N (default 1).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"
#include "posemb/kv/append.hpp"
#include "posemb/posemb.hpp"
#include "ratio_reporter.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using posemb::CacheDtype;

constexpr Eigen::Index kSeq = 2048, kHeads = 8, kDim = 128, kDecodeSlots = 32768, kBlock = 16;
int g_threads = 1;

float* aligned_floats(Eigen::Index n, unsigned seed) {
  auto* p = static_cast<float*>(std::aligned_alloc(64, std::size_t(n) * 4));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (Eigen::Index i = 0; i < n; ++i) p[i] = dist(gen);
  return p;
}

unsigned char* aligned_bytes(Eigen::Index n) {
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(64, std::size_t((n + 63) / 64 * 64)));
  std::memset(p, 0, std::size_t(n));
  return p;
}

struct Prefill {
  CacheDtype dtype;
  float *k, *v, *rotated;
  unsigned char *kc, *vc;
  posemb::PositionMatrix slots{1, kSeq};
  Eigen::Index row_bytes;

  explicit Prefill(CacheDtype d) : dtype(d), row_bytes(posemb::cache_row_bytes(d, kDim)) {
    k = aligned_floats(kSeq * kHeads * kDim, 1);
    v = aligned_floats(kSeq * kHeads * kDim, 2);
    rotated = aligned_floats(kSeq * kHeads * kDim, 3);
    kc = aligned_bytes(kSeq * kHeads * row_bytes);
    vc = aligned_bytes(kSeq * kHeads * row_bytes);
    for (Eigen::Index s = 0; s < kSeq; ++s) slots(0, s) = s;
  }
  posemb::KvCache cache() const {
    return posemb::kv_cache(posemb::CacheLayout::BHSD, 1, kSeq, kHeads, {kc, dtype, kDim, 0.5f},
                            {vc, dtype, kDim, 0.5f});
  }
  posemb::TensorMap4<const float> keys() const { return {k, 1, kSeq, kHeads, kDim}; }
  posemb::TensorMap4<const float> values() const { return {v, 1, kSeq, kHeads, kDim}; }
};

const posemb::RopeSpec& spec() {
  static const posemb::RopeSpec s = posemb::default_rope_spec(kDim, 500000.0);
  return s;
}

void append(const Prefill& p) {
  posemb::append_rotated(p.keys(), p.values(), 0, spec(), p.slots, p.cache(),
                         posemb::Threads{g_threads});
}

// posemb's two passes, each on --kv_threads threads: rotate into a float32 buffer, then convert
// every row into the cache (the threads share the heads).
void two_passes(const Prefill& p) {
  posemb::TensorMap4<float> out(p.rotated, 1, kSeq, kHeads, kDim);
  posemb::rotate(p.keys(), out, 0, spec(), posemb::RotateOptions().with_threads({g_threads}));
  posemb::detail::parallel_for(kHeads, g_threads, [&](Eigen::Index h0, Eigen::Index h1) {
    for (Eigen::Index h = h0; h < h1; ++h) {  // head h's kSeq rows, kHeads * kDim floats apart
      const Eigen::Index at = h * kSeq * p.row_bytes;
      posemb::detail::convert_rows(p.rotated + h * kDim, kHeads * kDim, p.kc + at, p.row_bytes,
                                   kSeq, kDim, p.dtype, 0.5f);
      posemb::detail::convert_rows(p.v + h * kDim, kHeads * kDim, p.vc + at, p.row_bytes, kSeq,
                                   kDim, p.dtype, 0.5f);
    }
  });
}

// A streaming pass over the bytes append_rotated moves: every 64-byte line of `out` (out_bytes)
// is the XOR of its share of the lines of `in` (in_bytes, as many lines or more), written with a
// non-temporal store: all of in read once, all of out written once, no arithmetic worth the
// name. Lines [begin, end) of out. in, out: 64-byte aligned. On x86-64 with AVX2 stores
// (vmovntdq); elsewhere each line through posemb's streaming copy (detail/stream_copy.hpp:
// STNP on aarch64, memcpy on other targets).
#if defined(__x86_64__)
__attribute__((target("avx2"))) void stream_moved_lines(unsigned char* out, std::size_t out_bytes,
                                                        const float* in, std::size_t in_bytes,
                                                        std::size_t begin, std::size_t end) {
  const std::size_t out_lines = out_bytes / 64, in_lines = in_bytes / 64;
  const auto* from = reinterpret_cast<const unsigned char*>(in);
  for (std::size_t j = begin; j < end; ++j) {
    __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
    for (std::size_t i = j * in_lines / out_lines; i < (j + 1) * in_lines / out_lines; ++i) {
      lo = _mm256_xor_si256(lo, _mm256_load_si256(reinterpret_cast<const __m256i*>(from + 64 * i)));
      hi = _mm256_xor_si256(
          hi, _mm256_load_si256(reinterpret_cast<const __m256i*>(from + 64 * i + 32)));
    }
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 64 * j), lo);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(out + 64 * j + 32), hi);
  }
  _mm_sfence();
}
#else
void stream_moved_lines(unsigned char* out, std::size_t out_bytes, const float* in,
                        std::size_t in_bytes, std::size_t begin, std::size_t end) {
  const std::size_t out_lines = out_bytes / 64, in_lines = in_bytes / 64;
  const auto* from = reinterpret_cast<const unsigned char*>(in);
  for (std::size_t j = begin; j < end; ++j) {
    std::uint64_t line[8] = {};
    for (std::size_t i = j * in_lines / out_lines; i < (j + 1) * in_lines / out_lines; ++i) {
      std::uint64_t words[8];
      std::memcpy(words, from + 64 * i, 64);
      for (int w = 0; w < 8; ++w) line[w] ^= words[w];
    }
    posemb::detail::stream_copy(out + 64 * j, line, 64);
  }
  posemb::detail::stream_fence();
}
#endif

// The whole of out on --kv_threads threads (started per call, as append_rotated's).
void stream_moved(unsigned char* out, std::size_t out_bytes, const float* in,
                  std::size_t in_bytes) {
  posemb::detail::parallel_for(static_cast<Eigen::Index>(out_bytes / 64), g_threads,
                               [&](Eigen::Index begin, Eigen::Index end) {
                                 stream_moved_lines(out, out_bytes, in, in_bytes,
                                                    std::size_t(begin), std::size_t(end));
                               });
}

// The keys and the values, each read whole (float32) and written as the cache's bytes.
void stream_moved(const Prefill& p) {
  const std::size_t in_bytes = std::size_t(kSeq * kHeads * kDim) * 4;
  const std::size_t out_bytes = std::size_t(kSeq * kHeads * p.row_bytes);
  stream_moved(p.kc, out_bytes, p.k, in_bytes);
  stream_moved(p.vc, out_bytes, p.v, in_bytes);
}

Prefill& prefill(CacheDtype d) {
  static std::vector<Prefill*> made(5, nullptr);
  Prefill*& p = made[static_cast<std::size_t>(d)];
  if (p == nullptr) p = new Prefill(d);
  return *p;
}

void BM_vs_two_passes(benchmark::State& state, CacheDtype d) {
  Prefill& p = prefill(d);
  posemb::bench::run_paired(
      state, [&] { two_passes(p); }, [&] { append(p); });
}

void BM_vs_stream_copy(benchmark::State& state, CacheDtype d) {
  Prefill& p = prefill(d);
  posemb::bench::run_paired(
      state, [&] { stream_moved(p); }, [&] { append(p); });
}

// Decode: one token at position 20000 into slot 20000 of a paged cache of 32768 slots.
void BM_decode(benchmark::State& state, CacheDtype d) {
  const Eigen::Index row_bytes = posemb::cache_row_bytes(d, kDim);
  static float* k = aligned_floats(kHeads * kDim, 4);
  static float* v = aligned_floats(kHeads * kDim, 5);
  static float* x = aligned_floats(kHeads * kDim, 6);
  unsigned char* kc = aligned_bytes(kDecodeSlots * kHeads * row_bytes);
  unsigned char* vc = aligned_bytes(kDecodeSlots * kHeads * row_bytes);
  const posemb::KvCache cache = posemb::paged_kv_cache(kDecodeSlots, kBlock, kHeads,
                                                       {kc, d, kDim, 0.5f}, {vc, d, kDim, 0.5f});
  const posemb::TensorMap4<const float> keys(k, 1, 1, kHeads, kDim), values(v, 1, 1, kHeads, kDim);
  posemb::TensorMap4<float> token(x, 1, 1, kHeads, kDim);
  const std::int64_t slot = 20000;
  const posemb::SlotMapping slots(&slot, 1, 1);
  posemb::bench::run_paired(
      state, [&] { posemb::rotate_inplace(token, 20000, spec()); },
      [&] { posemb::append_rotated(keys, values, 20000, spec(), slots, cache); });
  std::free(kc);
  std::free(vc);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--kv_threads=", 13) == 0) g_threads = std::atoi(argv[i] + 13);
  }
  posemb::bench::print_header("bench_kv (" + std::string(POSEMB_BENCH_BUILD) +
                              " build): append_rotated, threads " + std::to_string(g_threads));
  for (const CacheDtype d : {CacheDtype::Float32, CacheDtype::Float16, CacheDtype::BFloat16,
                             CacheDtype::Fp8E4m3, CacheDtype::Q8_0}) {
    const std::string name = posemb::to_string(d);
    benchmark::RegisterBenchmark(("kv/prefill/" + name + "/vs_two_passes").c_str(),
                                 BM_vs_two_passes, d)
        ->UseManualTime();
    benchmark::RegisterBenchmark(("kv/prefill/" + name + "/vs_stream_copy").c_str(),
                                 BM_vs_stream_copy, d)
        ->UseManualTime();
    benchmark::RegisterBenchmark(("kv/decode/" + name + "/vs_rotation").c_str(), BM_decode, d)
        ->UseManualTime();
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
