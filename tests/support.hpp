// Small helpers shared by the test programs.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <posemb/error.hpp>
#include <posemb/rotary/rope.hpp>

namespace test_support {

// A PositionVector from a list: positions_of({5, 0, 2}).
inline posemb::PositionVector positions_of(const std::vector<std::int64_t>& values) {
  return Eigen::Map<const posemb::PositionVector>(values.data(),
                                                  static_cast<Eigen::Index>(values.size()));
}

// Positions first, first + 1, ..., first + count - 1.
inline posemb::PositionVector position_range(std::int64_t first, std::int64_t count) {
  posemb::PositionVector p(count);
  for (std::int64_t i = 0; i < count; ++i) p[i] = first + i;
  return p;
}

// The largest |a_i - b_i| over two arrays of the same size (tensors or matrices, any storage
// type), in double.
template <class A, class B>
double max_abs_diff(const A& a, const B& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    worst = std::max(
        worst, std::fabs(static_cast<double>(a.data()[i]) - static_cast<double>(b.data()[i])));
  }
  return worst;
}

// Checks that call() throws posemb::Error with `text` in its message.
template <class Call>
void throws_with(Call&& call, const std::string& text) {
  CAPTURE(text);
  CHECK_THROWS_AS(call(), posemb::Error);
  CHECK_THROWS_WITH(call(), Catch::Matchers::Contains(text));
}

// The scalar reference, straight from RoFormer eq. 13-15 with the angle convention of rope.hpp:
// theta = remainder(p * inv_freq_i, 2 pi) in double, c = s * cos theta and s * sin theta (libm)
// rounded to the arithmetic type C, then a' = a c - b s, b' = a s + b c in C.
// x: one head [head_dim], rotated in place.
template <class T>
void reference_rotate_head(T* x, std::int64_t position, const posemb::RopeSpec& spec) {
  using C = posemb::compute_t<T>;
  constexpr double two_pi = 6.283185307179586476925286766559;
  const bool interleaved = spec.pairing == posemb::Pairing::Interleaved;
  const int half = spec.rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    const int ia = interleaved ? 2 * i : i;
    const int ib = interleaved ? 2 * i + 1 : i + half;
    const double angle = std::remainder(static_cast<double>(position) * spec.inv_freq[i], two_pi);
    const C c = static_cast<C>(spec.attention_scale * std::cos(angle));
    const C s = static_cast<C>(spec.attention_scale * std::sin(angle));
    const C a = static_cast<C>(x[ia]), b = static_cast<C>(x[ib]);
    x[ia] = static_cast<T>(a * c - b * s);
    x[ib] = static_cast<T>(a * s + b * c);
  }
}

}  // namespace test_support
