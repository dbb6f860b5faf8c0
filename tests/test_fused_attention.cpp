// fused_rope_scores against the unfused recipe written out here (rotate q and k with
// apply_rope, multiply in double, add -slope |qpos - kpos|, mask), and its properties.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

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
  const posemb::RopeSpec spec = posemb::default_rope_spec(rotary_dim, 10000.0, pairing);
  const Rows<T> q = random_rows<T>(seq_q, head_dim, 1u), k = random_rows<T>(seq_k, head_dim, 2u);
  // Queries are the last seq_q of the keys' positions (decode against a KV cache), offset 5000.
  posemb::PositionVector kpos(seq_k), qpos(seq_q);
  for (Eigen::Index j = 0; j < seq_k; ++j) kpos[j] = 5000 + j;
  for (Eigen::Index i = 0; i < seq_q; ++i) qpos[i] = 5000 + seq_k - seq_q + i;
  posemb::FusedScoreOptions options;
  options.alibi_slope = slope;
  options.causal = causal;
  Rows<T> fused;
  if (use_table) {
    const posemb::RopeTable<T> table(spec, 5000, seq_k);
    posemb::fused_rope_scores<T>(q, qpos, k, kpos, table, options, fused);
  } else {
    posemb::fused_rope_scores<T>(q, qpos, k, kpos, spec, options, fused);
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
  posemb::FusedScoreOptions options;
  options.alibi_slope = 0.25;
  options.causal = true;
  Rows<double> near, far;
  posemb::fused_rope_scores<double>(q, qpos, k, kpos, spec, options, near);
  const posemb::PositionVector qfar = qpos.array() + 1000000, kfar = kpos.array() + 1000000;
  posemb::fused_rope_scores<double>(q, qfar, k, kfar, spec, options, far);
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
  posemb::fused_rope_scores<double>(zeros_q, one, zeros_k, three, spec, options, bias);
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
  posemb::FusedScoreOptions options;
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k6, kpos, spec, options, out),
                    Catch::Contains("k.cols() = 6"));
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, kpos, k, kpos, spec, options, out),
                    Catch::Contains("q_positions.size() = 3"));
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k, qpos, spec, options, out),
                    Catch::Contains("k_positions.size() = 2"));
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k, kpos, posemb::default_rope_spec(10), options, out),
                    Catch::Contains("head_dim = 8"));
  options.alibi_slope = -1.0;
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k, kpos, spec, options, out),
                    Catch::Contains("options.alibi_slope = -1"));
  options.alibi_slope = 0.0;
  options.scale = std::nan("");
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k, kpos, spec, options, out),
                    Catch::Contains("options.scale = nan"));
  options.scale = 0.0;
  const posemb::RopeTable<float> table(spec, 0, 2);  // does not cover key position 2
  CHECK_THROWS_WITH(posemb::fused_rope_scores<float>(q, qpos, k, kpos, table, options, out),
                    Catch::Contains("position = 2"));
}
