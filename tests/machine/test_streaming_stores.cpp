// Streaming stores (posemb/machine/streaming_stores.hpp, detail/stream_copy.hpp) and the caller's
// thread pool (posemb::Threads::pool, posemb/machine/eigen_threads.hpp): the outputs are the same
// bits with streaming stores forced on or off, with and without a pool, at every instruction-set
// level this CPU runs, for every storage type, both pairings, table / spec / FoPE sources,
// unaligned tensors, tails shorter than a vector and layout-changing writes. The settings read
// their environment variables and reject malformed values.
#define EIGEN_USE_THREADS
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "posemb/machine/eigen_threads.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/machine/streaming_stores.hpp"

namespace {

using posemb::IsaLevel;
using posemb::Layouts;
using posemb::Pairing;
using posemb::StreamingStores;
using posemb::TensorLayout;

std::vector<IsaLevel> supported_levels() { return posemb::supported_isa_levels(); }

// Restores the level, the streaming mode and the threshold the program started with.
struct SettingsGuard {
  IsaLevel level = posemb::isa_level();
  StreamingStores mode = posemb::streaming_stores();
  std::size_t threshold = posemb::streaming_store_threshold();
  ~SettingsGuard() {
    posemb::set_isa_level(level);
    posemb::set_streaming_stores(mode);
    posemb::set_streaming_store_threshold(threshold);
  }
};

// Storage for a tensor of `elements` values of T whose data starts `shift` bytes past a 64-byte
// boundary (shift a multiple of alignof(T)), filled with values in [-2, 2].
template <class T>
struct Buffer {
  std::vector<unsigned char> bytes;
  T* data = nullptr;
  Buffer(std::size_t elements, std::size_t shift, std::uint32_t seed)
      : bytes(elements * sizeof(T) + 128) {
    const auto base = reinterpret_cast<std::uintptr_t>(bytes.data());
    data = reinterpret_cast<T*>(bytes.data() + (64 - base % 64) % 64 + shift);
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    for (std::size_t i = 0; i < elements; ++i) data[i] = static_cast<T>(dist(gen));
  }
};

// The bytes of `n` values of T (NaN-safe comparison of bit patterns).
template <class T>
std::vector<unsigned char> bytes_of(const T* data, Eigen::Index n) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * sizeof(T));
  std::memcpy(bytes.data(), data, bytes.size());
  return bytes;
}

// The index of the first byte where a and b differ, or -1 when they are equal (so that a failure
// prints a number, not two vectors).
std::ptrdiff_t first_difference(const std::vector<unsigned char>& a,
                                const std::vector<unsigned char>& b) {
  if (a.size() != b.size()) return -2;
  const auto at = std::mismatch(a.begin(), a.end(), b.begin());
  return at.first == a.end() ? -1 : at.first - a.begin();
}

// A shape of the tests: [batch, seq, heads, head_dim] in BSHD terms, the rotary slice.
struct Case {
  Eigen::Index batch, seq, heads, head_dim;
  int rotary_dim, rotary_offset;
};

enum class SourceKind { Spec, Table, Fope, FopeTable };

const char* name_of(SourceKind kind) {
  switch (kind) {
    case SourceKind::Spec:
      return "spec";
    case SourceKind::Table:
      return "table";
    case SourceKind::Fope:
      return "fope";
    default:
      return "fope_table";
  }
}

// Rotates x (in layout layouts.in) into a fresh output of `out_seq` tokens (layouts.out),
// whose untouched tokens hold a fixed pattern; returns the output's bytes.
template <class T>
std::vector<unsigned char> rotate_once(const Case& c, SourceKind kind, Pairing pairing,
                                       const Layouts& layouts, Eigen::Index out_seq,
                                       std::size_t shift, const posemb::Threads& threads,
                                       posemb::Rotation rotation = posemb::Rotation::Forward) {
  const Eigen::Index n = c.batch * c.seq * c.heads * c.head_dim;
  const Eigen::Index out_n = c.batch * out_seq * c.heads * c.head_dim;
  Buffer<T> x(static_cast<std::size_t>(n), shift, 7u);
  Buffer<T> out(static_cast<std::size_t>(out_n), shift, 8u);
  const auto map = [&](T* data, TensorLayout layout, Eigen::Index seq) {
    return layout == TensorLayout::BSHD
               ? posemb::TensorMap4<T>(data, c.batch, seq, c.heads, c.head_dim)
               : posemb::TensorMap4<T>(data, c.batch, c.heads, seq, c.head_dim);
  };
  auto xm = map(x.data, layouts.in, c.seq);
  auto om = map(out.data, layouts.out, out_seq);
  const std::int64_t offset = 3;
  if (kind == SourceKind::Spec || kind == SourceKind::Table) {
    const posemb::RotaryDims dims{static_cast<int>(c.head_dim), c.rotary_dim};
    posemb::RopeSpec spec = posemb::default_rope_spec(dims, 10000.0, pairing);
    spec.rotary_offset = c.rotary_offset;
    spec.attention_scale = 1.25;
    if (kind == SourceKind::Spec) {
      posemb::rotate(xm, om, offset, spec, posemb::RotateOptions{layouts, threads, rotation});
    } else {
      const posemb::RopeTable<T> table(spec, 0, offset + c.seq);
      posemb::rotate(xm, om, offset, table, posemb::RotateOptions{layouts, threads, rotation});
    }
  } else {
    posemb::FopeConfig config;
    config.head_dim = static_cast<int>(c.head_dim);
    config.n_heads = static_cast<int>(c.heads);
    config.n_kv_heads = c.heads % 2 == 0 ? 2 : 1;  // two segments where the heads allow
    config.train_length = 64;
    config.seed = 3;
    const posemb::Fope fope = posemb::make_fope(config);
    if (kind == SourceKind::Fope) {
      posemb::rotate(xm, om, offset, fope, posemb::RotateOptions{layouts, threads, rotation});
    } else {
      const posemb::FopeTable<T> table(fope, 0, offset + c.seq);
      posemb::rotate(xm, om, offset, table, posemb::RotateOptions{layouts, threads, rotation});
    }
  }
  return bytes_of(out.data, out_n);
}

template <class T>
std::size_t unaligned_shift() {
  return sizeof(T) <= 4 ? 4 : sizeof(T);  // 4 bytes; a double one element (8 bytes)
}

// The layouts of the tests: the same in and out, transposing, and into a longer KV-cache slot.
struct LayoutCase {
  Layouts layouts;
  Eigen::Index extra_seq;  // out seq - x seq
  const char* name;
};

std::vector<LayoutCase> layout_cases() {
  return {{Layouts(TensorLayout::BSHD), 0, "bshd"},
          {Layouts(TensorLayout::BHSD), 0, "bhsd"},
          {Layouts(TensorLayout::BSHD, TensorLayout::BHSD), 0, "bshd->bhsd"},
          {Layouts(TensorLayout::BHSD, TensorLayout::BSHD), 0, "bhsd->bshd"},
          {Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 5), 9, "bshd->bhsd slot 5"}};
}

template <class T>
void check_streaming_matches_ordinary(const char* type) {
  SettingsGuard guard;
  // Tails: 18 of 40 features' pairs (16 + 2), 3 pairs, 80 pairs (more than one cos/sin chunk).
  // Whole heads of 160 float features (80 pairs: two steps of 32 and one of 16) are written
  // straight from the registers at level avx512 when their destination is 64-byte aligned.
  // 1100 tokens of 5 heads: BHSD in two blocks of 512 tokens and a partial one, in a group of
  // 4 heads and a partial one.
  const Case cases[] = {
      {2, 37, 3, 40, 36, 2}, {1, 19, 2, 6, 6, 0}, {1, 9, 2, 160, 160, 0}, {1, 1100, 5, 32, 32, 0}};
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    for (const Case& c : cases) {
      for (SourceKind kind :
           {SourceKind::Spec, SourceKind::Table, SourceKind::Fope, SourceKind::FopeTable}) {
        const bool fope = kind == SourceKind::Fope || kind == SourceKind::FopeTable;
        if (fope && (c.rotary_dim != c.head_dim || c.head_dim < 16))
          continue;  // FoPE rotates whole heads
        for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
          if (fope && pairing == Pairing::Interleaved) continue;  // FoPE pairs rotate-half
          for (const LayoutCase& l : layout_cases()) {
            for (std::size_t shift : {std::size_t(0), unaligned_shift<T>()}) {
              for (posemb::Rotation rotation :
                   {posemb::Rotation::Forward, posemb::Rotation::Inverse}) {
                INFO(type << " level " << posemb::to_string(level) << " " << name_of(kind) << " "
                          << posemb::to_string(pairing) << " " << l.name << " head_dim "
                          << c.head_dim << " rotary " << c.rotary_dim << " shift " << shift
                          << (rotation == posemb::Rotation::Inverse ? " inverse" : ""));
                const Eigen::Index out_seq = c.seq + l.extra_seq;
                posemb::set_streaming_stores(StreamingStores::Never);
                const auto ordinary =
                    rotate_once<T>(c, kind, pairing, l.layouts, out_seq, shift, {}, rotation);
                posemb::set_streaming_stores(StreamingStores::Always);
                const auto streamed =
                    rotate_once<T>(c, kind, pairing, l.layouts, out_seq, shift, {}, rotation);
                CHECK(first_difference(streamed, ordinary) == -1);
              }
            }
          }
        }
      }
    }
  }
}

// A caller's pool as a parallel-for that records each call's task count and runs the tasks on
// threads of its own, in reverse order.
struct RecordingPool {
  std::mutex mutex;
  std::vector<std::size_t> calls;  // tasks per call
  std::multiset<std::size_t> ran;  // task indices run

  posemb::ParallelFor callable() {
    return [this](std::size_t tasks, const std::function<void(std::size_t)>& task) {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        calls.push_back(tasks);
      }
      std::vector<std::thread> workers;
      for (std::size_t i = tasks; i-- > 0;) {
        workers.emplace_back([&, i] {
          task(i);
          const std::lock_guard<std::mutex> lock(mutex);
          ran.insert(i);
        });
      }
      for (auto& worker : workers) worker.join();
    };
  }
};

template <class T>
void check_pools_case(const char* type, const Case& c);

template <class T>
void check_pools_match_single_thread(const char* type) {
  SettingsGuard guard;
  // 3 * 2^15 elements and more: a pool gets 3 parts. Partial rotary at an offset (staged), and
  // whole float heads of whole lines (written straight from the registers at level avx512).
  for (const Case& c : {Case{2, 200, 6, 48, 40, 4}, Case{2, 200, 4, 64, 64, 0}}) {
    check_pools_case<T>(type, c);
  }
}

template <class T>
void check_pools_case(const char* type, const Case& c) {
  Eigen::ThreadPool pool1(1), pool2(2), pool3(3);
  Eigen::ThreadPoolDevice device1(&pool1, 1), device2(&pool2, 2), device3(&pool3, 3);
  RecordingPool recording;
  // Tasks run one after another in order: the first takes every piece of the work, the later
  // ones find none left (a pool whose threads start late).
  const posemb::ParallelFor in_order = [](std::size_t tasks,
                                          const std::function<void(std::size_t)>& task) {
    for (std::size_t i = 0; i < tasks; ++i) task(i);
  };
  const posemb::Threads pools[] = {posemb::eigen_threads(device1),
                                   posemb::eigen_threads(device2),
                                   posemb::eigen_threads(device3),
                                   posemb::Threads{3, recording.callable()},
                                   posemb::Threads{2},
                                   posemb::Threads{2, in_order}};
  const char* pool_names[] = {"eigen 1",    "eigen 2",    "eigen 3",
                              "callable 3", "Threads{2}", "in order 2"};
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    for (SourceKind kind : {SourceKind::Spec, SourceKind::Table}) {
      for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
        for (const LayoutCase& l : layout_cases()) {
          for (std::size_t shift : {std::size_t(0), unaligned_shift<T>()}) {
            const Eigen::Index out_seq = c.seq + l.extra_seq;
            posemb::set_streaming_stores(StreamingStores::Never);
            const auto single = rotate_once<T>(c, kind, pairing, l.layouts, out_seq, shift, {});
            for (StreamingStores mode : {StreamingStores::Never, StreamingStores::Always}) {
              posemb::set_streaming_stores(mode);
              for (int p = 0; p < 6; ++p) {
                INFO(type << " level " << posemb::to_string(level) << " " << name_of(kind) << " "
                          << posemb::to_string(pairing) << " " << l.name << " shift " << shift
                          << " streaming " << posemb::to_string(mode) << " pool " << pool_names[p]
                          << " head_dim " << c.head_dim);
                CHECK(first_difference(
                          rotate_once<T>(c, kind, pairing, l.layouts, out_seq, shift, pools[p]),
                          single) == -1);
              }
            }
          }
        }
      }
    }
  }
  // The callable ran every call as 3 tasks, each index once per call.
  REQUIRE(!recording.calls.empty());
  for (std::size_t tasks : recording.calls) CHECK(tasks == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(recording.ran.count(i) == recording.calls.size());
}

}  // namespace

TEST_CASE("streaming stores: float outputs equal the ordinary stores bit for bit") {
  check_streaming_matches_ordinary<float>("float");
}
TEST_CASE("streaming stores: double outputs equal the ordinary stores bit for bit") {
  check_streaming_matches_ordinary<double>("double");
}
TEST_CASE("streaming stores: Eigen::half outputs equal the ordinary stores bit for bit") {
  check_streaming_matches_ordinary<Eigen::half>("half");
}
TEST_CASE("streaming stores: bfloat16 outputs equal the ordinary stores bit for bit") {
  check_streaming_matches_ordinary<Eigen::bfloat16>("bfloat16");
}

TEST_CASE("thread pool: Eigen pools of 1, 2, 3 threads and a callable equal one thread") {
  check_pools_match_single_thread<float>("float");
}
TEST_CASE("thread pool: double with pools equals one thread") {
  check_pools_match_single_thread<double>("double");
}
TEST_CASE("thread pool: Eigen::half with pools equals one thread") {
  check_pools_match_single_thread<Eigen::half>("half");
}
TEST_CASE("thread pool: Eigen::bfloat16 with pools equals one thread") {
  check_pools_match_single_thread<Eigen::bfloat16>("bfloat16");
}

TEST_CASE("thread pool: one part, and a small tensor, run on the calling thread") {
  std::atomic<int> calls{0};
  const posemb::ParallelFor counting = [&](std::size_t tasks,
                                           const std::function<void(std::size_t)>& task) {
    ++calls;
    for (std::size_t i = 0; i < tasks; ++i) task(i);
  };
  posemb::Tensor4<float> x(1, 400, 8, 64), out(1, 400, 8, 64);  // 204800 elements
  x.setConstant(1.0f);
  const posemb::RopeSpec spec = posemb::default_rope_spec(64);
  posemb::rotate(x, out, 0, spec,
                 posemb::RotateOptions().with_threads(posemb::Threads{1, counting}));
  CHECK(calls == 0);
  posemb::Tensor4<float> small(1, 4, 8, 64), small_out(1, 4, 8, 64);  // below 2^15 per task
  small.setConstant(1.0f);
  posemb::rotate(small, small_out, 0, spec,
                 posemb::RotateOptions().with_threads(posemb::Threads{4, counting}));
  CHECK(calls == 0);
  posemb::rotate(x, out, 0, spec,
                 posemb::RotateOptions().with_threads(posemb::Threads{4, counting}));
  CHECK(calls == 1);
  CHECK_THROWS_WITH(
      posemb::rotate(x, out, 0, spec,
                     posemb::RotateOptions().with_threads(posemb::Threads{0, counting})),
      Catch::Contains("threads.count = 0"));
}

TEST_CASE("streaming stores: the table builds give the same tables streamed or not") {
  SettingsGuard guard;
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    for (int rotary_dim : {6, 64, 128}) {
      const posemb::RopeSpec spec = posemb::default_rope_spec(rotary_dim);
      posemb::set_streaming_stores(StreamingStores::Never);
      const posemb::RopeTable<float> ordinary_f(spec, 5, 301);
      const posemb::RopeTable<double> ordinary_d(spec, 5, 301);
      posemb::set_streaming_stores(StreamingStores::Always);
      const posemb::RopeTable<float> streamed_f(spec, 5, 301);
      const posemb::RopeTable<double> streamed_d(spec, 5, 301);
      INFO("level " << posemb::to_string(level) << " rotary_dim " << rotary_dim);
      CHECK(bytes_of(streamed_f.cos().data(), streamed_f.cos().size()) ==
            bytes_of(ordinary_f.cos().data(), ordinary_f.cos().size()));
      CHECK(bytes_of(streamed_f.sin().data(), streamed_f.sin().size()) ==
            bytes_of(ordinary_f.sin().data(), ordinary_f.sin().size()));
      CHECK(bytes_of(streamed_d.cos().data(), streamed_d.cos().size()) ==
            bytes_of(ordinary_d.cos().data(), ordinary_d.cos().size()));
      CHECK(bytes_of(streamed_d.sin().data(), streamed_d.sin().size()) ==
            bytes_of(ordinary_d.sin().data(), ordinary_d.sin().size()));
    }
    // FoPE: one segment per coefficient head, rows of 2 * 40 values.
    posemb::FopeConfig config;
    config.head_dim = 80;
    config.n_heads = 4;
    config.n_kv_heads = 2;
    config.train_length = 64;
    config.seed = 5;
    const posemb::Fope fope = posemb::make_fope(config);
    posemb::set_streaming_stores(StreamingStores::Never);
    const posemb::FopeTable<float> ordinary(fope, 7, 203);
    posemb::set_streaming_stores(StreamingStores::Always);
    const posemb::FopeTable<float> streamed(fope, 7, 203);
    INFO("level " << posemb::to_string(level) << " FoPE");
    CHECK(bytes_of(streamed.cos().data(), streamed.cos().size()) ==
          bytes_of(ordinary.cos().data(), ordinary.cos().size()));
    CHECK(bytes_of(streamed.sin().data(), streamed.sin().size()) ==
          bytes_of(ordinary.sin().data(), ordinary.sin().size()));
  }
}

TEST_CASE("streaming stores: the streaming copy equals memcpy at every length, alignment") {
  SettingsGuard guard;
  std::vector<unsigned char> source(400), expected(400), target(400);
  for (std::size_t i = 0; i < source.size(); ++i)
    source[i] = static_cast<unsigned char>(i * 37 + 11);
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    for (std::size_t dst_at = 0; dst_at < 64; dst_at += 3) {
      for (std::size_t src_at : {std::size_t(0), std::size_t(5), std::size_t(64)}) {
        for (std::size_t n = 0; n <= 300; n += (n < 70 ? 1 : 23)) {
          std::fill(expected.begin(), expected.end(), 0xA5);
          std::fill(target.begin(), target.end(), 0xA5);
          std::memcpy(expected.data() + dst_at, source.data() + src_at, n);
          posemb::detail::stream_copy(target.data() + dst_at, source.data() + src_at, n);
          posemb::detail::stream_fence();
          INFO("level " << posemb::to_string(level) << " dst " << dst_at << " src " << src_at
                        << " n " << n);
          REQUIRE(target == expected);
        }
      }
    }
  }
}

TEST_CASE("streaming stores: settings, the default from the cache size, the environment") {
  SettingsGuard guard;
  CHECK(posemb::last_level_cache_bytes() >= (std::size_t(256) << 10));
  CHECK(posemb::default_streaming_store_threshold() == posemb::usable_cache_bytes() / 2);
  CHECK(posemb::usable_cache_bytes() <= posemb::last_level_cache_bytes());
  posemb::set_streaming_store_threshold(1000);
  CHECK(posemb::streaming_store_threshold() == 1000);
  posemb::set_streaming_stores(StreamingStores::Auto);
  CHECK(posemb::detail::use_streaming_stores(1000));
  CHECK_FALSE(posemb::detail::use_streaming_stores(999));
  posemb::set_streaming_stores(StreamingStores::Never);
  CHECK_FALSE(posemb::detail::use_streaming_stores(std::size_t(1) << 40));
  posemb::set_streaming_stores(StreamingStores::Always);
  CHECK(posemb::detail::use_streaming_stores(0));
  CHECK_THROWS_WITH(posemb::set_streaming_stores(static_cast<StreamingStores>(9)),
                    Catch::Contains("mode = 9"));

  // Linux's sysfs sizes: tests/test_cache_topology.cpp.

  const char* saved_bytes = std::getenv("POSEMB_STREAMING_STORES_MIN_BYTES");
  const char* saved_mode = std::getenv("POSEMB_STREAMING_STORES");
  const std::string bytes_value = saved_bytes ? saved_bytes : "",
                    mode_value = saved_mode ? saved_mode : "";
  ::setenv("POSEMB_STREAMING_STORES_MIN_BYTES", "4096", 1);
  CHECK(posemb::detail::initial_streaming_store_threshold() == 4096);
  ::setenv("POSEMB_STREAMING_STORES_MIN_BYTES", "", 1);
  CHECK(posemb::detail::initial_streaming_store_threshold() ==
        posemb::default_streaming_store_threshold());
  ::setenv("POSEMB_STREAMING_STORES_MIN_BYTES", "4 MiB", 1);
  CHECK_THROWS_WITH(posemb::detail::initial_streaming_store_threshold(),
                    Catch::Contains("POSEMB_STREAMING_STORES_MIN_BYTES = 4 MiB") &&
                        Catch::Contains("whole number of bytes"));
  ::setenv("POSEMB_STREAMING_STORES", "never", 1);
  CHECK(posemb::detail::initial_streaming_stores() == StreamingStores::Never);
  ::setenv("POSEMB_STREAMING_STORES", "always", 1);
  CHECK(posemb::detail::initial_streaming_stores() == StreamingStores::Always);
  ::setenv("POSEMB_STREAMING_STORES", "sometimes", 1);
  CHECK_THROWS_WITH(posemb::detail::initial_streaming_stores(),
                    Catch::Contains("POSEMB_STREAMING_STORES = sometimes") &&
                        Catch::Contains("auto, always or never"));
  if (saved_bytes) ::setenv("POSEMB_STREAMING_STORES_MIN_BYTES", bytes_value.c_str(), 1);
  else ::unsetenv("POSEMB_STREAMING_STORES_MIN_BYTES");
  if (saved_mode) ::setenv("POSEMB_STREAMING_STORES", mode_value.c_str(), 1);
  else ::unsetenv("POSEMB_STREAMING_STORES");
}
