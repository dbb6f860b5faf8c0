// fused_rope_scores against the unfused recipe written out here (rotate q and k with
// apply_rope, multiply in double, add -slope |qpos - kpos|, mask), against attention_scores for
// the layer options and the relative bias, and its properties.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "posemb/attention.hpp"
#include "posemb/fused_attention.hpp"

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
                     const posemb::PositionVector& kpos, const posemb::RopeSpec& spec,
                     double scale, double slope, bool causal) {
  Rows<T> q_rot = q, k_rot = k;
  posemb::apply_rope_inplace(q_rot, qpos, spec);
  posemb::apply_rope_inplace(k_rot, kpos, spec);
  Rows<double> s = scale * (q_rot.template cast<double>() * k_rot.template cast<double>().transpose());
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
  if (slope != 0.0) {
    options.scheme = posemb::ScoreScheme::Alibi;
    options.alibi_slopes = Eigen::VectorXd::Constant(1, slope);
  }
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
      } else if (std::abs(double(fused(i, j)) - expected(i, j)) > tolerance * (1 + std::abs(expected(i, j)))) {
        FAIL("score (" << i << ", " << j << "): fused " << fused(i, j) << " expected " << expected(i, j));
      }
    }
  }
}

}  // namespace

TEST_CASE("fused scores equal rotate-then-multiply plus ALiBi and the causal mask") {
  for (posemb::Pairing pairing : {posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf}) {
    for (bool causal : {false, true}) {
      for (bool use_table : {false, true}) {
        INFO(posemb::to_string(pairing) << (causal ? " causal" : "") << (use_table ? " table" : ""));
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
  options.scheme = posemb::ScoreScheme::Alibi;
  options.alibi_slopes = Eigen::VectorXd::Constant(1, 0.25);
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
  const Rows<float> q = Rows<float>::Zero(2, 8), k = Rows<float>::Zero(3, 8), k6 = Rows<float>::Zero(3, 6);
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
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, posemb::default_rope_spec(10), options),
                    Catch::Contains("head_dim = 8"));
  options.scheme = posemb::ScoreScheme::Alibi;
  options.alibi_slopes = Eigen::VectorXd::Constant(1, -1.0);
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("alibi_slopes[0] = -1"));
  options = posemb::ScoreOptions{};
  options.layer.softmax_scale = std::nan("");
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("layer.softmax_scale = nan"));
  options = posemb::ScoreOptions{};
  options.rope = spec;  // the rotation is the source argument
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("rope.rotary_dim = 8: expected an empty RopeSpec: fused_rope_scores rotates with its source"));
  options = posemb::ScoreOptions{};
  options.layer.sliding_window = 0;
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("layer.sliding_window = 0"));
  options = posemb::ScoreOptions{};
  options.scheme = posemb::ScoreScheme::RelativeBias;
  options.relative_bias = posemb::T5BiasTable<float>({32, 128, true}, posemb::T5BiasTable<float>::Table::Zero(32, 2));
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, spec, options),
                    Catch::Contains("relative_bias heads = 2: expected one table column per query head = 1"));
  options = posemb::ScoreOptions{};
  const posemb::RopeTable<float> table(spec, 0, 2);  // does not cover key position 2
  CHECK_THROWS_WITH(posemb::fused_rope_scores(q, qpos, k, kpos, out, table, options),
                    Catch::Contains("position = 2"));
}

TEST_CASE("fused scores equal attention_scores with the layer's options and a relative bias") {
  const Eigen::Index seq_k = 600, seq_q = 300, dim = 64;
  const posemb::RopeSpec spec = posemb::default_rope_spec(dim);
  const Rows<double> q = random_rows<double>(seq_q, dim, 5u), k = random_rows<double>(seq_k, dim, 6u);
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
      case 0: options.layer.sliding_window = 100; break;
      case 1: options.layer.attention_chunk_size = 128; options.softmax = true; break;
      case 2: options.layer.query_temperature = posemb::QueryTemperature{}; options.causal = true; break;
      case 3: options.layer.softmax_scale = 0.5; options.softmax = true; options.causal = true; break;
      case 4:
        options.scheme = posemb::ScoreScheme::RelativeBias;
        options.relative_bias = posemb::T5BiasTable<float>({32, 128, false}, weights);
        options.causal = true;
        break;
      case 5:
        options.scheme = posemb::ScoreScheme::RelativeBias;
        options.relative_bias = posemb::T5BiasTable<float>({32, 128, true}, weights);
        options.layer.sliding_window = 257;
        options.softmax = true;
        break;
    }
    Rows<double> fused;
    posemb::fused_rope_scores(q, qpos, k, kpos, fused, spec, options);
    posemb::ScoreOptions reference = options;
    reference.rope = spec;
    if (reference.scheme == posemb::ScoreScheme::None) reference.scheme = posemb::ScoreScheme::Rope;
    // The reference adds no bias with scheme Rope; for the relative bias rotate q and k first.
    Rows<double> q_in = q, k_in = k;
    if (reference.scheme == posemb::ScoreScheme::RelativeBias) {
      reference.rope = posemb::RopeSpec{};
      posemb::apply_rope_inplace(q_in, qpos, spec);
      posemb::apply_rope_inplace(k_in, kpos, spec);
    }
    const Rows<double> expected = posemb::attention_scores(q_in, qpos, k_in, kpos, reference);
    REQUIRE(fused.rows() == seq_q);
    REQUIRE(fused.cols() == seq_k);
    Eigen::Index masked = 0;
    for (Eigen::Index i = 0; i < seq_q; ++i) {
      for (Eigen::Index j = 0; j < seq_k; ++j) {
        if (std::isinf(expected(i, j)) || (options.softmax && expected(i, j) == 0.0)) {
          ++masked;
          REQUIRE(fused(i, j) == expected(i, j));
        } else if (std::abs(fused(i, j) - expected(i, j)) > 1e-12 * (1 + std::abs(expected(i, j)))) {
          FAIL("score (" << i << ", " << j << "): fused " << fused(i, j) << " expected " << expected(i, j));
        }
      }
    }
    CHECK(masked > 0);  // every variant masks something
  }
}

TEST_CASE("fused scores read q and k through any matrix expression, strided blocks included") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(32);
  const Rows<float> wide_q = random_rows<float>(10, 48, 7u), wide_k = random_rows<float>(12, 48, 8u);
  posemb::PositionVector qpos(10), kpos(12);
  for (int i = 0; i < 10; ++i) qpos[i] = 2 + i;
  for (int j = 0; j < 12; ++j) kpos[j] = j;
  const Rows<float> q = wide_q.rightCols(32), k = wide_k.rightCols(32);  // contiguous copies
  Rows<float> from_blocks, from_copies;
  posemb::fused_rope_scores(wide_q.rightCols(32), qpos, wide_k.rightCols(32), kpos, from_blocks, spec);
  posemb::fused_rope_scores(q, qpos, k, kpos, from_copies, spec);
  CHECK(from_blocks == from_copies);
}
