// append_rotated (kv/append.hpp) against its composition: posemb's own rotation of the whole keys
// tensor, then each row converted, then placed by a plain loop over the documented layouts, bit
// for bit, for every source, layout, storage type and thread count; every bad input refused with
// nothing written.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include <posemb/kv/append.hpp>
#include <posemb/posemb.hpp>
#include <posemb/rotary/hf_float32.hpp>

#include "support.hpp"

namespace {

using posemb::CacheBuffer;
using posemb::CacheDtype;
using posemb::CacheLayout;
using posemb::KvCache;
using posemb::Tensor4;

Tensor4<float> random_keys(Eigen::Index b, Eigen::Index s, Eigen::Index h, Eigen::Index d,
                           unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  Tensor4<float> x(b, s, h, d);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
  return x;
}

// The byte offset of (row or -, slot, head) in a buffer, from the shapes in kv/append.hpp.
Eigen::Index expected_offset(CacheLayout layout, Eigen::Index slots, Eigen::Index heads,
                             Eigen::Index row_bytes, Eigen::Index b, Eigen::Index slot,
                             Eigen::Index h) {
  switch (layout) {
    case CacheLayout::BHSD:  // [batch, heads, max_seq, row]
      return ((b * heads + h) * slots + slot) * row_bytes;
    case CacheLayout::BSHD:  // [batch, max_seq, heads, row]
      return ((b * slots + slot) * heads + h) * row_bytes;
    default:  // [blocks, block_size, heads, row]: block slot / slots, offset slot % slots
      return (slot * heads + h) * row_bytes;
  }
}

// The composition: every token with a slot, rotated (`rotated`) then converted then stored.
void compose(const Tensor4<float>& rotated, const CacheBuffer& buffer, const KvCache& cache,
             const posemb::PositionMatrix& slots, std::vector<unsigned char>& out) {
  const Eigen::Index heads = rotated.dimension(2), d = rotated.dimension(3);
  const Eigen::Index row_bytes = posemb::cache_row_bytes(buffer.dtype, d);
  for (Eigen::Index b = 0; b < slots.rows(); ++b) {
    for (Eigen::Index s = 0; s < slots.cols(); ++s) {
      if (slots(b, s) < 0) continue;
      for (Eigen::Index h = 0; h < heads; ++h) {
        posemb::detail::convert_row_reference(
            &rotated(b, s, h, 0), d, buffer.dtype, buffer.scale,
            out.data() +
                expected_offset(cache.layout, cache.slots, heads, row_bytes, b, slots(b, s), h));
      }
    }
  }
}

struct Geometry {
  CacheLayout layout;
  Eigen::Index rows, slots;  // batch / max_seq, or num_blocks / block_size
};

// Slots of [batch, seq] tokens: contiguous caches from a per-row start (some tokens skipped);
// paged caches a shuffled list of slots (vLLM's block tables) with a few tokens skipped.
posemb::PositionMatrix slots_for(const Geometry& g, Eigen::Index batch, Eigen::Index seq,
                                 unsigned seed) {
  std::mt19937 rng(seed);
  posemb::PositionMatrix slots(batch, seq);
  if (g.layout != CacheLayout::Paged) {
    for (Eigen::Index b = 0; b < batch; ++b) {
      const Eigen::Index start = static_cast<Eigen::Index>(rng() % (g.slots - seq + 1));
      for (Eigen::Index s = 0; s < seq; ++s) slots(b, s) = (s % 7 == 3) ? -1 : start + s;
    }
    return slots;
  }
  std::vector<std::int64_t> blocks(static_cast<std::size_t>(g.rows));
  for (std::size_t i = 0; i < blocks.size(); ++i) blocks[i] = static_cast<std::int64_t>(i);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      // Row b's tokens fill its own blocks in order, from offset b.
      const Eigen::Index index = b + s;
      const Eigen::Index per_row = (seq + 1 + g.slots - 1) / g.slots;
      const std::int64_t block = blocks[static_cast<std::size_t>(b * per_row + index / g.slots)];
      slots(b, s) = (s % 5 == 4) ? -7 : block * g.slots + index % g.slots;
    }
  }
  return slots;
}

KvCache make_cache(const Geometry& g, Eigen::Index heads, CacheBuffer k, CacheBuffer v) {
  if (g.layout == CacheLayout::Paged) {
    return posemb::paged_kv_cache(g.rows * g.slots, g.slots, heads, k, v);
  }
  return posemb::kv_cache(g.layout, g.rows, g.slots, heads, k, v);
}

constexpr CacheDtype all_dtypes[] = {CacheDtype::Float32, CacheDtype::Float16, CacheDtype::BFloat16,
                                     CacheDtype::Fp8E4m3, CacheDtype::Q8_0};

// One source through every layout and storage type, on one and on several threads: the cache
// append_rotated writes equals the composition, and bytes outside the slots stay as they were.
template <class Source, class P>
void check_source_now(const Source& source, const P& positions, const Tensor4<float>& keys,
                      const Tensor4<float>& values) {
  const Tensor4<float> rotated = posemb::rotated(keys, positions, source);
  const Eigen::Index batch = keys.dimension(0), seq = keys.dimension(1);
  const Eigen::Index heads = keys.dimension(2), d = keys.dimension(3), dv = values.dimension(3);
  const Geometry geometries[] = {{CacheLayout::BHSD, batch, seq + 5},
                                 {CacheLayout::BSHD, batch, seq + 3},
                                 {CacheLayout::Paged, batch * (seq / 4 + 2) + 1, 4}};
  // A caller's pool that runs its tasks last to first (another order than the threads' own).
  const posemb::ParallelFor backwards = [](std::size_t tasks,
                                           const std::function<void(std::size_t)>& task) {
    for (std::size_t i = tasks; i-- > 0;) task(i);
  };
  for (const Geometry& g : geometries) {
    const posemb::PositionMatrix slots = slots_for(g, batch, seq, 11);
    for (const CacheDtype k_dtype : all_dtypes) {
      const CacheDtype v_dtype = k_dtype == CacheDtype::Q8_0 ? CacheDtype::Float16 : k_dtype;
      for (const posemb::Threads& threads :
           {posemb::Threads{1}, posemb::Threads{3}, posemb::Threads{4, backwards}}) {
        CAPTURE(posemb::to_string(g.layout), posemb::to_string(k_dtype), threads.count);
        const CacheBuffer k_probe{nullptr, k_dtype, d, 0.37f};
        const CacheBuffer v_probe{nullptr, v_dtype, dv, 1.9f};
        const KvCache probe = make_cache(g, heads, k_probe, v_probe);
        std::vector<unsigned char> k_got(static_cast<std::size_t>(probe.bytes(k_probe)), 0xA5);
        std::vector<unsigned char> v_got(static_cast<std::size_t>(probe.bytes(v_probe)), 0x5A);
        std::vector<unsigned char> k_want = k_got, v_want = v_got;
        CacheBuffer k_buffer = k_probe, v_buffer = v_probe;
        k_buffer.data = k_got.data();
        v_buffer.data = v_got.data();
        const KvCache cache = make_cache(g, heads, k_buffer, v_buffer);
        posemb::append_rotated(keys, values, positions, source, slots, cache, threads);
        compose(rotated, k_buffer, cache, slots, k_want);
        compose(values, v_buffer, cache, slots, v_want);
        CHECK(k_got == k_want);
        CHECK(v_got == v_want);
      }
    }
  }
}

// check_source_now with ordinary and with streaming stores (the two write paths), at the best
// instruction-set level (the vector conversions) and at portable (the scalar ones; the composition
// is formed at the same level, whose rotation may round differently without FMA).
template <class Source, class P>
void check_source(const Source& source, const P& positions, const Tensor4<float>& keys,
                  const Tensor4<float>& values) {
  const posemb::IsaLevel level = posemb::isa_level();
  const posemb::StreamingStores mode = posemb::streaming_stores();
  const std::pair<posemb::IsaLevel, posemb::StreamingStores> runs[] = {
      {posemb::best_isa_level(), posemb::StreamingStores::Never},
      {posemb::best_isa_level(), posemb::StreamingStores::Always},
      {posemb::IsaLevel::Portable, posemb::StreamingStores::Always}};
  for (const auto& [isa, stores] : runs) {
    CAPTURE(posemb::to_string(isa), posemb::to_string(stores));
    posemb::set_isa_level(isa);
    posemb::set_streaming_stores(stores);
    check_source_now(source, positions, keys, values);
  }
  posemb::set_isa_level(level);
  posemb::set_streaming_stores(mode);
}

}  // namespace

TEST_CASE("append_rotated equals rotate, convert, store for every source", "[kv]") {
  // 2 x 120 tokens: enough for the pool's tasks to split them.
  const Eigen::Index seq = 120;
  const Tensor4<float> keys = random_keys(2, seq, 3, 64, 1);
  const Tensor4<float> values = random_keys(2, seq, 3, 32, 2);
  posemb::PositionMatrix positions(2, seq);
  for (Eigen::Index s = 0; s < seq; ++s) {
    positions(0, s) = 1000 + 3 * s;
    positions(1, s) = 1048576 + s;  // long positions: 2^20 on
  }
  SECTION("RoPE, both pairings, partial rotary") {
    check_source(posemb::default_rope_spec(64, 10000.0, posemb::Pairing::RotateHalf), positions,
                 keys, values);
    check_source(posemb::default_rope_spec({64, 32}, 500000.0, posemb::Pairing::Interleaved),
                 posemb::Positions(17), keys, values);
  }
  SECTION("scaled: YaRN and Llama 3") {
    posemb::YarnParams yarn;
    yarn.factor = 8.0;
    yarn.original_max_position_embeddings = 4096;
    check_source(posemb::yarn_rope_spec(64, 10000.0, yarn), positions, keys, values);
    check_source(posemb::llama3_rope_spec(64, 500000.0, posemb::Llama3Params{}), positions, keys,
                 values);
  }
  SECTION("a table") {
    const posemb::RopeTable<float> table(posemb::default_rope_spec(64), 0, 1048576 + seq);
    check_source(table, positions, keys, values);
  }
  SECTION("xPos for keys") {
    const posemb::XposSpec spec{posemb::default_rope_spec(64),
                                posemb::XposParams{0.4, 512.0, 1040}};
    posemb::PositionMatrix near(1, seq);
    for (Eigen::Index s = 0; s < seq; ++s) near(0, s) = 1000 + 2 * s;
    check_source(posemb::Xpos{spec, posemb::XposRole::Key}, near, keys, values);
  }
  SECTION("M-RoPE with three axes") {
    const posemb::MropeSpec spec =
        posemb::make_mrope_spec(posemb::default_rope_spec(64, 1e6), posemb::MropeSections{16, 8, 8},
                                posemb::MropeLayout::Interleaved);
    posemb::PositionMatrix thw(3, seq);
    for (Eigen::Index s = 0; s < seq; ++s) {
      thw(0, s) = 5 + s / 4;
      thw(1, s) = s % 4;
      thw(2, s) = 100 + s;
    }
    check_source(spec, posemb::MropePositions(thw), keys, values);
  }
  SECTION("HF's float32 arithmetic") {
    check_source(posemb::hf_float32_default(64, 10000.0), positions, keys, values);
  }
  SECTION("FoPE") {
    posemb::FopeConfig config;
    config.head_dim = 64;
    config.n_heads = 6;
    config.n_kv_heads = 3;
    config.train_length = 512;
    config.seed = 3;
    check_source(posemb::make_fope(config), positions, keys, values);
  }
}

TEST_CASE("append_rotated on two real threads equals one thread", "[kv]") {
  // 2 x 512 x 8 x 128 keys and values: enough elements for two threads.
  const Tensor4<float> keys = random_keys(2, 512, 8, 128, 5);
  const Tensor4<float> values = random_keys(2, 512, 8, 128, 6);
  const posemb::RopeSpec spec = posemb::default_rope_spec(128);
  const posemb::PositionMatrix slots = slots_for({CacheLayout::Paged, 80, 16}, 2, 512, 3);
  for (const CacheDtype dtype : all_dtypes) {
    CAPTURE(posemb::to_string(dtype));
    std::vector<unsigned char> k1(80 * 16 * 8 * posemb::cache_row_bytes(dtype, 128)), v1 = k1;
    std::vector<unsigned char> k2 = k1, v2 = k1;
    const auto run = [&](std::vector<unsigned char>& k, std::vector<unsigned char>& v, int count) {
      posemb::append_rotated(keys, values, posemb::Positions(0), spec, slots,
                             posemb::paged_kv_cache(80 * 16, 16, 8, {k.data(), dtype, 128, 0.5f},
                                                    {v.data(), dtype, 128, 0.5f}),
                             posemb::Threads{count});
    };
    run(k1, v1, 1);
    run(k2, v2, 2);
    CHECK(k1 == k2);
    CHECK(v1 == v2);
  }
}

TEST_CASE("append_rotated refuses bad input and writes nothing", "[kv]") {
  using test_support::throws_with;
  const Tensor4<float> keys = random_keys(1, 4, 2, 32, 7);
  const Tensor4<float> values = random_keys(1, 4, 2, 32, 8);
  const posemb::RopeSpec spec = posemb::default_rope_spec(32);
  std::vector<unsigned char> k(8 * 2 * 2 * 32, 0x11), v = k;
  const std::vector<unsigned char> untouched = k;
  const CacheBuffer kb{k.data(), CacheDtype::Float16, 32}, vb{v.data(), CacheDtype::Float16, 32};
  const KvCache cache = posemb::paged_kv_cache(8, 4, 2, kb, vb);
  posemb::PositionMatrix slots(1, 4);
  slots << 0, 1, 2, 3;
  const auto append = [&](const posemb::PositionMatrix& s, const KvCache& c) {
    return [&, s, c] { posemb::append_rotated(keys, values, 0, spec, s, c); };
  };
  posemb::PositionMatrix out_of_range = slots;
  out_of_range(0, 2) = 8;
  throws_with(append(out_of_range, cache), "slots[0, 2] = 8");
  posemb::PositionMatrix twice = slots;
  twice(0, 3) = 1;
  throws_with(append(twice, cache), "expected every slot once");
  throws_with([&] { posemb::paged_kv_cache(8, 3, 2, kb, vb); }, "num_slots = 8");
  throws_with([&] { posemb::paged_kv_cache(8, 0, 2, kb, vb); }, "block_size = 0");
  throws_with(append(slots, posemb::paged_kv_cache(8, 4, 3, kb, vb)), "cache.kv_heads = 3");
  throws_with(
      append(slots, posemb::paged_kv_cache(8, 4, 2, {k.data(), CacheDtype::Float16, 64}, vb)),
      "cache.keys.head_dim = 64");
  throws_with(append(slots, posemb::kv_cache(CacheLayout::BHSD, 2, 8, 2, kb, vb)),
              "cache batch = 2");
  for (const float scale : {0.0f, -1.0f, std::nanf(""), INFINITY}) {
    throws_with(append(slots, posemb::paged_kv_cache(
                                  8, 4, 2, {k.data(), CacheDtype::Fp8E4m3, 32, scale}, vb)),
                "cache.keys.scale");
  }
  const Tensor4<float> v16 = random_keys(1, 4, 2, 16, 9);
  throws_with(
      [&] {
        posemb::append_rotated(
            keys, v16, 0, spec, slots,
            posemb::paged_kv_cache(8, 4, 2, kb, {v.data(), CacheDtype::Q8_0, 16}));
      },
      "cache.values.head_dim = 16: expected a multiple of 32");
  // The keys' own memory as the cache.
  Tensor4<float> big = random_keys(1, 64, 2, 32, 10);
  const Eigen::TensorMap<Tensor4<float>> inside(big.data(), 1, 4, 2, 32);
  throws_with(
      [&] {
        posemb::append_rotated(
            inside, values, 0, spec, slots,
            posemb::paged_kv_cache(8, 4, 2, {big.data() + 64, CacheDtype::Float16, 32}, vb));
      },
      "overlaps keys");
  throws_with(
      append(slots, posemb::paged_kv_cache(8, 4, 2, kb, {k.data() + 8, CacheDtype::Float16, 32})),
      "cache.keys overlaps cache.values");
  posemb::PositionMatrix wrong_shape(1, 3);
  wrong_shape << 0, 1, 2;
  throws_with(append(wrong_shape, cache), "slots shape");
  throws_with(
      [&] { posemb::append_rotated(keys, values, 0, posemb::default_rope_spec(64), slots, cache); },
      "head_dim");
  CHECK(k == untouched);
  CHECK(v == untouched);
}

TEST_CASE("a paged cache's runs stop at block ends and negative slots", "[kv]") {
  posemb::PositionMatrix slots(1, 10);
  slots << 2, 3, 4, 5, -1, 9, 10, 12, 13, 14;
  const KvCache cache = posemb::paged_kv_cache(16, 4, 1, {}, {});
  std::vector<posemb::detail::AppendRun> runs;
  posemb::detail::append_runs(slots, cache, 64, runs);
  const std::vector<std::vector<Eigen::Index>> want = {
      {0, 2, 2}, {2, 4, 2}, {5, 9, 2}, {7, 12, 3}};  // s0, slot, count
  REQUIRE(runs.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CHECK(runs[i].s0 == want[i][0]);
    CHECK(runs[i].slot == want[i][1]);
    CHECK(runs[i].count == want[i][2]);
  }
  // A contiguous cache's consecutive slots split at max_tokens.
  posemb::PositionMatrix row(1, 10);
  row << 0, 1, 2, 3, 4, 5, 6, 7, 8, 9;
  posemb::detail::append_runs(row, posemb::kv_cache(CacheLayout::BHSD, 1, 10, 1, {}, {}), 4, runs);
  REQUIRE(runs.size() == 3);
  CHECK((runs[0].count == 4 && runs[1].s0 == 4 && runs[1].count == 4 && runs[2].slot == 8 &&
         runs[2].count == 2));
}
