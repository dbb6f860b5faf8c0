// Tests for alibi.hpp: slopes for power-of-two and other head counts written out from the
// reference recipe, the causal and symmetric bias at hand-computed entries, decode rows and
// KV-cache positions, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <posemb/bias/alibi.hpp>

#include "support.hpp"

using test_support::position_range;
using test_support::positions_of;
using test_support::throws_with;

using posemb::AlibiForm;
using posemb::PositionVector;

namespace {

// Checks slopes == 2^exponents.
void check_slopes(int n_heads, const std::vector<double>& exponents) {
  CAPTURE(n_heads);
  const Eigen::VectorXd slopes = posemb::alibi_slopes(n_heads);
  REQUIRE(slopes.size() == static_cast<Eigen::Index>(exponents.size()));
  for (std::size_t h = 0; h < exponents.size(); ++h) {
    CAPTURE(h);
    CHECK(slopes[static_cast<Eigen::Index>(h)] ==
          Approx(std::pow(2.0, exponents[h])).epsilon(1e-15));
  }
}

}  // namespace

TEST_CASE("alibi: slopes for power-of-two head counts, 2^(-8h/n)") {
  check_slopes(1, {-8});
  check_slopes(2, {-4, -8});
  check_slopes(4, {-2, -4, -6, -8});
  check_slopes(8, {-1, -2, -3, -4, -5, -6, -7, -8});
  check_slopes(16,
               {-0.5, -1, -1.5, -2, -2.5, -3, -3.5, -4, -4.5, -5, -5.5, -6, -6.5, -7, -7.5, -8});
  check_slopes(32, {-0.25, -0.5,  -0.75, -1,    -1.25, -1.5,  -1.75, -2,    -2.25, -2.5,  -2.75,
                    -3,    -3.25, -3.5,  -3.75, -4,    -4.25, -4.5,  -4.75, -5,    -5.25, -5.5,
                    -5.75, -6,    -6.25, -6.5,  -6.75, -7,    -7.25, -7.5,  -7.75, -8});
  // n = 8 in decimals (the paper's example): 1/2, 1/4, ..., 1/256.
  const Eigen::VectorXd eight = posemb::alibi_slopes(8);
  CHECK(eight[0] == 0.5);
  CHECK(eight[7] == 0.00390625);
}

TEST_CASE("alibi: slopes for other head counts follow get_slopes") {
  // c = largest power of two below n: the c-recipe, then slopes 1, 3, 5, ... of the 2c-recipe.
  check_slopes(3, {-4, -8, -2});                  // c = 2; 2c = 4: 2^-2
  check_slopes(5, {-2, -4, -6, -8, -1});          // c = 4; 2c = 8: 2^-1
  check_slopes(6, {-2, -4, -6, -8, -1, -3});      // 2^-1, 2^-3
  check_slopes(7, {-2, -4, -6, -8, -1, -3, -5});  // 2^-1, 2^-3, 2^-5
  check_slopes(12, {-1, -2, -3, -4, -5, -6, -7, -8, -0.5, -1.5, -2.5, -3.5});  // c = 8; 2c = 16
  // n = 40: c = 32, then the first 8 odd slopes of the 64-head recipe, 2^(-(2k+1)/8).
  std::vector<double> forty;
  for (int h = 1; h <= 32; ++h) forty.push_back(-8.0 * h / 32.0);
  for (int k = 0; k < 8; ++k) forty.push_back(-(2.0 * k + 1.0) / 8.0);
  check_slopes(40, forty);
}

namespace {

// get_slopes of the reference code (attention_with_linear_biases, fairseq transformer.py) as the
// slopes were computed before max_bias existed: start = 2^(-2^-(log2 n - 3)), ratio = start.
std::vector<double> reference_get_slopes(int n) {
  const auto power_of_2 = [](int m) {
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(double(m)) - 3)));
    std::vector<double> slopes;
    for (int i = 0; i < m; ++i) slopes.push_back(start * std::pow(start, i));
    return slopes;
  };
  if (std::log2(double(n)) == std::floor(std::log2(double(n)))) return power_of_2(n);
  const int closest = 1 << static_cast<int>(std::floor(std::log2(double(n))));
  std::vector<double> slopes = power_of_2(closest);
  const std::vector<double> twice = reference_get_slopes(2 * closest);
  for (int k = 0; k < n - closest; ++k) slopes.push_back(twice[static_cast<std::size_t>(2 * k)]);
  return slopes;
}

// MPT's gen_slopes (llm-foundry attention.py), exponents in double: N = 2^ceil(log2 n),
// m = (1 .. N) * max_bias / N, slopes = 1 / 2^m, then concat(slopes[1::2], slopes[::2])[:n].
std::vector<double> mpt_gen_slopes(int n, double max_bias) {
  const int N = 1 << static_cast<int>(std::ceil(std::log2(double(n))));
  std::vector<double> slopes;
  for (int k = 1; k <= N; ++k) slopes.push_back(1.0 / std::pow(2.0, k * (max_bias / N)));
  if (N == n) return slopes;
  std::vector<double> strided;
  for (int k = 1; k < N; k += 2) strided.push_back(slopes[static_cast<std::size_t>(k)]);
  for (int k = 0; k < N; k += 2) strided.push_back(slopes[static_cast<std::size_t>(k)]);
  strided.resize(static_cast<std::size_t>(n));
  return strided;
}

}  // namespace

TEST_CASE("alibi: max_bias 8 reproduces the reference get_slopes for n = 1 .. 80") {
  for (int n = 1; n <= 80; ++n) {
    CAPTURE(n);
    const std::vector<double> expected = reference_get_slopes(n);
    const Eigen::VectorXd slopes = posemb::alibi_slopes(n);
    const Eigen::VectorXd explicit_eight = posemb::alibi_slopes(n, 8.0);
    REQUIRE(slopes.size() == n);
    int c = 1;  // the largest power of two <= n
    while (2 * c <= n) c *= 2;
    for (int h = 0; h < n; ++h) {
      CAPTURE(h);
      CHECK(slopes[h] == Approx(expected[static_cast<std::size_t>(h)]).epsilon(1e-14));
      CHECK(explicit_eight[h] == slopes[h]);
      // Bit for bit the slopes posemb gave before max_bias existed: 2^(-8 (h + 1) / c), then
      // 2^(-8 (2k + 1) / (2c)).
      const double before =
          h < c ? std::exp2(-8.0 * (h + 1) / c) : std::exp2(-8.0 * (2 * (h - c) + 1) / (2 * c));
      CHECK(slopes[h] == before);
    }
  }
}

TEST_CASE("alibi: other max_bias values follow MPT's gen_slopes") {
  for (double max_bias : {8.0, 16.0, 4.0, 1.5, 12.0}) {
    for (int n = 1; n <= 80; ++n) {
      CAPTURE(max_bias, n);
      const std::vector<double> expected = mpt_gen_slopes(n, max_bias);
      const Eigen::VectorXd slopes = posemb::alibi_slopes(n, max_bias);
      for (int h = 0; h < n; ++h) {
        CAPTURE(h);
        CHECK(slopes[h] == Approx(expected[static_cast<std::size_t>(h)]).epsilon(1e-14));
      }
    }
  }
  // By hand: 4 heads at max_bias 16: 2^-4, 2^-8, 2^-12, 2^-16; 3 heads at 4: 2^-2, 2^-4, 2^-1.
  const Eigen::VectorXd four = posemb::alibi_slopes(4, 16.0);
  CHECK(four[0] == 0.0625);
  CHECK(four[3] == std::ldexp(1.0, -16));
  const Eigen::VectorXd three = posemb::alibi_slopes(3, 4.0);
  CHECK(three[0] == 0.25);
  CHECK(three[1] == 0.0625);
  CHECK(three[2] == 0.5);
}

TEST_CASE("alibi: bfloat16-rounded slopes (Falcon's build_alibi_tensor)") {
  using posemb::AlibiSlopeRounding;
  // 32 heads: slope_h = 2^(-h/4). 2^(-3/4) = 0.5946035575... = 0x3F1837F0 as float32; bfloat16
  // keeps the top 16 bits rounded to nearest even: 0x3F18 = 0.59375 (worked by hand).
  const Eigen::VectorXd falcon =
      posemb::alibi_slopes(32, 8.0, std::nullopt, AlibiSlopeRounding::BFloat16);
  CHECK(falcon[2] == 0.59375);
  for (int n : {1, 5, 12, 32, 71, 128}) {
    CAPTURE(n);
    const Eigen::VectorXd exact = posemb::alibi_slopes(n);
    const Eigen::VectorXd rounded =
        posemb::alibi_slopes(n, 8.0, std::nullopt, AlibiSlopeRounding::BFloat16);
    for (int h = 0; h < n; ++h) {
      CAPTURE(h);
      // a bfloat16 value: a float32 whose low 16 bits are zero, within half a bfloat16 ulp of
      // the exact slope (8 significant bits: 2^-8 of the binade, so <= 2^-8 of the slope), with
      // the float32 rounding below that; powers of two are unchanged
      const float as_float = static_cast<float>(rounded[h]);
      CHECK(static_cast<double>(as_float) == rounded[h]);
      std::uint32_t bits = 0;
      std::memcpy(&bits, &as_float, sizeof bits);
      CHECK((bits & 0xFFFFu) == 0u);
      CHECK(std::abs(rounded[h] - exact[h]) <= std::ldexp(exact[h], -8) * (1.0 + 0x1p-16));
      if (exact[h] == std::exp2(std::round(std::log2(exact[h])))) CHECK(rounded[h] == exact[h]);
    }
  }
  // The default is the exact slopes; a shard rounds its heads alone.
  CHECK(posemb::alibi_slopes(12, 8.0, std::nullopt, AlibiSlopeRounding::None) ==
        posemb::alibi_slopes(12));
  CHECK(posemb::alibi_slopes(12, 8.0, posemb::HeadRange{4, 9}, AlibiSlopeRounding::BFloat16) ==
        posemb::alibi_slopes(12, 8.0, std::nullopt, AlibiSlopeRounding::BFloat16).segment(4, 5));
  throws_with(
      [] { posemb::alibi_slopes(4, 8.0, std::nullopt, static_cast<AlibiSlopeRounding>(7)); },
      "rounding = 7");
}

TEST_CASE("alibi: tensor-parallel shards concatenate to the full slopes for n = 1 .. 80") {
  for (double max_bias : {8.0, 5.0}) {
    for (int n = 1; n <= 80; ++n) {
      CAPTURE(max_bias, n);
      const Eigen::VectorXd full = posemb::alibi_slopes(n, max_bias);
      for (int ranks = 1; ranks <= std::min(n, 8); ++ranks) {
        CAPTURE(ranks);
        // Rank r holds heads [r n / ranks, (r + 1) n / ranks): uneven shards too.
        Eigen::VectorXd joined(n);
        for (int r = 0; r < ranks; ++r) {
          const int begin = r * n / ranks, end = (r + 1) * n / ranks;
          const Eigen::VectorXd shard =
              posemb::alibi_slopes(n, max_bias, posemb::HeadRange{begin, end});
          REQUIRE(shard.size() == end - begin);
          joined.segment(begin, end - begin) = shard;
        }
        CHECK(joined == full);  // bit for bit
      }
    }
  }
  // The bias of a shard is the shard's heads of the full bias.
  const auto full = posemb::alibi_bias<double>(posemb::alibi_slopes(12), position_range(0, 5),
                                               position_range(0, 5));
  const auto shard =
      posemb::alibi_bias<double>(posemb::alibi_slopes(12, 8.0, posemb::HeadRange{9, 12}),
                                 position_range(0, 5), position_range(0, 5));
  REQUIRE(shard.dimension(0) == 3);
  for (int h = 0; h < 3; ++h)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) CHECK(shard(h, i, j) == full(9 + h, i, j));
}

TEST_CASE("alibi: causal bias at hand-computed entries, -inf above the diagonal") {
  // n = 2: slopes 1/16, 1/256. Query and key positions 0, 1, 2.
  const auto bias = posemb::alibi_bias<double>(posemb::alibi_slopes(2), position_range(0, 3),
                                               position_range(0, 3));
  REQUIRE(bias.dimension(0) == 2);
  REQUIRE(bias.dimension(1) == 3);
  REQUIRE(bias.dimension(2) == 3);
  const double inf = std::numeric_limits<double>::infinity();
  const double head0[3][3] = {{0, -inf, -inf}, {-1.0 / 16, 0, -inf}, {-2.0 / 16, -1.0 / 16, 0}};
  const double head1[3][3] = {{0, -inf, -inf}, {-1.0 / 256, 0, -inf}, {-2.0 / 256, -1.0 / 256, 0}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      CAPTURE(i, j);
      CHECK(bias(0, i, j) == head0[i][j]);
      CHECK(bias(1, i, j) == head1[i][j]);
    }
  }
}

TEST_CASE("alibi: symmetric bias is -slope * |qpos - kpos| with nothing masked") {
  // n = 3: slopes 2^-4, 2^-8, 2^-2.
  const auto bias = posemb::alibi_bias<double>(posemb::alibi_slopes(3), positions_of({4}),
                                               positions_of({0, 4, 10}), AlibiForm::Symmetric);
  CHECK(bias(0, 0, 0) == -4.0 / 16);
  CHECK(bias(0, 0, 1) == 0.0);
  CHECK(bias(0, 0, 2) == -6.0 / 16);
  CHECK(bias(2, 0, 0) == -4.0 / 4);
  CHECK(bias(2, 0, 2) == -6.0 / 4);
  CHECK(bias(1, 0, 2) == -6.0 / 256);
}

TEST_CASE("alibi: the decode row equals the last row of the full bias") {
  const int heads = 6;
  const std::int64_t len = 9;
  for (AlibiForm form : {AlibiForm::Causal, AlibiForm::Symmetric}) {
    CAPTURE(posemb::to_string(form));
    const auto full = posemb::alibi_bias<float>(posemb::alibi_slopes(heads), position_range(0, len),
                                                position_range(0, len), form);
    const auto row = posemb::alibi_bias_row<float>(posemb::alibi_slopes(heads), len - 1,
                                                   position_range(0, len), form);
    REQUIRE(row.rows() == heads);
    REQUIRE(row.cols() == len);
    for (int h = 0; h < heads; ++h) {
      for (std::int64_t j = 0; j < len; ++j) {
        CAPTURE(h, j);
        CHECK(row(h, j) == full(h, len - 1, j));
      }
    }
    // The decode token against its whole cache is biased (only the last key is at distance 0).
    CHECK(row(0, 0) == static_cast<float>(-0.25 * (len - 1)));
  }
}

TEST_CASE("alibi: KV-cache queries at offset positions get the rows of the full bias") {
  // Prefill keys 0 .. 11; two new queries at positions 10, 11 equal rows 10, 11 of the 12 x 12
  // bias.
  const auto full = posemb::alibi_bias<double>(posemb::alibi_slopes(5), position_range(0, 12),
                                               position_range(0, 12));
  const auto tail = posemb::alibi_bias<double>(posemb::alibi_slopes(5), position_range(10, 2),
                                               position_range(0, 12));
  for (int h = 0; h < 5; ++h)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 12; ++j) CHECK(tail(h, i, j) == full(h, 10 + i, j));
  // Shifting every position by the same amount changes nothing (the bias is relative).
  const auto shifted = posemb::alibi_bias<double>(
      posemb::alibi_slopes(5), position_range(1000010, 2), position_range(1000000, 12));
  for (int h = 0; h < 5; ++h)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 12; ++j) CHECK(shifted(h, i, j) == tail(h, i, j));
}

TEST_CASE("alibi: extreme positions do not overflow") {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const std::int64_t small = std::numeric_limits<std::int64_t>::min();
  const auto row = posemb::alibi_bias_row<double>(posemb::alibi_slopes(1), big,
                                                  positions_of({small, big}), AlibiForm::Symmetric);
  CHECK(row(0, 0) == Approx(-std::ldexp(1.0, 64) / 256.0).epsilon(1e-15));
  CHECK(row(0, 1) == 0.0);
}

TEST_CASE("alibi: half-precision storage keeps -inf and rounds the values") {
  const auto bias = posemb::alibi_bias<Eigen::half>(posemb::alibi_slopes(2), position_range(0, 3),
                                                    position_range(0, 3));
  CHECK(std::isinf(static_cast<float>(bias(0, 0, 2))));
  CHECK(static_cast<float>(bias(0, 2, 0)) == -0.125f);
  const auto bf16 =
      posemb::alibi_bias_row<Eigen::bfloat16>(posemb::alibi_slopes(2), 0, position_range(0, 2));
  CHECK(std::isinf(static_cast<float>(bf16(1, 1))));
}

TEST_CASE("alibi: errors") {
  throws_with([] { posemb::alibi_slopes(0); }, "n_heads = 0: expected a number > 0");
  throws_with([] { posemb::alibi_slopes(-4); }, "n_heads = -4");
  throws_with(
      [] {
        posemb::alibi_bias<float>(posemb::alibi_slopes(0), position_range(0, 2),
                                  position_range(0, 2));
      },
      "n_heads = 0");
  throws_with(
      [] { posemb::alibi_bias_row<float>(posemb::alibi_slopes(0), 1, position_range(0, 2)); },
      "n_heads = 0");
  throws_with(
      [] {
        posemb::alibi_bias<float>(posemb::alibi_slopes(4), position_range(0, 2),
                                  position_range(0, 2), static_cast<AlibiForm>(5));
      },
      "form = 5: expected AlibiForm::Causal or AlibiForm::Symmetric");
  throws_with(
      [] {
        posemb::alibi_bias_row<float>(posemb::alibi_slopes(4), 1, position_range(0, 2),
                                      static_cast<AlibiForm>(-1));
      },
      "form = -1");
  throws_with([] { posemb::alibi_slopes(8, 0.0); }, "max_bias = 0: expected a finite number > 0");
  throws_with([] { posemb::alibi_slopes(8, -8.0); }, "max_bias = -8");
  throws_with([] { posemb::alibi_slopes(8, std::nan("")); }, "max_bias = nan");
  throws_with(
      [] {
        posemb::alibi_slopes(8, 8.0, posemb::HeadRange{4, 9});
      },
      "head range = [4, 9): expected 0 <= begin < end <= n_heads = 8");
  throws_with(
      [] {
        posemb::alibi_slopes(8, 8.0, posemb::HeadRange{-1, 2});
      },
      "head range = [-1, 2)");
  throws_with([] { posemb::alibi_slopes(8, 8.0, posemb::HeadRange{3, 3}); }, "head range = [3, 3)");
  throws_with([] { posemb::alibi_slopes(8, 8.0, posemb::HeadRange{8, 9}); }, "head range = [8, 9)");
  throws_with(
      [] {
        posemb::alibi_bias<float>(Eigen::VectorXd(), position_range(0, 2), position_range(0, 2));
      },
      "slopes.size() = 0");
  throws_with(
      [] {
        posemb::alibi_bias_row<float>(Eigen::VectorXd::Constant(2, -1.0), 0, position_range(0, 2));
      },
      "slopes[0] = -1");
}
