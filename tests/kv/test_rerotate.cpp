// kv/rerotate.hpp: re-rotating cached keys between specs and shifting them by delta positions.
#include "posemb/kv/rerotate.hpp"

#include <catch2/catch.hpp>

#include "support.hpp"

#include <cmath>

#include "posemb/rotary/scaled.hpp"

using posemb::RopeSpec;
using posemb::TensorLayout;

namespace {

template <class T>
posemb::Tensor4<T> random_keys(int batch, int seq, int heads, int head_dim) {
  posemb::Tensor4<T> keys(batch, seq, heads, head_dim);
  keys.setRandom();
  return keys;
}

using test_support::max_abs_diff;

RopeSpec yarn_spec(posemb::RotaryDims dims, double factor) {
  posemb::YarnParams p;
  p.factor = factor;
  p.original_max_position_embeddings = 4096;
  return posemb::yarn_rope_spec(dims, 1e4, p);
}

}  // namespace

TEST_CASE("re-rotating keys equals rotating with the new spec", "[kv_cache]") {
  const int d = 64;  // partial rotary: d of d + 8 features rotate
  const posemb::RotaryDims dims{d + 8, d};
  const posemb::Tensor4<double> raw = random_keys<double>(2, 6, 2, d + 8);
  posemb::PositionMatrix positions(2, 6);
  positions << 0, 1, 2, 3, 4, 5, 100000, 200001, 300002, 999999, 2500000, 4000000;
  // Dynamic NTK: the cache was filled under seq_len 4096 (default frequencies); at 16384 the
  // frequencies change. YaRN -> other YaRN: also the attention factor changes.
  const RopeSpec dyn_short = posemb::dynamic_ntk_rope_spec(dims, 1e4, 4.0, 4096, 4096);
  const RopeSpec dyn_long = posemb::dynamic_ntk_rope_spec(dims, 1e4, 4.0, 4096, 16384);
  for (const auto& [from, to] :
       {std::pair{dyn_short, dyn_long}, std::pair{yarn_spec(dims, 4), yarn_spec(dims, 16)}}) {
    posemb::Tensor4<double> cache = posemb::rotated(raw, positions, from);
    posemb::rerotate_keys_inplace(cache, positions, from, to);
    const posemb::Tensor4<double> direct = posemb::rotated(raw, positions, to);
    // Angles in double at positions up to 4e6: ulp(p * inv) ~ 5e-10 rad.
    CHECK(max_abs_diff(cache, direct) <= 1e-8);
    for (int b = 0; b < 2; ++b) {
      for (int s = 0; s < 6; ++s) {
        for (int i = d; i < d + 8; ++i) CHECK(cache(b, s, 1, i) == raw(b, s, 1, i));  // tail
      }
    }
  }
}

TEST_CASE("re-rotate then rotate back is the identity", "[kv_cache]") {
  const RopeSpec a = yarn_spec(32, 8), b = posemb::linear_rope_spec(32, 1e4, 3.0);
  for (const TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
    const posemb::Tensor4<double> keys = random_keys<double>(1, 7, 3, 32);
    posemb::Tensor4<double> x = keys;
    posemb::rerotate_keys_inplace(x, std::int64_t{5000}, a, b, layout);
    CHECK(max_abs_diff(x, keys) > 1e-2);  // it did move
    posemb::rerotate_keys_inplace(x, std::int64_t{5000}, b, a, layout);
    CHECK(max_abs_diff(x, keys) <= 1e-13);

    const posemb::Tensor4<float> keys_f = random_keys<float>(1, 7, 3, 32);
    posemb::Tensor4<float> y = keys_f;
    posemb::rerotate_keys_inplace(y, std::int64_t{123456}, a, b, layout);
    posemb::rerotate_keys_inplace(y, std::int64_t{123456}, b, a, layout);
    CHECK(max_abs_diff(y, keys_f) <= 2e-6);
  }
}

TEST_CASE("shifting keys by delta equals rotating at p + delta", "[kv_cache]") {
  const RopeSpec spec = yarn_spec(64, 8);  // attention factor != 1: applied once only
  REQUIRE(spec.attention_scale > 1.0);
  const posemb::Tensor4<double> raw = random_keys<double>(2, 3, 4, 64);
  for (const TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
    for (const std::int64_t delta : {std::int64_t{-2000}, std::int64_t{-1}, std::int64_t{0},
                                     std::int64_t{7}, std::int64_t{1000000}}) {
      posemb::Tensor4<double> cache = posemb::rotated(raw, std::int64_t{4000}, spec,
                                                      posemb::RotateOptions().with_layouts(layout));
      posemb::shift_keys_inplace(cache, delta, spec, layout);
      const posemb::Tensor4<double> direct =
          posemb::rotated(raw, 4000 + delta, spec, posemb::RotateOptions().with_layouts(layout));
      CHECK(max_abs_diff(cache, direct) <= 1e-9);
    }
  }
  // Float storage, an attention-sink style shift of the window after the sinks.
  const posemb::Tensor4<float> raw_f = random_keys<float>(1, 16, 2, 64);
  posemb::Tensor4<float> cache = posemb::rotated(raw_f, std::int64_t{900}, spec);
  posemb::shift_keys_inplace(cache, -896, spec);
  CHECK(max_abs_diff(cache, posemb::rotated(raw_f, std::int64_t{4}, spec)) <= 1e-5);
}

TEST_CASE("KV-cache helpers reject mismatched specs and shapes", "[kv_cache][errors]") {
  posemb::Tensor4<double> keys = random_keys<double>(1, 2, 1, 32);
  const RopeSpec a = posemb::default_rope_spec(32);
  CHECK_THROWS_WITH(
      posemb::rerotate_keys_inplace(keys, std::int64_t{0}, a, posemb::default_rope_spec(16)),
      Catch::Contains("to.rotary_dim = 16"));
  CHECK_THROWS_WITH(posemb::rerotate_keys_inplace(
                        keys, std::int64_t{0}, a,
                        posemb::default_rope_spec(32, 1e4, posemb::Pairing::Interleaved)),
                    Catch::Contains("to.pairing"));
  CHECK_THROWS_WITH(
      posemb::rerotate_keys_inplace(keys, std::int64_t{0}, a, posemb::default_rope_spec({48, 32})),
      Catch::Contains("to.head_dim = 48: expected from.head_dim = 32"));
  CHECK_THROWS_WITH(posemb::shift_keys_inplace(keys, 3, posemb::default_rope_spec(64)),
                    Catch::Contains("head_dim = 32"));
  posemb::PositionMatrix wrong(1, 3);
  wrong << 0, 1, 2;
  CHECK_THROWS_WITH(posemb::rerotate_keys_inplace(keys, wrong, a, a),
                    Catch::Contains("positions shape"));
  RopeSpec broken = a;
  broken.attention_scale = 0.0;
  CHECK_THROWS_WITH(posemb::rerotate_keys_inplace(keys, std::int64_t{0}, broken, a),
                    Catch::Contains("attention_scale = 0"));
}
