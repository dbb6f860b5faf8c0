// rotary/fope_backward.hpp: dL/dA_cos and dL/dA_sin against central finite differences of the
// forward (L is linear in A, so they agree to rounding) and against a scalar reference written
// from the formulas with libm.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <posemb/rotary/backward.hpp>
#include <posemb/rotary/fope.hpp>
#include <posemb/rotary/fope_backward.hpp>

#include "rotary/gradient_support.hpp"

namespace {

using gradient_support::Dims;
using gradient_support::random_tensor;
using posemb::Tensor4;

// Coefficients held by the test: [n_kv_heads, D_in, D_out] each, C order.
struct Coefficients {
  std::vector<float> sin_coef, cos_coef;
  long heads, d_in, d_out;
  posemb::Fope fope(const posemb::FopeConfig& config) const {
    return posemb::fope_with_coefficients(
        config, posemb::FopeCoefficientMap(sin_coef.data(), heads, d_in, d_out),
        posemb::FopeCoefficientMap(cos_coef.data(), heads, d_in, d_out));
  }
};

Coefficients coefficients_of(const posemb::Fope& fope) {
  const auto n = static_cast<std::size_t>(fope.sin_coef().size());
  Coefficients c{std::vector<float>(fope.sin_coef().data(), fope.sin_coef().data() + n),
                 std::vector<float>(fope.cos_coef().data(), fope.cos_coef().data() + n),
                 fope.n_kv_heads(), fope.d_in(), fope.d_out()};
  return c;
}

double loss(const Tensor4<double>& w, const Tensor4<double>& x, const posemb::Positions& p,
            const posemb::Fope& fope, posemb::TensorLayout layout) {
  const Tensor4<double> y =
      posemb::rotated(x, p, fope, posemb::RotateOptions().with_layouts(layout));
  double sum = 0.0;
  for (Eigen::Index i = 0; i < y.size(); ++i) sum += w.data()[i] * y.data()[i];
  return sum;
}

}  // namespace

TEST_CASE("FoPE coefficient gradients equal central finite differences", "[fope_backward]") {
  const posemb::FopeConfig config = gradient_support::small_fope_config();
  const Coefficients base = coefficients_of(posemb::make_fope(config));
  posemb::PositionMatrix positions(2, 3);
  positions << 0, 5, 17, 3, 40, 41;
  for (const auto layout : {posemb::TensorLayout::BSHD, posemb::TensorLayout::BHSD}) {
    for (const Eigen::Index heads : {4, 2}) {  // queries (groups of 2) and keys
      CAPTURE(heads);
      const Dims dims =
          layout == posemb::TensorLayout::BSHD ? Dims{2, 3, heads, 16} : Dims{2, heads, 3, 16};
      const Tensor4<double> x = random_tensor(dims, 1), w = random_tensor(dims, 2);
      const posemb::Fope fope = base.fope(config);
      const posemb::FopeCoefficientGradients got =
          posemb::fope_coefficient_gradients(x, w, positions, fope, layout);
      REQUIRE(got.cos_coef.dimension(0) == 2);
      REQUIRE(got.cos_coef.dimension(1) == fope.d_in());
      REQUIRE(got.cos_coef.dimension(2) == fope.d_out());
      for (const bool is_sin : {false, true}) {
        const auto& grad = is_sin ? got.sin_coef : got.cos_coef;
        for (long i = 0; i < grad.size(); i += 5) {
          Coefficients plus = base, minus = base;
          float& up = (is_sin ? plus.sin_coef : plus.cos_coef)[static_cast<std::size_t>(i)];
          float& down = (is_sin ? minus.sin_coef : minus.cos_coef)[static_cast<std::size_t>(i)];
          up += 0.01f;
          down -= 0.01f;
          const double step = static_cast<double>(up) - static_cast<double>(down);
          const double numeric = (loss(w, x, positions, plus.fope(config), layout) -
                                  loss(w, x, positions, minus.fope(config), layout)) /
                                 step;
          CHECK(grad.data()[i] == Approx(numeric).epsilon(1e-9).margin(1e-10));
        }
      }
    }
  }
}

TEST_CASE("FoPE coefficient gradients equal the scalar reference", "[fope_backward]") {
  const posemb::FopeConfig config = gradient_support::small_fope_config();
  const posemb::Fope fope = posemb::make_fope(config);
  const Tensor4<double> x = random_tensor({1, 5, 4, 16}, 3), g = random_tensor({1, 5, 4, 16}, 4);
  const posemb::FopeCoefficientGradients got = posemb::fope_coefficient_gradients(x, g, 7, fope);
  const int half = 8, group = 2;
  for (int h = 0; h < 2; ++h) {
    for (int k = 0; k < fope.d_in(); ++k) {
      for (int j = 0; j < fope.d_out(); ++j) {
        double d_cos = 0.0, d_sin = 0.0;
        for (int s = 0; s < 5; ++s) {
          const double t = (7 + s) * fope.inv_freq()[k];
          for (int q = h * group; q < (h + 1) * group; ++q) {
            const double x1 = x(0, s, q, j), x2 = x(0, s, q, j + half);
            const double g1 = g(0, s, q, j), g2 = g(0, s, q, j + half);
            d_cos += std::cos(t) * (g1 * x1 + g2 * x2);
            d_sin += std::sin(t) * (g2 * x1 - g1 * x2);
          }
        }
        CHECK(got.cos_coef(h, k, j) == Approx(d_cos).epsilon(1e-12).margin(1e-13));
        CHECK(got.sin_coef(h, k, j) == Approx(d_sin).epsilon(1e-12).margin(1e-13));
      }
    }
  }
}

TEST_CASE("FoPE coefficient gradients of float storage match double", "[fope_backward]") {
  const posemb::Fope fope = posemb::make_fope(gradient_support::small_fope_config());
  const Tensor4<double> x = random_tensor({1, 6, 4, 16}, 5), g = random_tensor({1, 6, 4, 16}, 6);
  const Tensor4<float> xf = x.cast<float>(), gf = g.cast<float>();
  const auto d = posemb::fope_coefficient_gradients(x, g, 0, fope);
  const auto f = posemb::fope_coefficient_gradients(xf, gf, 0, fope);
  for (Eigen::Index i = 0; i < d.cos_coef.size(); ++i) {
    CHECK(f.cos_coef.data()[i] == Approx(d.cos_coef.data()[i]).margin(1e-5));
    CHECK(f.sin_coef.data()[i] == Approx(d.sin_coef.data()[i]).margin(1e-5));
  }
}

TEST_CASE("FoPE coefficient gradients refuse mismatched shapes", "[fope_backward]") {
  const posemb::Fope fope = posemb::make_fope(gradient_support::small_fope_config());
  const Tensor4<double> x(1, 2, 4, 16), g(1, 3, 4, 16), three_heads(1, 2, 3, 16);
  CHECK_THROWS_WITH(posemb::fope_coefficient_gradients(x, g, 0, fope),
                    Catch::Matchers::Contains("grad.dimension(1)"));
  CHECK_THROWS_WITH(posemb::fope_coefficient_gradients(three_heads, three_heads, 0, fope),
                    Catch::Matchers::Contains("heads"));
}
