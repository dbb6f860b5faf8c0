// The vector cache conversions (kv/convert.hpp) against the scalar reference (kv/storage.hpp:
// convert_row_reference), bit for bit, at every instruction-set level this CPU has (and, at
// avx512, with and without AVX512_BF16), for every row length up to 200 values (q8_0: every
// multiple of 32 up to 320), each row holding ordinary values and the edge cases: signed zeros,
// NaN, infinities, float subnormals, values past fp8's 448 and q8_0 ties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <posemb/kv/convert.hpp>

namespace {

using posemb::CacheDtype;

// [n] values: normal(0, spread) with an edge case every `edge_every` values (0: none).
std::vector<float> row_of(Eigen::Index n, float spread, int edge_every, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  const float edges[] = {0.0f,
                         -0.0f,
                         std::numeric_limits<float>::quiet_NaN(),
                         -std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         1e-40f,
                         -3e-39f,
                         0x1p-7f,
                         0x1.1p-6f,
                         448.0f,
                         464.0f,
                         -500.0f,
                         1e30f,
                         65520.0f,
                         2.5f};
  std::vector<float> x(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) {
    x[static_cast<std::size_t>(i)] = normal(rng);
    if (edge_every > 0 && rng() % static_cast<unsigned>(edge_every) == 0) {
      x[static_cast<std::size_t>(i)] = edges[rng() % (sizeof edges / sizeof edges[0])];
    }
  }
  return x;
}

void check_rows(CacheDtype dtype, float scale) {
  const bool q8 = dtype == CacheDtype::Q8_0;
  const Eigen::Index step = q8 ? 32 : 1, longest = q8 ? 320 : 200;
  for (Eigen::Index n = step; n <= longest; n += step) {
    // Plain rows, rows with an edge case now and then (q8_0: some blocks then go to the
    // reference), tiny and huge magnitudes.
    for (const auto& [spread, edge_every] :
         {std::pair{3.0f, 0}, std::pair{3.0f, 23}, std::pair{1e-38f, 0}, std::pair{300.0f, 0}}) {
      const std::vector<float> x = row_of(n, spread, edge_every, static_cast<unsigned>(n));
      const Eigen::Index bytes = posemb::cache_row_bytes(dtype, n);
      // One byte either side of the row: nothing outside it is written.
      std::vector<unsigned char> got(static_cast<std::size_t>(bytes + 2), 0xA5);
      std::vector<unsigned char> want = got;
      posemb::detail::convert_row(x.data(), n, dtype, scale, got.data() + 1);
      posemb::detail::convert_row_reference(x.data(), n, dtype, scale, want.data() + 1);
      CAPTURE(posemb::to_string(dtype), n, spread, edge_every);
      REQUIRE(got == want);
    }
  }
}

std::vector<posemb::IsaLevel> levels() { return posemb::supported_isa_levels(); }

}  // namespace

TEST_CASE("cache conversions equal the scalar reference at every level and tail", "[kv]") {
  const posemb::IsaLevel before = posemb::isa_level();
  for (const posemb::IsaLevel level : levels()) {
    posemb::set_isa_level(level);
    for (const bool bf16_instructions : {false, true}) {
#if POSEMB_ISA_DISPATCH
      if (bf16_instructions && !posemb::detail::cpu_has_avx512_bf16()) continue;
      posemb::detail::avx512_bf16_enabled().store(bf16_instructions);
#else
      if (bf16_instructions) continue;
#endif
      CAPTURE(posemb::to_string(level), bf16_instructions);
      check_rows(CacheDtype::Float32, 1.0f);
      check_rows(CacheDtype::Float16, 1.0f);
      check_rows(CacheDtype::BFloat16, 1.0f);
      // Powers of two (multiplied by their exact reciprocal) and others (divided).
      for (const float scale : {1.0f, 0.5f, 64.0f, 0x1p-20f, 0.37f, 3e-3f, 3e5f}) {
        check_rows(CacheDtype::Fp8E4m3, scale);
      }
      check_rows(CacheDtype::Q8_0, 1.0f);
    }
  }
#if POSEMB_ISA_DISPATCH
  posemb::detail::avx512_bf16_enabled().store(posemb::detail::cpu_has_avx512_bf16());
#endif
  posemb::set_isa_level(before);
}

TEST_CASE("q8_0 vector blocks: ties, all-zero blocks and a block below FLT_MIN", "[kv]") {
  // Half away from zero at x * id = +-0.5, +-1.5, +-2.5 (exact with amax = 127, id = 1) in blocks
  // 0 and 4, all-zero blocks (d = 0, id = 0), and in block 6 a block whose amax is subnormal
  // (1 / d overflows: id 0, every q 0, the scale's float16 0). Eight blocks: two groups of the
  // avx512 level's four, the first formed in one vector, the second sent block by block.
  std::vector<float> x(256, 0.0f);
  const float ties[] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.5f, -1.5f, 126.5f};
  std::copy(std::begin(ties), std::end(ties), x.begin());
  std::copy(std::begin(ties), std::end(ties), x.begin() + 128);
  x[192] = 1e-41f;
  x[193] = -3e-42f;
  const posemb::IsaLevel before = posemb::isa_level();
  for (const posemb::IsaLevel level : levels()) {
    posemb::set_isa_level(level);
    std::vector<unsigned char> got(8 * 34), want(8 * 34);
    posemb::detail::convert_row(x.data(), 256, CacheDtype::Q8_0, 1.0f, got.data());
    posemb::detail::convert_row_reference(x.data(), 256, CacheDtype::Q8_0, 1.0f, want.data());
    CAPTURE(posemb::to_string(level));
    CHECK(got == want);
    for (const int block : {0, 4}) {
      const unsigned char* q = got.data() + block * 34 + 2;
      CHECK(static_cast<std::int8_t>(q[1]) == 3);
      CHECK(static_cast<std::int8_t>(q[2]) == -3);
      CHECK(static_cast<std::int8_t>(q[3]) == 1);
      CHECK(static_cast<std::int8_t>(q[6]) == -2);
      CHECK(static_cast<std::int8_t>(q[7]) == 127);  // 126.5 away from zero
    }
    for (const int block : {1, 2, 3, 5, 6, 7}) {
      for (int j = 0; j < 34; ++j) CHECK(got[static_cast<std::size_t>(block * 34 + j)] == 0);
    }
  }
  posemb::set_isa_level(before);
}

TEST_CASE("q8_0: an infinity after a NaN stores q 0 on every machine", "[kv]") {
  // ggml's MAX(amax, v) = amax > v ? amax : v: the NaN resets amax after the infinities and the
  // 5 sets it, so d = 5 / 127 and +-inf * id is +-inf, beyond int's range; q is 0 there (what
  // x86-64's cvttss2si leaves in the low byte), the NaN's q is 0, and 5 becomes 127.
  std::vector<float> x(32, 1.0f);
  x[0] = std::numeric_limits<float>::infinity();
  x[1] = -std::numeric_limits<float>::infinity();
  x[2] = std::numeric_limits<float>::quiet_NaN();
  x[3] = 5.0f;
  const posemb::IsaLevel before = posemb::isa_level();
  for (const posemb::IsaLevel level : levels()) {
    posemb::set_isa_level(level);
    std::vector<unsigned char> got(34);
    posemb::detail::convert_row(x.data(), 32, CacheDtype::Q8_0, 1.0f, got.data());
    CAPTURE(posemb::to_string(level));
    CHECK(got[2] == 0);
    CHECK(got[3] == 0);
    CHECK(got[4] == 0);
    CHECK(static_cast<std::int8_t>(got[5]) == 127);
    CHECK(static_cast<std::int8_t>(got[6]) == 25);  // roundf(1 * 127 / 5) = roundf(25.4)
  }
  posemb::set_isa_level(before);
}

TEST_CASE("q8_0 vector rounding is roundf's over a sweep of magnitudes below 127", "[kv]") {
  // Blocks with amax 127 (d = 1, id = 1: q = roundf(x)): every half-integer below 127 and the
  // floats either side of it, and every 257th float bit pattern in [0, 127), both signs, 31 to a
  // block, against the reference.
  std::uint32_t largest = 0;
  const float top = 127.0f;
  std::memcpy(&largest, &top, 4);
  std::vector<float> x;
  const auto add = [&](float v) {
    if (x.size() % 32 == 0) x.push_back(127.0f);
    x.push_back(v);
  };
  for (int n = 0; n < 127; ++n) {
    const float half = static_cast<float>(n) + 0.5f;
    for (const float v : {std::nextafter(half, 0.0f), half, std::nextafter(half, 200.0f)}) {
      add(v);
      add(-v);
    }
  }
  for (std::uint32_t bits = 0; bits < largest; bits += 257) {
    float v = 0.0f;
    std::memcpy(&v, &bits, 4);
    add(x.size() % 2 == 0 ? v : -v);
  }
  while (x.size() % 32 != 0) x.push_back(0.5f);
  const auto n = static_cast<Eigen::Index>(x.size());
  const posemb::IsaLevel before = posemb::isa_level();
  for (const posemb::IsaLevel level : levels()) {
    posemb::set_isa_level(level);
    std::vector<unsigned char> got(static_cast<std::size_t>(n / 32 * 34)), want = got;
    posemb::detail::convert_row(x.data(), n, CacheDtype::Q8_0, 1.0f, got.data());
    posemb::detail::convert_row_reference(x.data(), n, CacheDtype::Q8_0, 1.0f, want.data());
    // The first differing byte, not the arrays (Catch would print every byte).
    const auto differ = std::mismatch(got.begin(), got.end(), want.begin());
    CAPTURE(posemb::to_string(level), n, differ.first - got.begin());
    CHECK(differ.first == got.end());
  }
  posemb::set_isa_level(before);
}
