// posemb::SeededNormal: the seeded standard normal draws behind every seeded value posemb makes
// (the learned table's init, FoPE's initialised coefficients, the tool's test vectors and sink
// logits), so that a seed names the same numbers on every platform.
//
// Why not std::normal_distribution: its algorithm is implementation-defined (libstdc++ and libc++
// give different numbers for one seed), while std::mt19937_64's output sequence is fixed by the
// C++ standard ([rand.predef]: its 10000th output from the default seed is 9981545732273789042).
//
// The algorithm, exactly (Box-Muller on std::mt19937_64 seeded with `seed`):
//   u1 = (i1 + 0.5) / 2^53, u2 = (i2 + 0.5) / 2^53, with i1, i2 the top 53 bits (output >> 11)
//        of two consecutive engine outputs, so 0 < u < 1
//   r = sqrt(-2 ln u1), theta = 2 pi u2 (2 pi as the double nearest it)
//   z0 = r cos(theta), z1 = r sin(theta), returned in that order; then the next pair.
//
// The promise: for a given seed the sequence is the same everywhere up to the last-bit rounding
// of the platform's log, sin and cos (bit for bit on one libm; a few ulps apart across libms).
// tests/test_random.cpp pins values computed independently from this formula
// (tests/data/random/make_values.py).
//
// Example:
//   posemb::SeededNormal normal(42);
//   const double z0 = normal(), z1 = normal();  // 42's first pair
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace posemb {

class SeededNormal {
 public:
  explicit SeededNormal(std::uint64_t seed) : engine_(seed) {}

  // The next standard normal draw.
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

}  // namespace posemb
