// Default RoPE inverse frequencies (frequencies.hpp).
#include <catch2/catch.hpp>

#include <cmath>

#include <posemb/frequencies.hpp>

TEST_CASE("default inverse frequencies are base^(-2i/d)") {
  // d = 8, base 10000: 10000^(-i/4) = 1, 0.1, 0.01, 0.001.
  const Eigen::VectorXd inv_freq = posemb::default_inv_freq(8, 10000.0);
  REQUIRE(inv_freq.size() == 4);
  const double expected[] = {1.0, 0.1, 0.01, 0.001};
  for (int i = 0; i < 4; ++i) CHECK(inv_freq[i] == Approx(expected[i]).epsilon(1e-15));
  // d = 128, base 500000 (Llama 3): the last pair turns at 500000^(-126/128).
  const Eigen::VectorXd llama = posemb::default_inv_freq(128, 500000.0);
  CHECK(llama.size() == 64);
  CHECK(llama[63] == Approx(std::exp(-126.0 / 128.0 * std::log(500000.0))).epsilon(1e-14));
  // Strictly decreasing, ratio base^(-2/d) between neighbours.
  for (int i = 1; i < 64; ++i)
    CHECK(llama[i] / llama[i - 1] == Approx(std::pow(500000.0, -2.0 / 128)).epsilon(1e-13));
}

TEST_CASE("default inverse frequencies reject bad input") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(posemb::default_inv_freq(5), Contains("rotary_dim = 5"));
  CHECK_THROWS_WITH(posemb::default_inv_freq(-2), Contains("rotary_dim = -2"));
  CHECK_THROWS_WITH(posemb::default_inv_freq(8, 0.0), Contains("base = 0"));
  CHECK_THROWS_WITH(posemb::default_inv_freq(8, -1.0), Contains("base = -1"));
  CHECK_THROWS_AS(posemb::default_inv_freq(8, NAN), posemb::Error);
}
