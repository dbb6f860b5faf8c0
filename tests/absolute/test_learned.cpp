// Tests for learned.hpp: the seeded N(0, 0.02^2) initialisation (recipe, statistics,
// determinism), the zero-copy mapping of a caller's weights, adding to embeddings, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <posemb/absolute/learned.hpp>

#include "support.hpp"

using test_support::positions_of;
using test_support::throws_with;

using posemb::LearnedPositionTable;
using posemb::PositionVector;

TEST_CASE("learned: the engine is the standard's mt19937_64 (portable sequence)") {
  // [rand.predef]: the 10000th output of a default-constructed std::mt19937_64 is
  // 9981545732273789042 in every conforming standard library.
  std::mt19937_64 engine;
  engine.discard(9999);
  CHECK(engine() == 9981545732273789042ull);
}

TEST_CASE("learned: the first weights follow the documented Box-Muller recipe") {
  // Written out from the recipe in learned.hpp: u = (top 53 bits + 0.5) / 2^53,
  // z0 = sqrt(-2 ln u1) cos(2 pi u2), z1 = sqrt(-2 ln u1) sin(2 pi u2).
  const std::uint64_t seed = 1234;
  std::mt19937_64 engine(seed);
  const double u1 = (static_cast<double>(engine() >> 11) + 0.5) / 9007199254740992.0;
  const double u2 = (static_cast<double>(engine() >> 11) + 0.5) / 9007199254740992.0;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double two_pi = 2.0 * 3.14159265358979323846;
  const LearnedPositionTable<double> table(4, 3, seed, 0.5);
  CHECK(table.weights()(0, 0) == 0.5 * r * std::cos(two_pi * u2));
  CHECK(table.weights()(0, 1) == 0.5 * r * std::sin(two_pi * u2));
}

TEST_CASE("learned: 10^5 initial weights have mean 0, std 0.02 and a normal shape") {
  // Bounds are 5 standard errors of each statistic for N = 10^5 draws of N(0, 0.02^2):
  //   mean: 0.02 / sqrt(N) = 6.3e-5;  std: 0.02 / sqrt(2N) = 4.5e-5;
  //   P(|w| < 1 sd) = 0.682689, se 1.5e-3;  P(|w| < 2 sd) = 0.954500, se 6.6e-4;
  //   kurtosis 3, se sqrt(24 / N) = 0.0155.
  // A uniform or a wrongly scaled initialiser fails them (uniform: P(|w| < 1 sd) = 0.577,
  // kurtosis 1.8).
  for (std::uint64_t seed : {0ull, 42ull, 0xDEADBEEFull}) {
    CAPTURE(seed);
    const LearnedPositionTable<double> table(1000, 100, seed);
    const Eigen::Map<const Eigen::ArrayXd> w(table.weights().data(), 100000);
    const double n = 100000.0;
    const double mean = w.sum() / n;
    const double var = (w - mean).square().sum() / n;
    const double sd = std::sqrt(var);
    const double kurtosis = (w - mean).pow(4).sum() / n / (var * var);
    const double within_1 = (w.abs() < 0.02).cast<double>().sum() / n;
    const double within_2 = (w.abs() < 0.04).cast<double>().sum() / n;
    CHECK(std::abs(mean) < 3.2e-4);
    CHECK(std::abs(sd - 0.02) < 2.3e-4);
    CHECK(std::abs(within_1 - 0.682689) < 7.5e-3);
    CHECK(std::abs(within_2 - 0.954500) < 3.3e-3);
    CHECK(std::abs(kurtosis - 3.0) < 0.078);
  }
}

TEST_CASE("learned: the initialisation is deterministic per seed and differs between seeds") {
  const LearnedPositionTable<float> a(64, 32, 7), b(64, 32, 7), c(64, 32, 8);
  CHECK(a.weights() == b.weights());
  CHECK((a.weights() - c.weights()).cwiseAbs().maxCoeff() > 0.01f);
  // The storage type only rounds: a float table is the double table rounded once.
  const LearnedPositionTable<double> exact(64, 32, 7);
  CHECK(a.weights() == exact.weights().cast<float>());
  // init_std only scales the same draws.
  const LearnedPositionTable<double> unit(64, 32, 7, 1.0);
  CHECK((exact.weights() - 0.02 * unit.weights()).cwiseAbs().maxCoeff() < 1e-17);
  const LearnedPositionTable<Eigen::bfloat16> bf16(64, 32, 7);
  CHECK(static_cast<float>(bf16.weights()(3, 5)) ==
        static_cast<float>(Eigen::bfloat16(static_cast<float>(exact.weights()(3, 5)))));
}

TEST_CASE("learned: an owning table's shape, and copies are deep") {
  LearnedPositionTable<float> table(10, 6, 3);
  CHECK(table.max_len() == 10);
  CHECK(table.dim() == 6);
  CHECK(table.owns_weights());
  CHECK(table.weights().rows() == 10);
  CHECK(table.weights().cols() == 6);
  LearnedPositionTable<float> copy = table;
  CHECK(copy.weights().data() != table.weights().data());
  copy.weights()(0, 0) = 99.0f;
  CHECK(table.weights()(0, 0) != 99.0f);
}

TEST_CASE("learned: mapping a caller's weights is zero-copy in both directions") {
  std::vector<float> buffer(5 * 4);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i);
  LearnedPositionTable<float> table = LearnedPositionTable<float>::map(buffer.data(), 5, 4);
  CHECK_FALSE(table.owns_weights());
  CHECK(table.weights().data() == buffer.data());
  CHECK(table.weights()(2, 3) == 11.0f);  // row-major: 2 * 4 + 3
  table.weights()(1, 1) = -1.0f;
  CHECK(buffer[5] == -1.0f);
  buffer[19] = 42.0f;
  CHECK(table.weights()(4, 3) == 42.0f);
  const LearnedPositionTable<float> copy = table;  // maps the same buffer
  CHECK(copy.weights().data() == buffer.data());
}

TEST_CASE("learned: adding the table to embeddings at per-token positions") {
  std::vector<double> buffer(6 * 2);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = 10.0 * static_cast<double>(i);
  const LearnedPositionTable<double> table = LearnedPositionTable<double>::map(buffer.data(), 6, 2);
  Eigen::Matrix<double, 3, 2, Eigen::RowMajor> x;
  x << 1, 2, 3, 4, 5, 6;
  const auto out = posemb::add_position_embeddings(x, positions_of({5, 0, 2}), table.weights());
  Eigen::Matrix<double, 3, 2, Eigen::RowMajor> expected;
  expected << 1 + 100, 2 + 110, 3 + 0, 4 + 10, 5 + 40, 6 + 50;
  CHECK(out == expected);

  posemb::EmbeddingTensor<double> t(1, 2, 2);
  t.setConstant(1.0);
  posemb::add_position_embeddings_inplace(t, std::int64_t{4}, table.weights());
  CHECK(t(0, 0, 0) == 81.0);
  CHECK(t(0, 0, 1) == 91.0);
  CHECK(t(0, 1, 0) == 101.0);
  CHECK(t(0, 1, 1) == 111.0);
}

TEST_CASE("learned: errors") {
  throws_with([] { LearnedPositionTable<float>(0, 4, 1); }, "max_len = 0: expected a number > 0");
  throws_with([] { LearnedPositionTable<float>(-2, 4, 1); }, "max_len = -2");
  throws_with([] { LearnedPositionTable<float>(4, 0, 1); }, "d = 0: expected a number > 0");
  throws_with([] { LearnedPositionTable<float>(4, -1, 1); }, "d = -1");
  throws_with(
      [] { LearnedPositionTable<float>(std::numeric_limits<std::int64_t>::max() / 2, 4, 1); },
      "to fit in Eigen::Index");
  throws_with([] { LearnedPositionTable<float>(4, 4, 1, 0.0); },
              "init_std = 0: expected a finite number > 0");
  throws_with([] { LearnedPositionTable<float>(4, 4, 1, -0.02); }, "init_std = -0.02");
  throws_with([] { LearnedPositionTable<float>(4, 4, 1, std::nan("")); }, "init_std = nan");
  throws_with([] { LearnedPositionTable<float>::map(nullptr, 4, 4); },
              "weights = nullptr: expected a buffer of max_len * d values");
  float buffer[8] = {};
  throws_with([&] { LearnedPositionTable<float>::map(buffer, 0, 8); }, "max_len = 0");
  throws_with([&] { LearnedPositionTable<float>::map(buffer, 8, 0); }, "d = 0");

  const LearnedPositionTable<float> table(4, 2, 1);
  Eigen::MatrixXf x = Eigen::MatrixXf::Zero(1, 2);
  throws_with(
      [&] { posemb::add_position_embeddings_inplace(x, positions_of({4}), table.weights()); },
      "position = 4: outside the position table's range [0, 4)");
  Eigen::MatrixXf wide = Eigen::MatrixXf::Zero(1, 3);
  throws_with(
      [&] { posemb::add_position_embeddings_inplace(wide, positions_of({0}), table.weights()); },
      "x.cols() = 3: expected the table width d = 2");
}
