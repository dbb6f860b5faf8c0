// bias/relative_bias_gradient.hpp: T5's table gradient against finite differences of t5_bias
// (linear in the table) and the property that each head's bucket gradients sum to that head's
// bias gradients.
#include <catch2/catch.hpp>

#include <random>

#include <posemb/bias/relative_bias.hpp>
#include <posemb/bias/relative_bias_gradient.hpp>

#include "support.hpp"

TEST_CASE("T5's table gradient equals finite differences of t5_bias", "[t5_gradient]") {
  for (const bool bidirectional : {true, false}) {
    const posemb::T5Buckets buckets{8, 20, bidirectional};
    const posemb::PositionVector q = test_support::position_range(10, 6);
    const posemb::PositionVector k = test_support::position_range(0, 16);
    std::mt19937 gen(1);
    std::normal_distribution<double> normal;
    posemb::RelativeBias<double> w(3, 6, 16);
    for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(gen);
    using Table = posemb::T5BiasTable<double>::Table;
    const Table table = Table::Random(8, 3);
    const auto loss = [&](const Table& t) {
      const posemb::RelativeBias<double> bias =
          posemb::t5_bias(posemb::T5BiasTable<double>(buckets, t), q, k);
      double sum = 0.0;
      for (Eigen::Index i = 0; i < bias.size(); ++i) sum += w.data()[i] * bias.data()[i];
      return sum;
    };
    const auto got = posemb::t5_table_gradient(w, buckets, q, k);
    REQUIRE(got.rows() == 8);
    REQUIRE(got.cols() == 3);
    for (Eigen::Index n = 0; n < 8; ++n) {
      for (Eigen::Index h = 0; h < 3; ++h) {
        Table plus = table, minus = table;
        plus(n, h) += 0.5;
        minus(n, h) -= 0.5;
        CHECK(got(n, h) == Approx(loss(plus) - loss(minus)).epsilon(1e-12).margin(1e-12));
      }
    }
    for (Eigen::Index h = 0; h < 3; ++h) {
      double all = 0.0;
      for (Eigen::Index i = 0; i < 6; ++i)
        for (Eigen::Index j = 0; j < 16; ++j) all += w(h, i, j);
      CHECK(got.col(h).sum() == Approx(all).epsilon(1e-13));
    }
  }
}

TEST_CASE("T5's table gradient refuses a grad of another shape", "[t5_gradient]") {
  const posemb::RelativeBias<float> w(2, 3, 4);
  CHECK_THROWS_WITH(
      posemb::t5_table_gradient(w, {32, 128, true}, test_support::position_range(0, 3),
                                test_support::position_range(0, 5)),
      Catch::Matchers::Contains("expected [heads, q_len, k_len] with q_len = 3 and k_len = 5"));
}
