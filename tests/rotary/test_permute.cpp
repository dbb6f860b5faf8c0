// Tests for permute.hpp: moving q/k projection rows between the interleaved and rotate-half
// pairings.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "posemb/io/npy.hpp"
#include "posemb/rotary/permute.hpp"
#include "posemb/rotary/rope.hpp"

using Catch::Matchers::Contains;
using posemb::Pairing;

namespace {

using RowMajorXd = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows labelled by their index: w(r, c) = 10 r + c, so a permuted matrix shows where rows went.
Eigen::MatrixXd labelled_rows(Eigen::Index rows) {
  Eigen::MatrixXd w(rows, 2);
  for (Eigen::Index r = 0; r < rows; ++r) {
    w(r, 0) = 10.0 * r;
    w(r, 1) = 10.0 * r + 1.0;
  }
  return w;
}

// The original row index now at each row of a labelled matrix.
std::vector<int> row_order(const Eigen::MatrixXd& w) {
  std::vector<int> order;
  for (Eigen::Index r = 0; r < w.rows(); ++r) order.push_back(static_cast<int>(w(r, 0) / 10.0));
  return order;
}

Eigen::MatrixXd random_matrix(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
  return m;
}

// RoPE on every head of a projected feature vector.
// features: [n_heads * head_dim]; returns the rotated copy.
Eigen::VectorXd rope_heads(Eigen::VectorXd features, int n_heads, std::int64_t position,
                           const posemb::RopeSpec& spec) {
  const Eigen::Index head_dim = features.size() / n_heads;
  Eigen::Map<RowMajorXd> heads(features.data(), n_heads, head_dim);  // [n_heads, head_dim]
  posemb::rotate_inplace(heads, position, spec);
  return features;
}

// Attention scores q_h . k_{h / group} of every query head under grouped-query attention.
// q: [n_heads * head_dim], k: [n_kv_heads * head_dim]; returns [n_heads].
Eigen::VectorXd gqa_scores(const Eigen::VectorXd& q, const Eigen::VectorXd& k, int n_heads,
                           int n_kv_heads) {
  const Eigen::Index head_dim = q.size() / n_heads;
  const int group = n_heads / n_kv_heads;
  Eigen::VectorXd scores(n_heads);
  for (int h = 0; h < n_heads; ++h) {
    scores[h] = q.segment(h * head_dim, head_dim).dot(k.segment((h / group) * head_dim, head_dim));
  }
  return scores;
}

// A float32 .npy array of shape (rows,) or (rows, cols) as a double matrix.
Eigen::MatrixXd load_npy_matrix(const std::string& path) {
  const posemb::NpyArray array = posemb::read_npy(path);
  const std::vector<float> values = array.values<float>();
  const Eigen::Index rows = array.shape.at(0);
  const Eigen::Index cols = array.shape.size() == 2 ? array.shape[1] : 1;
  using RowMajorXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  return Eigen::Map<const RowMajorXf>(values.data(), rows, cols).cast<double>();
}

}  // namespace

TEST_CASE("interleaved -> rotate-half moves row 2i to i and 2i+1 to i + rotary_dim/2 (by hand)",
          "[permute]") {
  // One head of 8 (HF: view(1, 4, 2, in).transpose(1, 2)): rows [0 1 2 3 4 5 6 7] become
  // [0 2 4 6 | 1 3 5 7].
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 1, posemb::Pairing::Interleaved,
                                          posemb::Pairing::RotateHalf)) ==
        std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7});
  // Two heads of 4: each head separately.
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 2, posemb::Pairing::Interleaved,
                                          posemb::Pairing::RotateHalf)) ==
        std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7});
  // Partial rotary: head_dim 8, rotary_dim 4; rows 4..7 of the head stay.
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 1, posemb::Pairing::Interleaved,
                                          posemb::Pairing::RotateHalf, 4)) ==
        std::vector<int>{0, 2, 1, 3, 4, 5, 6, 7});
  // Two heads of 6, rotary_dim 4.
  CHECK(row_order(posemb::permute_pairing(labelled_rows(12), 2, posemb::Pairing::Interleaved,
                                          posemb::Pairing::RotateHalf, 4)) ==
        std::vector<int>{0, 2, 1, 3, 4, 5, 6, 8, 7, 9, 10, 11});
  // The whole row moves (both columns).
  const Eigen::MatrixXd moved = posemb::permute_pairing(
      labelled_rows(4), 1, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf);
  CHECK(moved(1, 0) == 20.0);
  CHECK(moved(1, 1) == 21.0);
}

TEST_CASE("rotate-half -> interleaved moves row i to 2i and i + rotary_dim/2 to 2i+1 (by hand)",
          "[permute]") {
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 1, posemb::Pairing::RotateHalf,
                                          posemb::Pairing::Interleaved)) ==
        std::vector<int>{0, 4, 1, 5, 2, 6, 3, 7});
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 2, posemb::Pairing::RotateHalf,
                                          posemb::Pairing::Interleaved)) ==
        std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7});
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 1, posemb::Pairing::RotateHalf,
                                          posemb::Pairing::Interleaved, 4)) ==
        std::vector<int>{0, 2, 1, 3, 4, 5, 6, 7});
  // head_dim 8 with rotary_dim 8 differs from head_dim 4: the permutation is per head.
  CHECK(row_order(posemb::permute_pairing(labelled_rows(8), 1, posemb::Pairing::RotateHalf,
                                          posemb::Pairing::Interleaved, 8)) !=
        row_order(posemb::permute_pairing(labelled_rows(8), 2, posemb::Pairing::RotateHalf,
                                          posemb::Pairing::Interleaved)));
}

TEST_CASE("bias vectors, row vectors and feature vectors permute like weight rows", "[permute]") {
  Eigen::VectorXd bias(8);
  bias << 0, 1, 2, 3, 4, 5, 6, 7;
  Eigen::VectorXd expected(8);
  expected << 0, 2, 4, 6, 1, 3, 5, 7;
  CHECK(posemb::permute_pairing(bias, 1, posemb::Pairing::Interleaved,
                                posemb::Pairing::RotateHalf) == expected);

  Eigen::RowVectorXd row_bias = bias.transpose();
  posemb::permute_pairing_inplace(row_bias, 1, posemb::Pairing::Interleaved,
                                  posemb::Pairing::RotateHalf);
  CHECK(row_bias == expected.transpose());

  Eigen::Matrix<float, 8, 1> fixed;
  fixed << 0, 1, 2, 3, 4, 5, 6, 7;
  Eigen::Matrix<float, 8, 1> fixed_expected;
  fixed_expected << 0, 4, 1, 5, 2, 6, 3, 7;
  CHECK(posemb::permute_pairing(fixed, 1, posemb::Pairing::RotateHalf,
                                posemb::Pairing::Interleaved) == fixed_expected);
}

TEST_CASE("in place on a block of a fused QKV weight leaves the other rows alone", "[permute]") {
  // Fused [q (2 heads x 4); k (1 head x 4); v (4)] rows, 3 input features.
  Eigen::MatrixXd qkv = labelled_rows(16);
  posemb::permute_pairing_inplace(qkv.topRows(8), 2, posemb::Pairing::Interleaved,
                                  posemb::Pairing::RotateHalf);
  posemb::permute_pairing_inplace(qkv.middleRows(8, 4), 1, posemb::Pairing::Interleaved,
                                  posemb::Pairing::RotateHalf);
  CHECK(row_order(qkv) == std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 13, 14, 15});
}

TEST_CASE("P^-1(P(W)) == W and P(P^-1(W)) == W bit for bit", "[permute]") {
  // float32 with values that only a pure copy keeps: NaN payloads, -0, denormals, infinity.
  using RowMajorXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  std::mt19937 rng(7);
  const int n_heads = 4, head_dim = 12, in_features = 5;
  RowMajorXf w = random_matrix(n_heads * head_dim, in_features, rng).cast<float>();
  w(0, 0) = -0.0f;
  w(3, 1) = std::numeric_limits<float>::denorm_min();
  w(7, 2) = std::numeric_limits<float>::infinity();
  const std::uint32_t payload = 0x7fc01234u;
  std::memcpy(&w(9, 3), &payload, sizeof payload);

  for (int rotary_dim : {2, 4, 8, 12}) {
    INFO("rotary_dim = " << rotary_dim);
    const RowMajorXf there = posemb::permute_pairing(w, n_heads, posemb::Pairing::Interleaved,
                                                     posemb::Pairing::RotateHalf, rotary_dim);
    const RowMajorXf back = posemb::permute_pairing(there, n_heads, posemb::Pairing::RotateHalf,
                                                    posemb::Pairing::Interleaved, rotary_dim);
    CHECK(std::memcmp(back.data(), w.data(), sizeof(float) * w.size()) == 0);
    const RowMajorXf other = posemb::permute_pairing(w, n_heads, posemb::Pairing::RotateHalf,
                                                     posemb::Pairing::Interleaved, rotary_dim);
    const RowMajorXf other_back = posemb::permute_pairing(
        other, n_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, rotary_dim);
    CHECK(std::memcmp(other_back.data(), w.data(), sizeof(float) * w.size()) == 0);
    // Not the identity (except rotary_dim 2, where the one pair is (0, 1) in both pairings).
    if (rotary_dim > 2) CHECK(std::memcmp(there.data(), w.data(), sizeof(float) * w.size()) != 0);
  }

  // In place agrees with out of place; a bias vector round-trips too.
  RowMajorXf in_place = w;
  posemb::permute_pairing_inplace(in_place, n_heads, posemb::Pairing::Interleaved,
                                  posemb::Pairing::RotateHalf);
  const RowMajorXf out_of_place = posemb::permute_pairing(w, n_heads, posemb::Pairing::Interleaved,
                                                          posemb::Pairing::RotateHalf);
  CHECK(std::memcmp(in_place.data(), out_of_place.data(), sizeof(float) * w.size()) == 0);
  posemb::permute_pairing_inplace(in_place, n_heads, posemb::Pairing::RotateHalf,
                                  posemb::Pairing::Interleaved);
  CHECK(std::memcmp(in_place.data(), w.data(), sizeof(float) * w.size()) == 0);

  const Eigen::VectorXf bias = w.col(0);
  Eigen::VectorXf bias_round_trip = posemb::permute_pairing(
      bias, n_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, 8);
  posemb::permute_pairing_inplace(bias_round_trip, n_heads, posemb::Pairing::RotateHalf,
                                  posemb::Pairing::Interleaved, 8);
  CHECK(std::memcmp(bias_round_trip.data(), bias.data(), sizeof(float) * bias.size()) == 0);
}

TEST_CASE("RoPE_rotate_half(P(W) x) = P(RoPE_interleaved(W x)), scores equal, under GQA",
          "[permute]") {
  // 8 query heads share 2 key-value heads; bias on both projections.
  const int n_heads = 8, n_kv_heads = 2, head_dim = 16, hidden = 24;
  std::mt19937 rng(2024);
  const Eigen::MatrixXd wq = random_matrix(n_heads * head_dim, hidden, rng);     // [128, 24]
  const Eigen::MatrixXd wk = random_matrix(n_kv_heads * head_dim, hidden, rng);  // [32, 24]
  const Eigen::VectorXd bq = random_matrix(n_heads * head_dim, 1, rng);
  const Eigen::VectorXd bk = random_matrix(n_kv_heads * head_dim, 1, rng);
  const Eigen::VectorXd x_q = random_matrix(hidden, 1, rng);
  const Eigen::VectorXd x_k = random_matrix(hidden, 1, rng);

  const std::vector<std::pair<std::int64_t, std::int64_t>> position_pairs = {
      {0, 0}, {5, 0}, {17, 29}, {1000, 3}, {123456, 123400}};

  for (int rotary_dim : {16, 8}) {  // full and partial rotary
    INFO("rotary_dim = " << rotary_dim);
    const posemb::RopeSpec interleaved =
        posemb::default_rope_spec({head_dim, rotary_dim}, 10000.0, Pairing::Interleaved);
    const posemb::RopeSpec rotate_half =
        posemb::default_rope_spec({head_dim, rotary_dim}, 10000.0, Pairing::RotateHalf);

    const Eigen::MatrixXd wq_rh = posemb::permute_pairing(wq, n_heads, posemb::Pairing::Interleaved,
                                                          posemb::Pairing::RotateHalf, rotary_dim);
    const Eigen::MatrixXd wk_rh = posemb::permute_pairing(
        wk, n_kv_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, rotary_dim);
    const Eigen::VectorXd bq_rh = posemb::permute_pairing(bq, n_heads, posemb::Pairing::Interleaved,
                                                          posemb::Pairing::RotateHalf, rotary_dim);
    const Eigen::VectorXd bk_rh = posemb::permute_pairing(
        bk, n_kv_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, rotary_dim);

    for (const auto& [m, n] : position_pairs) {
      INFO("m = " << m << ", n = " << n);
      const Eigen::VectorXd q_int = rope_heads(wq * x_q + bq, n_heads, m, interleaved);
      const Eigen::VectorXd k_int = rope_heads(wk * x_k + bk, n_kv_heads, n, interleaved);
      const Eigen::VectorXd q_rh = rope_heads(wq_rh * x_q + bq_rh, n_heads, m, rotate_half);
      const Eigen::VectorXd k_rh = rope_heads(wk_rh * x_k + bk_rh, n_kv_heads, n, rotate_half);

      // The rotated features are the same values, in the permuted order.
      const Eigen::VectorXd q_expected = posemb::permute_pairing(
          q_int, n_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, rotary_dim);
      const Eigen::VectorXd k_expected = posemb::permute_pairing(
          k_int, n_kv_heads, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, rotary_dim);
      CHECK((q_rh - q_expected).cwiseAbs().maxCoeff() <= 1e-12 * q_int.cwiseAbs().maxCoeff());
      CHECK((k_rh - k_expected).cwiseAbs().maxCoeff() <= 1e-12 * k_int.cwiseAbs().maxCoeff());
      // And back: P^-1 of the rotate-half result is the interleaved result.
      const Eigen::VectorXd q_back = posemb::permute_pairing(
          q_rh, n_heads, posemb::Pairing::RotateHalf, posemb::Pairing::Interleaved, rotary_dim);
      CHECK((q_back - q_int).cwiseAbs().maxCoeff() <= 1e-12 * q_int.cwiseAbs().maxCoeff());

      const Eigen::VectorXd scores_int = gqa_scores(q_int, k_int, n_heads, n_kv_heads);
      const Eigen::VectorXd scores_rh = gqa_scores(q_rh, k_rh, n_heads, n_kv_heads);
      CHECK((scores_rh - scores_int).cwiseAbs().maxCoeff() <=
            1e-12 * scores_int.cwiseAbs().maxCoeff());

      // Controls: the check above can fail.
      // (1) Rotate-half RoPE on the unpermuted weights gives other scores (except at m = n = 0,
      //     where nothing rotates).
      const Eigen::VectorXd q_wrong = rope_heads(wq * x_q + bq, n_heads, m, rotate_half);
      const Eigen::VectorXd k_wrong = rope_heads(wk * x_k + bk, n_kv_heads, n, rotate_half);
      if (m != 0 || n != 0) {
        CHECK(
            (gqa_scores(q_wrong, k_wrong, n_heads, n_kv_heads) - scores_int).cwiseAbs().maxCoeff() >
            1e-3);
      }
    }
  }

  // (2) Permuting Wk with the query head count (8 heads of 4 rows instead of 2 heads of 16)
  //     breaks the scores: K must use the key-value head count.
  const posemb::RopeSpec interleaved =
      posemb::default_rope_spec(head_dim, 10000.0, Pairing::Interleaved);
  const posemb::RopeSpec rotate_half =
      posemb::default_rope_spec(head_dim, 10000.0, Pairing::RotateHalf);
  const Eigen::MatrixXd wq_rh = posemb::permute_pairing(wq, n_heads, posemb::Pairing::Interleaved,
                                                        posemb::Pairing::RotateHalf);
  const Eigen::MatrixXd wk_bad = posemb::permute_pairing(wk, n_heads, posemb::Pairing::Interleaved,
                                                         posemb::Pairing::RotateHalf);
  const Eigen::VectorXd q_int = rope_heads(wq * x_q, n_heads, 40, interleaved);
  const Eigen::VectorXd k_int = rope_heads(wk * x_k, n_kv_heads, 10, interleaved);
  const Eigen::VectorXd q_rh = rope_heads(wq_rh * x_q, n_heads, 40, rotate_half);
  const Eigen::VectorXd k_bad = rope_heads(wk_bad * x_k, n_kv_heads, 10, rotate_half);
  CHECK(
      (gqa_scores(q_rh, k_bad, n_heads, n_kv_heads) - gqa_scores(q_int, k_int, n_heads, n_kv_heads))
          .cwiseAbs()
          .maxCoeff() > 1e-3);
}

TEST_CASE("drift table: permuted weights under rotate-half give the interleaved scores",
          "[permute]") {
  // data/drift_table/README.md: scores R(m)(x_q @ Wq) . R(n)(x_k @ Wk), one head of 64, RoPE base
  // 10000 with interleaved pairs: -0.6102 at gap 5 and -5.8183 at gap 0 (4 printed decimals);
  // rotate-half pairs on the same weights: -3.451334 at gap 5 (float64).
  const std::string dir = std::string(POSEMB_DATA_DIR) + "/drift_table/";
  // x @ W is W^T x: the nn.Linear weight (rows = output features) is W^T.
  const Eigen::MatrixXd wq = load_npy_matrix(dir + "Wq.npy").transpose();  // [64, 64]
  const Eigen::MatrixXd wk = load_npy_matrix(dir + "Wk.npy").transpose();  // [64, 64]
  const Eigen::VectorXd x_q = load_npy_matrix(dir + "x_q.npy");            // [64]
  const Eigen::VectorXd x_k = load_npy_matrix(dir + "x_k.npy");            // [64]
  const posemb::RopeSpec interleaved = posemb::default_rope_spec(64, 10000.0, Pairing::Interleaved);
  const posemb::RopeSpec rotate_half = posemb::default_rope_spec(64, 10000.0, Pairing::RotateHalf);
  const Eigen::MatrixXd wq_rh =
      posemb::permute_pairing(wq, 1, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf);
  const Eigen::MatrixXd wk_rh =
      posemb::permute_pairing(wk, 1, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf);

  auto score = [](const Eigen::MatrixXd& w_q, const Eigen::MatrixXd& w_k, const Eigen::VectorXd& xq,
                  const Eigen::VectorXd& xk, std::int64_t m, std::int64_t n,
                  const posemb::RopeSpec& spec) {
    return rope_heads(w_q * xq, 1, m, spec).dot(rope_heads(w_k * xk, 1, n, spec));
  };

  for (std::int64_t n : {0, 100, 1000, 2000}) {
    INFO("n = " << n);
    const double published_int = score(wq, wk, x_q, x_k, n + 5, n, interleaved);
    CHECK(published_int == Approx(-0.6102).margin(1e-4));
    CHECK(score(wq, wk, x_q, x_k, n + 5, n, rotate_half) == Approx(-3.451334).margin(1e-6));
    const double permuted = score(wq_rh, wk_rh, x_q, x_k, n + 5, n, rotate_half);
    CHECK(permuted == Approx(-0.6102).margin(1e-4));
    CHECK(permuted == Approx(published_int).epsilon(0).margin(1e-12));
    CHECK(score(wq_rh, wk_rh, x_q, x_k, n, n, rotate_half) == Approx(-5.8183).margin(1e-4));
  }
}

TEST_CASE("permutation errors name the parameter, the value and the expectation", "[permute]") {
  const Eigen::MatrixXd w = labelled_rows(12);
  CHECK_THROWS_AS(
      posemb::permute_pairing(w, 0, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf),
      posemb::Error);
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 0, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf),
      Contains("n_heads = 0") && Contains("expected a number > 0"));
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, -2, posemb::Pairing::RotateHalf, posemb::Pairing::Interleaved, 2),
      Contains("n_heads = -2"));
  // 12 rows are not 5 heads.
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 5, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf),
      Contains("rows = 12") && Contains("multiple of n_heads = 5"));
  CHECK_THROWS_WITH(posemb::permute_pairing(Eigen::VectorXd(w.col(0)), 5,
                                            posemb::Pairing::Interleaved,
                                            posemb::Pairing::RotateHalf, 2),
                    Contains("rows = 12"));
  // rotary_dim odd, zero, or larger than head_dim = 6.
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 2, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, 3),
      Contains("rotary_dim = 3") && Contains("even"));
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 2, posemb::Pairing::RotateHalf, posemb::Pairing::Interleaved, 0),
      Contains("rotary_dim = 0"));
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 2, posemb::Pairing::RotateHalf, posemb::Pairing::Interleaved, -2),
      Contains("rotary_dim = -2"));
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 2, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf, 8),
      Contains("rotary_dim = 8") && Contains("head_dim = rows / n_heads = 6"));
  // Whole-head permutation with an odd head_dim (12 rows / 4 heads = 3).
  CHECK_THROWS_WITH(
      posemb::permute_pairing(w, 4, posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf),
      Contains("head_dim = 3") && Contains("even"));
  // In place: a failed call leaves the matrix untouched.
  Eigen::MatrixXd untouched = w;
  CHECK_THROWS_AS(posemb::permute_pairing_inplace(untouched, 2, posemb::Pairing::Interleaved,
                                                  posemb::Pairing::RotateHalf, 8),
                  posemb::Error);
  CHECK(untouched == w);
}
