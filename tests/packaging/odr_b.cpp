// ODR test, translation unit B: the same headers and the same instantiations as odr_a.cpp, and
// main, which checks that both translation units compute the same values.
#include <posemb/posemb.hpp>

#include <cstdio>

#include "posemb_all_headers.hpp"
#include "odr_functions.hpp"

Eigen::VectorXf odr_rotate_b(const Eigen::VectorXf& x, std::int64_t position) {
  return posemb::rotated(x, position, posemb::default_rope_spec(static_cast<int>(x.size())));
}

int main() {
  Eigen::VectorXf x(8);
  x << 1, -2, 3, -4, 5, -6, 7, -8;
  const Eigen::VectorXf a = odr_rotate_a(x, 37);
  const Eigen::VectorXf b = odr_rotate_b(x, 37);
  std::printf("posemb %s: two translation units, max difference %g\n", posemb::version_string,
              static_cast<double>((a - b).cwiseAbs().maxCoeff()));
  // Identical code on identical input: identical bits, and a real rotation happened.
  return a == b && a != x ? 0 : 1;
}
