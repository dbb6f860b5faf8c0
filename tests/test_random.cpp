// posemb::SeededNormal (posemb/random.hpp): pinned draws computed independently from the
// documented formula (tests/data/random/make_values.py: MT19937-64 written out in Python, then
// Box-Muller), the engine the C++ standard fixes, and the draws' distribution.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "posemb/random.hpp"

namespace {

struct Pinned {
  std::uint64_t seed;
  std::vector<double> draws;
};

// Output of tests/data/random/make_values.py.
const std::vector<Pinned> pinned = {
    {0u,
     {1.912804529284321, -0.09447956112584137, -2.0794079062393944, -1.4613281781652765,
      1.035726945040683, 0.3888405546697105}},
    {42u,
     {-0.481217699801845, -0.5745368738983058, 0.4945838562352133, 0.5701215522073741,
      0.37455426884981347, 0.251354176550835}},
    {18446744073709551615u,
     {-0.5412746377427561, -2.6482024414282, -2.542910637370505, -0.22475561487040696,
      -0.35739333456239564, -0.05523421128248626}},
};

}  // namespace

TEST_CASE("random: draws equal an independent implementation of the formula") {
  for (const Pinned& p : pinned) {
    posemb::SeededNormal normal(p.seed);
    for (const double expected : p.draws) {
      // The promise: equal up to libm's last-bit rounding of log, sin and cos.
      CHECK(normal() == Approx(expected).epsilon(1e-15));
    }
  }
}

TEST_CASE("random: the engine is the standard's mt19937_64 (10000th output from 5489)") {
  std::mt19937_64 engine;  // default seed 5489
  engine.discard(9999);
  CHECK(engine() == 9981545732273789042u);
}

TEST_CASE("random: one seed gives one sequence, another seed another") {
  posemb::SeededNormal a(7), b(7), c(8);
  for (int i = 0; i < 1000; ++i) {
    const double x = a();
    CHECK(x == b());
    CHECK(x != c());
  }
}

TEST_CASE("random: 10^6 draws have mean 0, variance 1 and the normal's tail") {
  posemb::SeededNormal normal(123);
  const int n = 1000000;
  double sum = 0.0, sum_sq = 0.0;
  int beyond_two = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal();
    sum += z;
    sum_sq += z * z;
    beyond_two += std::abs(z) > 2.0;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  // 5 standard errors: 0.005 for the mean, 0.007 for the variance; P(|z| > 2) = 0.0455003.
  CHECK(std::abs(mean) < 0.005);
  CHECK(std::abs(variance - 1.0) < 0.007);
  CHECK(std::abs(beyond_two / static_cast<double>(n) - 0.0455003) < 0.0011);
}
