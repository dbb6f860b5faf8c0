// Instruction-set levels (posemb/machine/isa.hpp): every level this CPU runs, forced in turn,
// against the scalar reference (libm cos/sin of the double angle, the RoFormer rotation written out
// here) for float, double, Eigen::half and Eigen::bfloat16 storage, both pairings, in place and
// out of place, pair counts that leave tails after every vector width; the arithmetic each
// level documents (fused or not) reproduced bit for bit; conversions bit-identical to
// static_cast; levels with FMA identical to each other; forcing honoured and checked.
#include <catch2/catch.hpp>

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/machine/isa.hpp"
#include "posemb/rotary/rope.hpp"
#include "machine/fused_levels.hpp"
#include "reference.hpp"
#include "support.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace {

using posemb::IsaLevel;
using posemb::Pairing;
using posemb::TensorLayout;
using test_reference::reference_rotate_head;
using test_reference::tolerance_of_pair;
using test_reference::ulp_distance;

constexpr double two_pi = 6.283185307179586476925286766559;

using test_support::level_is_fused;

std::vector<IsaLevel> supported_levels() { return posemb::supported_isa_levels(); }

// A level, and for avx512 whether bfloat16 is rounded with the AVX512_BF16 instructions or
// with integer arithmetic (both when the CPU has them).
struct Variant {
  IsaLevel level;
  bool bf16_instructions;
};

std::vector<Variant> supported_variants() {
  std::vector<Variant> variants;
  for (IsaLevel level : supported_levels()) {
    variants.push_back({level, false});
#if POSEMB_ISA_DISPATCH
    if (level == IsaLevel::Avx512 && posemb::detail::cpu_has_avx512_bf16()) {
      variants.push_back({level, true});
    }
#endif
  }
  return variants;
}

// Restores the level (and the bfloat16 rounding) the test program started with.
struct LevelGuard {
  IsaLevel saved = posemb::isa_level();
#if POSEMB_ISA_DISPATCH
  bool saved_bf16 = posemb::detail::avx512_bf16_enabled().load();
#endif
  ~LevelGuard() {
    posemb::set_isa_level(saved);
#if POSEMB_ISA_DISPATCH
    posemb::detail::avx512_bf16_enabled().store(saved_bf16);
#endif
  }
};

void use(const Variant& variant) {
  posemb::set_isa_level(variant.level);
#if POSEMB_ISA_DISPATCH
  posemb::detail::avx512_bf16_enabled().store(variant.bf16_instructions);
#endif
}

template <class T>
std::uint64_t bits_of(T v) {
  if constexpr (sizeof(T) == 2) return Eigen::numext::bit_cast<std::uint16_t>(v);
  else if constexpr (sizeof(T) == 4) return Eigen::numext::bit_cast<std::uint32_t>(v);
  else return Eigen::numext::bit_cast<std::uint64_t>(v);
}

// Values in [-2, 2) with random low bits, so that fused and separately rounded products differ.
template <class T>
std::vector<T> random_values(Eigen::Index n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::vector<T> values(static_cast<std::size_t>(n));
  for (auto& v : values) v = static_cast<T>(dist(gen));
  return values;
}

// a cos - b sin and a sin + b cos as the level computes them (posemb/machine/isa.hpp), in C.
template <class C>
C expected_first(bool fused, C a, C b, C c, C s) {
  if (fused) return std::fma(a, c, -(b * s));
  const C ac = a * c, bs = b * s;  // separately rounded: this build has no FMA to contract into
  return ac - bs;
}
template <class C>
C expected_second(bool fused, C a, C b, C c, C s) {
  if (fused) return std::fma(a, s, b * c);
  const C as = a * s, bc = b * c;
  return as + bc;
}

// rotate_contiguous at the active level over pairs [pair_begin, pair_end) of one head, against
// the documented arithmetic of that level, bit for bit; returns how many values a fused and a
// separately rounded evaluation would disagree on (so a test can tell the two apart).
template <class T>
std::int64_t check_rotation_bits(IsaLevel level, Pairing pairing, bool in_place, int head_dim,
                                 int rotary_dim, int pair_begin, int pair_end) {
  using C = posemb::compute_t<T>;
  const bool interleaved = pairing == Pairing::Interleaved;
  const std::vector<T> input = random_values<T>(head_dim, 7u + head_dim + pair_begin);
  const std::vector<C> cos_all = random_values<C>(rotary_dim / 2, 11u + rotary_dim);
  const std::vector<C> sin_all = random_values<C>(rotary_dim / 2, 13u + rotary_dim);
  std::vector<T> out = in_place ? input : std::vector<T>(head_dim, T(0));
  const T* in = in_place ? out.data() : input.data();
  posemb::detail::rotate_contiguous(in, out.data(), cos_all.data() + pair_begin,
                                    sin_all.data() + pair_begin, pair_begin, pair_end, rotary_dim,
                                    interleaved);
  const bool fused = level_is_fused(level);
  std::int64_t distinguishing = 0;
  for (int e = 0; e < head_dim; ++e) {
    const bool rotated = e < rotary_dim && [&] {
      const int pair = interleaved ? e / 2 : e % (rotary_dim / 2);
      return pair >= pair_begin && pair < pair_end;
    }();
    if (!rotated) {  // untouched (in place) or not written (out of place)
      REQUIRE(bits_of(out[e]) == bits_of(in_place ? input[e] : T(0)));
    }
  }
  for (int i = pair_begin; i < pair_end; ++i) {
    const int ia = interleaved ? 2 * i : i;
    const int ib = interleaved ? 2 * i + 1 : i + rotary_dim / 2;
    const C a = static_cast<C>(input[ia]), b = static_cast<C>(input[ib]);
    const C c = cos_all[i], s = sin_all[i];
    const T first = static_cast<T>(expected_first(fused, a, b, c, s));
    const T second = static_cast<T>(expected_second(fused, a, b, c, s));
    INFO("pair " << i << " of " << rotary_dim / 2);
    REQUIRE(bits_of(out[ia]) == bits_of(first));
    REQUIRE(bits_of(out[ib]) == bits_of(second));
    distinguishing += bits_of(first) != bits_of(static_cast<T>(expected_first(!fused, a, b, c, s)));
    distinguishing +=
        bits_of(second) != bits_of(static_cast<T>(expected_second(!fused, a, b, c, s)));
  }
  return distinguishing;
}

// Largest |fast - reference| / (|a| + |b|) over x [1, seq, 3, head_dim] rotated by rotate
// (cos/sin in the call) at positions 0, 1, 100000, ... at the active level.
template <class T>
double tensor_error(Pairing pairing, bool in_place, int head_dim, int rotary_dim) {
  const Eigen::Index seq = 5, heads = 3;
  const posemb::RopeSpec spec =
      posemb::default_rope_spec(posemb::RotaryDims{head_dim, rotary_dim}, 10000.0, pairing);
  const std::vector<T> original = random_values<T>(seq * heads * head_dim, 3u + rotary_dim);
  std::vector<T> input = original, output(original.size());
  posemb::TensorMap4<T> x(input.data(), 1, seq, heads, head_dim);
  posemb::TensorMap4<T> out(output.data(), 1, seq, heads, head_dim);
  const std::int64_t positions[] = {0, 1, 100000, 12345678, (1 << 24) - 1};
  posemb::PositionMatrix position_matrix(1, seq);
  for (Eigen::Index s = 0; s < seq; ++s) position_matrix(0, s) = positions[s];
  if (in_place) posemb::rotate_inplace(x, position_matrix, spec);
  else posemb::rotate(x, out, position_matrix, spec);
  const std::vector<T>& result = in_place ? input : output;
  double worst = 0;
  for (Eigen::Index s = 0; s < seq; ++s) {
    for (Eigen::Index h = 0; h < heads; ++h) {
      const Eigen::Index at = (s * heads + h) * head_dim;
      std::vector<T> expected(original.begin() + at, original.begin() + at + head_dim);
      reference_rotate_head(expected.data(), positions[s], spec);
      for (int i = 0; i < rotary_dim / 2; ++i) {
        const int ia = pairing == Pairing::Interleaved ? 2 * i : i;
        const int ib = pairing == Pairing::Interleaved ? 2 * i + 1 : i + rotary_dim / 2;
        const double norm =
            std::abs(double(original[at + ia])) + std::abs(double(original[at + ib])) + 1e-30;
        for (int e : {ia, ib}) {
          worst = std::max(worst, std::abs(double(result[at + e]) - double(expected[e])) / norm);
        }
      }
      for (int e = rotary_dim; e < head_dim; ++e)
        REQUIRE(bits_of(result[at + e]) == bits_of(original[at + e]));
    }
  }
  return worst;
}

// Pair ranges that leave every tail after 16-, 8- and 4-lane steps, and start off zero.
struct Range {
  int head_dim, rotary_dim, pair_begin, pair_end;
};
const std::vector<Range> ranges = {{2, 2, 0, 1},      {6, 4, 0, 2},       {40, 34, 0, 17},
                                   {64, 64, 0, 32},   {128, 128, 0, 64},  {128, 100, 3, 50},
                                   {130, 130, 0, 65}, {256, 250, 7, 118}, {256, 256, 64, 128},
                                   {96, 94, 1, 46}};

template <class T>
void check_rotation_at_every_level() {
  LevelGuard guard;
  for (const Variant& variant : supported_variants()) {
    use(variant);
    const IsaLevel level = variant.level;
    REQUIRE(posemb::isa_level() == level);
    std::int64_t distinguishing = 0;
    for (const Range& r : ranges) {
      for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
        for (bool in_place : {false, true}) {
          INFO("level " << posemb::to_string(level)
                        << (variant.bf16_instructions ? " (BF16 instructions) " : " ")
                        << posemb::to_string(pairing) << (in_place ? " in place" : " out of place")
                        << " head_dim " << r.head_dim << " rotary_dim " << r.rotary_dim
                        << " pairs [" << r.pair_begin << ", " << r.pair_end << ")");
          distinguishing += check_rotation_bits<T>(level, pairing, in_place, r.head_dim,
                                                   r.rotary_dim, r.pair_begin, r.pair_end);
          if (r.pair_begin == 0 && r.pair_end == r.rotary_dim / 2) {
            CHECK(tensor_error<T>(pairing, in_place, r.head_dim, r.rotary_dim) <=
                  tolerance_of_pair<T>());
          }
        }
      }
    }
#if !defined(__FMA__)
    // In float and double the data tell fused from separately rounded arithmetic, so the bit
    // checks above see which one ran (rounding to 8 or 11 bits hides the difference).
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) CHECK(distinguishing > 0);
#else
    (void)distinguishing;
#endif
  }
}

}  // namespace

TEST_CASE("isa: the best level is detected, reported and active by default") {
  const IsaLevel best = posemb::best_isa_level();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // CPUID leaf 1: ECX bit 12 FMA, bit 29 F16C; leaf 7: EBX bit 5 AVX2 (and the OS saves the
  // AVX state, which __builtin_cpu_supports("avx2") checks).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  const bool fma_f16c = ((ecx >> 12) & 1u) && ((ecx >> 29) & 1u);
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && fma_f16c;
  CHECK((best != IsaLevel::Portable) == avx2);
  CHECK(posemb::supported_isa_levels().size() == (best == IsaLevel::Avx512 ? 3u : avx2 ? 2u : 1u));
#elif defined(__aarch64__)
  // Advanced SIMD (NEON) and FMA are part of every ARMv8-A CPU.
  CHECK(best == IsaLevel::Neon);
  CHECK(posemb::supported_isa_levels() ==
        std::vector<IsaLevel>{IsaLevel::Portable, IsaLevel::Neon});
#else
  CHECK(best == IsaLevel::Portable);
#endif
  const char* forced = std::getenv("POSEMB_ISA");
  if (forced == nullptr || *forced == '\0') CHECK(posemb::isa_level() == best);
  CHECK(std::string(posemb::to_string(IsaLevel::Portable)) == "portable");
  CHECK(std::string(posemb::to_string(IsaLevel::Avx2)) == "avx2");
  CHECK(std::string(posemb::to_string(IsaLevel::Avx512)) == "avx512");
  CHECK(std::string(posemb::to_string(IsaLevel::Neon)) == "neon");
  WARN("best level on this machine: " << posemb::to_string(best));
}

TEST_CASE("isa: forcing a level is honoured, unsupported or unknown levels throw") {
  LevelGuard guard;
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    CHECK(posemb::isa_level() == level);
  }
  CHECK_THROWS_AS(posemb::set_isa_level(static_cast<IsaLevel>(7)), posemb::Error);
  CHECK_THROWS_AS(posemb::set_isa_level(static_cast<IsaLevel>(-1)), posemb::Error);
  if (posemb::best_isa_level() != IsaLevel::Avx512) {
    CHECK_THROWS_WITH(posemb::set_isa_level(IsaLevel::Avx512),
                      Catch::Contains("level = avx512") && Catch::Contains("expected a level"));
  }
  // A level of another architecture names the level and this machine's levels.
#if defined(__x86_64__)
  CHECK_THROWS_WITH(posemb::set_isa_level(IsaLevel::Neon),
                    Catch::Contains("level = neon") &&
                        Catch::Contains("expected a level of this machine (x86-64: portable, "
                                        "avx2, avx512)"));
#elif defined(__aarch64__)
  for (IsaLevel x86 : {IsaLevel::Avx2, IsaLevel::Avx512}) {
    CHECK_THROWS_WITH(posemb::set_isa_level(x86),
                      Catch::Contains(std::string("level = ") + posemb::to_string(x86)) &&
                          Catch::Contains("expected a level of this machine (aarch64: portable, "
                                          "neon)"));
  }
#endif
  // The environment variable, read by the first call of a process (here called again).
  const char* saved = std::getenv("POSEMB_ISA");
  const std::string saved_value = saved ? saved : "";
  ::setenv("POSEMB_ISA", "portable", 1);
  CHECK(posemb::detail::initial_isa_level() == IsaLevel::Portable);
  for (IsaLevel level : supported_levels()) {
    ::setenv("POSEMB_ISA", posemb::to_string(level), 1);
    CHECK(posemb::detail::initial_isa_level() == level);
  }
#if defined(__x86_64__)
  ::setenv("POSEMB_ISA", "neon", 1);
  CHECK_THROWS_WITH(posemb::detail::initial_isa_level(),
                    Catch::Contains("POSEMB_ISA = neon") && Catch::Contains("x86-64"));
#elif defined(__aarch64__)
  ::setenv("POSEMB_ISA", "avx512", 1);
  CHECK_THROWS_WITH(posemb::detail::initial_isa_level(),
                    Catch::Contains("POSEMB_ISA = avx512") && Catch::Contains("aarch64"));
#endif
  ::setenv("POSEMB_ISA", "sse9", 1);
  CHECK_THROWS_WITH(posemb::detail::initial_isa_level(),
                    Catch::Contains("POSEMB_ISA = sse9") &&
                        Catch::Contains("expected portable, avx2, avx512 or neon"));
  ::setenv("POSEMB_ISA", "", 1);
  CHECK(posemb::detail::initial_isa_level() == posemb::best_isa_level());
  if (saved) ::setenv("POSEMB_ISA", saved_value.c_str(), 1);
  else ::unsetenv("POSEMB_ISA");
}

TEST_CASE("isa: cos/sin within 1 float / 4 double ulps of libm, fused levels bit for bit") {
  LevelGuard guard;
  const Eigen::VectorXd inv_freq = posemb::default_inv_freq(128);
  std::vector<std::vector<float>> fused_float;
  std::vector<std::vector<double>> fused_double;
  for (IsaLevel level : supported_levels()) {
    posemb::set_isa_level(level);
    INFO("level " << posemb::to_string(level));
    std::vector<float> all_float;
    std::vector<double> all_double;
    std::int64_t worst_ulp = 0;
    double worst_double = 0;
    std::vector<float> cos(64), sin(64);
    std::vector<double> cos_d(64), sin_d(64);
    for (std::int64_t position = -50000; position <= (std::int64_t(1) << 24); position += 40009) {
      posemb::detail::cos_sin_at(inv_freq.data(), double(position), 1.0, 64, cos.data(),
                                 sin.data());
      posemb::detail::cos_sin_at(inv_freq.data(), double(position), 1.0, 64, cos_d.data(),
                                 sin_d.data());
      for (int i = 0; i < 64; ++i) {
        const double angle = std::remainder(double(position) * inv_freq[i], two_pi);
        worst_ulp = std::max({worst_ulp, ulp_distance(cos[i], float(std::cos(angle))),
                              ulp_distance(sin[i], float(std::sin(angle)))});
        worst_double = std::max({worst_double, std::abs(cos_d[i] - std::cos(angle)),
                                 std::abs(sin_d[i] - std::sin(angle))});
      }
      all_float.insert(all_float.end(), cos.begin(), cos.end());
      all_float.insert(all_float.end(), sin.begin(), sin.end());
      all_double.insert(all_double.end(), cos_d.begin(), cos_d.end());
      all_double.insert(all_double.end(), sin_d.begin(), sin_d.end());
    }
    // cos_sin_of (xPos, the KV-cache helpers): angle times magnitude, the same lanes.
    std::vector<double> angles(64), magnitude(64, 0.5);
    for (int i = 0; i < 64; ++i) angles[i] = 12345.678 * inv_freq[i];
    posemb::detail::cos_sin_of(angles.data(), magnitude.data(), 64, cos.data(), sin.data());
    for (int i = 0; i < 64; ++i) {
      const double angle = std::remainder(angles[i], two_pi);
      worst_ulp = std::max({worst_ulp, ulp_distance(cos[i], float(0.5 * std::cos(angle))),
                            ulp_distance(sin[i], float(0.5 * std::sin(angle)))});
    }
    all_float.insert(all_float.end(), cos.begin(), cos.end());
    CHECK(worst_ulp <= 1);
    CHECK(worst_double <= 4 * std::numeric_limits<double>::epsilon());
    if (level_is_fused(level)) {
      fused_float.push_back(all_float);
      fused_double.push_back(all_double);
    }
  }
  for (std::size_t k = 1; k < fused_float.size(); ++k) {
    CHECK(std::memcmp(fused_float[k].data(), fused_float[0].data(), fused_float[0].size() * 4) ==
          0);
    CHECK(std::memcmp(fused_double[k].data(), fused_double[0].data(), fused_double[0].size() * 8) ==
          0);
  }
}

TEST_CASE("isa: float rotation at every level, bit for bit and against the scalar reference") {
  check_rotation_at_every_level<float>();
}
TEST_CASE("isa: double rotation at every level, bit for bit and against the scalar reference") {
  check_rotation_at_every_level<double>();
}
TEST_CASE(
    "isa: Eigen::half rotation at every level, bit for bit and against the scalar reference") {
  check_rotation_at_every_level<Eigen::half>();
}
TEST_CASE(
    "isa: Eigen::bfloat16 rotation at every level, bit for bit and against the scalar reference") {
  check_rotation_at_every_level<Eigen::bfloat16>();
}

TEST_CASE("isa: half-precision conversions at every level equal static_cast bit for bit") {
  LevelGuard guard;
  std::vector<float> values;
  std::mt19937 gen(9u);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int i = 0; i < 4099; ++i) values.push_back(Eigen::numext::bit_cast<float>(any_bits(gen)));
  for (std::uint32_t special : {0x3F808000u, 0x3F818000u, 0x00000001u, 0x80000000u, 0x7F800000u,
                                0x477FF000u, 0x33000000u, 0x387FC000u, 0x7F800001u}) {
    values.push_back(Eigen::numext::bit_cast<float>(special));
  }
  const Eigen::Index n = static_cast<Eigen::Index>(values.size());  // 4108: tails of 16 and 8
  for (const Variant& variant : supported_variants()) {
    use(variant);
    INFO("level " << posemb::to_string(variant.level)
                  << (variant.bf16_instructions ? " (BF16 instructions)" : ""));
    std::vector<Eigen::bfloat16> bf(n);
    std::vector<Eigen::half> hf(n);
    std::vector<float> bf_back(n), hf_back(n);
    posemb::detail::narrow(values.data(), bf.data(), n);
    posemb::detail::narrow(values.data(), hf.data(), n);
    posemb::detail::widen(bf.data(), bf_back.data(), n);
    posemb::detail::widen(hf.data(), hf_back.data(), n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const float v = values[i];
      INFO("value bits " << Eigen::numext::bit_cast<std::uint32_t>(v));
      if (std::isnan(v)) {
        REQUIRE(std::isnan(float(bf[i])));
        REQUIRE(std::isnan(float(hf[i])));
      } else {
        REQUIRE(bits_of(bf[i]) == bits_of(static_cast<Eigen::bfloat16>(v)));
        REQUIRE(bits_of(hf[i]) == bits_of(static_cast<Eigen::half>(v)));
      }
      REQUIRE(bits_of(bf_back[i]) == bits_of(static_cast<float>(bf[i])));
      REQUIRE(bits_of(hf_back[i]) == bits_of(static_cast<float>(hf[i])));
    }
  }
}
