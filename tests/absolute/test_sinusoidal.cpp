// Tests for sinusoidal.hpp: the table against hand-computed values and the published drift
// table, its layouts and norms, adding tables to embeddings, and every error path.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <posemb/io/npy.hpp>
#include <posemb/absolute/sinusoidal.hpp>

#include "support.hpp"

using test_support::positions_of;
using test_support::throws_with;

using posemb::EmbeddingTable;
using posemb::PositionMatrix;
using posemb::PositionVector;
using posemb::SinusoidalLayout;

TEST_CASE("sinusoidal: values at hand-computed points, d = 4, base 10000") {
  // w_0 = 1, w_1 = 10000^(-2/4) = 0.01. sin(1) = 0.8414709848078965, cos(1) = 0.5403023058681398,
  // sin(0.01) = 0.009999833334166664, cos(0.01) = 0.9999500004166653, sin(2) = 0.9092974268256817,
  // cos(2) = -0.4161468365471424, sin(0.02) = 0.01999866669333308, cos(0.02) = 0.9998000066665778.
  const EmbeddingTable<double> pe = posemb::sinusoidal_table<double>(3, 4);
  REQUIRE(pe.rows() == 3);
  REQUIRE(pe.cols() == 4);
  const double expected[3][4] = {
      {0.0, 1.0, 0.0, 1.0},
      {0.8414709848078965, 0.5403023058681398, 0.009999833334166664, 0.9999500004166653},
      {0.9092974268256817, -0.4161468365471424, 0.01999866669333308, 0.9998000066665778},
  };
  for (int p = 0; p < 3; ++p) {
    for (int c = 0; c < 4; ++c) {
      CAPTURE(p, c);
      CHECK(pe(p, c) == Approx(expected[p][c]).epsilon(0).margin(1e-15));
    }
  }
}

TEST_CASE("sinusoidal: base and d enter as base^(-2i/d), d = 8, base 100, p = 3") {
  // w_i = 100^(-2i/8) = 100^(-i/4): 1, 0.31622776601683794, 0.1, 0.031622776601683791.
  // Angles 3 w_i = 3, 0.9486832980505138, 0.3, 0.09486832980505137.
  const double sin_expected[4] = {0.1411200080598672, 0.8126488966420368, 0.29552020666133955,
                                  0.09472609133274612};
  const double cos_expected[4] = {-0.9899924966004454, 0.5827536107022249, 0.955336489125606,
                                  0.9955033739876628};
  const EmbeddingTable<double> interleaved =
      posemb::sinusoidal_table<double>(4, 8, 100.0, SinusoidalLayout::Interleaved);
  const EmbeddingTable<double> concat =
      posemb::sinusoidal_table<double>(4, 8, 100.0, SinusoidalLayout::Concat);
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(interleaved(3, 2 * i) == Approx(sin_expected[i]).epsilon(0).margin(1e-15));
    CHECK(interleaved(3, 2 * i + 1) == Approx(cos_expected[i]).epsilon(0).margin(1e-15));
    CHECK(concat(3, i) == Approx(sin_expected[i]).epsilon(0).margin(1e-15));
    CHECK(concat(3, 4 + i) == Approx(cos_expected[i]).epsilon(0).margin(1e-15));
  }
}

TEST_CASE("sinusoidal: a far position is exact in double and rounded once in float") {
  // d = 2 has the single frequency w_0 = 1: pe[100000] = (sin 100000, cos 100000). Reducing the
  // angle by the double nearest 2 pi costs about (100000 / 2 pi) * 2^-50 = 1.4e-11.
  const Eigen::VectorXd row = posemb::sinusoidal_embedding(100000, 2);
  CHECK(row[0] == Approx(0.03574879797201651).epsilon(0).margin(5e-11));
  CHECK(row[1] == Approx(-0.9993608074382124).epsilon(0).margin(5e-11));
  // The float table rounds the double values once: within half a float ulp of 1 at every
  // position (float angles would be off by 1e-4 here: p * 0.01 is not exact in float).
  const EmbeddingTable<float> pe_float = posemb::sinusoidal_table<float>(200001, 4);
  CHECK(pe_float(100000, 0) == static_cast<float>(0.03574879797201651));
  CHECK(pe_float(100000, 1) == static_cast<float>(-0.9993608074382124));
  const EmbeddingTable<double> pe_double = posemb::sinusoidal_table<double>(200001, 4);
  CHECK((pe_float.cast<double>() - pe_double).cwiseAbs().maxCoeff() < 6e-8);
}

TEST_CASE("sinusoidal: the embedding of one position equals its table row") {
  const EmbeddingTable<double> pe =
      posemb::sinusoidal_table<double>(50, 16, 500.0, SinusoidalLayout::Concat);
  for (std::int64_t p : {0, 1, 17, 49}) {
    CAPTURE(p);
    const Eigen::VectorXd row =
        posemb::sinusoidal_embedding(p, 16, 500.0, SinusoidalLayout::Concat);
    CHECK((row.transpose() - pe.row(p)).cwiseAbs().maxCoeff() == 0.0);
  }
}

TEST_CASE("sinusoidal: the two layouts hold the same values, permuted") {
  const int d = 32;
  const EmbeddingTable<double> interleaved = posemb::sinusoidal_table<double>(300, d);
  const EmbeddingTable<double> concat =
      posemb::sinusoidal_table<double>(300, d, 10000.0, SinusoidalLayout::Concat);
  for (int i = 0; i < d / 2; ++i) {
    CAPTURE(i);
    CHECK((interleaved.col(2 * i) - concat.col(i)).cwiseAbs().maxCoeff() == 0.0);
    CHECK((interleaved.col(2 * i + 1) - concat.col(d / 2 + i)).cwiseAbs().maxCoeff() == 0.0);
  }
}

TEST_CASE("sinusoidal: |pe[n]| = sqrt(d/2) = 5.6569 for d = 64 at every n (drift table README)") {
  const EmbeddingTable<float> pe = posemb::sinusoidal_table<float>(2048, 64);
  for (Eigen::Index n = 0; n < pe.rows(); ++n) {
    CAPTURE(n);
    REQUIRE(pe.row(n).cast<double>().norm() == Approx(5.6569).epsilon(0).margin(5e-5));
  }
}

TEST_CASE("sinusoidal: storage types half and bfloat16 round the double values") {
  const EmbeddingTable<double> exact = posemb::sinusoidal_table<double>(64, 8);
  const EmbeddingTable<Eigen::half> half = posemb::sinusoidal_table<Eigen::half>(64, 8);
  const EmbeddingTable<Eigen::bfloat16> bf16 = posemb::sinusoidal_table<Eigen::bfloat16>(64, 8);
  for (Eigen::Index p = 0; p < 64; ++p) {
    for (Eigen::Index c = 0; c < 8; ++c) {
      CHECK(std::abs(static_cast<double>(static_cast<float>(half(p, c))) - exact(p, c)) <= 4.9e-4);
      CHECK(std::abs(static_cast<double>(static_cast<float>(bf16(p, c))) - exact(p, c)) <= 2e-3);
    }
  }
}

// Gap-5 drift table (data/drift_table/README.md): the published sinusoidal scores
// ((x_q + pe[m]) Wq) . ((x_k + pe[n]) Wk) with the interleaved table, d = 64, printed to 4
// decimals from float32 PyTorch; our table is double-accurate, so allow 5e-4.
TEST_CASE("sinusoidal: reproduces the published drift-table scores") {
  const std::string dir = std::string(POSEMB_DATA_DIR) + "/drift_table";
  const auto load = [&](const std::string& name) {
    return posemb::read_npy(dir + "/" + name).values<float>();
  };
  const std::vector<float> xq = load("x_q.npy"), xk = load("x_k.npy"), wq = load("Wq.npy"),
                           wk = load("Wk.npy");
  REQUIRE(xq.size() == 64);
  REQUIRE(wq.size() == 64 * 64);
  const Eigen::Map<const Eigen::Matrix<float, 64, 64, Eigen::RowMajor>> Wq(wq.data()),
      Wk(wk.data());
  Eigen::Matrix<float, 2, 64, Eigen::RowMajor> tokens;  // row 0: x_q, row 1: x_k
  for (int c = 0; c < 64; ++c) {
    tokens(0, c) = xq[static_cast<std::size_t>(c)];
    tokens(1, c) = xk[static_cast<std::size_t>(c)];
  }
  const EmbeddingTable<float> pe = posemb::sinusoidal_table<float>(2053, 64);
  const auto score = [&](std::int64_t m, std::int64_t n) {
    const Eigen::Matrix<float, 2, 64, Eigen::RowMajor> x =
        posemb::add_position_embeddings(tokens, positions_of({m, n}), pe);
    const Eigen::RowVectorXd q = x.row(0).cast<double>() * Wq.cast<double>();
    const Eigen::RowVectorXd k = x.row(1).cast<double>() * Wk.cast<double>();
    return q.dot(k);
  };
  struct Row {
    std::int64_t m, n;
    double published;
  };
  const Row rows[] = {{5, 0, -15.1073},      {105, 100, -15.4347}, {1005, 1000, -7.3550},
                      {2005, 2000, 12.5488}, {0, 0, -18.7137},     {100, 100, -20.1633},
                      {1000, 1000, -4.1606}, {2000, 2000, 11.9834}};
  for (const Row& row : rows) {
    CAPTURE(row.m, row.n);
    CHECK(score(row.m, row.n) == Approx(row.published).epsilon(0).margin(5e-4));
  }
  // The gap-5 sweep over n = 0 .. 2047: min -33.9097, max +21.6053, 157 sign changes.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, previous = 0.0;
  int sign_changes = 0;
  for (std::int64_t n = 0; n < 2048; ++n) {
    const double s = score(n + 5, n);
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    if (n > 0 && (s < 0) != (previous < 0)) ++sign_changes;
    previous = s;
  }
  CHECK(lo == Approx(-33.9097).epsilon(0).margin(5e-4));
  CHECK(hi == Approx(21.6053).epsilon(0).margin(5e-4));
  CHECK(sign_changes == 157);
}

TEST_CASE("sinusoidal: adding a table to a [tokens, d] matrix at per-token positions") {
  const EmbeddingTable<double> pe = posemb::sinusoidal_table<double>(10, 4);
  Eigen::Matrix<double, 3, 4, Eigen::RowMajor> x;
  x << 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12;
  const PositionVector positions = positions_of({7, 0, 7});
  const auto out = posemb::add_position_embeddings(x, positions, pe);
  for (int t = 0; t < 3; ++t) {
    CAPTURE(t);
    for (int c = 0; c < 4; ++c) CHECK(out(t, c) == x(t, c) + pe(positions[t], c));
  }
  // In place on a block of a larger matrix leaves the rest untouched.
  Eigen::MatrixXd big = Eigen::MatrixXd::Zero(5, 6);
  posemb::add_position_embeddings_inplace(big.block(1, 2, 1, 4), positions_of({1}), pe);
  CHECK(big.block(1, 2, 1, 4) == pe.row(1));
  CHECK(big.cwiseAbs().sum() == Approx(pe.row(1).cwiseAbs().sum()).epsilon(1e-15));
  // A mapped table (e.g. a checkpoint's weights) works the same.
  std::vector<float> weights(10 * 4, 0.5f);
  Eigen::Map<const EmbeddingTable<float>> mapped(weights.data(), 10, 4);
  Eigen::MatrixXf y = Eigen::MatrixXf::Ones(2, 4);
  posemb::add_position_embeddings_inplace(y, positions_of({9, 3}), mapped);
  CHECK((y.array() == 1.5f).all());
}

TEST_CASE("sinusoidal: adding to a [batch, seq, d] tensor with positions, [1, seq] and offset") {
  const EmbeddingTable<float> pe = posemb::sinusoidal_table<float>(20, 6);
  posemb::EmbeddingTensor<float> x(2, 3, 6);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = 0.25f * static_cast<float>(i);
  const auto expect = [&](const posemb::EmbeddingTensor<float>& out, Eigen::Index b, Eigen::Index s,
                          std::int64_t p) {
    for (Eigen::Index c = 0; c < 6; ++c) {
      CAPTURE(b, s, p, c);
      CHECK(out(b, s, c) == x(b, s, c) + pe(p, c));
    }
  };
  SECTION(
      "per-token PositionMatrix [batch, seq] (left padding: rows start at different positions)") {
    PositionMatrix positions(2, 3);
    positions << 0, 1, 2, 0, 0, 1;
    const auto out = posemb::add_position_embeddings(x, positions, pe);
    for (Eigen::Index b = 0; b < 2; ++b)
      for (Eigen::Index s = 0; s < 3; ++s) expect(out, b, s, positions(b, s));
  }
  SECTION("[1, seq] shared by the batch") {
    PositionMatrix positions(1, 3);
    positions << 4, 9, 19;
    const auto out = posemb::add_position_embeddings(x, positions, pe);
    for (Eigen::Index b = 0; b < 2; ++b)
      for (Eigen::Index s = 0; s < 3; ++s) expect(out, b, s, positions(0, s));
  }
  SECTION("scalar offset (KV-cache continuation)") {
    const auto out = posemb::add_position_embeddings(x, std::int64_t{11}, pe);
    for (Eigen::Index b = 0; b < 2; ++b)
      for (Eigen::Index s = 0; s < 3; ++s) expect(out, b, s, 11 + s);
  }
  SECTION("in place on a TensorMap of the caller's buffer") {
    std::vector<float> buffer(x.data(), x.data() + x.size());
    Eigen::TensorMap<posemb::EmbeddingTensor<float>> view(buffer.data(), 2, 3, 6);
    posemb::add_position_embeddings_inplace(view, std::int64_t{2}, pe);
    for (Eigen::Index b = 0; b < 2; ++b) {
      for (Eigen::Index s = 0; s < 3; ++s) {
        for (Eigen::Index c = 0; c < 6; ++c) {
          CHECK(buffer[static_cast<std::size_t>((b * 3 + s) * 6 + c)] == x(b, s, c) + pe(2 + s, c));
        }
      }
    }
  }
}

TEST_CASE("sinusoidal: half-precision embeddings add in float and round once") {
  const EmbeddingTable<float> pe = posemb::sinusoidal_table<float>(4, 2);
  Eigen::Matrix<Eigen::half, 1, 2, Eigen::RowMajor> x;
  x << Eigen::half(1.0f), Eigen::half(2.0f);
  posemb::add_position_embeddings_inplace(x, positions_of({1}), pe);
  CHECK(static_cast<float>(x(0, 0)) == static_cast<float>(Eigen::half(1.0f + pe(1, 0))));
  CHECK(static_cast<float>(x(0, 1)) == static_cast<float>(Eigen::half(2.0f + pe(1, 1))));
}

TEST_CASE("sinusoidal: errors") {
  throws_with([] { posemb::sinusoidal_table<float>(8, 7); }, "d = 7: expected an even number >= 2");
  throws_with([] { posemb::sinusoidal_table<float>(8, 0); }, "d = 0");
  throws_with([] { posemb::sinusoidal_table<float>(8, -4); }, "d = -4");
  throws_with([] { posemb::sinusoidal_embedding(3, 5); }, "d = 5: expected an even number >= 2");
  throws_with([] { posemb::sinusoidal_table<float>(0, 8); }, "max_len = 0: expected a number > 0");
  throws_with([] { posemb::sinusoidal_table<float>(-3, 8); }, "max_len = -3");
  throws_with(
      [] { posemb::sinusoidal_table<float>(std::numeric_limits<std::int64_t>::max() / 2, 8); },
      "to fit in Eigen::Index");
  throws_with([] { posemb::sinusoidal_table<float>(8, 8, 0.0); },
              "base = 0: expected a finite number > 0");
  throws_with([] { posemb::sinusoidal_table<float>(8, 8, -2.0); }, "base = -2");
  throws_with([] { posemb::sinusoidal_table<float>(8, 8, std::nan("")); }, "base = nan");
  throws_with(
      [] { posemb::sinusoidal_table<float>(8, 8, std::numeric_limits<double>::infinity()); },
      "base = inf");
  throws_with([] { posemb::sinusoidal_table<float>(8, 8, 1e4, static_cast<SinusoidalLayout>(7)); },
              "layout = 7: expected SinusoidalLayout::Interleaved or SinusoidalLayout::Concat");
  throws_with([] { posemb::sinusoidal_embedding(0, 8, 1e4, static_cast<SinusoidalLayout>(-1)); },
              "layout = -1");

  const EmbeddingTable<float> pe = posemb::sinusoidal_table<float>(10, 4);
  Eigen::MatrixXf x = Eigen::MatrixXf::Ones(2, 4);
  const Eigen::MatrixXf before = x;
  throws_with(
      [&] {
        posemb::add_position_embeddings_inplace(x, positions_of({0, 10}), pe);
      },
      "position = 10: outside the position table's range [0, 10)");
  throws_with(
      [&] {
        posemb::add_position_embeddings_inplace(x, positions_of({-1, 0}), pe);
      },
      "position = -1");
  CHECK(x == before);  // positions are checked before anything is added
  throws_with([&] { posemb::add_position_embeddings_inplace(x, positions_of({0}), pe); },
              "positions.size() = 1: expected one position per row of x = 2");
  Eigen::MatrixXf wide = Eigen::MatrixXf::Ones(2, 5);
  throws_with(
      [&] {
        posemb::add_position_embeddings(wide, positions_of({0, 1}), pe);
      },
      "x.cols() = 5: expected the table width d = 4");

  posemb::EmbeddingTensor<float> t(2, 3, 4);
  t.setZero();
  throws_with([&] { posemb::add_position_embeddings_inplace(t, std::int64_t{8}, pe); },
              "position = 10: outside the position table's range [0, 10)");
  throws_with([&] { posemb::add_position_embeddings_inplace(t, std::int64_t{-1}, pe); },
              "position = -1");
  Eigen::Tensor<float, 0, Eigen::RowMajor> total = t.abs().sum();
  CHECK(total() == 0.0f);  // nothing was added before the error
  PositionMatrix wrong(2, 2);
  wrong.setZero();
  throws_with([&] { posemb::add_position_embeddings(t, wrong, pe); },
              "positions shape = [2, 2]: expected [batch, seq] = [2, 3] or [1, 3]");
  posemb::EmbeddingTensor<float> t5(2, 3, 5);
  t5.setZero();
  throws_with([&] { posemb::add_position_embeddings(t5, std::int64_t{0}, pe); },
              "x.dimension(2) = 5: expected the table width d = 4");
}

TEST_CASE("an oversized sinusoidal table is a posemb::Error naming max_len") {
  CHECK_THROWS_WITH(posemb::sinusoidal_table<float>(std::int64_t(1) << 61, 64),
                    Catch::Contains("max_len = 2305843009213693952"));
#if !defined(__SANITIZE_ADDRESS__)  // ASan reports a failed allocation instead of throwing
  CHECK_THROWS_WITH(posemb::sinusoidal_table<float>(std::int64_t(1) << 42, 64),
                    Catch::Contains("max_len = 4398046511104") &&
                        Catch::Contains("can be allocated"));
#endif
}
