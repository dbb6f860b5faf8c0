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

}  // namespace test_support
