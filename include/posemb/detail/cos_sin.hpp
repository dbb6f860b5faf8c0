// The one generator of cos/sin in posemb: every rotary table, kernel and absolute table forms
// its cos and sin here, from angles in double, so that they agree bit for bit wherever the same
// angle is asked for at the same instruction-set level (posemb/machine/isa.hpp). Raw pointers only.
//
// How an angle x (radians, double, any magnitude) becomes cos x and sin x:
//
// 1. Reduction mod 2 pi, as std::remainder does: k = nearest(x / 2pi), r = x - k two_pi (two_pi
//    the double nearest 2 pi). With FMA, r = fma(-k, two_pi, x) is exact: r is a multiple of
//    ulp(x) (or of 2^-50 once |x| >= 4) and |r| < 4, so it is representable, and an FMA rounds
//    once. Without FMA two_pi is split (Cody-Waite) into parts whose products with k are exact
//    for |k| < 2^32, and r is within about one ulp of the exact remainder.
// 2. Quadrant: r = q pi/2 + y with q = nearest(2r/pi) in {-2..2} and |y| <= pi/4 (pi/2 in three
//    parts, Cody-Waite).
// 3. Taylor polynomials c, s of cos y and sin y, then cos r = {c, -s, -c, s}[q mod 4] and
//    sin r = {s, c, -s, -c}[q mod 4].
//
// With FMA every multiply-add of steps 1-3 is an explicit fma, so the levels that have FMA give
// the same bits; without FMA every product is rounded (posemb/machine/isa.hpp).
//
// Degree: for float output, sin to y^9 and cos to y^10: the truncation is at most
// |y|^10 / 11! <= 2.3e-9 relative for sin and |y|^12 / 12! / cos y <= 1.7e-10 for cos, under
// 0.04 float ulp, so the double result is within half a float ulp of the exact value and the
// float within 1 ulp of the correctly rounded one (the benchmark finds 22057 of 16.8 million
// values 1 ulp away, none more). For double output, sin to y^17 and cos to y^16 (truncation
// <= 1e-19, results within a few double ulps).
//
// The loops are plain loops over `__restrict` pointers with the lane function inlined and no
// branches (quadrant selection is integer bit arithmetic), so the compiler vectorizes them for
// each level they are compiled for.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "posemb/machine/isa.hpp"
#include "posemb/machine/streaming_stores.hpp"

namespace posemb {
namespace detail {

// a * b + c: one rounding (Fma) or two.
template <bool Fma, class C>
POSEMB_INLINE C mul_add(C a, C b, C c) {
  if constexpr (Fma) {
    return std::fma(a, b, c);
  } else {
    return a * b + c;
  }
}

// cos x and sin x for one double angle x. Full: double-accurate polynomials (for double
// output); otherwise float-accurate ones. Fma: explicit fused multiply-adds (code for a level
// with FMA), else separately rounded products.
template <bool Full, bool Fma>
POSEMB_INLINE void cos_sin_lane(double x, double& cos_x, double& sin_x) {
  constexpr double two_pi = 0x1.921fb54442d18p+2;      // double nearest 2 pi
  constexpr double inv_two_pi = 0x1.45f306dc9c883p-3;  // 1 / (2 pi)
  constexpr double two_over_pi = 0x1.45f306dc9c883p-1;
  constexpr double round_shift = 0x1.8p52;  // 1.5 * 2^52
  // pi/2 = pio2_1 + pio2_2 + pio2_3 to ~160 bits.
  constexpr double pio2_1 = 0x1.921fb54442d18p+0;
  constexpr double pio2_2 = 0x1.1a62633145c07p-54;
  constexpr double pio2_3 = -0x1.f1976b7ed8fbcp-110;
  // two_pi = two_pi_1 + two_pi_2 + two_pi_3 exactly, the first two with 21 significant bits.
  constexpr double two_pi_1 = 0x1.921fbp+2;
  constexpr double two_pi_2 = 0x1.5110bp-20;
  constexpr double two_pi_3 = 0x1.18p-42;
  static_assert(two_pi_1 + two_pi_2 + two_pi_3 == two_pi, "exact split of two_pi");
  const double k = std::nearbyint(x * inv_two_pi);
  double r;
  if constexpr (Fma) {
    r = std::fma(-k, two_pi, x);
  } else {
    r = ((x - k * two_pi_1) - k * two_pi_2) - k * two_pi_3;
  }
  // q = nearest(2r/pi); q + 1.5 * 2^52 holds q in its low mantissa bits as a two's complement
  // integer (|q| <= 2), whose bits 0 and 1 give the quadrant below. (Rounding by adding and
  // subtracting 1.5 * 2^52 instead of nearbyint would be folded away by -ffast-math.)
  const double q = std::nearbyint(r * two_over_pi);
  const std::uint64_t quadrant = Eigen::numext::bit_cast<std::uint64_t>(q + round_shift);
  double y = mul_add<Fma>(-q, pio2_1, r);
  y = mul_add<Fma>(-q, pio2_2, y);
  if constexpr (Full) y = mul_add<Fma>(-q, pio2_3, y);
  const double z = y * y;
  // sin y = y + y z (-1/3! + z/5! - ...), cos y = 1 + z (-1/2! + z/4! - ...)
  double ps, pc;
  if constexpr (Full) {
    ps = 1.0 / 355687428096000.0;  // 1/17!
    ps = mul_add<Fma>(ps, z, -1.0 / 1307674368000.0);
    ps = mul_add<Fma>(ps, z, 1.0 / 6227020800.0);
    ps = mul_add<Fma>(ps, z, -1.0 / 39916800.0);
    pc = 1.0 / 20922789888000.0;  // 1/16!
    pc = mul_add<Fma>(pc, z, -1.0 / 87178291200.0);
    pc = mul_add<Fma>(pc, z, 1.0 / 479001600.0);
    ps = mul_add<Fma>(ps, z, 1.0 / 362880.0);
    pc = mul_add<Fma>(pc, z, -1.0 / 3628800.0);
  } else {
    ps = 1.0 / 362880.0;    // 1/9!
    pc = -1.0 / 3628800.0;  // -1/10!
  }
  ps = mul_add<Fma>(ps, z, -1.0 / 5040.0);
  ps = mul_add<Fma>(ps, z, 1.0 / 120.0);
  ps = mul_add<Fma>(ps, z, -1.0 / 6.0);
  const double s = mul_add<Fma>(y * z, ps, y);
  pc = mul_add<Fma>(pc, z, 1.0 / 40320.0);
  pc = mul_add<Fma>(pc, z, -1.0 / 720.0);
  pc = mul_add<Fma>(pc, z, 1.0 / 24.0);
  pc = mul_add<Fma>(pc, z, -0.5);
  const double c = mul_add<Fma>(z, pc, 1.0);
  // Odd q swaps c and s; the sign of sin r is bit 1 of q mod 4, that of cos r bit 1 of
  // (q + 1) mod 4. Integer lane operations, which vectorize without compares.
  const bool swap = (quadrant & 1u) != 0;
  const std::uint64_t sin_sign = (quadrant & 2u) << 62;
  const std::uint64_t cos_sign = ((quadrant + 1u) & 2u) << 62;
  cos_x = Eigen::numext::bit_cast<double>(Eigen::numext::bit_cast<std::uint64_t>(swap ? s : c) ^
                                          cos_sign);
  sin_x = Eigen::numext::bit_cast<double>(Eigen::numext::bit_cast<std::uint64_t>(swap ? c : s) ^
                                          sin_sign);
}

// The output type C (float or double) decides the polynomial degree.
template <class C>
inline constexpr bool full_precision_v = std::is_same_v<C, double>;

// cos and sin of theta_i = position * inv_freq[i] (formed in double), times `scale`, rounded
// to C, by the code of level L. inv_freq, cos_out, sin_out: [n].
template <IsaLevel L, class C>
POSEMB_INLINE void cos_sin_at_level(const double* __restrict inv_freq, double position,
                                    double scale, Eigen::Index n, C* __restrict cos_out,
                                    C* __restrict sin_out) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "C is float or double");
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    const double* __restrict f = inv_freq + i;
    C* __restrict co = cos_out + i;
    C* __restrict so = sin_out + i;
    for (Eigen::Index j = 0; j < lane_count{}; ++j) {
      double c, s;
      cos_sin_lane<full_precision_v<C>, has_fma_v<L>>(position * f[j], c, s);
      co[j] = static_cast<C>(scale * c);
      so[j] = static_cast<C>(scale * s);
    }
  }
  for (Eigen::Index j = 0; j < n - i; ++j) {
    double c, s;
    cos_sin_lane<full_precision_v<C>, has_fma_v<L>>(position * inv_freq[i + j], c, s);
    cos_out[i + j] = static_cast<C>(scale * c);
    sin_out[i + j] = static_cast<C>(scale * s);
  }
}

// cos and sin of angle[i] times magnitude[i], rounded to C, by the code of level L.
// angle, magnitude, cos_out, sin_out: [n].
template <IsaLevel L, class C>
POSEMB_INLINE void cos_sin_of_level(const double* __restrict angle,
                                    const double* __restrict magnitude, Eigen::Index n,
                                    C* __restrict cos_out, C* __restrict sin_out) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "C is float or double");
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    const double* __restrict a = angle + i;
    const double* __restrict m = magnitude + i;
    C* __restrict co = cos_out + i;
    C* __restrict so = sin_out + i;
    for (Eigen::Index j = 0; j < lane_count{}; ++j) {
      double c, s;
      cos_sin_lane<full_precision_v<C>, has_fma_v<L>>(a[j], c, s);
      co[j] = static_cast<C>(m[j] * c);
      so[j] = static_cast<C>(m[j] * s);
    }
  }
  for (Eigen::Index j = 0; j < n - i; ++j) {
    double c, s;
    cos_sin_lane<full_precision_v<C>, has_fma_v<L>>(angle[i + j], c, s);
    cos_out[i + j] = static_cast<C>(magnitude[i + j] * c);
    sin_out[i + j] = static_cast<C>(magnitude[i + j] * s);
  }
}

#if POSEMB_ISA_DISPATCH
template <class C>
POSEMB_TARGET_AVX2 void cos_sin_at_avx2(const double* inv_freq, double position, double scale,
                                        Eigen::Index n, C* cos_out, C* sin_out) {
  cos_sin_at_level<IsaLevel::Avx2>(inv_freq, position, scale, n, cos_out, sin_out);
}
template <class C>
POSEMB_TARGET_AVX512 void cos_sin_at_avx512(const double* inv_freq, double position, double scale,
                                            Eigen::Index n, C* cos_out, C* sin_out) {
  cos_sin_at_level<IsaLevel::Avx512>(inv_freq, position, scale, n, cos_out, sin_out);
}
template <class C>
POSEMB_TARGET_AVX2 void cos_sin_of_avx2(const double* angle, const double* magnitude,
                                        Eigen::Index n, C* cos_out, C* sin_out) {
  cos_sin_of_level<IsaLevel::Avx2>(angle, magnitude, n, cos_out, sin_out);
}
template <class C>
POSEMB_TARGET_AVX512 void cos_sin_of_avx512(const double* angle, const double* magnitude,
                                            Eigen::Index n, C* cos_out, C* sin_out) {
  cos_sin_of_level<IsaLevel::Avx512>(angle, magnitude, n, cos_out, sin_out);
}
#endif

// cos and sin of theta_i = position * inv_freq[i] (formed in double), times `scale`, rounded
// to C, at the active level. inv_freq, cos_out, sin_out: [n].
template <class C>
inline void cos_sin_at(const double* inv_freq, double position, double scale, Eigen::Index n,
                       C* cos_out, C* sin_out) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return cos_sin_at_avx512(inv_freq, position, scale, n, cos_out, sin_out);
      case IsaLevel::Avx2:
        return cos_sin_at_avx2(inv_freq, position, scale, n, cos_out, sin_out);
      default:
        break;
    }
  }
#endif
  cos_sin_at_level<IsaLevel::Portable>(inv_freq, position, scale, n, cos_out, sin_out);
}

// cos and sin of angle[i] times magnitude[i], rounded to C, at the active level (xPos's
// per-pair decay, the KV-cache helpers' angle differences). angle, magnitude, cos_out, sin_out:
// [n].
template <class C>
inline void cos_sin_of(const double* angle, const double* magnitude, Eigen::Index n, C* cos_out,
                       C* sin_out) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return cos_sin_of_avx512(angle, magnitude, n, cos_out, sin_out);
      case IsaLevel::Avx2:
        return cos_sin_of_avx2(angle, magnitude, n, cos_out, sin_out);
      default:
        break;
    }
  }
#endif
  cos_sin_of_level<IsaLevel::Portable>(angle, magnitude, n, cos_out, sin_out);
}

// Fills the rows of a cos/sin table: fill_row(row, cos_row, sin_row) forms row `row` into the
// `width` values at each pointer. cos, sin: [count, width] row-major. A table of
// streaming_store_threshold() bytes or more (cos and sin together) is formed a few kilobytes of
// rows at a time in a buffer and streamed to cos and sin (posemb/machine/streaming_stores.hpp); the
// values are the same.
template <class C, class FillRow>
inline void fill_table_rows(Eigen::Index count, Eigen::Index width, C* cos, C* sin,
                            FillRow&& fill_row) {
  const std::size_t bytes = 2 * static_cast<std::size_t>(count * width) * sizeof(C);
  if (width == 0 || !use_streaming_stores(bytes)) {
    for (Eigen::Index row = 0; row < count; ++row) {
      fill_row(row, cos + row * width, sin + row * width);
    }
    return;
  }
  constexpr std::size_t chunk_bytes = 4096;  // per array
  const Eigen::Index rows_per_chunk = std::max<Eigen::Index>(
      1, static_cast<Eigen::Index>(chunk_bytes / (static_cast<std::size_t>(width) * sizeof(C))));
  std::vector<C> staged(static_cast<std::size_t>(2 * rows_per_chunk * width));
  C* staged_cos = staged.data();
  C* staged_sin = staged.data() + rows_per_chunk * width;
  for (Eigen::Index row0 = 0; row0 < count; row0 += rows_per_chunk) {
    const Eigen::Index rows = std::min(rows_per_chunk, count - row0);
    for (Eigen::Index r = 0; r < rows; ++r) {
      fill_row(row0 + r, staged_cos + r * width, staged_sin + r * width);
    }
    const std::size_t n = static_cast<std::size_t>(rows * width) * sizeof(C);
    stream_copy(cos + row0 * width, staged_cos, n);
    stream_copy(sin + row0 * width, staged_sin, n);
  }
  stream_fence();
}

// Fills a cos/sin table for positions first_position .. first_position + count - 1.
// inv_freq: [pairs]; cos, sin: [count, pairs] row-major, row r is position first_position + r.
template <class C>
inline void fill_cos_sin_table(const double* inv_freq, Eigen::Index pairs, double scale,
                               std::int64_t first_position, Eigen::Index count, C* cos, C* sin) {
  fill_table_rows(count, pairs, cos, sin, [&](Eigen::Index row, C* cos_row, C* sin_row) {
    cos_sin_at(inv_freq, static_cast<double>(first_position + row), scale, pairs, cos_row, sin_row);
  });
}

}  // namespace detail
}  // namespace posemb
