// Seeded standard normal draws that are the same on every platform.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace posemb {
namespace detail {

// std::normal_distribution is implementation-defined; std::mt19937_64's output sequence is
// fixed by the C++ standard. So draws use the Box-Muller transform on it (only libm's last-bit
// rounding of log/sin/cos may differ between platforms):
//
//   u1, u2 = (i + 0.5) / 2^53 for the top 53 bits i of two consecutive engine outputs,
//            so never 0 or 1
//   z0 = sqrt(-2 ln u1) cos(2 pi u2),  z1 = sqrt(-2 ln u1) sin(2 pi u2)
//
// Draws come out in the order z0, z1 of each pair.
class BoxMullerNormal {
 public:
  explicit BoxMullerNormal(std::uint64_t seed) : engine_(seed) {}

  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = uniform();
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586476925286766559 * u2;
    spare_ = radius * std::sin(theta);
    has_spare_ = true;
    return radius * std::cos(theta);
  }

 private:
  double uniform() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }

  std::mt19937_64 engine_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace detail
}  // namespace posemb
