// The per-layer attention rules of model/layer_attention.hpp through attention_scores, each
// against a loop written out here from the reference implementation's code:
//   logit softcap     Gemma 2, modeling_gemma2.py, eager_attention_forward: scores · scaling,
//                     then / softcap, tanh, · softcap, then the mask
//   attention sinks   gpt-oss, modeling_gpt_oss.py, eager_attention_forward: cat([logits,
//                     sinks]), minus the row max, softmax, the sink column dropped
//   ALiBi placement   Falcon, modeling_falcon.py, FalconAttention.forward: (q·kᵀ + alibi) ·
//                     inv_norm_factor, alibi = slope · key position; MPT, modeling_mpt.py,
//                     MptAttention.forward: q·kᵀ · softmax_scale + position_bias; BLOOM,
//                     modeling_bloom.py: alibi.baddbmm(q, kᵀ, beta = 1, alpha = 1 / sqrt(d))
//   query temperature Llama 4, modeling_llama4.py, Llama4TextAttention._get_attn_scale:
//                     log1p(floor((p + 1) / floor_scale)) · attn_scale + 1; Ministral 3,
//                     modular_ministral3.py, _get_llama_4_attn_scale: 1 + beta · log(1 +
//                     floor(p / original_max_position_embeddings))
// plus properties (bounds, limits, equivalences) and the errors for bad values.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <posemb/attention/scores.hpp>

#include "support.hpp"

using test_support::position_range;
using test_support::positions_of;
using test_support::throws_with;

using posemb::PositionVector;
using posemb::ScoreOptions;
using Rows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

Rows random_rows(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed, double amplitude = 1.0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-amplitude, amplitude);
  Rows m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = uniform(engine);
  return m;
}

template <class T>
posemb::Tensor4<T> random_tensor(Eigen::Index d0, Eigen::Index d1, Eigen::Index d2, Eigen::Index d3,
                                 std::uint64_t seed, double amplitude) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-amplitude, amplitude);
  posemb::Tensor4<T> t(d0, d1, d2, d3);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = static_cast<T>(uniform(engine));
  return t;
}

// Row-wise softmax of logits (-inf masked) written out, with an optional sink column.
Rows softmax_rows(const Rows& logits, const std::vector<double>& sink_per_row = {}) {
  Rows p(logits.rows(), logits.cols());
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    double top = -std::numeric_limits<double>::infinity();
    for (Eigen::Index j = 0; j < logits.cols(); ++j) top = std::max(top, logits(i, j));
    const bool sink = !sink_per_row.empty();
    if (sink) top = std::max(top, sink_per_row[static_cast<std::size_t>(i)]);
    double sum = sink ? std::exp(sink_per_row[static_cast<std::size_t>(i)] - top) : 0.0;
    for (Eigen::Index j = 0; j < logits.cols(); ++j) sum += std::exp(logits(i, j) - top);
    for (Eigen::Index j = 0; j < logits.cols(); ++j) p(i, j) = std::exp(logits(i, j) - top) / sum;
  }
  return p;
}

void check_close(const Rows& got, const Rows& want, double tolerance) {
  REQUIRE(got.rows() == want.rows());
  REQUIRE(got.cols() == want.cols());
  for (Eigen::Index i = 0; i < got.rows(); ++i) {
    for (Eigen::Index j = 0; j < got.cols(); ++j) {
      CAPTURE(i, j, got(i, j), want(i, j));
      if (std::isinf(want(i, j))) {
        REQUIRE(got(i, j) == want(i, j));
      } else {
        REQUIRE(std::abs(got(i, j) - want(i, j)) <= tolerance * (1.0 + std::abs(want(i, j))));
      }
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Logit softcap (Gemma 2: attn_logit_softcapping 50, query_pre_attn_scalar 256 -> scaling 1/16).

TEST_CASE("layer attention: softcap gives cap · tanh(scale · q.k / cap), then the mask") {
  const double cap = 50.0, scale = 1.0 / 16.0;
  // Products up to a few hundred: scaled logits both well inside and far beyond the cap.
  const Rows q = random_rows(7, 32, 1, 30.0), k = random_rows(9, 32, 2, 30.0);
  const PositionVector qpos = position_range(2, 7), kpos = position_range(0, 9);
  ScoreOptions options;
  options.layer.softmax_scale = scale;
  options.layer.logit_softcap = cap;
  options.causal = true;
  Rows expected(7, 9);
  for (Eigen::Index i = 0; i < 7; ++i) {
    for (Eigen::Index j = 0; j < 9; ++j) {
      const double scaled = q.row(i).dot(k.row(j)) * scale;
      expected(i, j) = kpos[j] > qpos[i] ? -std::numeric_limits<double>::infinity()
                                         : std::tanh(scaled / cap) * cap;
    }
  }
  const Rows logits = posemb::attention_scores(q, qpos, k, kpos, options);
  check_close(logits, expected, 1e-14);
  // The cap bounds every logit; the inputs do reach it (the test is not vacuous).
  const Rows plain = q * k.transpose() * scale;
  CHECK(plain.cwiseAbs().maxCoeff() > 2 * cap);
  for (Eigen::Index n = 0; n < logits.size(); ++n) {
    if (!std::isinf(logits.data()[n])) CHECK(std::abs(logits.data()[n]) < cap);
  }
  options.softmax = true;
  check_close(posemb::attention_scores(q, qpos, k, kpos, options), softmax_rows(expected), 1e-13);
}

TEST_CASE("layer attention: a high softcap changes nothing, a small one flattens") {
  const Rows q = random_rows(5, 16, 3), k = random_rows(6, 16, 4);
  const PositionVector qpos = position_range(0, 5), kpos = position_range(0, 6);
  ScoreOptions plain;
  const Rows base = posemb::attention_scores(q, qpos, k, kpos, plain);
  ScoreOptions capped = plain;
  capped.layer.logit_softcap = 1e6;  // tanh(x) = x - x³/3: relative change ~ (x / cap)² / 3
  check_close(posemb::attention_scores(q, qpos, k, kpos, capped), base, 1e-11);
  capped.layer.logit_softcap = 1e-3;
  const Rows flat = posemb::attention_scores(q, qpos, k, kpos, capped);
  CHECK(flat.cwiseAbs().maxCoeff() <= 1e-3);
  CHECK(flat.cwiseAbs().maxCoeff() > 0.9e-3);  // the largest |logits| saturate at the cap
}

TEST_CASE("layer attention: blocked softcap: 4-D, grouped heads, RoPE, window, decode") {
  // 300 queries x 420 keys cross the 128-row panels and tiles; float and bfloat16 storage.
  const double cap = 30.0, scale = 1.0 / 16.0;
  const auto q = random_tensor<float>(1, 300, 4, 16, 5, 15.0);  // BSHD
  const auto k = random_tensor<float>(1, 420, 2, 16, 6, 15.0);
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  ScoreOptions options;
  options.rotation = spec;
  options.layer.softmax_scale = scale;
  options.layer.logit_softcap = cap;
  options.layer.sliding_window = 200;
  const std::int64_t q_offset = 8120, k_offset = 8000;
  const auto got = posemb::attention_scores(q, q_offset, k, k_offset, options);
  const posemb::Tensor4<float> q_rot = posemb::rotated(q, q_offset, spec);
  const posemb::Tensor4<float> k_rot = posemb::rotated(k, k_offset, spec);
  double worst = 0, largest = 0;
  for (Eigen::Index h = 0; h < 4; ++h) {
    for (Eigen::Index i = 0; i < 300; ++i) {
      for (Eigen::Index j = 0; j < 420; ++j) {
        const std::int64_t d = (q_offset + i) - (k_offset + j);
        const float value = got(0, h, i, j);
        if (d < 0 || d >= 200) {
          REQUIRE(value == -std::numeric_limits<float>::infinity());
          continue;
        }
        double dot = 0;
        for (Eigen::Index c = 0; c < 16; ++c)
          dot += double(q_rot(0, i, h, c)) * double(k_rot(0, j, h / 2, c));
        largest = std::max(largest, std::abs(dot * scale));
        worst = std::max(worst, std::abs(double(value) - cap * std::tanh(dot * scale / cap)));
      }
    }
  }
  CHECK(largest > cap);
  CHECK(worst < 2e-5);
}

TEST_CASE("layer attention: a softcap <= 0, NaN or inf is an error naming logit_softcap") {
  const Rows q = random_rows(2, 4, 7), k = random_rows(3, 4, 8);
  for (double bad : {0.0, -50.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ScoreOptions options;
    options.layer.logit_softcap = bad;
    throws_with(
        [&] {
          posemb::attention_scores(q, position_range(0, 2), k, position_range(0, 3), options);
        },
        "layer.logit_softcap = ");
  }
  ScoreOptions options;
  options.layer.logit_softcap = -1.0;
  throws_with(
      [&] { posemb::attention_scores(q, position_range(0, 2), k, position_range(0, 3), options); },
      "layer.logit_softcap = -1: expected a finite number > 0");
}

// ---------------------------------------------------------------------------------------------
// Attention sinks (gpt-oss: one learned logit per query head).

TEST_CASE("layer attention: sinks join the softmax denominator per head and get no column") {
  const Eigen::Index heads = 3, kv_heads = 1, seq = 6, dim = 8;
  const auto q = random_tensor<double>(1, seq, heads, dim, 11, 2.0);  // BSHD
  const auto k = random_tensor<double>(1, seq, kv_heads, dim, 12, 2.0);
  ScoreOptions options;
  options.layer.attention_sinks = true;
  options.sink_logits = Eigen::Vector3d(0.5, -2.0, 3.0);
  options.causal = true;
  options.softmax = true;
  const auto p = posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, options);
  const double scale = 1.0 / std::sqrt(double(dim));
  for (Eigen::Index h = 0; h < heads; ++h) {
    Rows logits(seq, seq);
    for (Eigen::Index i = 0; i < seq; ++i) {
      for (Eigen::Index j = 0; j < seq; ++j) {
        double dot = 0;
        for (Eigen::Index c = 0; c < dim; ++c) dot += q(0, i, h, c) * k(0, j, 0, c);
        logits(i, j) = j > i ? -std::numeric_limits<double>::infinity() : dot * scale;
      }
    }
    const Rows expected = softmax_rows(logits, std::vector<double>(seq, options.sink_logits[h]));
    for (Eigen::Index i = 0; i < seq; ++i) {
      double sum = 0;
      for (Eigen::Index j = 0; j < seq; ++j) {
        CAPTURE(h, i, j);
        CHECK(p(0, h, i, j) == Approx(expected(i, j)).epsilon(0).margin(1e-15));
        if (j > i) CHECK(p(0, h, i, j) == 0.0);
        sum += p(0, h, i, j);
      }
      // The sink keeps its share: exp(sink) / (exp(sink) + sum_j exp(s_j)).
      double denominator = std::exp(options.sink_logits[h]);
      for (Eigen::Index j = 0; j <= i; ++j) denominator += std::exp(logits(i, j));
      CHECK(1.0 - sum == Approx(std::exp(options.sink_logits[h]) / denominator).epsilon(1e-12));
    }
  }
  // Query 0 sees one key: p = exp(s) / (exp(s) + exp(sink)) = sigmoid(s - sink).
  double dot = 0;
  for (Eigen::Index c = 0; c < dim; ++c) dot += q(0, 0, 2, c) * k(0, 0, 0, c);
  CHECK(p(0, 2, 0, 0) == Approx(1.0 / (1.0 + std::exp(3.0 - dot * scale))).epsilon(1e-13));
}

TEST_CASE("layer attention: sinks: large logits do not overflow, a very low sink is softmax") {
  const Rows q = random_rows(4, 8, 13), k = random_rows(5, 8, 14);
  const PositionVector qpos = position_range(0, 4), kpos = position_range(0, 5);
  ScoreOptions plain;
  plain.softmax = true;
  const Rows base = posemb::attention_scores(q, qpos, k, kpos, plain);
  ScoreOptions sunk = plain;
  sunk.layer.attention_sinks = true;
  sunk.sink_logits = Eigen::VectorXd::Constant(1, -800.0);  // exp(-800) underflows to 0
  check_close(posemb::attention_scores(q, qpos, k, kpos, sunk), base, 1e-15);
  sunk.sink_logits[0] = 800.0;  // the sink takes nearly everything, without inf / inf
  const Rows drained = posemb::attention_scores(q, qpos, k, kpos, sunk);
  CHECK(drained.allFinite());
  CHECK(drained.maxCoeff() < 1e-300);
  // Without softmax the logits are returned as they are.
  sunk.softmax = false;
  plain.softmax = false;
  CHECK(posemb::attention_scores(q, qpos, k, kpos, sunk) ==
        posemb::attention_scores(q, qpos, k, kpos, plain));
}

TEST_CASE("layer attention: sink logits must match attention_sinks and the head count") {
  const Rows q = random_rows(2, 4, 15), k = random_rows(3, 4, 16);
  const PositionVector qp = position_range(0, 2), kp = position_range(0, 3);
  ScoreOptions options;
  options.sink_logits = Eigen::VectorXd::Zero(1);
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "sink_logits.size() = 1: expected none unless layer.attention_sinks");
  options.layer.attention_sinks = true;
  options.sink_logits = Eigen::VectorXd::Zero(2);
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "sink_logits.size() = 2: expected one sink logit per query head = 1");
  options.sink_logits = Eigen::VectorXd::Constant(1, std::nan(""));
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "sink_logits[0] = nan: expected a finite number");
  // A row the mask empties stays an error with a sink (it means a position bug).
  options.sink_logits = Eigen::VectorXd::Zero(1);
  options.causal = true;
  options.softmax = true;
  throws_with([&] { posemb::attention_scores(q, qp, k, position_range(5, 3), options); },
              "query position = 0: every key position is greater");
}

// ---------------------------------------------------------------------------------------------
// ALiBi relative to the scale: Falcon before it, MPT and BLOOM after.

TEST_CASE("layer attention: Falcon's ALiBi equals HF's (q.k + slope·kpos)·inv_norm") {
  const Eigen::Index seq = 12, dim = 64;
  const Rows q = random_rows(seq, dim, 21, 1.5), k = random_rows(seq, dim, 22, 1.5);
  const PositionVector pos = position_range(0, seq);
  const double slope = 0.5, inv_norm = 1.0 / std::sqrt(double(dim));
  ScoreOptions falcon;
  falcon.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, slope)};
  falcon.layer.bias_placement = posemb::BiasPlacement::BeforeScale;
  falcon.causal = true;
  // Logits: scale · (q.k - slope |i - j|), written out.
  Rows logits(seq, seq), hf(seq, seq);
  for (Eigen::Index i = 0; i < seq; ++i) {
    for (Eigen::Index j = 0; j < seq; ++j) {
      const double dot = q.row(i).dot(k.row(j));
      const bool masked = j > i;
      logits(i, j) = masked ? -std::numeric_limits<double>::infinity()
                            : inv_norm * (dot - slope * double(i - j));
      // modeling_falcon.py: alibi = slope · (cumsum(mask) - 1), the key position.
      hf(i, j) =
          masked ? -std::numeric_limits<double>::infinity() : (dot + slope * double(j)) * inv_norm;
    }
  }
  check_close(posemb::attention_scores(q, pos, k, pos, falcon), logits, 1e-14);
  // Probabilities: HF's per-row shift (slope · i) cancels in the softmax.
  falcon.softmax = true;
  check_close(posemb::attention_scores(q, pos, k, pos, falcon), softmax_rows(hf), 1e-13);
  // The same as the bias after the scale with the effective slope slope / sqrt(d).
  CHECK(posemb::effective_alibi_slope(slope, inv_norm, posemb::BiasPlacement::BeforeScale) ==
        slope / 8.0);
  CHECK(posemb::effective_alibi_slope(slope, inv_norm, posemb::BiasPlacement::AfterScale) == slope);
  ScoreOptions effective = falcon;
  effective.layer.bias_placement = posemb::BiasPlacement::AfterScale;
  effective.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, slope / 8.0)};
  check_close(posemb::attention_scores(q, pos, k, pos, effective),
              posemb::attention_scores(q, pos, k, pos, falcon), 1e-15);
}

TEST_CASE("layer attention: MPT's ALiBi after its softmax_scale, BLOOM's after 1/sqrt(d)") {
  const Eigen::Index seq = 10, dim = 32;
  const Rows q = random_rows(seq, dim, 23), k = random_rows(seq, dim, 24);
  const PositionVector pos = position_range(100, seq);
  const double slope = 0.25;
  for (const double scale :
       {0.2, 1.0 / std::sqrt(double(dim))}) {  // MPT attn_config.softmax_scale; BLOOM
    CAPTURE(scale);
    ScoreOptions options;
    options.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, slope)};
    options.layer.softmax_scale = scale;
    options.causal = true;
    Rows logits(seq, seq);
    for (Eigen::Index i = 0; i < seq; ++i) {
      for (Eigen::Index j = 0; j < seq; ++j) {
        logits(i, j) = j > i ? -std::numeric_limits<double>::infinity()
                             : q.row(i).dot(k.row(j)) * scale - slope * double(i - j);
      }
    }
    check_close(posemb::attention_scores(q, pos, k, pos, options), logits, 1e-14);
    // and not Falcon's: before the scale the bias shrinks by the scale
    ScoreOptions falcon = options;
    falcon.layer.bias_placement = posemb::BiasPlacement::BeforeScale;
    CHECK(std::abs(posemb::attention_scores(q, pos, k, pos, falcon)(9, 0) - logits(9, 0)) > 0.1);
  }
}

TEST_CASE("layer attention: blocked ALiBi before the scale, 4-D with a softcap") {
  // Both orders matter once a softcap sits between: cap(scale (q.k + bias)) vs cap(scale q.k) +
  // bias.
  const Eigen::Index heads = 4, seq = 150, dim = 16;
  const auto q = random_tensor<double>(1, seq, heads, dim, 25, 3.0);
  const auto k = random_tensor<double>(1, seq, heads, dim, 26, 3.0);
  const Eigen::VectorXd slopes = posemb::alibi_slopes(heads);
  const double cap = 5.0, scale = 1.0 / 4.0;
  for (posemb::BiasPlacement placement :
       {posemb::BiasPlacement::BeforeScale, posemb::BiasPlacement::AfterScale}) {
    CAPTURE(posemb::to_string(placement));
    ScoreOptions options;
    options.bias = posemb::AlibiSlopes{slopes};
    options.layer.bias_placement = placement;
    options.layer.logit_softcap = cap;
    options.causal = true;
    const auto got = posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, options);
    double worst = 0;
    for (Eigen::Index h = 0; h < heads; ++h) {
      for (Eigen::Index i = 0; i < seq; ++i) {
        for (Eigen::Index j = 0; j <= i; ++j) {
          double dot = 0;
          for (Eigen::Index c = 0; c < dim; ++c) dot += q(0, i, h, c) * k(0, j, h, c);
          const double bias = -slopes[h] * double(i - j);
          const double want = placement == posemb::BiasPlacement::BeforeScale
                                  ? cap * std::tanh(scale * (dot + bias) / cap)
                                  : cap * std::tanh(scale * dot / cap) + bias;
          worst = std::max(worst, std::abs(got(0, h, i, j) - want));
        }
        for (Eigen::Index j = i + 1; j < seq; ++j) REQUIRE(std::isinf(got(0, h, i, j)));
      }
    }
    CHECK(worst < 1e-12);
  }
}

// ---------------------------------------------------------------------------------------------
// Query temperature: Llama 4's floor((p + 1) / F), Ministral 3's floor(p / L0) and Beam's
// power (1 + (p + 1) / 2048)^0.1.

TEST_CASE("layer attention: both query temperature forms at their steps") {
  const posemb::QueryTemperature llama4{8192.0, 0.1, 1};
  const posemb::QueryTemperature ministral3{16384.0, 0.1, 0};
  const double ln2 = std::log(2.0), ln3 = std::log(3.0);
  CHECK(llama4.factor(8190) == 1.0);
  CHECK(llama4.factor(8191) == Approx(1.0 + 0.1 * ln2).epsilon(1e-15));
  CHECK(llama4.factor(16383) == Approx(1.0 + 0.1 * ln3).epsilon(1e-15));
  CHECK(ministral3.factor(16383) == 1.0);
  CHECK(ministral3.factor(16384) == Approx(1.0 + 0.1 * ln2).epsilon(1e-15));
  CHECK(ministral3.factor(32767) == Approx(1.0 + 0.1 * ln2).epsilon(1e-15));
  CHECK(ministral3.factor(32768) == Approx(1.0 + 0.1 * ln3).epsilon(1e-15));
  CHECK(ministral3.factor(1000000) ==
        Approx(1.0 + 0.1 * std::log(1.0 + 61.0)).epsilon(1e-15));  // floor(1e6 / 16384) = 61
  // The default keeps Llama 4's form.
  CHECK(posemb::QueryTemperature{}.position_offset == 1);
  CHECK(posemb::QueryTemperature{}.form == posemb::TemperatureForm::FloorLog);
}

TEST_CASE("layer attention: Beam's power temperature, smooth in p, to millions") {
  const posemb::QueryTemperature beam{2048.0, 0.1, 1, posemb::TemperatureForm::Power};
  CHECK(beam.factor(-1) == 1.0);
  // (1 + 2048 / 2048)^0.1 = 2^0.1 at p = 2047; 4097^0.1 / 2048^0.1 = (1 + 4096 / 2048)^0.1.
  CHECK(beam.factor(2047) == Approx(std::pow(2.0, 0.1)).epsilon(1e-15));
  CHECK(beam.factor(4095) == Approx(std::pow(3.0, 0.1)).epsilon(1e-15));
  CHECK(beam.factor(0) == Approx(std::pow(2049.0 / 2048.0, 0.1)).epsilon(1e-15));
  // No steps: every position raises it (unlike the floor forms).
  CHECK(beam.factor(1) > beam.factor(0));
  // 1M positions: (1 + 1000001 / 2048)^0.1 = 1.8587...; 2M: the ratio of the two is
  // ((2048 + 2000001) / (2048 + 1000001))^0.1.
  const double m1 = beam.factor(1000000), m2 = beam.factor(2000000);
  CHECK(m1 == Approx(std::pow(1.0 + 1000001.0 / 2048.0, 0.1)).epsilon(1e-14));
  CHECK(m2 / m1 == Approx(std::pow(2002049.0 / 1002049.0, 0.1)).epsilon(1e-14));
  // A different form is a different temperature.
  posemb::QueryTemperature floor_log = beam;
  floor_log.form = posemb::TemperatureForm::FloorLog;
  CHECK_FALSE(floor_log == beam);
  CHECK(std::string(posemb::to_string(beam.form)) == "power");
}

TEST_CASE("layer attention: query temperature in the kernel equals the loop, both forms") {
  // 200 queries from 16300: the panels cross Ministral 3's step at 16384 and Llama 4's at 16383.
  const Eigen::Index seq_q = 200, seq_k = 40, dim = 8;
  const Rows q = random_rows(seq_q, dim, 31), k = random_rows(seq_k, dim, 32);
  const PositionVector qpos = position_range(16300, seq_q), kpos = position_range(16000, seq_k);
  for (const std::int64_t offset : {std::int64_t{1}, std::int64_t{0}}) {
    CAPTURE(offset);
    const double floor_scale = offset == 1 ? 8192.0 : 16384.0;
    ScoreOptions options;
    options.rotation = posemb::default_rope_spec(dim);  // Ministral 3 scales q after RoPE
    options.layer.query_temperature = posemb::QueryTemperature{floor_scale, 0.1, offset};
    options.causal = true;
    const Rows q_rot = posemb::rotated(q, qpos, posemb::default_rope_spec(dim));
    const Rows k_rot = posemb::rotated(k, kpos, posemb::default_rope_spec(dim));
    Rows expected(seq_q, seq_k);
    for (Eigen::Index i = 0; i < seq_q; ++i) {
      const double p = double(qpos[i]);
      const double factor =
          1.0 + 0.1 * std::log(1.0 + std::floor((p + double(offset)) / floor_scale));
      for (Eigen::Index j = 0; j < seq_k; ++j) {
        expected(i, j) = factor * q_rot.row(i).dot(k_rot.row(j)) / std::sqrt(double(dim));
      }
    }
    check_close(posemb::attention_scores(q, qpos, k, kpos, options), expected, 1e-14);
  }
}

// ---------------------------------------------------------------------------------------------
// Everything at once against the loop: RoPE, ALiBi before the scale, softcap, temperature,
// window, sinks, softmax; 4-D float with grouped heads.

TEST_CASE("layer attention: every rule at once equals the loop in the blocked kernel") {
  const Eigen::Index heads = 4, kv_heads = 2, seq_q = 140, seq_k = 300, dim = 16;
  const auto q = random_tensor<float>(1, seq_q, heads, dim, 41, 3.0);
  const auto k = random_tensor<float>(1, seq_k, kv_heads, dim, 42, 3.0);
  const posemb::RopeSpec spec = posemb::default_rope_spec(dim);
  const posemb::RopeTable<float> table(spec, 8000, seq_k);
  const std::int64_t q_offset = 8160, k_offset = 8000;
  ScoreOptions options;
  options.rotation = &table;
  options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(heads)};
  options.sink_logits = Eigen::Vector4d(0.0, 1.0, -1.0, 2.0);
  options.layer.bias_placement = posemb::BiasPlacement::BeforeScale;
  options.layer.logit_softcap = 10.0;
  options.layer.query_temperature = posemb::QueryTemperature{8192.0, 0.1, 0};
  options.layer.sliding_window = 100;
  options.layer.attention_sinks = true;
  options.softmax = true;
  const auto got = posemb::attention_scores(q, q_offset, k, k_offset, options);
  const posemb::Tensor4<float> q_rot = posemb::rotated(q, q_offset, spec);
  const posemb::Tensor4<float> k_rot = posemb::rotated(k, k_offset, spec);
  const Eigen::VectorXd slopes = posemb::alibi_slopes(heads);
  double worst = 0;
  for (Eigen::Index h = 0; h < heads; ++h) {
    Rows logits(seq_q, seq_k);
    for (Eigen::Index i = 0; i < seq_q; ++i) {
      const std::int64_t p = q_offset + i;
      const double t = 1.0 + 0.1 * std::log(1.0 + std::floor(double(p) / 8192.0));
      for (Eigen::Index j = 0; j < seq_k; ++j) {
        const std::int64_t d = p - (k_offset + j);
        double dot = 0;
        for (Eigen::Index c = 0; c < dim; ++c)
          dot += double(q_rot(0, i, h, c)) * double(k_rot(0, j, h / 2, c));
        const double s = 0.25 * (t * dot - slopes[h] * double(std::abs(d)));
        logits(i, j) = (d < 0 || d >= 100) ? -std::numeric_limits<double>::infinity()
                                           : 10.0 * std::tanh(s / 10.0);
      }
    }
    const Rows expected = softmax_rows(logits, std::vector<double>(seq_q, options.sink_logits[h]));
    for (Eigen::Index i = 0; i < seq_q; ++i) {
      for (Eigen::Index j = 0; j < seq_k; ++j) {
        if (std::isinf(logits(i, j))) REQUIRE(got(0, h, i, j) == 0.0f);
        worst = std::max(worst, std::abs(double(got(0, h, i, j)) - expected(i, j)));
      }
    }
  }
  CHECK(worst < 2e-6);
}

TEST_CASE("layer attention: same_attention compares every field") {
  const posemb::LayerAttention base;
  CHECK(posemb::same_attention(base, base));
  std::vector<posemb::LayerAttention> changed(8, base);
  changed[0].softmax_scale = 0.5;
  changed[1].sliding_window = 4096;
  changed[2].attention_chunk_size = 8192;
  changed[3].query_temperature = posemb::QueryTemperature{};
  changed[4].logit_softcap = 50.0;
  changed[5].attention_sinks = true;
  changed[6].bias_placement = posemb::BiasPlacement::BeforeScale;
  changed[7].query_temperature = posemb::QueryTemperature{8192.0, 0.1, 0};
  changed.push_back(base);
  changed.back().query_temperature =
      posemb::QueryTemperature{8192.0, 0.1, 1, posemb::TemperatureForm::Power};
  for (std::size_t n = 0; n < changed.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(posemb::same_attention(base, changed[n]));
    CHECK(posemb::same_attention(changed[n], changed[n]));
  }
  CHECK_FALSE(posemb::same_attention(changed[3], changed[7]));  // position_offset 1 vs 0
}
