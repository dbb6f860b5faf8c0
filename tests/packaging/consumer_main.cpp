// The program a posemb user writes: rotate one head vector and check it against values
// worked out by hand. Exit status 0 when they agree.
#include <posemb/posemb.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>

int main() {
  // head_dim 4, rotate-half pairs (0, 2) and (1, 3) turning at inv_freq = 10000^(-2i/4) = 1, 0.01.
  // x = (1, 0, 0, 1) at position 1:
  //   pair 0: (1, 0) -> (cos 1, sin 1)
  //   pair 1: (0, 1) -> (-sin 0.01, cos 0.01)
  Eigen::VectorXf x(4);
  x << 1.0f, 0.0f, 0.0f, 1.0f;
  const Eigen::VectorXf y = posemb::rotated(x, std::int64_t{1}, posemb::default_rope_spec(4));
  const double expected[4] = {0.5403023058681398, -0.009999833334166665, 0.8414709848078965,
                              0.9999500004166653};
  double max_error = 0.0;
  for (int i = 0; i < 4; ++i) max_error = std::fmax(max_error, std::fabs(y[i] - expected[i]));
  std::printf(
      "posemb %s: rope(x = (1, 0, 0, 1), p = 1) = (%.7f, %.7f, %.7f, %.7f), max error %.1e\n",
      posemb::version_string, y[0], y[1], y[2], y[3], max_error);
  return max_error <= 1e-7 ? 0 : 1;
}
