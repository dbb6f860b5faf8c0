// The cache conversions (kv/storage.hpp): fp8 e4m3fn against the nearest of the 127 finite
// non-negative e4m3fn values found by search (ties to the even code), over every midpoint and its
// neighbours and a sweep of float bit patterns; q8_0 against its definition's properties. The
// bit-for-bit checks against PyTorch's casts and gguf-py's Q8_0 are in
// tests/python/test_kv_append.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include <posemb/kv/storage.hpp>

namespace {

// The value of e4m3fn code c (0 <= c <= 126): exponent c >> 3 (bias 7), mantissa c & 7.
double e4m3_value(int c) {
  const int e = c >> 3, m = c & 7;
  return e == 0 ? m * std::ldexp(1.0, -9) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
}

// The code nearest to x (x / scale already taken), ties to the even code, after clamping to 448.
std::uint8_t e4m3_by_search(float x) {
  if (std::isnan(x)) return std::signbit(x) ? 0xFF : 0x7F;
  const double a = std::min<double>(std::fabs(x), 448.0);
  int best = 0;
  for (int c = 1; c <= 126; ++c) {
    const double dc = std::fabs(e4m3_value(c) - a), db = std::fabs(e4m3_value(best) - a);
    if (dc < db || (dc == db && c % 2 == 0)) best = c;
  }
  return static_cast<std::uint8_t>((std::signbit(x) ? 0x80 : 0) | best);
}

float from_bits(std::uint32_t bits) {
  float x = 0;
  std::memcpy(&x, &bits, 4);
  return x;
}

}  // namespace

TEST_CASE("fp8 e4m3fn: nearest even, clamped to 448, NaN kept", "[kv]") {
  for (int c = 0; c < 126; ++c) {
    const double mid = (e4m3_value(c) + e4m3_value(c + 1)) / 2;
    for (const float x : {static_cast<float>(e4m3_value(c)), static_cast<float>(mid),
                          std::nextafter(static_cast<float>(mid), 0.0f),
                          std::nextafter(static_cast<float>(mid), 1000.0f)}) {
      CAPTURE(c, x);
      CHECK(int(posemb::fp8_e4m3_bits(x)) == int(e4m3_by_search(x)));
      CHECK(int(posemb::fp8_e4m3_bits(-x)) == int(e4m3_by_search(-x)));
    }
  }
  // Every 4099th float bit pattern, both signs (NaNs, infinities, subnormals included).
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 4099) {
    const float x = from_bits(static_cast<std::uint32_t>(bits));
    CAPTURE(bits, x);
    REQUIRE(int(posemb::fp8_e4m3_bits(x)) == int(e4m3_by_search(x)));
  }
  CHECK(posemb::fp8_e4m3_bits(1e30f) == 0x7E);
  CHECK(posemb::fp8_e4m3_bits(-INFINITY) == 0xFE);
  CHECK(posemb::fp8_e4m3_bits(464.0f) ==
        0x7E);  // between 448 and 480: PyTorch's cast gives 448 too
  CHECK(posemb::fp8_e4m3_bits(-0.0f) == 0x80);
}

TEST_CASE("q8_0 blocks: d = amax / 127 in float16, q = roundf(x / d)", "[kv]") {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  float x[64];
  for (float& v : x) v = normal(rng);
  x[5] = 0.0f;
  for (int j = 32; j < 64; ++j) x[j] = 0.0f;  // an all-zero block: d = 0, q = 0
  unsigned char out[2 * 34];
  REQUIRE(posemb::cache_row_bytes(posemb::CacheDtype::Q8_0, 64) == 68);
  posemb::detail::convert_row_reference(x, 64, posemb::CacheDtype::Q8_0, 1.0f, out);
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  Eigen::half d;
  std::memcpy(&d, out, 2);
  CHECK(static_cast<float>(d) == static_cast<float>(Eigen::half(amax / 127.0f)));
  int largest = 0;
  for (int j = 0; j < 32; ++j) {
    const int q = static_cast<std::int8_t>(out[2 + j]);
    largest = std::max(largest, std::abs(q));
    // q is x / (amax / 127) rounded: within half a step.
    CHECK(std::fabs(q - x[j] * (127.0f / amax)) <= 0.5f + 1e-4f);
  }
  CHECK(largest == 127);
  CHECK(static_cast<std::int8_t>(out[2 + 5]) == 0);
  for (int j = 0; j < 34; ++j) CHECK(out[34 + j] == 0);
  // Half away from zero: 2.5 steps -> 3, -2.5 -> -3 (x * id exact for these).
  float ties[32] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f};
  posemb::detail::convert_row_reference(ties, 32, posemb::CacheDtype::Q8_0, 1.0f, out);
  CHECK(static_cast<std::int8_t>(out[3]) == 3);
  CHECK(static_cast<std::int8_t>(out[4]) == -3);
  CHECK(static_cast<std::int8_t>(out[5]) == 1);
  CHECK(static_cast<std::int8_t>(out[6]) == -1);
  CHECK(static_cast<std::int8_t>(out[7]) == 2);
}

TEST_CASE("float16 and bfloat16 rows are static_cast, fp8 rows divide by the scale", "[kv]") {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  float x[40];
  for (float& v : x) v = normal(rng);
  unsigned char h[80], bf[80], f8[40];
  posemb::detail::convert_row_reference(x, 40, posemb::CacheDtype::Float16, 1.0f, h);
  posemb::detail::convert_row_reference(x, 40, posemb::CacheDtype::BFloat16, 1.0f, bf);
  posemb::detail::convert_row_reference(x, 40, posemb::CacheDtype::Fp8E4m3, 0.25f, f8);
  for (int i = 0; i < 40; ++i) {
    const Eigen::half eh(x[i]);
    const Eigen::bfloat16 eb(x[i]);
    CHECK(std::memcmp(h + 2 * i, &eh, 2) == 0);
    CHECK(std::memcmp(bf + 2 * i, &eb, 2) == 0);
    CHECK(int(f8[i]) == int(e4m3_by_search(x[i] / 0.25f)));
  }
}
