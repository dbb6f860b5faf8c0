// bench_rope's streaming rows (posemb/machine/streaming_stores.hpp) and the caller's thread pool
// (Threads::pool through posemb::eigen_threads).
// Needs EIGEN_USE_THREADS (set for bench_rope in bench/CMakeLists.txt) for Eigen's
// ThreadPoolDevice.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../ratio_reporter.hpp"
#include "common.hpp"
#include "posemb/machine/eigen_threads.hpp"
#include "posemb/machine/streaming_stores.hpp"
#include "rows.hpp"

namespace posemb::bench::rope {
namespace {

// ---------------------------------------------------------------------------------------------
// Streaming stores and the caller's thread pool (posemb/machine/streaming_stores.hpp,
// Threads::pool). Out of place, x [1, tokens, 32, 128] float32 BSHD, positions 0..tokens-1, at 2048
// tokens (32 MiB) and 16384 tokens (256 MiB, at least twice the last-level cache), each against a
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
  posemb::TensorMap4<float> x(t.x, 1, t.tokens, kHeads, kDim),
      out(t.out, 1, t.tokens, kHeads, kDim);
  const posemb::StreamingStores saved = posemb::streaming_stores();
  posemb::set_streaming_stores(c.mode);
  const posemb::Threads& threads = stream_threads(c.threads);
  if (c.use_table)
    posemb::rotate(x, out, 0, stream_table<float>(c.pairing),
                   posemb::RotateOptions().with_threads(threads));
  else
    posemb::rotate(x, out, 0, spec_for(c.pairing), posemb::RotateOptions().with_threads(threads));
  posemb::set_streaming_stores(saved);
}

// "stream/table/f32/rotate_half/bshd/out_of_place/tokens:2048/threads:1", then "/vs_<baseline>"
// unless baseline is empty.
std::string stream_name(const StreamConfig& c, const char* baseline) {
  std::string name = "stream/" + std::string(c.use_table ? "table" : "in_call") + "/f32/" +
                     posemb::to_string(c.pairing) +
                     "/bshd/out_of_place/tokens:" + std::to_string(c.tokens) +
                     "/threads:" + std::to_string(c.threads);
  if (c.mode != posemb::StreamingStores::Auto)
    name += std::string("/streaming:") + posemb::to_string(c.mode);
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
  for (Eigen::Index s = 0; s < t.tokens;
       s += (s + 61 < t.tokens ? 61 : std::max<Eigen::Index>(1, t.tokens - 1 - s))) {
    reference_cos_sin(spec, s, cos.data(), sin.data());
    for (Eigen::Index h = 0; h < kHeads; ++h) {
      const Eigen::Index at = (s * kHeads + h) * kDim;
      std::copy(t.x + at, t.x + at + kDim, head.begin());
      reference_rotate(spec, cos.data(), sin.data(), head.data());
      for (int i = 0; i < spec.pairs(); ++i) {
        const int ia = c.pairing == Pairing::Interleaved ? 2 * i : i;
        const int ib = c.pairing == Pairing::Interleaved ? 2 * i + 1 : i + spec.pairs();
        const double norm = std::abs(t.x[at + ia]) + std::abs(t.x[at + ib]) + 1e-30;
        for (int e : {ia, ib})
          worst = std::max(worst, std::abs(double(t.out[at + e]) - head[e]) / norm);
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
  run_paired(
      state, [&] { stream_copy_tensor(t, threads); }, [&] { run_stream_rope(c, t); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(t.bytes()));
}

void bm_stream_vs_memcpy(benchmark::State& state, StreamConfig c) {
  StreamTensor& t = stream_tensor(c.tokens);
  run_paired(
      state, [&] { memcpy_tensor(t); }, [&] { run_stream_rope(c, t); });
  state.SetBytesProcessed(state.iterations() * 2 * std::int64_t(t.bytes()));
}

// The streaming copy itself against memcpy (one thread): what streaming stores gain here.
void bm_stream_copy_vs_memcpy(benchmark::State& state, Eigen::Index tokens) {
  StreamTensor& t = stream_tensor(tokens);
  const posemb::Threads& one = stream_threads(1);
  run_paired(
      state, [&] { memcpy_tensor(t); }, [&] { stream_copy_tensor(t, one); });
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

}  // namespace

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
    for (int n = 1; n <= int(std::max(1u, std::thread::hardware_concurrency())); ++n)
      counts.push_back(n);
  }
}

bool register_stream_benchmarks(const CheckReport& report) {
  bool ok = true;
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      for (bool use_table : {true, false}) {
        const StreamConfig c{tokens, pairing, use_table, stream_thread_counts().back()};
        const double error = check_stream(c);
        report(stream_name(c, "") + " (every 61st token)", error, 4e-7);
        ok = ok && error <= 4e-7;
      }
    }
  }
  if (!ok) return false;
  for (Eigen::Index tokens : kStreamTokens) {
    benchmark::RegisterBenchmark(
        ("stream/copy/f32/tokens:" + std::to_string(tokens) + "/vs_memcpy").c_str(),
        bm_stream_copy_vs_memcpy, tokens)
        ->UseManualTime();
  }
  for (const StreamConfig& c : stream_configs()) {
    benchmark::RegisterBenchmark(stream_name(c, "stream_copy").c_str(), bm_stream_vs_stream_copy, c)
        ->UseManualTime();
    if (c.threads == 1) {
      benchmark::RegisterBenchmark(stream_name(c, "memcpy").c_str(), bm_stream_vs_memcpy, c)
          ->UseManualTime();
    }
  }
  // Ordinary stores forced, for comparison (one thread, table).
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      const StreamConfig c{tokens, pairing, true, 1, posemb::StreamingStores::Never};
      benchmark::RegisterBenchmark(stream_name(c, "stream_copy").c_str(), bm_stream_vs_stream_copy,
                                   c)
          ->UseManualTime();
    }
  }
  return true;
}

void print_stream_summary(const RatioReporter& reporter) {
  std::printf("\nStreaming stores and the caller's pool (%s)\n",
              posemb::describe_streaming_stores().c_str());
  for (Eigen::Index tokens : kStreamTokens) {
    print_info(reporter, "stream/copy/f32/tokens:" + std::to_string(tokens) + "/vs_memcpy",
               "streaming copy / memcpy bandwidth");
  }
  for (const StreamConfig& c : stream_configs()) {
    print_ratio(reporter, stream_name(c, "stream_copy"),
                "of the streaming copy on as many threads,", c.threads == 1 ? 0.9 : 0.85);
    if (c.threads == 1) print_info(reporter, stream_name(c, "memcpy"), "of memcpy bandwidth");
  }
  for (Eigen::Index tokens : kStreamTokens) {
    for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
      const StreamConfig c{tokens, pairing, true, 1, posemb::StreamingStores::Never};
      print_info(reporter, stream_name(c, "stream_copy"),
                 "of the streaming copy, ordinary stores forced");
    }
  }
}

}  // namespace posemb::bench::rope
