// absolute/gradient.hpp: the learned table's gradient against finite differences of
// add_position_embeddings (linear in the table), a property (rows sum to the tokens' sum) and
// repeated positions accumulating.
#include <catch2/catch.hpp>

#include <random>

#include <posemb/absolute/absolute.hpp>
#include <posemb/absolute/gradient.hpp>

namespace {

posemb::EmbeddingTensor<double> random_tokens(Eigen::Index batch, Eigen::Index seq, Eigen::Index d,
                                              unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  posemb::EmbeddingTensor<double> t(batch, seq, d);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = normal(gen);
  return t;
}

}  // namespace

TEST_CASE("the learned table's gradient equals finite differences", "[table_gradient]") {
  posemb::PositionMatrix positions(2, 4);
  positions << 0, 3, 3, 7, 7, 7, 1, 0;  // repeats accumulate
  const auto x = random_tokens(2, 4, 3, 1), w = random_tokens(2, 4, 3, 2);
  posemb::EmbeddingTable<double> table = posemb::EmbeddingTable<double>::Random(8, 3);
  const auto loss = [&](const posemb::EmbeddingTable<double>& t) {
    const auto y = posemb::add_position_embeddings(x, positions, t);
    double sum = 0.0;
    for (Eigen::Index i = 0; i < y.size(); ++i) sum += w.data()[i] * y.data()[i];
    return sum;
  };
  const posemb::EmbeddingTable<double> got = posemb::position_table_gradient(w, positions, 8);
  REQUIRE(got.rows() == 8);
  for (Eigen::Index r = 0; r < 8; ++r) {
    for (Eigen::Index c = 0; c < 3; ++c) {
      posemb::EmbeddingTable<double> plus = table, minus = table;
      plus(r, c) += 0.5;
      minus(r, c) -= 0.5;
      CHECK(got(r, c) == Approx(loss(plus) - loss(minus)).epsilon(1e-12).margin(1e-12));
    }
  }
  CHECK(got.row(7)(0) == Approx(w(1, 0, 0) + w(1, 1, 0) + w(0, 3, 0)).epsilon(1e-15));
  CHECK(got.row(2).isZero());
}

TEST_CASE("the table's rows sum to the sum of the tokens' gradients, offsets too",
          "[table_gradient]") {
  const auto w = random_tokens(3, 5, 4, 3);
  const posemb::EmbeddingTable<double> got = posemb::position_table_gradient(w, 10, 16);
  for (Eigen::Index c = 0; c < 4; ++c) {
    double tokens = 0.0;
    for (Eigen::Index b = 0; b < 3; ++b)
      for (Eigen::Index s = 0; s < 5; ++s) tokens += w(b, s, c);
    CHECK(got.col(c).sum() == Approx(tokens).epsilon(1e-13));
  }
  CHECK(got.topRows(10).isZero());
  CHECK(got.bottomRows(1).isZero());
}

TEST_CASE("the table's gradient refuses positions outside the table", "[table_gradient]") {
  const auto w = random_tokens(1, 4, 2, 4);
  CHECK_THROWS_WITH(posemb::position_table_gradient(w, 5, 8),
                    Catch::Matchers::Contains("outside the position table's range [0, 8)"));
}
