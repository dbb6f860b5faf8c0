// Tests for attention/scores.hpp: RoPE scores against the published drift table, the relative
// property through the attention API, softmax and the causal mask, ALiBi against alibi.hpp,
// grouped-query head mapping, batched == per-head, KV-cache offsets, and every error path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <posemb/bias/alibi.hpp>
#include <posemb/attention/scores.hpp>
#include <posemb/io/npy.hpp>

#include "attention/attention_oracle.hpp"
#include "support.hpp"

using test_support::position_range;
using test_support::positions_of;
using test_support::throws_with;

using posemb::PositionMatrix;
using posemb::PositionVector;
using posemb::ScoreOptions;
using posemb::TensorLayout;
using Rows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace {

// The positional scheme of a test case: a rotation, a bias, or neither.
enum class Scheme { None, Rope, Alibi, RelativeBias };

Rows random_rows(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Rows m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = uniform(engine);
  return m;
}

template <class T>
posemb::Tensor4<T> random_tensor(Eigen::Index d0, Eigen::Index d1, Eigen::Index d2, Eigen::Index d3,
                                 std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  posemb::Tensor4<T> t(d0, d1, d2, d3);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = static_cast<T>(uniform(engine));
  return t;
}

ScoreOptions rope_options(posemb::RotaryDims dims, posemb::Pairing pairing) {
  ScoreOptions options;
  options.rotation = posemb::default_rope_spec(dims, 10000.0, pairing);
  return options;
}

// The drift-table query and key, q = x_q Wq and k = x_k Wk (row-vector products): [1, 64] each.
struct DriftInputs {
  Rows q, k;
};

DriftInputs drift_inputs() {
  const std::string dir = std::string(POSEMB_DATA_DIR) + "/drift_table";
  const auto load = [&](const std::string& name) {
    return posemb::read_npy(dir + "/" + name).values<float>();
  };
  const std::vector<float> xq = load("x_q.npy"), xk = load("x_k.npy"), wq = load("Wq.npy"),
                           wk = load("Wk.npy");
  const Eigen::Map<const Eigen::Matrix<float, 1, 64>> x_q(xq.data()), x_k(xk.data());
  const Eigen::Map<const Eigen::Matrix<float, 64, 64, Eigen::RowMajor>> Wq(wq.data()),
      Wk(wk.data());
  return {x_q.cast<double>() * Wq.cast<double>(), x_k.cast<double>() * Wk.cast<double>()};
}

}  // namespace

// data/drift_table/README.md: rope(m, n) = R(m)(x_q Wq) . R(n)(x_k Wk), interleaved pairs,
// base 10000: -0.6102 at gap 5 and -5.8183 at gap 0 (published, 4 decimals); rotate-half gap 5:
// -3.451334; no positions: -5.8183; gap 0 with either pairing: -5.818313 (6 decimals). The
// 6-decimal values move by up to 5e-6 with the precision of the products x Wq (float32 vs
// float64 from the same float32 inputs: -5.8183154 vs -5.8183104), hence the 5e-6 margin.
TEST_CASE("attention: RoPE scores reproduce the published drift table") {
  const DriftInputs in = drift_inputs();
  ScoreOptions interleaved = rope_options(64, posemb::Pairing::Interleaved);
  interleaved.layer.softmax_scale = 1.0;
  ScoreOptions rotate_half = rope_options(64, posemb::Pairing::RotateHalf);
  rotate_half.layer.softmax_scale = 1.0;
  ScoreOptions none;
  none.layer.softmax_scale = 1.0;
  const auto score = [&](const ScoreOptions& options, std::int64_t m, std::int64_t n) {
    return posemb::attention_scores(in.q, positions_of({m}), in.k, positions_of({n}), options)(0,
                                                                                               0);
  };
  for (std::int64_t n : {0, 100, 1000, 2000}) {
    CAPTURE(n);
    CHECK(score(interleaved, n + 5, n) == Approx(-0.6102).epsilon(0).margin(5e-5));
    CHECK(score(interleaved, n, n) == Approx(-5.818313).epsilon(0).margin(5e-6));
    CHECK(score(rotate_half, n + 5, n) == Approx(-3.451334).epsilon(0).margin(5e-6));
    CHECK(score(rotate_half, n, n) == Approx(-5.818313).epsilon(0).margin(5e-6));
  }
  CHECK(score(none, 5, 0) == Approx(-5.818313).epsilon(0).margin(5e-6));
}

TEST_CASE("attention: float32 RoPE scores do not drift over 2048 positions") {
  // Published float32-angle implementation: gap-5 spread 5.4e-4 over n = 0 .. 2047. With angles
  // in double, only float rounding of cos/sin, the rotated q, k and the dot product remains
  // (about 7e-6 here).
  const DriftInputs in = drift_inputs();
  const Eigen::MatrixXf q = in.q.cast<float>(), k = in.k.cast<float>();
  ScoreOptions options = rope_options(64, posemb::Pairing::Interleaved);
  options.layer.softmax_scale = 1.0;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (std::int64_t n = 0; n < 2048; ++n) {
    const float s =
        posemb::attention_scores(q, positions_of({n + 5}), k, positions_of({n}), options)(0, 0);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  CHECK(lo == Approx(-0.6102).epsilon(0).margin(5e-5));
  CHECK(hi - lo < 2e-5f);
}

TEST_CASE("attention: RoPE scores depend on m - n only, through the attention API") {
  const Rows q = random_rows(4, 16, 1), k = random_rows(6, 16, 2);
  const PositionVector qpos = positions_of({3, 9, 0, 27}),
                       kpos = positions_of({0, 1, 2, 14, 30, 5});
  for (posemb::Pairing pairing : {posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf}) {
    for (int rotary_dim : {16, 8}) {  // full and partial rotary
      CAPTURE(posemb::to_string(pairing), rotary_dim);
      const ScoreOptions options = rope_options({16, rotary_dim}, pairing);
      const Rows base = posemb::attention_scores(q, qpos, k, kpos, options);
      for (std::int64_t shift : {1, 1000, 123456789}) {
        CAPTURE(shift);
        const PositionVector qs = qpos.array() + shift, ks = kpos.array() + shift;
        const Rows shifted = posemb::attention_scores(q, qs, k, ks, options);
        // Double angles p * inv_freq carry a rounding error of about p * 1e-16 rad.
        CHECK((shifted - base).cwiseAbs().maxCoeff() < 1e-12 + 1e-16 * static_cast<double>(shift));
      }
      // and they do depend on the gap (the property is not vacuous)
      const PositionVector ks = kpos.array() + 1;
      CHECK((posemb::attention_scores(q, qpos, k, ks, options) - base).cwiseAbs().maxCoeff() >
            1e-3);
    }
  }
}

TEST_CASE("attention: RoPE at equal query and key positions equals the score without positions") {
  const Rows q = random_rows(1, 32, 3), k = random_rows(1, 32, 4);
  const ScoreOptions none;
  const double plain =
      posemb::attention_scores(q, positions_of({0}), k, positions_of({0}), none)(0, 0);
  CHECK(plain == Approx(q.row(0).dot(k.row(0)) / std::sqrt(32.0)).epsilon(1e-14));
  for (std::int64_t p : {0ll, 3ll, 99999ll, 5000000000ll}) {
    CAPTURE(p);
    const double rope =
        posemb::attention_scores(q, positions_of({p}), k, positions_of({p}),
                                 rope_options(32, posemb::Pairing::RotateHalf))(0, 0);
    CHECK(rope == Approx(plain).epsilon(0).margin(1e-13));
  }
}

TEST_CASE("attention: default scale is 1/sqrt(head_dim), an explicit scale replaces it") {
  const Rows ones = Rows::Ones(1, 4);
  ScoreOptions options;
  CHECK(posemb::attention_scores(ones, position_range(0, 1), ones, position_range(0, 1),
                                 options)(0, 0) == 2.0);  // 4 / sqrt(4)
  options.layer.softmax_scale = 0.125;
  CHECK(posemb::attention_scores(ones, position_range(0, 1), ones, position_range(0, 1),
                                 options)(0, 0) == 0.5);
}

TEST_CASE("attention: softmax and causal mask at hand-computed values") {
  // head_dim 1, scale 1, q = 1, keys 0, ln 2, ln 4: logits 0, ln 2, ln 4.
  Rows q(1, 1), k(3, 1);
  q << 1.0;
  k << 0.0, std::log(2.0), std::log(4.0);
  ScoreOptions options;
  options.layer.softmax_scale = 1.0;
  options.softmax = true;
  const Rows p = posemb::attention_scores(q, positions_of({2}), k, position_range(0, 3), options);
  CHECK(p(0, 0) == Approx(1.0 / 7).epsilon(1e-14));
  CHECK(p(0, 1) == Approx(2.0 / 7).epsilon(1e-14));
  CHECK(p(0, 2) == Approx(4.0 / 7).epsilon(1e-14));
  options.causal = true;  // the query at position 1 cannot see the key at position 2
  const Rows masked =
      posemb::attention_scores(q, positions_of({1}), k, position_range(0, 3), options);
  CHECK(masked(0, 0) == Approx(1.0 / 3).epsilon(1e-14));
  CHECK(masked(0, 1) == Approx(2.0 / 3).epsilon(1e-14));
  CHECK(masked(0, 2) == 0.0);
  options.softmax = false;  // logits: the masked entry is -inf
  const Rows logits =
      posemb::attention_scores(q, positions_of({1}), k, position_range(0, 3), options);
  CHECK(logits(0, 1) == Approx(std::log(2.0)).epsilon(1e-14));
  CHECK(logits(0, 2) == -std::numeric_limits<double>::infinity());
}

TEST_CASE("attention: softmax is stable for large logits") {
  Rows q(1, 1), k(2, 1);
  q << 1.0;
  k << 1000.0, 1001.0;
  ScoreOptions options;
  options.layer.softmax_scale = 1.0;
  options.softmax = true;
  const Rows p =
      posemb::attention_scores(q, position_range(0, 1), k, position_range(0, 2), options);
  const double e = std::exp(1.0);
  CHECK(p(0, 0) == Approx(1.0 / (1.0 + e)).epsilon(1e-14));
  CHECK(p(0, 1) == Approx(e / (1.0 + e)).epsilon(1e-14));
}

TEST_CASE("attention: causal softmax rows sum to 1 and masked entries are exactly 0") {
  const auto q = random_tensor<float>(2, 7, 3, 8, 5);
  const auto k = random_tensor<float>(2, 7, 3, 8, 6);
  for (Scheme scheme : {Scheme::None, Scheme::Rope, Scheme::Alibi}) {
    CAPTURE(static_cast<int>(scheme));
    ScoreOptions options;
    if (scheme == Scheme::Rope) options.rotation = posemb::default_rope_spec(8);
    if (scheme == Scheme::Alibi) options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(3)};
    options.causal = true;
    options.softmax = true;
    const auto p = posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, options);
    for (Eigen::Index b = 0; b < 2; ++b) {
      for (Eigen::Index h = 0; h < 3; ++h) {
        for (Eigen::Index i = 0; i < 7; ++i) {
          double sum = 0.0;
          for (Eigen::Index j = 0; j < 7; ++j) {
            CAPTURE(b, h, i, j);
            if (j > i) {
              CHECK(p(b, h, i, j) == 0.0f);
            } else {
              CHECK(p(b, h, i, j) > 0.0f);
            }
            sum += p(b, h, i, j);
          }
          CHECK(sum == Approx(1.0).epsilon(0).margin(1e-6));
        }
      }
    }
  }
}

TEST_CASE("attention: a fully masked row is an error with softmax and -inf logits without") {
  const Rows q = random_rows(2, 4, 7), k = random_rows(3, 4, 8);
  ScoreOptions options;
  options.causal = true;
  // Query positions 5 and 0 against keys at 1, 2, 3: the second query sees no key.
  const Rows logits =
      posemb::attention_scores(q, positions_of({5, 0}), k, position_range(1, 3), options);
  CHECK((logits.row(1).array() == -std::numeric_limits<double>::infinity()).all());
  CHECK(logits.row(0).allFinite());
  options.softmax = true;
  CHECK_THROWS_AS(
      posemb::attention_scores(q, positions_of({5, 0}), k, position_range(1, 3), options),
      posemb::Error);
  CHECK_THROWS_WITH(
      posemb::attention_scores(q, positions_of({5, 0}), k, position_range(1, 3), options),
      Catch::Matchers::Contains("query position = 0: every key position is greater"));
}

TEST_CASE("attention: ALiBi logits are scale * q.k plus alibi_bias") {
  const auto q = random_tensor<double>(1, 3, 5, 4, 9);  // BHSD: [1, heads 3, seq 5, 4]
  const auto k = random_tensor<double>(1, 3, 5, 4, 10);
  ScoreOptions alibi;
  alibi.bias = posemb::AlibiSlopes{posemb::alibi_slopes(3)};
  ScoreOptions none;
  for (bool causal : {true, false}) {
    CAPTURE(causal);
    alibi.causal = causal;
    none.causal = causal;
    const auto with =
        posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{4}, alibi, TensorLayout::BHSD);
    const auto without =
        posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{4}, none, TensorLayout::BHSD);
    const auto bias = posemb::alibi_bias<double>(
        posemb::alibi_slopes(3), position_range(4, 5), position_range(4, 5),
        causal ? posemb::AlibiForm::Causal : posemb::AlibiForm::Symmetric);
    for (Eigen::Index h = 0; h < 3; ++h) {
      for (Eigen::Index i = 0; i < 5; ++i) {
        for (Eigen::Index j = 0; j < 5; ++j) {
          CAPTURE(h, i, j);
          if (causal && j > i) {
            CHECK(with(0, h, i, j) == -std::numeric_limits<double>::infinity());
            CHECK(bias(h, i, j) == -std::numeric_limits<double>::infinity());
          } else {
            CHECK(with(0, h, i, j) ==
                  Approx(without(0, h, i, j) + bias(h, i, j)).epsilon(0).margin(1e-14));
          }
        }
      }
    }
  }
}

TEST_CASE("attention: GQA maps query head h to kv head h / (heads / kv_heads)") {
  // 4 query heads, 2 kv heads, head_dim 2. kv head 0 holds (1, 0), kv head 1 holds (0, 1); every
  // query is (1, 2). Heads 0, 1 read kv head 0 (score 1); heads 2, 3 read kv head 1 (score 2).
  posemb::Tensor4<double> q(1, 1, 4, 2), k(1, 1, 2, 2);  // BSHD
  for (int h = 0; h < 4; ++h) {
    q(0, 0, h, 0) = 1.0;
    q(0, 0, h, 1) = 2.0;
  }
  k(0, 0, 0, 0) = 1.0;
  k(0, 0, 0, 1) = 0.0;
  k(0, 0, 1, 0) = 0.0;
  k(0, 0, 1, 1) = 1.0;
  ScoreOptions options;
  options.layer.softmax_scale = 1.0;
  const auto s = posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, options);
  REQUIRE(s.dimension(1) == 4);
  CHECK(s(0, 0, 0, 0) == 1.0);
  CHECK(s(0, 1, 0, 0) == 1.0);
  CHECK(s(0, 2, 0, 0) == 2.0);
  CHECK(s(0, 3, 0, 0) == 2.0);
}

TEST_CASE("attention: batched scores equal the per-head loop, in both layouts") {
  const Eigen::Index batch = 2, seq_q = 4, seq_k = 6, heads = 4, kv_heads = 2, dim = 8;
  const auto q = random_tensor<double>(batch, seq_q, heads, dim, 11);     // BSHD
  const auto k = random_tensor<double>(batch, seq_k, kv_heads, dim, 12);  // BSHD
  PositionMatrix qpos(batch, seq_q), kpos(batch, seq_k);
  qpos << 2, 3, 4, 5, 7, 8, 9, 10;  // row 1: left-padded / continued sequence
  kpos << 0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10;
  const Eigen::array<Eigen::Index, 4> to_bhsd{0, 2, 1, 3};
  const posemb::Tensor4<double> q_bhsd = q.shuffle(to_bhsd), k_bhsd = k.shuffle(to_bhsd);
  for (Scheme scheme : {Scheme::None, Scheme::Rope, Scheme::Alibi}) {
    for (bool causal : {false, true}) {
      CAPTURE(static_cast<int>(scheme), causal);
      ScoreOptions options;
      if (scheme == Scheme::Rope)
        options.rotation = posemb::default_rope_spec({8, 6}, 500.0);  // partial
      if (scheme == Scheme::Alibi) options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(heads)};
      options.causal = causal;
      options.softmax = causal;
      const auto batched = posemb::attention_scores(q, qpos, k, kpos, options);
      const auto bhsd =
          posemb::attention_scores(q_bhsd, qpos, k_bhsd, kpos, options, TensorLayout::BHSD);
      for (Eigen::Index b = 0; b < batch; ++b) {
        for (Eigen::Index h = 0; h < heads; ++h) {
          Rows qh(seq_q, dim), kh(seq_k, dim);
          for (Eigen::Index s = 0; s < seq_q; ++s)
            for (Eigen::Index c = 0; c < dim; ++c) qh(s, c) = q(b, s, h, c);
          for (Eigen::Index s = 0; s < seq_k; ++s)
            for (Eigen::Index c = 0; c < dim; ++c) kh(s, c) = k(b, s, h / 2, c);
          ScoreOptions one = options;
          if (scheme == Scheme::Alibi)
            one.bias = posemb::AlibiSlopes{
                std::get<posemb::AlibiSlopes>(options.bias).slopes.segment(h, 1)};
          const Rows expected = posemb::attention_scores(qh, qpos.row(b).transpose(), kh,
                                                         kpos.row(b).transpose(), one);
          for (Eigen::Index i = 0; i < seq_q; ++i) {
            for (Eigen::Index j = 0; j < seq_k; ++j) {
              CAPTURE(b, h, i, j);
              if (std::isinf(expected(i, j))) {
                CHECK(batched(b, h, i, j) == expected(i, j));
              } else {
                CHECK(batched(b, h, i, j) == Approx(expected(i, j)).epsilon(0).margin(1e-13));
              }
              CHECK(bhsd(b, h, i, j) == batched(b, h, i, j));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("attention: a decode query at a KV-cache offset gets the last row of the prefill") {
  const Eigen::Index seq = 6, heads = 2, dim = 4;
  const auto k = random_tensor<float>(1, seq, heads, dim, 21);
  const auto q_all = random_tensor<float>(1, seq, heads, dim, 22);
  const Eigen::array<Eigen::Index, 4> last{0, seq - 1, 0, 0}, one{1, 1, heads, dim};
  const posemb::Tensor4<float> q_last = q_all.slice(last, one);
  for (Scheme scheme : {Scheme::Rope, Scheme::Alibi}) {
    CAPTURE(static_cast<int>(scheme));
    ScoreOptions options;
    if (scheme == Scheme::Rope) options.rotation = posemb::default_rope_spec(dim);
    if (scheme == Scheme::Alibi) options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(heads)};
    options.causal = true;
    options.softmax = true;
    const auto prefill =
        posemb::attention_scores(q_all, std::int64_t{0}, k, std::int64_t{0}, options);
    const auto decode =
        posemb::attention_scores(q_last, std::int64_t{seq - 1}, k, std::int64_t{0}, options);
    REQUIRE(decode.dimension(2) == 1);
    for (Eigen::Index h = 0; h < heads; ++h) {
      for (Eigen::Index j = 0; j < seq; ++j) {
        CAPTURE(h, j);
        CHECK(decode(0, h, 0, j) == Approx(prefill(0, h, seq - 1, j)).epsilon(0).margin(1e-6));
      }
    }
    // The decode row is not uniform: positions (RoPE / ALiBi) reached the single query.
    CHECK(std::abs(decode(0, 0, 0, 0) - decode(0, 0, 0, seq - 1)) > 1e-4);
  }
}

TEST_CASE("attention: half-precision inputs score in float") {
  const auto qf = random_tensor<float>(1, 3, 2, 4, 31);
  const auto kf = random_tensor<float>(1, 3, 2, 4, 32);
  const posemb::Tensor4<Eigen::half> qh = qf.cast<Eigen::half>(), kh = kf.cast<Eigen::half>();
  const posemb::Tensor4<float> qr = qh.cast<float>(),
                               kr = kh.cast<float>();  // the values half holds
  const ScoreOptions options = rope_options(4, posemb::Pairing::RotateHalf);
  const posemb::Tensor4<float> from_half =
      posemb::attention_scores(qh, std::int64_t{0}, kh, std::int64_t{0}, options);
  const posemb::Tensor4<float> from_float =
      posemb::attention_scores(qr, std::int64_t{0}, kr, std::int64_t{0}, options);
  for (Eigen::Index i = 0; i < from_half.size(); ++i) {
    CHECK(from_half.data()[i] ==
          Approx(from_float.data()[i]).epsilon(0).margin(4e-3));  // RoPE output rounded to half
  }
}

TEST_CASE("attention: errors") {
  const Rows q = random_rows(2, 4, 1), k = random_rows(3, 4, 2);
  const PositionVector qp = position_range(0, 2), kp = position_range(0, 3);
  ScoreOptions ok;

  SECTION("single head: shapes") {
    throws_with([&] { posemb::attention_scores(Rows(0, 4), position_range(0, 0), k, kp, ok); },
                "q.rows() = 0");
    throws_with([&] { posemb::attention_scores(q, qp, Rows(0, 4), position_range(0, 0), ok); },
                "k.rows() = 0");
    throws_with([&] { posemb::attention_scores(Rows(2, 0), qp, Rows(3, 0), kp, ok); },
                "q.cols() = 0");
    throws_with([&] { posemb::attention_scores(q, qp, random_rows(3, 5, 3), kp, ok); },
                "k.cols() = 5: expected head_dim = q.cols() = 4");
    throws_with([&] { posemb::attention_scores(q, position_range(0, 3), k, kp, ok); },
                "q_positions.size() = 3: expected one position per row of q = 2");
    throws_with([&] { posemb::attention_scores(q, qp, k, position_range(0, 2), ok); },
                "k_positions.size() = 2: expected one position per row of k = 3");
  }
  SECTION("options") {
    // Rotation and bias are variants: a spec without a scheme, or slopes without ALiBi, cannot
    // be written; an unknown bias placement is the enum left to check.
    ScoreOptions bad;
    bad.layer.bias_placement = static_cast<posemb::BiasPlacement>(9);
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); },
                "layer.bias_placement = 9: expected BiasPlacement::AfterScale or "
                "BiasPlacement::BeforeScale");
    bad = rope_options(8, posemb::Pairing::RotateHalf);  // a spec for heads of 8
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); },
                "head_dim = 4: expected 8, the head_dim this RopeSpec was made for (rotary_dim 8)");
    bad = ScoreOptions{};
    bad.rotation = posemb::RopeSpec{};  // an empty spec
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); }, "rotary_dim = 0");
    const posemb::RopeTable<double> table(posemb::default_rope_spec(4), 0, 3);
    const Eigen::MatrixXf qf = q.cast<float>(), kf = k.cast<float>();
    bad.rotation = &table;  // double cos/sin for float q and k
    throws_with([&] { posemb::attention_scores(qf, qp, kf, kp, bad); },
                "rotation = a RopeTable of another arithmetic type: expected RopeTable<T>");
    bad = ScoreOptions{};
    bad.bias = posemb::AlibiSlopes{posemb::alibi_slopes(4)};
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); },
                "AlibiSlopes.slopes.size() = 4: expected one slope per query head = 1");
    bad.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, -0.5)};
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); },
                "AlibiSlopes.slopes[0] = -0.5");
    bad.bias = posemb::AlibiSlopes{Eigen::VectorXd::Constant(1, std::nan(""))};
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); },
                "AlibiSlopes.slopes[0] = nan");
    for (double scale : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
      bad = ScoreOptions{};
      bad.layer.softmax_scale = scale;
      throws_with([&] { posemb::attention_scores(q, qp, k, kp, bad); }, "scale = ");
    }
  }
  SECTION("batched: shapes, heads, layout and positions") {
    const auto q4 = random_tensor<float>(2, 3, 4, 8, 1);  // BSHD
    const auto k4 = random_tensor<float>(2, 5, 2, 8, 2);
    const std::int64_t zero = 0;
    throws_with(
        [&] { posemb::attention_scores(q4, zero, random_tensor<float>(2, 5, 3, 8, 3), zero, ok); },
        "k.dimension(2) (kv_heads) = 3: expected a divisor of the query head count 4");
    throws_with(
        [&] { posemb::attention_scores(q4, zero, random_tensor<float>(2, 5, 0, 8, 3), zero, ok); },
        "kv_heads) = 0");
    throws_with(
        [&] { posemb::attention_scores(q4, zero, random_tensor<float>(1, 5, 2, 8, 3), zero, ok); },
        "k.dimension(0) = 1: expected batch = q.dimension(0) = 2");
    throws_with(
        [&] { posemb::attention_scores(q4, zero, random_tensor<float>(2, 5, 2, 6, 3), zero, ok); },
        "k.dimension(3) = 6: expected head_dim = q.dimension(3) = 8");
    throws_with(
        [&] { posemb::attention_scores(random_tensor<float>(0, 3, 4, 8, 3), zero, k4, zero, ok); },
        "q.dimension(0) = 0");
    throws_with(
        [&] { posemb::attention_scores(random_tensor<float>(2, 0, 4, 8, 3), zero, k4, zero, ok); },
        "q.dimension(1) = 0");
    throws_with(
        [&] { posemb::attention_scores(random_tensor<float>(2, 3, 0, 8, 3), zero, k4, zero, ok); },
        "q.dimension(2) = 0");
    throws_with(
        [&] { posemb::attention_scores(random_tensor<float>(2, 3, 4, 0, 3), zero, k4, zero, ok); },
        "q.dimension(3) = 0");
    throws_with(
        [&] { posemb::attention_scores(q4, zero, random_tensor<float>(2, 0, 2, 8, 3), zero, ok); },
        "k.dimension(1) = 0");
    throws_with(
        [&] { posemb::attention_scores(q4, zero, k4, zero, ok, static_cast<TensorLayout>(3)); },
        "layout = 3: expected TensorLayout::BSHD or TensorLayout::BHSD");
    PositionMatrix wrong(2, 4);
    wrong.setZero();
    throws_with([&] { posemb::attention_scores(q4, wrong, k4, zero, ok); },
                "positions shape = [2, 4]: expected [batch, seq] = [2, 3] or [1, 3]");
    throws_with([&] { posemb::attention_scores(q4, zero, k4, wrong, ok); },
                "positions shape = [2, 4]: expected [batch, seq] = [2, 5] or [1, 5]");
    // q4 is BSHD [2, 3, 4, 8]: read as BHSD its seq axis is 4, and 3 positions name the mistake.
    PositionMatrix three(2, 3);
    three.setZero();
    throws_with([&] { posemb::attention_scores(q4, three, q4, zero, ok, TensorLayout::BHSD); },
                "pass TensorLayout::BSHD");
    ScoreOptions alibi;
    alibi.bias =
        posemb::AlibiSlopes{posemb::alibi_slopes(2)};  // kv head count, not the query head count
    throws_with([&] { posemb::attention_scores(q4, zero, k4, zero, alibi); },
                "AlibiSlopes.slopes.size() = 2: expected one slope per query head = 4");
    ScoreOptions masked;
    masked.causal = true;
    masked.softmax = true;
    throws_with([&] { posemb::attention_scores(q4, zero, k4, std::int64_t{1}, masked); },
                "query position = 0: every key position is greater");
  }
}

TEST_CASE("attention: relative-bias logits are scale * q.k plus t5_bias, per head") {
  const Eigen::Index heads = 3, seq = 40, dim = 4;
  const auto q = random_tensor<double>(1, seq, heads, dim, 41);
  const auto k = random_tensor<double>(1, seq, heads, dim, 42);
  posemb::T5BiasTable<float>::Table weights(32, heads);
  std::mt19937_64 engine(43);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (Eigen::Index n = 0; n < weights.size(); ++n) weights.data()[n] = uniform(engine);
  for (bool bidirectional : {true, false}) {
    CAPTURE(bidirectional);
    const posemb::T5BiasTable<float> table({32, 20, bidirectional}, weights);
    ScoreOptions relative;
    relative.bias = table;
    relative.layer.softmax_scale = 1.0;  // T5 does not scale q.k
    relative.causal = !bidirectional;
    ScoreOptions none;
    none.layer.softmax_scale = 1.0;
    none.causal = !bidirectional;
    const std::int64_t offset = 100;
    const auto with = posemb::attention_scores(q, offset, k, offset, relative);
    const auto without = posemb::attention_scores(q, offset, k, offset, none);
    const auto bias =
        posemb::t5_bias(table, position_range(offset, seq), position_range(offset, seq));
    for (Eigen::Index h = 0; h < heads; ++h) {
      Rows qh(seq, dim), kh(seq, dim);
      for (Eigen::Index s = 0; s < seq; ++s)
        for (Eigen::Index c = 0; c < dim; ++c) {
          qh(s, c) = q(0, s, h, c);
          kh(s, c) = k(0, s, h, c);
        }
      ScoreOptions one = relative;
      one.bias = table.head(h);
      const Rows single = posemb::attention_scores(qh, position_range(offset, seq), kh,
                                                   position_range(offset, seq), one);
      for (Eigen::Index i = 0; i < seq; ++i) {
        for (Eigen::Index j = 0; j < seq; ++j) {
          CAPTURE(h, i, j);
          if (!bidirectional && j > i) {
            CHECK(with(0, h, i, j) == -std::numeric_limits<double>::infinity());
          } else {
            CHECK(with(0, h, i, j) ==
                  Approx(without(0, h, i, j) + bias(h, i, j)).epsilon(0).margin(1e-14));
          }
          CHECK(single(i, j) == with(0, h, i, j));
        }
      }
    }
  }
}

namespace {

// The number of keys each query row attends to (probability > 0), and checks the row sums to 1.
std::vector<int> visible_counts(const Rows& p) {
  std::vector<int> counts;
  for (Eigen::Index i = 0; i < p.rows(); ++i) {
    counts.push_back(static_cast<int>((p.row(i).array() > 0.0).count()));
    CHECK(p.row(i).sum() == Approx(1.0).epsilon(0).margin(1e-12));
  }
  return counts;
}

}  // namespace

TEST_CASE("attention: a sliding-window row i sees exactly min(i + 1, W) keys, also in decode") {
  const Rows q = random_rows(20, 8, 51), k = random_rows(20, 8, 52);
  for (std::int64_t window : {1, 3, 7, 20, 50}) {
    CAPTURE(window);
    ScoreOptions options;
    options.rotation = posemb::default_rope_spec(8);
    options.layer.sliding_window = window;
    options.softmax = true;
    const Rows p =
        posemb::attention_scores(q, position_range(0, 20), k, position_range(0, 20), options);
    const std::vector<int> counts = visible_counts(p);
    for (int i = 0; i < 20; ++i) {
      CAPTURE(i);
      CHECK(counts[static_cast<std::size_t>(i)] == std::min<std::int64_t>(i + 1, window));
      for (int j = 0; j < 20; ++j) CHECK((p(i, j) > 0.0) == (j <= i && i - j < window));
    }
    // Decode at a KV-cache offset: the query at position 1000 + 19 against the cache 1000 .. 1019
    // (and against the whole cache 0 .. 1019) sees the last min(1020, W) keys, like the last row.
    const Rows last = posemb::attention_scores(q.bottomRows(1), position_range(1019, 1), k,
                                               position_range(1000, 20), options);
    CHECK(visible_counts(last)[0] == std::min<std::int64_t>(20, window));
    const Rows big_k = random_rows(1020, 8, 53);
    const Rows whole = posemb::attention_scores(q.bottomRows(1), position_range(1019, 1), big_k,
                                                position_range(0, 1020), options);
    CHECK(visible_counts(whole)[0] == std::min<std::int64_t>(1020, window));
    for (int j = 0; j < 1020; ++j) CHECK((whole(0, j) > 0.0) == (1019 - j < window));
    // The decode row equals the prefill row at the same positions.
    const Rows prefill =
        posemb::attention_scores(q, position_range(1000, 20), k, position_range(1000, 20), options);
    for (int j = 0; j < 20; ++j)
      CHECK(last(0, j) == Approx(prefill(19, j)).epsilon(0).margin(1e-14));
  }
}

TEST_CASE("attention: chunked attention stops at chunk boundaries, negative positions too") {
  const Rows q = random_rows(12, 4, 61), k = random_rows(12, 4, 62);
  ScoreOptions options;
  options.layer.attention_chunk_size = 4;
  const Rows logits =
      posemb::attention_scores(q, position_range(0, 12), k, position_range(0, 12), options);
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) {
      CAPTURE(i, j);
      CHECK(std::isfinite(logits(i, j)) == (j <= i && i / 4 == j / 4));
    }
  }
  // Row 3 (last of chunk 0) sees 0..3; row 4 (first of chunk 1) sees only itself.
  CHECK(std::isfinite(logits(3, 0)));
  CHECK(std::isinf(logits(4, 3)));
  CHECK(std::isfinite(logits(4, 4)));
  // Positions -6 .. 5 with chunk 4: chunks [-8, -5], [-4, -1], [0, 3], [4, 7] (floor division).
  const PositionVector pos = position_range(-6, 12);
  const Rows shifted = posemb::attention_scores(q, pos, k, pos, options);
  const auto chunk = [](std::int64_t p) { return p >= 0 ? p / 4 : -((-p + 3) / 4); };
  for (int i = 0; i < 12; ++i) {
    for (int j = 0; j < 12; ++j) {
      CAPTURE(pos[i], pos[j]);
      CHECK(std::isfinite(shifted(i, j)) == (j <= i && chunk(pos[i]) == chunk(pos[j])));
    }
  }
  CHECK(std::isinf(shifted(2, 1)));     // query -4 and key -5 lie in different chunks
  CHECK(std::isfinite(shifted(5, 2)));  // query -1 sees key -4
  CHECK(std::isinf(shifted(6, 5)));     // query 0 does not see key -1
}

TEST_CASE("attention: Llama 4 query temperature") {
  const posemb::QueryTemperature llama4{8192.0, 0.1};
  CHECK(llama4.factor(8190) == 1.0);
  CHECK(llama4.factor(8191) == 1.0693147180559945);    // 1 + 0.1 ln 2
  CHECK(llama4.factor(131071) == 1.2833213344056216);  // 1 + 0.1 ln 17
  // Through the helper: the logits of a query at p are factor(p) times those without.
  const Rows q = random_rows(3, 8, 71), k = random_rows(5, 8, 72);
  const PositionVector qpos = positions_of({8190, 8191, 131071}), kpos = position_range(0, 5);
  ScoreOptions plain;
  ScoreOptions tuned;
  tuned.layer.query_temperature = llama4;
  const Rows a = posemb::attention_scores(q, qpos, k, kpos, plain);
  const Rows b = posemb::attention_scores(q, qpos, k, kpos, tuned);
  const double factors[3] = {1.0, 1.0693147180559945, 1.2833213344056216};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(b(i, j) == Approx(factors[i] * a(i, j)).epsilon(1e-14));
  // Batched: the same factors.
  posemb::Tensor4<double> q4(1, 3, 1, 8), k4(1, 5, 1, 8);
  for (int s = 0; s < 3; ++s)
    for (int c = 0; c < 8; ++c) q4(0, s, 0, c) = q(s, c);
  for (int s = 0; s < 5; ++s)
    for (int c = 0; c < 8; ++c) k4(0, s, 0, c) = k(s, c);
  PositionMatrix qpm(1, 3);
  qpm << 8190, 8191, 131071;
  const auto b4 = posemb::attention_scores(q4, qpm, k4, std::int64_t{0}, tuned);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) CHECK(b4(0, 0, i, j) == Approx(b(i, j)).epsilon(1e-14));
}

TEST_CASE("attention: layer options, errors") {
  const Rows q = random_rows(2, 4, 81), k = random_rows(3, 4, 82);
  const PositionVector qp = position_range(5, 2), kp = position_range(0, 3);
  for (std::int64_t bad : {0, -3}) {
    ScoreOptions options;
    options.layer.sliding_window = bad;
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
                "layer.sliding_window = " + std::to_string(bad) + ": expected a number > 0");
    options = ScoreOptions{};
    options.layer.attention_chunk_size = bad;
    throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
                "layer.attention_chunk_size = " + std::to_string(bad) + ": expected a number > 0");
  }
  ScoreOptions options;
  options.layer.query_temperature = posemb::QueryTemperature{0.0, 0.1};
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "layer.query_temperature.floor_scale = 0");
  options.layer.query_temperature = posemb::QueryTemperature{8192.0, std::nan("")};
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "layer.query_temperature.attn_scale = nan");
  // A window that leaves a row no key: queries 5, 6 against keys 0 .. 2 with W = 2.
  options = ScoreOptions{};
  options.layer.sliding_window = 2;
  options.softmax = true;
  throws_with(
      [&] { posemb::attention_scores(q, qp, k, kp, options); },
      "query position = 5: the sliding window or the attention chunk leaves this row no key");
  // Relative bias: one table column per query head.
  options = ScoreOptions{};
  posemb::T5BiasTable<float>::Table weights = posemb::T5BiasTable<float>::Table::Zero(32, 4);
  options.bias = posemb::T5BiasTable<float>({32, 128, true}, weights);
  throws_with([&] { posemb::attention_scores(q, qp, k, kp, options); },
              "T5BiasTable heads = 4: expected one table column per query head = 1");
}

TEST_CASE("attention: batched sliding window and chunk, prefill and decode at a KV-cache offset") {
  const auto q = random_tensor<float>(1, 20, 2, 8, 91);    // BSHD, 2 query heads
  const auto k = random_tensor<float>(1, 1020, 1, 8, 92);  // one kv head
  for (std::int64_t window : {1, 7, 64}) {
    CAPTURE(window);
    ScoreOptions options;
    options.rotation = posemb::default_rope_spec(8);
    options.layer.sliding_window = window;
    options.softmax = true;
    // Prefill of the last 20 tokens against the whole cache: query i at position 1000 + i.
    const auto p = posemb::attention_scores(q, std::int64_t{1000}, k, std::int64_t{0}, options);
    for (Eigen::Index h = 0; h < 2; ++h) {
      for (Eigen::Index i = 0; i < 20; ++i) {
        CAPTURE(h, i);
        Eigen::Index seen = 0;
        for (Eigen::Index j = 0; j < 1020; ++j) {
          const bool inside = j <= 1000 + i && 1000 + i - j < window;
          CHECK((p(0, h, i, j) > 0.0f) == inside);
          seen += p(0, h, i, j) > 0.0f;
        }
        CHECK(seen == std::min<std::int64_t>(1000 + i + 1, window));
      }
    }
  }
  // Chunk 256: the query at position 1019 (chunk 3, positions 768 .. 1023) sees keys 768 .. 1019.
  ScoreOptions chunked;
  chunked.layer.attention_chunk_size = 256;
  const Eigen::array<Eigen::Index, 4> last{0, 19, 0, 0}, one{1, 1, 2, 8};
  const posemb::Tensor4<float> q_last = q.slice(last, one);
  const auto logits =
      posemb::attention_scores(q_last, std::int64_t{1019}, k, std::int64_t{0}, chunked);
  for (Eigen::Index j = 0; j < 1020; ++j) {
    CAPTURE(j);
    CHECK(std::isfinite(logits(0, 1, 0, j)) == (j >= 768));
  }
}

// ---------------------------------------------------------------------------------------------
// The blocked kernel against the plain loop (attention_oracle::scores), over shapes
// that cross the 128-row panels, grouped-query ratios, every scheme, mask and storage type.

namespace {

struct KernelCase {
  Eigen::Index batch, seq_q, seq_k, heads, kv_heads, head_dim;
  TensorLayout layout;
  Scheme scheme;
  posemb::Pairing pairing;
  int rotary_dim;  // Rope: the spec's rotary_dim (< head_dim: partial)
  bool causal;
  std::int64_t q_offset;  // query s at q_offset + s; keys at k_offset + s
  std::int64_t k_offset;
  bool shuffled;  // per-token positions, a permutation of the offsets' (not sorted)
};

std::string describe(const KernelCase& c) {
  return "batch " + std::to_string(c.batch) + ", seq " + std::to_string(c.seq_q) + " x " +
         std::to_string(c.seq_k) + ", heads " + std::to_string(c.heads) + " / " +
         std::to_string(c.kv_heads) + ", dim " + std::to_string(c.head_dim) + ", " +
         posemb::to_string(c.layout) + ", scheme " + std::to_string(static_cast<int>(c.scheme)) +
         ", " + posemb::to_string(c.pairing) + " " + std::to_string(c.rotary_dim) +
         (c.causal ? ", causal" : "") + ", offsets " + std::to_string(c.q_offset) + " / " +
         std::to_string(c.k_offset) + (c.shuffled ? ", shuffled" : "");
}

PositionMatrix case_positions(Eigen::Index batch, Eigen::Index seq, std::int64_t offset,
                              bool shuffled, std::uint64_t seed) {
  PositionMatrix positions(batch, seq);
  std::mt19937_64 engine(seed);
  for (Eigen::Index b = 0; b < batch; ++b) {
    std::vector<std::int64_t> row(static_cast<std::size_t>(seq));
    for (Eigen::Index s = 0; s < seq; ++s) row[static_cast<std::size_t>(s)] = offset + s + 3 * b;
    if (shuffled) std::shuffle(row.begin(), row.end(), engine);
    for (Eigen::Index s = 0; s < seq; ++s) positions(b, s) = row[static_cast<std::size_t>(s)];
  }
  return positions;
}

template <class T>
posemb::Tensor4<T> case_tensor(const KernelCase& c, Eigen::Index seq, Eigen::Index heads,
                               std::uint64_t seed) {
  return c.layout == TensorLayout::BSHD ? random_tensor<T>(c.batch, seq, heads, c.head_dim, seed)
                                        : random_tensor<T>(c.batch, heads, seq, c.head_dim, seed);
}

ScoreOptions case_options(const KernelCase& c) {
  ScoreOptions options;
  options.causal = c.causal;
  if (c.scheme == Scheme::Rope) {
    const posemb::RotaryDims dims{static_cast<int>(c.head_dim), c.rotary_dim};
    options.rotation = posemb::default_rope_spec(dims, 10000.0, c.pairing);
  }
  if (c.scheme == Scheme::Alibi) options.bias = posemb::AlibiSlopes{posemb::alibi_slopes(c.heads)};
  if (c.scheme == Scheme::RelativeBias) {
    posemb::T5BiasTable<float>::Table weights(32, c.heads);
    std::mt19937_64 engine(77);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    for (Eigen::Index n = 0; n < weights.size(); ++n) weights.data()[n] = uniform(engine);
    options.bias = posemb::T5BiasTable<float>({32, 128, !c.causal}, weights);
    options.layer.softmax_scale = 1.0;
  }
  return options;
}

// Every entry of fast and reference: masked ones identical (-inf, or 0 after softmax), the rest
// within `tolerance` * (1 + |reference|). Returns the number of masked entries.
template <class C>
Eigen::Index compare_scores(const posemb::Tensor4<C>& fast, const posemb::Tensor4<C>& reference,
                            double tolerance) {
  REQUIRE(fast.dimensions() == reference.dimensions());
  Eigen::Index masked = 0;
  double worst = 0;
  Eigen::Index worst_at = 0;
  for (Eigen::Index n = 0; n < fast.size(); ++n) {
    const double got = fast.data()[n], want = reference.data()[n];
    if (std::isinf(want) || std::isinf(got)) {
      ++masked;
      if (got != want) FAIL("entry " << n << ": fast " << got << ", reference " << want);
      continue;
    }
    const double error = std::abs(got - want) / (1.0 + std::abs(want));
    if (error > worst) {
      worst = error;
      worst_at = n;
    }
  }
  INFO("worst relative error " << worst << " at entry " << worst_at);
  CHECK(worst <= tolerance);
  return masked;
}

template <class T>
double kernel_tolerance() {
  return std::is_same_v<T, double> ? 1e-13 : 4e-6;
}

template <class T>
void check_kernel_case(const KernelCase& c) {
  CAPTURE(describe(c));
  const auto q = case_tensor<T>(c, c.seq_q, c.heads, 101);
  const auto k = case_tensor<T>(c, c.seq_k, c.kv_heads, 102);
  const PositionMatrix qpos = case_positions(c.batch, c.seq_q, c.q_offset, c.shuffled, 103);
  const PositionMatrix kpos = case_positions(c.batch, c.seq_k, c.k_offset, c.shuffled, 104);
  const ScoreOptions options = case_options(c);
  const auto fast = posemb::attention_scores(q, qpos, k, kpos, options, c.layout);
  const auto reference = attention_oracle::scores(q, qpos, k, kpos, options, c.layout);
  const Eigen::Index masked = compare_scores(fast, reference, kernel_tolerance<T>());
  if (!c.causal) CHECK(masked == 0);
  // Offsets: the same scores with a scalar offset when the positions are a plain range.
  if (!c.shuffled && c.batch == 1) {
    const auto by_offset =
        posemb::attention_scores(q, c.q_offset, k, c.k_offset, options, c.layout);
    for (Eigen::Index n = 0; n < fast.size(); ++n) REQUIRE(by_offset.data()[n] == fast.data()[n]);
  }
}

std::vector<KernelCase> kernel_cases() {
  using posemb::Pairing;
  const TensorLayout bshd = TensorLayout::BSHD, bhsd = TensorLayout::BHSD;
  const Scheme none = Scheme::None, rope = Scheme::Rope, alibi = Scheme::Alibi,
               t5 = Scheme::RelativeBias;
  const Pairing il = Pairing::Interleaved, rh = Pairing::RotateHalf;
  return {
      // batch, seq_q, seq_k, heads, kv_heads, dim, layout, scheme, pairing, rotary, causal, qoff,
      // koff, shuffled
      {1, 1, 1, 1, 1, 8, bshd, rope, rh, 8, false, 0, 0, false},
      {1, 7, 7, 4, 4, 16, bshd, rope, il, 16, true, 0, 0, false},  // GQA ratio 1
      {1, 129, 129, 8, 2, 32, bshd, rope, rh, 32, true, 0, 0,
       false},  // ratio 4, one row past a panel
      {1, 257, 300, 8, 1, 24, bhsd, rope, il, 16, true, 43, 0, false},  // ratio 8, partial rotary
      {2, 130, 131, 4, 1, 16, bshd, rope, rh, 16, false, 5, 5, true},   // shuffled positions
      {2, 200, 200, 4, 4, 16, bhsd, rope, rh, 12, true, 0, 0, true},    // shuffled, causal
      {1, 1, 301, 8, 2, 64, bshd, rope, il, 64, true, 300, 0, false},   // decode against a cache
      {1, 33, 261, 4, 2, 16, bshd, rope, rh, 16, true, 1000000, 999772,
       false},  // 1,000,000 offsets
      {1, 150, 150, 4, 1, 16, bhsd, rope, il, 16, true, 1000000, 1000000, false},
      {1, 135, 140, 4, 2, 8, bshd, none, rh, 0, false, 0, 0, false},
      {1, 135, 140, 4, 2, 8, bhsd, none, rh, 0, true, 5, 0, false},
      {1, 140, 131, 8, 2, 8, bshd, alibi, rh, 0, true, 0, 0, false},
      {2, 131, 140, 8, 8, 8, bhsd, alibi, rh, 0, false, 1000000, 1000000, false},
      {1, 200, 200, 4, 1, 8, bshd, alibi, rh, 0, true, 0, 0, true},
      {1, 140, 150, 4, 2, 8, bshd, t5, rh, 0, true, 0, 0, false},
      {2, 150, 140, 4, 4, 8, bhsd, t5, rh, 0, false, 1000000, 1000000, false},
      {1, 300, 5000, 2, 1, 8, bshd, t5, rh, 0, false, 4700, 0,
       false},  // distances past the bucket lookup
  };
}

}  // namespace

TEST_CASE("attention: the blocked kernel equals the reference loop, float") {
  for (const KernelCase& c : kernel_cases()) check_kernel_case<float>(c);
}

TEST_CASE("attention: the blocked kernel equals the reference loop, double") {
  for (const KernelCase& c : kernel_cases()) check_kernel_case<double>(c);
}

TEST_CASE("attention: the blocked kernel equals the reference loop, bfloat16 and half storage") {
  for (const KernelCase& c : kernel_cases()) {
    check_kernel_case<Eigen::bfloat16>(c);
    check_kernel_case<Eigen::half>(c);
  }
}

TEST_CASE("attention: the blocked kernel equals the loop with the layer's masks, softmax") {
  const auto q = random_tensor<float>(1, 300, 4, 16, 111);  // BSHD
  const auto k = random_tensor<float>(1, 420, 2, 16, 112);
  const std::int64_t q_offset = 8000, k_offset = 7880;  // the queries are the last 300 keys
  for (int variant = 0; variant < 6; ++variant) {
    CAPTURE(variant);
    ScoreOptions options;
    options.rotation = posemb::default_rope_spec(16);
    switch (variant) {
      case 0:
        options.layer.sliding_window = 100;
        break;
      case 1:
        options.layer.sliding_window = 129;
        options.softmax = true;
        break;
      case 2:
        options.layer.attention_chunk_size = 128;
        options.softmax = true;
        break;
      case 3:
        options.layer.attention_chunk_size = 50;
        break;
      case 4:
        options.layer.query_temperature = posemb::QueryTemperature{};
        options.causal = true;
        break;
      case 5:
        options.layer.softmax_scale = 0.5;
        options.causal = true;
        options.softmax = true;
        break;
    }
    const auto fast = posemb::attention_scores(q, q_offset, k, k_offset, options);
    const auto reference = attention_oracle::scores(q, q_offset, k, k_offset, options);
    Eigen::Index masked = 0;
    for (Eigen::Index n = 0; n < fast.size(); ++n) {
      const float got = fast.data()[n], want = reference.data()[n];
      if (std::isinf(want) || (options.softmax && want == 0.0f)) {
        ++masked;
        REQUIRE(got == want);
      } else {
        REQUIRE(std::abs(got - want) <= 2e-6f * (1.0f + std::abs(want)));
      }
    }
    CHECK(masked > 0);
    if (options.softmax) {
      for (Eigen::Index h = 0; h < 4; ++h) {
        for (Eigen::Index i = 0; i < 300; i += 37) {
          double sum = 0;
          for (Eigen::Index j = 0; j < 420; ++j) sum += fast(0, h, i, j);
          CHECK(sum == Approx(1.0).epsilon(0).margin(1e-5));
        }
      }
    }
  }
}

TEST_CASE("attention: blocked scores depend on position differences only, at any offset") {
  // 4-D, grouped-query (8 query heads, 2 kv heads), 200 queries x 260 keys: panels and tiles
  // see different positions after the shift, the scores must not.
  const auto q = random_tensor<double>(1, 200, 8, 32, 121);
  const auto k = random_tensor<double>(1, 260, 2, 32, 122);
  for (posemb::Pairing pairing : {posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf}) {
    CAPTURE(posemb::to_string(pairing));
    ScoreOptions options = rope_options(32, pairing);
    options.causal = true;
    const auto base = posemb::attention_scores(q, std::int64_t{60}, k, std::int64_t{0}, options);
    for (std::int64_t shift : {1, 1000, 1000000, 123456789}) {
      CAPTURE(shift);
      const auto shifted = posemb::attention_scores(q, 60 + shift, k, shift, options);
      double worst = 0;
      for (Eigen::Index n = 0; n < base.size(); ++n) {
        if (std::isinf(base.data()[n])) {
          REQUIRE(shifted.data()[n] == base.data()[n]);
        } else {
          worst = std::max(worst, std::abs(shifted.data()[n] - base.data()[n]));
        }
      }
      CHECK(worst < 1e-12 + 1e-16 * static_cast<double>(shift));
    }
    // Float storage: the rotated values round to float, so the bound is float's.
    const posemb::Tensor4<float> qf = q.cast<float>(), kf = k.cast<float>();
    const auto base_f =
        posemb::attention_scores(qf, std::int64_t{60}, kf, std::int64_t{0}, options);
    const auto far_f =
        posemb::attention_scores(qf, std::int64_t{1000060}, kf, std::int64_t{1000000}, options);
    double worst = 0;
    for (Eigen::Index n = 0; n < base_f.size(); ++n) {
      if (!std::isinf(base_f.data()[n]))
        worst = std::max(worst, double(std::abs(far_f.data()[n] - base_f.data()[n])));
    }
    CHECK(worst < 5e-6);
    // and the scores do depend on the gap
    const auto moved = posemb::attention_scores(q, std::int64_t{61}, k, std::int64_t{0}, options);
    CHECK(std::abs(moved(0, 0, 0, 0) - base(0, 0, 0, 0)) > 1e-3);
  }
}

TEST_CASE("attention: grouped-query heads read the published drift-table scores") {
  // Every query head holds the drift table's q, every kv head its k (both layouts, ratio 4):
  // each head's score at gap 5 is the published -0.6102, at gap 0 -5.818313.
  const DriftInputs in = drift_inputs();
  for (TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
    CAPTURE(posemb::to_string(layout));
    posemb::Tensor4<float> q(1, 1, 8, 64),
        k(1, 1, 2, 64);  // [1, 1, heads, 64]: same bytes in both layouts
    for (Eigen::Index h = 0; h < 8; ++h)
      for (Eigen::Index c = 0; c < 64; ++c) q(0, 0, h, c) = static_cast<float>(in.q(0, c));
    for (Eigen::Index h = 0; h < 2; ++h)
      for (Eigen::Index c = 0; c < 64; ++c) k(0, 0, h, c) = static_cast<float>(in.k(0, c));
    const Eigen::array<Eigen::Index, 4> bhsd{0, 2, 1, 3};
    const posemb::Tensor4<float> q_in =
        layout == TensorLayout::BSHD ? q : posemb::Tensor4<float>(q.shuffle(bhsd));
    const posemb::Tensor4<float> k_in =
        layout == TensorLayout::BSHD ? k : posemb::Tensor4<float>(k.shuffle(bhsd));
    ScoreOptions options = rope_options(64, posemb::Pairing::Interleaved);
    options.layer.softmax_scale = 1.0;
    const auto gap5 = posemb::attention_scores(q_in, std::int64_t{1005}, k_in, std::int64_t{1000},
                                               options, layout);
    const auto gap0 = posemb::attention_scores(q_in, std::int64_t{1000}, k_in, std::int64_t{1000},
                                               options, layout);
    for (Eigen::Index h = 0; h < 8; ++h) {
      CAPTURE(h);
      CHECK(gap5(0, h, 0, 0) == Approx(-0.6102).epsilon(0).margin(5e-5));
      CHECK(gap0(0, h, 0, 0) == Approx(-5.818313).epsilon(0).margin(2e-5));
    }
  }
}

TEST_CASE("attention: scores into a caller's tensor equal the returned ones, shape checked") {
  const auto q = random_tensor<Eigen::bfloat16>(2, 5, 4, 8, 131);
  const auto k = random_tensor<Eigen::bfloat16>(2, 9, 2, 8, 132);
  ScoreOptions options = rope_options(8, posemb::Pairing::RotateHalf);
  options.causal = true;
  const auto returned = posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{0}, options);
  posemb::Tensor4<float> out(2, 4, 5, 9);
  posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{0}, out, options);
  for (Eigen::Index n = 0; n < out.size(); ++n) REQUIRE(out.data()[n] == returned.data()[n]);
  std::vector<float> buffer(static_cast<std::size_t>(2 * 4 * 5 * 9));
  posemb::TensorMap4<float> mapped(buffer.data(), 2, 4, 5, 9);
  posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{0}, mapped, options);
  for (Eigen::Index n = 0; n < out.size(); ++n)
    REQUIRE(buffer[static_cast<std::size_t>(n)] == returned.data()[n]);
  posemb::Tensor4<float> wrong(2, 4, 9, 5);
  throws_with(
      [&] { posemb::attention_scores(q, std::int64_t{4}, k, std::int64_t{0}, wrong, options); },
      "out.dimension(2) = 9: expected [batch, heads, seq_q, seq_k] = [2, 4, 5, 9]");
  // Fractional positions rotate, but masks compare whole positions only.
  posemb::FractionalPositionMatrix half_step(1, 5);
  half_step << 4.0, 4.5, 5.0, 5.5, 6.0;
  throws_with([&] { posemb::attention_scores(q, half_step, k, std::int64_t{0}, out, options); },
              "position = 4.5: expected a whole position");
}
