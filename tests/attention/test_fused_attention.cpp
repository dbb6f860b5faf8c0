// RoPE inside the product (attention_scores with a rotation, through the fused_rope_scores
// forms that take it as a source argument) against the unfused recipe written out here (rotate
// q and k with rotated, multiply in double, add -slope |qpos - kpos|, mask), against the
// reference loop (attention_oracle.hpp) for the layer options, the relative bias, 4-D q and k
// with grouped-query heads and half storage, and its properties.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>

#include "posemb/attention/fused.hpp"
#include "posemb/attention/scores.hpp"

#include "attention/attention_oracle.hpp"

namespace {

template <class T>
using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <class T>
Rows<T> random_rows(Eigen::Index rows, Eigen::Index cols, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Rows<T> m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<T>(dist(gen));
  return m;
}

// The unfused recipe, products in double.
template <class T>
Rows<double> unfused(const Rows<T>& q, const posemb::PositionVector& qpos, const Rows<T>& k,
                     const posemb::PositionVector& kpos, const posemb::RopeSpec& spec, double scale,
                     double slope, bool causal) {
  Rows<T> q_rot = q, k_rot = k;
  posemb::rotate_inplace(q_rot, qpos, spec);
  posemb::rotate_inplace(k_rot, kpos, spec);
  Rows<double> s =
      scale * (q_rot.template cast<double>() * k_rot.template cast<double>().transpose());
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    for (Eigen::Index j = 0; j < s.cols(); ++j) {
      s(i, j) -= slope * std::abs(double(qpos[i] - kpos[j]));
      if (causal && kpos[j] > qpos[i]) s(i, j) = -std::numeric_limits<double>::infinity();
    }
  }
  return s;
}

template <class T>
void check_against_unfused(Eigen::Index seq_q, Eigen::Index seq_k, int head_dim, int rotary_dim,
                           posemb::Pairing pairing, double slope, bool causal, bool use_table) {
  const posemb::RopeSpec spec =
      posemb::default_rope_spec(posemb::RotaryDims{head_dim, rotary_dim}, 10000.0, pairing);
  const Rows<T> q = random_rows<T>(seq_q, head_dim, 1u), k = random_rows<T>(seq_k, head_dim, 2u);
  // Queries are the last seq_q of the keys' positions (decode against a KV cache), offset 5000.
  posemb::PositionVector kpos(seq_k), qpos(seq_q);
  for (Eigen::Index j = 0; j < seq_k; ++j) kpos[j] = 5000 + j;
  for (Eigen::Index i = 0; i < seq_q; ++i) qpos[i] = 5000 + seq_k - seq_q + i;
  posemb::ScoreOptions options;
  if (slope != 0.0) options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, slope)};
  options.causal = causal;
  Rows<T> fused;
  if (use_table) {
    const posemb::RopeTable<T> table(spec, 5000, seq_k);
    posemb::fused_rope_scores(q, qpos, k, kpos, fused, table, options);
  } else {
    posemb::fused_rope_scores(q, qpos, k, kpos, fused, spec, options);
  }
  const double scale = 1.0 / std::sqrt(double(head_dim));
  const Rows<double> expected = unfused(q, qpos, k, kpos, spec, scale, slope, causal);
  REQUIRE(fused.rows() == seq_q);
  REQUIRE(fused.cols() == seq_k);
  const double tolerance = 64 * std::numeric_limits<T>::epsilon() * std::sqrt(double(head_dim));
  for (Eigen::Index i = 0; i < seq_q; ++i) {
    for (Eigen::Index j = 0; j < seq_k; ++j) {
      if (std::isinf(expected(i, j))) {
        REQUIRE(fused(i, j) == -std::numeric_limits<T>::infinity());
      } else if (std::abs(double(fused(i, j)) - expected(i, j)) >
                 tolerance * (1 + std::abs(expected(i, j)))) {
        FAIL("score (" << i << ", " << j << "): fused " << fused(i, j) << " expected "
                       << expected(i, j));
      }
    }
  }
}

}  // namespace

TEST_CASE("fused scores equal rotate-then-multiply plus ALiBi and the causal mask") {
  for (posemb::Pairing pairing : {posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf}) {
    for (bool causal : {false, true}) {
      for (bool use_table : {false, true}) {
        INFO(posemb::to_string(pairing)
             << (causal ? " causal" : "") << (use_table ? " table" : ""));
        // Several tiles in both directions, ragged last tiles, partial rotary.
        check_against_unfused<float>(300, 600, 80, 48, pairing, 0.0625, causal, use_table);
        check_against_unfused<double>(260, 270, 64, 64, pairing, 0.0, causal, use_table);
        check_against_unfused<float>(1, 513, 128, 128, pairing, 0.5, causal, use_table);  // decode
      }
    }
  }
}

TEST_CASE("fused scores depend on position differences only (RoPE and ALiBi are relative)") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(64);
  const Rows<double> q = random_rows<double>(20, 64, 3u), k = random_rows<double>(40, 64, 4u);
  posemb::PositionVector qpos(20), kpos(40);
  for (int i = 0; i < 20; ++i) qpos[i] = 20 + i;
  for (int j = 0; j < 40; ++j) kpos[j] = j;
  posemb::ScoreOptions options;
  options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, 0.25)};
  options.causal = true;
  Rows<double> near, far;
  posemb::fused_rope_scores(q, qpos, k, kpos, near, spec, options);
  const posemb::PositionVector qfar = qpos.array() + 1000000, kfar = kpos.array() + 1000000;
  posemb::fused_rope_scores(q, qfar, k, kfar, far, spec, options);
  for (Eigen::Index i = 0; i < near.size(); ++i) {
    if (std::isinf(near.data()[i])) {
      CHECK(std::isinf(far.data()[i]));
    } else {
      CHECK(far.data()[i] == Approx(near.data()[i]).margin(1e-9));
    }
  }
  // The causal mask: query 0 (position 20) sees keys 0..20 only.
  CHECK(std::isfinite(near(0, 20)));
  CHECK(std::isinf(near(0, 21)));
  // The ALiBi bias: the slope lowers far keys; with q = k = 0 only the bias remains.
  Rows<double> zeros_q = Rows<double>::Zero(1, 64), zeros_k = Rows<double>::Zero(3, 64), bias;
  posemb::PositionVector one(1), three(3);
  one << 10;
  three << 10, 8, 4;
  posemb::fused_rope_scores(zeros_q, one, zeros_k, three, bias, spec, options);
  CHECK(bias(0, 0) == 0.0);
  CHECK(bias(0, 1) == -0.5);
  CHECK(bias(0, 2) == -1.5);
}

TEST_CASE("fused scores reject bad input with the parameter named") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(8);
  const Rows<float> q = Rows<float>::Zero(2, 8), k = Rows<float>::Zero(3, 8),
                    k6 = Rows<float>::Zero(3, 6);
  posemb::PositionVector qpos(2), kpos(3);
  qpos << 0, 1;
  kpos << 0, 1, 2;
  Rows<float> out;
  posemb::ScoreOptions options;
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k6, kpos, out, spec, options),
                    Catch::Contains("k.cols() = 6"));
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, kpos, k, kpos, out, spec, options),
                    Catch::Contains("q_positions.size() = 3"));
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, qpos, out, spec, options),
                    Catch::Contains("k_positions.size() = 2"));
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, qpos, k, kpos, out, posemb::default_rope_spec(10), options),
      Catch::Contains("head_dim = 8"));
  options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, -1.0)};
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("AlibiSlopes.slopes[0] = -1"));
  options = posemb::ScoreOptions{};
  options.layer.softmax_scale = std::nan("");
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("layer.softmax_scale = nan"));
  options = posemb::ScoreOptions{};
  options.rotation = spec;  // the rotation is the source argument
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("options.rotation = set: expected NoRotation: "
                                    "fused_rope_scores rotates with its source"));
  options = posemb::ScoreOptions{};
  options.layer.sliding_window = 0;
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("layer.sliding_window = 0"));
  options = posemb::ScoreOptions{};
  options.bias =
      posemb::T5BiasTable<float>({32, 128, true}, posemb::T5BiasTable<float>::Table::Zero(32, 2));
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
      Catch::Contains("T5BiasTable heads = 2: expected one table column per query head = 1"));
  options = posemb::ScoreOptions{};
  const posemb::RopeTable<float> table(spec, 0, 2);  // does not cover key position 2
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, table, options),
                    Catch::Contains("position = 2"));
}

TEST_CASE("fused scores equal the loop with the layer's options and a relative bias") {
  const Eigen::Index seq_k = 600, seq_q = 300, dim = 64;
  const posemb::RopeSpec spec = posemb::default_rope_spec(dim);
  const Rows<double> q = random_rows<double>(seq_q, dim, 5u),
                     k = random_rows<double>(seq_k, dim, 6u);
  // Queries are the last seq_q keys' positions, at a KV-cache offset of 8000 (the temperature
  // steps at 8191 inside the range).
  posemb::PositionVector kpos(seq_k), qpos(seq_q);
  for (Eigen::Index j = 0; j < seq_k; ++j) kpos[j] = 7900 + j;
  for (Eigen::Index i = 0; i < seq_q; ++i) qpos[i] = 7900 + seq_k - seq_q + i;
  posemb::T5BiasTable<float>::Table weights(32, 1);
  for (int b = 0; b < 32; ++b) weights(b, 0) = 0.125f * static_cast<float>(b % 7) - 0.3f;
  for (int variant = 0; variant < 6; ++variant) {
    CAPTURE(variant);
    posemb::ScoreOptions options;
    switch (variant) {
      case 0:
        options.layer.sliding_window = 100;
        break;
      case 1:
        options.layer.attention_chunk_size = 128;
        options.softmax = true;
        break;
      case 2:
        options.layer.query_temperature = posemb::QueryTemperature{};
        options.causal = true;
        break;
      case 3:
        options.layer.softmax_scale = 0.5;
        options.softmax = true;
        options.causal = true;
        break;
      case 4:
        options.bias = posemb::T5BiasTable<float>({32, 128, false}, weights);
        options.causal = true;
        break;
      case 5:
        options.bias = posemb::T5BiasTable<float>({32, 128, true}, weights);
        options.layer.sliding_window = 257;
        options.softmax = true;
        break;
    }
    Rows<double> fused;
    posemb::fused_rope_scores(q, qpos, k, kpos, fused, spec, options);
    // Rotation and bias are independent options: the oracle rotates q and k with the same spec.
    posemb::ScoreOptions reference = options;
    reference.rotation = spec;
    const Rows<double> expected = attention_oracle::scores(q, qpos, k, kpos, reference);
    REQUIRE(fused.rows() == seq_q);
    REQUIRE(fused.cols() == seq_k);
    Eigen::Index masked = 0;
    for (Eigen::Index i = 0; i < seq_q; ++i) {
      for (Eigen::Index j = 0; j < seq_k; ++j) {
        if (std::isinf(expected(i, j)) || (options.softmax && expected(i, j) == 0.0)) {
          ++masked;
          REQUIRE(fused(i, j) == expected(i, j));
        } else if (std::abs(fused(i, j) - expected(i, j)) >
                   1e-12 * (1 + std::abs(expected(i, j)))) {
          FAIL("score (" << i << ", " << j << "): fused " << fused(i, j) << " expected "
                         << expected(i, j));
        }
      }
    }
    CHECK(masked > 0);  // every variant masks something
  }
}

TEST_CASE("fused scores read q and k through any matrix expression, strided blocks too") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(32);
  const Rows<float> wide_q = random_rows<float>(10, 48, 7u),
                    wide_k = random_rows<float>(12, 48, 8u);
  posemb::PositionVector qpos(10), kpos(12);
  for (int i = 0; i < 10; ++i) qpos[i] = 2 + i;
  for (int j = 0; j < 12; ++j) kpos[j] = j;
  const Rows<float> q = wide_q.rightCols(32), k = wide_k.rightCols(32);  // contiguous copies
  Rows<float> from_blocks, from_copies;
  posemb::fused_rope_scores(wide_q.rightCols(32), qpos, wide_k.rightCols(32), kpos, from_blocks,
                            spec);
  posemb::fused_rope_scores(q, qpos, k, kpos, from_copies, spec);
  CHECK(from_blocks == from_copies);
}

// ---------------------------------------------------------------------------------------------
// 4-D q and k, grouped-query heads, half-precision storage.

namespace {

template <class T>
posemb::Tensor4<T> random_tensor(Eigen::Index d0, Eigen::Index d1, Eigen::Index d2, Eigen::Index d3,
                                 std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  posemb::Tensor4<T> t(d0, d1, d2, d3);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = static_cast<T>(dist(gen));
  return t;
}

// Largest |fused - reference| / (1 + |reference|); masked entries must be identical.
template <class C>
double worst_error(const posemb::Tensor4<C>& fused, const posemb::Tensor4<C>& reference) {
  REQUIRE(fused.dimensions() == reference.dimensions());
  double worst = 0;
  for (Eigen::Index n = 0; n < fused.size(); ++n) {
    const double got = fused.data()[n], want = reference.data()[n];
    if (std::isinf(want) || std::isinf(got)) {
      REQUIRE(got == want);
      continue;
    }
    worst = std::max(worst, std::abs(got - want) / (1.0 + std::abs(want)));
  }
  return worst;
}

// The bias of a check_fused_tensor case.
enum class Bias { None, Alibi, RelativeBias };

// fused_rope_scores on 4-D q, k (spec and table) against the reference loop with RoPE from the
// same spec, and with a bias against the loop on q and k rotated beforehand (in storage type).
template <class T>
void check_fused_tensor(Eigen::Index seq_q, Eigen::Index seq_k, Eigen::Index heads,
                        Eigen::Index kv_heads, posemb::TensorLayout layout, posemb::Pairing pairing,
                        Bias bias, bool causal, std::int64_t k_offset) {
  using C = posemb::compute_t<T>;
  CAPTURE(seq_q, seq_k, heads, kv_heads, posemb::to_string(layout), posemb::to_string(pairing),
          static_cast<int>(bias), causal, k_offset);
  const Eigen::Index dim = 32;
  const bool bshd = layout == posemb::TensorLayout::BSHD;
  const auto q = bshd ? random_tensor<T>(1, seq_q, heads, dim, 11u)
                      : random_tensor<T>(1, heads, seq_q, dim, 11u);
  const auto k = bshd ? random_tensor<T>(1, seq_k, kv_heads, dim, 12u)
                      : random_tensor<T>(1, kv_heads, seq_k, dim, 12u);
  const std::int64_t q_offset = k_offset + seq_k - seq_q;  // the last seq_q keys' positions
  const posemb::RopeSpec spec =
      posemb::default_rope_spec(posemb::RotaryDims{32, 24}, 10000.0, pairing);  // partial
  posemb::ScoreOptions options;
  options.causal = causal;
  if (bias == Bias::Alibi) options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(heads)};
  if (bias == Bias::RelativeBias) {
    posemb::T5BiasTable<float>::Table weights(32, heads);
    for (Eigen::Index n = 0; n < weights.size(); ++n)
      weights.data()[n] = 0.01f * static_cast<float>(n % 37) - 0.2f;
    options.bias = posemb::T5BiasTable<float>({32, 128, !causal}, weights);
  }
  posemb::Tensor4<C> from_spec(1, heads, seq_q, seq_k), from_table(1, heads, seq_q, seq_k);
  posemb::fused_rope_scores(q, q_offset, k, k_offset, from_spec, spec, options, layout);
  const posemb::RopeTable<T> table(spec, k_offset, seq_k);
  posemb::fused_rope_scores(q, q_offset, k, k_offset, from_table, table, options, layout);
  posemb::ScoreOptions rope = options;
  rope.rotation = spec;
  const posemb::Tensor4<C> reference =
      attention_oracle::scores(q, q_offset, k, k_offset, rope, layout);
  if (bias != Bias::None) {  // the same as the loop on q and k rotated beforehand
    const posemb::Tensor4<T> q_rot =
        posemb::rotated(q, q_offset, spec, posemb::RotateOptions().with_layouts(layout));
    const posemb::Tensor4<T> k_rot =
        posemb::rotated(k, k_offset, spec, posemb::RotateOptions().with_layouts(layout));
    const auto prerotated =
        attention_oracle::scores(q_rot, q_offset, k_rot, k_offset, options, layout);
    for (Eigen::Index n = 0; n < reference.size(); ++n)
      REQUIRE(prerotated.data()[n] == reference.data()[n]);
  }
  const double tolerance = std::is_same_v<T, double> ? 1e-13 : 4e-6;
  CHECK(worst_error(from_spec, reference) <= tolerance);
  // The table holds the spec's cos/sin bit for bit: the same scores.
  for (Eigen::Index n = 0; n < from_spec.size(); ++n)
    REQUIRE(from_table.data()[n] == from_spec.data()[n]);
}

}  // namespace

TEST_CASE("fused 4-D scores equal the loop: GQA, layouts, pairings, bias, storage") {
  using posemb::Pairing;
  using posemb::TensorLayout;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
      check_fused_tensor<float>(130, 140, 4, 4, layout, pairing, Bias::None, true, 0);   // ratio 1
      check_fused_tensor<float>(129, 257, 8, 2, layout, pairing, Bias::None, false, 0);  // ratio 4
      check_fused_tensor<double>(131, 131, 8, 1, layout, pairing, Bias::None, true,
                                 1000000);  // ratio 8
      check_fused_tensor<float>(1, 300, 8, 1, layout, pairing, Bias::Alibi, true,
                                1000000);  // decode
      check_fused_tensor<float>(140, 140, 4, 2, layout, pairing, Bias::RelativeBias, true, 0);
      check_fused_tensor<Eigen::bfloat16>(135, 150, 8, 2, layout, pairing, Bias::None, true,
                                          999000);
      check_fused_tensor<Eigen::half>(135, 150, 8, 2, layout, pairing, Bias::Alibi, false, 0);
      check_fused_tensor<Eigen::bfloat16>(70, 70, 4, 1, layout, pairing, Bias::RelativeBias, false,
                                          5);
    }
  }
}

TEST_CASE("fused 4-D scores of each query head equal the one-head form on its kv head") {
  const Eigen::Index seq = 150, heads = 8, kv_heads = 2, dim = 32;
  const auto q = random_tensor<float>(1, seq, heads, dim, 21u);  // BSHD
  const auto k = random_tensor<float>(1, seq, kv_heads, dim, 22u);
  const posemb::RopeTable<float> table(posemb::default_rope_spec(32), 0, seq);
  posemb::ScoreOptions options;
  options.causal = true;
  options.softmax = true;
  posemb::Tensor4<float> all(1, heads, seq, seq);
  posemb::fused_rope_scores(q, std::int64_t{0}, k, std::int64_t{0}, all, table, options);
  posemb::PositionVector positions(seq);
  for (Eigen::Index s = 0; s < seq; ++s) positions[s] = s;
  for (Eigen::Index h = 0; h < heads; ++h) {
    CAPTURE(h);
    Rows<float> qh(seq, dim), kh(seq, dim), one;
    for (Eigen::Index s = 0; s < seq; ++s) {
      for (Eigen::Index c = 0; c < dim; ++c) {
        qh(s, c) = q(0, s, h, c);
        kh(s, c) = k(0, s, h / (heads / kv_heads), c);
      }
    }
    posemb::fused_rope_scores(qh, positions, kh, positions, one, table, options);
    for (Eigen::Index i = 0; i < seq; ++i)
      for (Eigen::Index j = 0; j < seq; ++j) REQUIRE(one(i, j) == all(0, h, i, j));
  }
}

TEST_CASE("fused one-head scores of bfloat16 q and k are float") {
  const Rows<Eigen::bfloat16> q = random_rows<float>(40, 16, 31u).cast<Eigen::bfloat16>();
  const Rows<Eigen::bfloat16> k = random_rows<float>(50, 16, 32u).cast<Eigen::bfloat16>();
  posemb::PositionVector qpos(40), kpos(50);
  for (int i = 0; i < 40; ++i) qpos[i] = 10 + i;
  for (int j = 0; j < 50; ++j) kpos[j] = j;
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  posemb::ScoreOptions options;
  options.causal = true;
  Rows<float> fused;
  posemb::fused_rope_scores(q, qpos, k, kpos, fused, spec, options);
  posemb::ScoreOptions rope = options;
  rope.rotation = spec;
  const Rows<float> expected = attention_oracle::scores(q, qpos, k, kpos, rope);
  for (Eigen::Index i = 0; i < 40; ++i) {
    for (Eigen::Index j = 0; j < 50; ++j) {
      if (std::isinf(expected(i, j))) {
        REQUIRE(fused(i, j) == expected(i, j));
      } else {
        REQUIRE(std::abs(fused(i, j) - expected(i, j)) <=
                4e-6f * (1.0f + std::abs(expected(i, j))));
      }
    }
  }
}

TEST_CASE("fused 4-D scores reject bad input with the parameter named") {
  const auto q = random_tensor<float>(1, 6, 4, 8, 41u);
  const auto k = random_tensor<float>(1, 6, 2, 8, 42u);
  const posemb::RopeSpec spec = posemb::default_rope_spec(8);
  const std::int64_t zero = 0;
  posemb::ScoreOptions options;
  posemb::Tensor4<float> out(1, 4, 6, 6), wrong(1, 2, 6, 6);
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, zero, k, zero, wrong, spec, options),
      Catch::Contains(
          "out.dimension(1) = 2: expected [batch, heads, seq_q, seq_k] = [1, 4, 6, 6]"));
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, zero, random_tensor<float>(1, 6, 3, 8, 43u), zero, out, spec,
                                options),
      Catch::Contains(
          "k.dimension(2) (kv_heads) = 3: expected a divisor of the query head count 4"));
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, zero, k, zero, out, posemb::default_rope_spec(10), options),
      Catch::Contains("head_dim = 8"));
  const posemb::RopeTable<float> short_table(spec, 0, 5);  // does not cover position 5
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, zero, k, zero, out, short_table, options),
                    Catch::Contains("position = 5"));
  options.rotation = spec;
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, zero, k, zero, out, spec, options),
      Catch::Contains("options.rotation = set: expected NoRotation: fused_rope_scores rotates"));
  options = posemb::ScoreOptions{};
  options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(2)};
  CHECK_THROWS_WITH(
      posemb::fused_rope_scores(q, zero, k, zero, out, spec, options),
      Catch::Contains("AlibiSlopes.slopes.size() = 2: expected one slope per query head = 4"));
}
