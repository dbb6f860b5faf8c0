// The fast RoPE kernels behind rope.hpp: cos/sin of many angles at once, the rotation of one
// contiguous head vector for each pairing, half-precision widening/narrowing, and a small
// thread splitter. Raw pointers only; rope.hpp does the shapes, positions and checks.
//
// How they are vectorized: plain loops over contiguous `__restrict` pointers, one loop per
// pairing and per in-place / out-of-place case, with no branches in the loop bodies, so that
// the compiler vectorizes them for whatever the build targets (SSE2 by default, AVX2 or
// AVX-512 under -march=...). This needs no dependency beyond the compiler, keeps one source of
// truth for every instruction set, and the loops stay readable next to their formulas.
// Eigen's packet math would need a second, per-packet-size formulation of the same loops;
// Highway would add a build dependency to a header-only library.
// Intrinsics are used only for half-precision storage, which is compute-bound (widening and
// rounding cost more than the rotation): the F16C float <-> half conversions, which compilers
// do not generate from scalar code, and, when the build targets AVX-512, one 16-pair kernel
// per pairing for half and bfloat16 (with the AVX512_BF16 rounding instruction if present).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

// The 16-lane kernels for half-precision storage need AVX-512 F, BW (16-bit lanes) and DQ
// (vfpclassps), which every AVX-512 processor since Skylake-SP has.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
#define POSEMB_AVX512_HALF_KERNELS 1
#else
#define POSEMB_AVX512_HALF_KERNELS 0
#endif

#include "posemb/detail/storage.hpp"

namespace posemb {
namespace detail {

// ---------------------------------------------------------------------------------------------
// cos/sin

// cos and sin of theta_i = remainder(position * inv_freq[i], 2 pi), times `scale`, rounded to C.
// inv_freq, cos_out, sin_out: [n].
//
// The angle is the one the scalar reference forms: x = position * inv_freq[i] rounded to
// double, reduced by k = nearest(x / 2pi) multiples of two_pi (the double nearest 2 pi) as
// std::remainder does. The reduction r = fma(-k, two_pi, x) is exact: r is a multiple of
// ulp(x) (or of 2^-50 once |x| >= 4) and |r| < 4, so it is representable, and an FMA rounds
// once. Without FMA hardware two_pi is split (Cody-Waite) into parts whose products with k are
// exact for |k| < 2^32, and r is within about one ulp of the exact remainder.
//
// cos r and sin r: r = q pi/2 + y with q = nearest(2r/pi) in {-2..2} and |y| <= pi/4
// (pi/2 in three parts, Cody-Waite), then Taylor polynomials c, s of cos y and sin y, then the
// quadrant: cos r = {c, -s, -c, s}[q mod 4], sin r = {s, c, -s, -c}[q mod 4].
// Degree: for float output, sin to y^9 and cos to y^10: the truncation is at most
// |y|^10 / 11! <= 2.3e-9 relative for sin and |y|^12 / 12! / cos y <= 1.7e-10 for cos, under
// 0.04 float ulp, so the double result is within half a float ulp of the exact value and the
// float within 1 ulp of the correctly rounded one (the benchmark finds 22057 of 16.8 million
// values 1 ulp away, none more). For double output, sin to y^17 and cos to y^16 (truncation
// <= 1e-19, results within a few double ulps).
template <class C>
inline void rope_cos_sin_vectorized(const double* __restrict inv_freq, std::int64_t position,
                                    double scale, Eigen::Index n, C* __restrict cos_out,
                                    C* __restrict sin_out) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "C is float or double");
  constexpr bool full = std::is_same_v<C, double>;
  constexpr double two_pi = 0x1.921fb54442d18p+2;      // double nearest 2 pi
  constexpr double inv_two_pi = 0x1.45f306dc9c883p-3;  // 1 / (2 pi)
  constexpr double two_over_pi = 0x1.45f306dc9c883p-1;
  constexpr double round_shift = 0x1.8p52;  // 1.5 * 2^52
  // pi/2 = pio2_1 + pio2_2 + pio2_3 to ~160 bits.
  constexpr double pio2_1 = 0x1.921fb54442d18p+0;
  constexpr double pio2_2 = 0x1.1a62633145c07p-54;
  constexpr double pio2_3 = -0x1.f1976b7ed8fbcp-110;
#if !defined(__FMA__)
  // two_pi = two_pi_1 + two_pi_2 + two_pi_3 exactly, the first two with 21 significant bits.
  constexpr double two_pi_1 = 0x1.921fbp+2;
  constexpr double two_pi_2 = 0x1.5110bp-20;
  constexpr double two_pi_3 = 0x1.18p-42;
  static_assert(two_pi_1 + two_pi_2 + two_pi_3 == two_pi, "exact split of two_pi");
#endif
  const double p = static_cast<double>(position);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double x = p * inv_freq[i];
    const double k = std::nearbyint(x * inv_two_pi);
#if defined(__FMA__)
    const double r = std::fma(-k, two_pi, x);
#else
    const double r = ((x - k * two_pi_1) - k * two_pi_2) - k * two_pi_3;
#endif
    // q = nearest(2r/pi); q + 1.5 * 2^52 holds q in its low mantissa bits as a two's
    // complement integer (|q| <= 2), whose bits 0 and 1 give the quadrant below. (Rounding by
    // adding and subtracting 1.5 * 2^52 instead of nearbyint would be folded away by
    // -ffast-math.)
    const double q = std::nearbyint(r * two_over_pi);
    const std::uint64_t quadrant = Eigen::numext::bit_cast<std::uint64_t>(q + round_shift);
#if defined(__FMA__)
    double y = std::fma(-q, pio2_1, r);
    y = std::fma(-q, pio2_2, y);
    if constexpr (full) y = std::fma(-q, pio2_3, y);
#else
    double y = (r - q * pio2_1) - q * pio2_2;
    if constexpr (full) y -= q * pio2_3;
#endif
    const double z = y * y;
    // sin y = y + y z (-1/3! + z/5! - ...), cos y = 1 + z (-1/2! + z/4! - ...)
    double ps, pc;
    if constexpr (full) {
      ps = 1.0 / 355687428096000.0;  // 1/17!
      ps = ps * z - 1.0 / 1307674368000.0;
      ps = ps * z + 1.0 / 6227020800.0;
      ps = ps * z - 1.0 / 39916800.0;
      pc = 1.0 / 20922789888000.0;  // 1/16!
      pc = pc * z - 1.0 / 87178291200.0;
      pc = pc * z + 1.0 / 479001600.0;
      ps = ps * z + 1.0 / 362880.0;
      pc = pc * z - 1.0 / 3628800.0;
    } else {
      ps = 1.0 / 362880.0;    // 1/9!
      pc = -1.0 / 3628800.0;  // -1/10!
    }
    ps = ps * z - 1.0 / 5040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z - 1.0 / 6.0;
    const double s = y + y * z * ps;
    pc = pc * z + 1.0 / 40320.0;
    pc = pc * z - 1.0 / 720.0;
    pc = pc * z + 1.0 / 24.0;
    pc = pc * z - 0.5;
    const double c = 1.0 + z * pc;
    // Odd q swaps c and s; the sign of sin r is bit 1 of q mod 4, that of cos r bit 1 of
    // (q + 1) mod 4. Integer lane operations, which vectorize without compares.
    const bool swap = (quadrant & 1u) != 0;
    const std::uint64_t sin_sign = (quadrant & 2u) << 62;
    const std::uint64_t cos_sign = ((quadrant + 1u) & 2u) << 62;
    const double cos_r = Eigen::numext::bit_cast<double>(
        Eigen::numext::bit_cast<std::uint64_t>(swap ? s : c) ^ cos_sign);
    const double sin_r = Eigen::numext::bit_cast<double>(
        Eigen::numext::bit_cast<std::uint64_t>(swap ? c : s) ^ sin_sign);
    cos_out[i] = static_cast<C>(scale * cos_r);
    sin_out[i] = static_cast<C>(scale * sin_r);
  }
}

// Fills a cos/sin table for positions first_position .. first_position + count - 1.
// inv_freq: [pairs]; cos, sin: [count, pairs] row-major, row r is position first_position + r.
template <class C>
inline void fill_rope_table(const double* inv_freq, Eigen::Index pairs, double scale,
                            std::int64_t first_position, Eigen::Index count, C* cos, C* sin) {
  for (Eigen::Index row = 0; row < count; ++row) {
    rope_cos_sin_vectorized(inv_freq, first_position + row, scale, pairs, cos + row * pairs,
                            sin + row * pairs);
  }
}

// ---------------------------------------------------------------------------------------------
// Storage lanes: a value of storage type T loaded into its arithmetic type, and stored back
// rounded once (round to nearest even), bit-identical to static_cast. float and double are the
// identity; bfloat16 is bit arithmetic the compiler vectorizes; Eigen::half goes through
// widen/narrow below (F16C), since its scalar conversion does not vectorize.

inline float load_lane(float v) { return v; }
inline double load_lane(double v) { return v; }
// bfloat16 is the top half of a float32.
inline float load_lane(Eigen::bfloat16 v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(Eigen::numext::bit_cast<std::uint16_t>(v));
  return Eigen::numext::bit_cast<float>(bits << 16);
}

template <class T>
inline T store_lane(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    // Round to nearest even on bit 16 (as Eigen's float -> bfloat16); a NaN becomes the quiet
    // NaN of its sign instead of rounding into an infinity.
    const std::uint32_t bits = Eigen::numext::bit_cast<std::uint32_t>(v);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const std::uint32_t nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
    const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    return Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(is_nan ? nan : rounded));
  } else {
    return v;
  }
}

// ---------------------------------------------------------------------------------------------
// Rotation of n pairs of one contiguous head vector; T is float, double or bfloat16 (loaded
// into C = compute_t<T>). With cos/sin for pair i (already scaled):
//   a' = a cos - b sin,  b' = a sin + b cos.

// RotateHalf, out of place: pair i is (lo[i], hi[i]) with lo = head + pair_begin and
// hi = head + rotary_dim / 2 + pair_begin. in_*, out_*, cos, sin: [n], no overlap.
template <class T, class C>
inline void rotate_half_out_of_place(const T* __restrict in_lo, const T* __restrict in_hi,
                                     T* __restrict out_lo, T* __restrict out_hi,
                                     const C* __restrict cos, const C* __restrict sin,
                                     Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(in_lo[i]), b = load_lane(in_hi[i]);
    out_lo[i] = store_lane<T>(a * cos[i] - b * sin[i]);
    out_hi[i] = store_lane<T>(a * sin[i] + b * cos[i]);
  }
}

// RotateHalf, in place: lo, hi, cos, sin: [n]; lo and hi do not overlap.
template <class T, class C>
inline void rotate_half_in_place(T* __restrict lo, T* __restrict hi, const C* __restrict cos,
                                 const C* __restrict sin, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(lo[i]), b = load_lane(hi[i]);
    lo[i] = store_lane<T>(a * cos[i] - b * sin[i]);
    hi[i] = store_lane<T>(a * sin[i] + b * cos[i]);
  }
}

// Interleaved, out of place: pair i is (x[2i], x[2i + 1]). in, out: [2n]; cos, sin: [n].
template <class T, class C>
inline void rotate_interleaved_out_of_place(const T* __restrict in, T* __restrict out,
                                            const C* __restrict cos, const C* __restrict sin,
                                            Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(in[2 * i]), b = load_lane(in[2 * i + 1]);
    out[2 * i] = store_lane<T>(a * cos[i] - b * sin[i]);
    out[2 * i + 1] = store_lane<T>(a * sin[i] + b * cos[i]);
  }
}

// Interleaved, in place: x: [2n]; cos, sin: [n].
template <class T, class C>
inline void rotate_interleaved_in_place(T* __restrict x, const C* __restrict cos,
                                        const C* __restrict sin, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(x[2 * i]), b = load_lane(x[2 * i + 1]);
    x[2 * i] = store_lane<T>(a * cos[i] - b * sin[i]);
    x[2 * i + 1] = store_lane<T>(a * sin[i] + b * cos[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// AVX-512: 16 lanes of half-precision storage to and from 16 floats, bit-identical to
// static_cast (round to nearest even on the way back).

#if POSEMB_AVX512_HALF_KERNELS
// Conversions use the zero-masking forms with every lane selected (the same instructions): the
// plain forms pass an undefined register that GCC 12 reports as uninitialized (GCC bug 105593).
inline constexpr __mmask16 all16 = 0xFFFF;

inline __m512 load16(const Eigen::half* p) {
  return _mm512_maskz_cvtph_ps(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// bfloat16 is the top half of a float32.
inline __m512 load16(const Eigen::bfloat16* p) {
  const __m512i bits =
      _mm512_maskz_cvtepu16_epi32(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all16, bits, 16));
}

inline void store16(Eigen::half* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_maskz_cvtps_ph(all16, v, _MM_FROUND_TO_NEAREST_INT));
}

// Lanes the fast bfloat16 rounding below does not handle as Eigen does (vfpclassps classes):
// NaN (Eigen returns the quiet NaN of the sign) and, for vcvtneps2bf16, which treats them as
// zero, subnormal inputs. Vectors with such a lane (in practice rare: a NaN, or a nonzero
// value below 2^-126 in magnitude) are rounded one lane at a time by store_lane.
#if defined(__AVX512BF16__)
inline constexpr int bfloat16_slow_classes = 0x01 | 0x80 | 0x20;  // QNaN, SNaN, subnormal
#else
inline constexpr int bfloat16_slow_classes = 0x01 | 0x80;  // QNaN, SNaN
#endif

// v rounded to bfloat16 one lane at a time; lane k of the result holds bfloat16(v[k]) in the
// bits [bits_at, bits_at + 16) of 32-bit lane k (the other bits are zero).
inline __m512i bfloat16_lanes_exact(__m512 v, int bits_at) {
  alignas(64) float in[16];
  alignas(64) std::uint32_t out[16];
  _mm512_store_ps(in, v);
  for (int k = 0; k < 16; ++k) {
    const Eigen::bfloat16 rounded = store_lane<Eigen::bfloat16>(in[k]);
    const std::uint16_t bits = Eigen::numext::bit_cast<std::uint16_t>(rounded);
    out[k] = static_cast<std::uint32_t>(bits) << bits_at;
  }
  return _mm512_load_si512(out);
}

// 32-bit lanes holding bfloat16(v) (round to nearest even) in their top 16 bits; the low 16
// bits are garbage. Integer form of Eigen's float -> bfloat16: bits + 0x7FFF + bit 16.
inline __m512i bfloat16_rounded_high(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb =
      _mm512_and_si512(_mm512_maskz_srli_epi32(all16, bits, 16), _mm512_set1_epi32(1));
  return _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb);
}

// 16 floats -> 16 bfloat16 (their bits).
inline __m256i narrow16_bfloat16(__m512 v) {
  if (_mm512_fpclass_ps_mask(v, bfloat16_slow_classes) != 0) {
    return _mm512_maskz_cvtepi32_epi16(all16, bfloat16_lanes_exact(v, 0));
  }
#if defined(__AVX512BF16__)
  const __m256bh rounded = _mm512_cvtneps_pbh(v);
  __m256i result;
  std::memcpy(&result, &rounded, sizeof result);
  return result;
#else
  const __m512i rounded = _mm512_maskz_srli_epi32(all16, bfloat16_rounded_high(v), 16);
  return _mm512_maskz_cvtepi32_epi16(all16, rounded);
#endif
}

inline void store16(Eigen::bfloat16* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow16_bfloat16(v));
}

// 32 values: p[0..15] = first, p[16..31] = second.
inline void store32(Eigen::half* p, __m512 first, __m512 second) {
  store16(p, first);
  store16(p + 16, second);
}
inline void store32(Eigen::bfloat16* p, __m512 first, __m512 second) {
  if ((_mm512_fpclass_ps_mask(first, bfloat16_slow_classes) |
       _mm512_fpclass_ps_mask(second, bfloat16_slow_classes)) != 0) {
    store16(p, first);
    store16(p + 16, second);
    return;
  }
#if defined(__AVX512BF16__)
  const __m512bh both = _mm512_cvtne2ps_pbh(second, first);
  __m512i bits;
  std::memcpy(&bits, &both, sizeof bits);
  _mm512_storeu_si512(p, bits);
#else
  // The top 16 bits of each 32-bit lane: odd 16-bit lanes of first, then of second.
  const __m512i high_halves = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41,
                                               39, 37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17,
                                               15, 13, 11, 9, 7, 5, 3, 1);
  _mm512_storeu_si512(p, _mm512_permutex2var_epi16(bfloat16_rounded_high(first), high_halves,
                                                   bfloat16_rounded_high(second)));
#endif
}

// 16 interleaved pairs: 32-bit lane k = bfloat16(x[k]) | bfloat16(y[k]) << 16, the memory image
// of (x[k], y[k]) as two bfloat16.
inline __m512i narrow16_bfloat16_pairs(__m512 x, __m512 y) {
  if ((_mm512_fpclass_ps_mask(x, bfloat16_slow_classes) |
       _mm512_fpclass_ps_mask(y, bfloat16_slow_classes)) != 0) {
    return _mm512_or_si512(bfloat16_lanes_exact(x, 0), bfloat16_lanes_exact(y, 16));
  }
#if defined(__AVX512BF16__)
  // [bf16(x[0..15]), bf16(y[0..15])] as 16-bit lanes, then interleaved.
  const __m512bh both = _mm512_cvtne2ps_pbh(y, x);
  __m512i halves;
  std::memcpy(&halves, &both, sizeof halves);
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
  return _mm512_permutexvar_epi16(order, halves);
#else
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  return _mm512_or_si512(_mm512_maskz_srli_epi32(all16, bfloat16_rounded_high(x), 16),
                         _mm512_and_si512(bfloat16_rounded_high(y), high));
#endif
}
#endif  // POSEMB_AVX512_HALF_KERNELS

// ---------------------------------------------------------------------------------------------
// Half-precision arrays to and from float (round to nearest even on the way back),
// bit-identical to static_cast.

inline void widen(const Eigen::bfloat16* __restrict in, float* __restrict out, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) out[i] = load_lane(in[i]);
}

inline void narrow(const float* __restrict in, Eigen::bfloat16* __restrict out, Eigen::Index n) {
  Eigen::Index i = 0;
#if POSEMB_AVX512_HALF_KERNELS
  for (; i + 16 <= n; i += 16) store16(out + i, _mm512_loadu_ps(in + i));
#endif
  for (; i < n; ++i) out[i] = store_lane<Eigen::bfloat16>(in[i]);
}

inline void widen(const Eigen::half* in, float* out, Eigen::Index n) {
  Eigen::Index i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

inline void narrow(const float* in, Eigen::half* out, Eigen::Index n) {
  Eigen::Index i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<Eigen::half>(in[i]);
}

// ---------------------------------------------------------------------------------------------
// AVX-512 rotation for half-precision storage T (Eigen::half, Eigen::bfloat16), 16 pairs per
// step, widened to float, rotated, rounded once: one pass, no staging buffers.

#if POSEMB_AVX512_HALF_KERNELS
// RotateHalf, pairs [0, 16 * floor(n / 16)) of (lo[i], hi[i]), 32 at a time while it can;
// returns how many were done.
// in_lo, in_hi, out_lo, out_hi: [n] (out == in: in place); cos, sin: [n].
template <class T>
inline Eigen::Index rotate_half_avx512(const T* in_lo, const T* in_hi, T* out_lo, T* out_hi,
                                       const float* cos, const float* sin, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a0 = load16(in_lo + i), b0 = load16(in_hi + i);
    const __m512 a1 = load16(in_lo + i + 16), b1 = load16(in_hi + i + 16);
    const __m512 c0 = _mm512_loadu_ps(cos + i), s0 = _mm512_loadu_ps(sin + i);
    const __m512 c1 = _mm512_loadu_ps(cos + i + 16), s1 = _mm512_loadu_ps(sin + i + 16);
    store32(out_lo + i, _mm512_fmsub_ps(a0, c0, _mm512_mul_ps(b0, s0)),
            _mm512_fmsub_ps(a1, c1, _mm512_mul_ps(b1, s1)));
    store32(out_hi + i, _mm512_fmadd_ps(a0, s0, _mm512_mul_ps(b0, c0)),
            _mm512_fmadd_ps(a1, s1, _mm512_mul_ps(b1, c1)));
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 a = load16(in_lo + i), b = load16(in_hi + i);
    const __m512 c = _mm512_loadu_ps(cos + i), s = _mm512_loadu_ps(sin + i);
    store16(out_lo + i, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)));
    store16(out_hi + i, _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c)));
  }
  return i;
}

// Interleaved, pairs [0, 16 * floor(n / 16)) of (x[2i], x[2i + 1]); returns how many were done.
// in, out: [2n] (out == in: in place); cos, sin: [n].
template <class T>
inline Eigen::Index rotate_interleaved_avx512(const T* in, T* out, const float* cos,
                                              const float* sin, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 c = _mm512_loadu_ps(cos + i), s = _mm512_loadu_ps(sin + i);
    if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
      // A 32-bit lane holds one pair: a in its low 16 bits, b in its high 16 bits.
      const __m512i pairs = _mm512_loadu_si512(in + 2 * i);
      const __m512 a = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all16, pairs, 16));
      const __m512 b = _mm512_castsi512_ps(
          _mm512_and_si512(pairs, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
      const __m512 x = _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s));
      const __m512 y = _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c));
      _mm512_storeu_si512(out + 2 * i, narrow16_bfloat16_pairs(x, y));
    } else {
      // Lane indices into the 32 floats of two vectors: de-interleave, then re-interleave.
      const __m512i even =
          _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
      const __m512i odd =
          _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
      const __m512i first =
          _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const __m512i second =
          _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      const __m512 v0 = load16(in + 2 * i), v1 = load16(in + 2 * i + 16);
      const __m512 a = _mm512_permutex2var_ps(v0, even, v1);
      const __m512 b = _mm512_permutex2var_ps(v0, odd, v1);
      const __m512 x = _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s));
      const __m512 y = _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c));
      store16(out + 2 * i, _mm512_permutex2var_ps(x, first, y));
      store16(out + 2 * i + 16, _mm512_permutex2var_ps(x, second, y));
    }
  }
  return i;
}

// rotate_contiguous (below) for half-precision T: the AVX-512 kernels, then the last n mod 16
// pairs one at a time.
template <class T>
inline void rotate_contiguous_avx512(const T* in, T* out, const float* cos, const float* sin,
                                     Eigen::Index pair_begin, Eigen::Index n,
                                     Eigen::Index rotary_dim, bool interleaved) {
  const Eigen::Index half = rotary_dim / 2;
  const Eigen::Index done =
      interleaved
          ? rotate_interleaved_avx512(in + 2 * pair_begin, out + 2 * pair_begin, cos, sin, n)
          : rotate_half_avx512(in + pair_begin, in + half + pair_begin, out + pair_begin,
                               out + half + pair_begin, cos, sin, n);
  for (Eigen::Index i = done; i < n; ++i) {
    const Eigen::Index ia = interleaved ? 2 * (pair_begin + i) : pair_begin + i;
    const Eigen::Index ib = interleaved ? ia + 1 : ia + half;
    const float a = static_cast<float>(in[ia]), b = static_cast<float>(in[ib]);
    out[ia] = static_cast<T>(a * cos[i] - b * sin[i]);
    out[ib] = static_cast<T>(a * sin[i] + b * cos[i]);
  }
}
#endif  // POSEMB_AVX512_HALF_KERNELS

// ---------------------------------------------------------------------------------------------
// One contiguous head vector, pairs [pair_begin, pair_end) of rotary_dim, either pairing.
// in, out: [head_dim] (in == out: in place); cos, sin: [pair_end - pair_begin].

template <class T, class C>
inline void rotate_contiguous(const T* in, T* out, const C* cos, const C* sin, int pair_begin,
                              int pair_end, int rotary_dim, bool interleaved) {
  static_assert(std::is_same_v<C, compute_t<T>>, "cos/sin must be in the arithmetic type of T");
  const Eigen::Index n = pair_end - pair_begin;
#if POSEMB_AVX512_HALF_KERNELS
  if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
    rotate_contiguous_avx512(in, out, cos, sin, pair_begin, n, rotary_dim, interleaved);
    return;
  }
#endif
  if constexpr (!std::is_same_v<T, Eigen::half>) {
    if (interleaved) {
      if (in == out) {
        rotate_interleaved_in_place(out + 2 * pair_begin, cos, sin, n);
      } else {
        rotate_interleaved_out_of_place(in + 2 * pair_begin, out + 2 * pair_begin, cos, sin, n);
      }
    } else {
      const Eigen::Index lo = pair_begin, hi = rotary_dim / 2 + pair_begin;
      if (in == out) {
        rotate_half_in_place(out + lo, out + hi, cos, sin, n);
      } else {
        rotate_half_out_of_place(in + lo, in + hi, out + lo, out + hi, cos, sin, n);
      }
    }
  } else {
    // Blocks of up to `block` pairs through float buffers on the stack.
    constexpr Eigen::Index block = 64;
    float a[2 * block], b[block];
    for (Eigen::Index begin = 0; begin < n; begin += block) {
      const Eigen::Index m = std::min(block, n - begin);
      const Eigen::Index pair = pair_begin + begin;
      if (interleaved) {
        widen(in + 2 * pair, a, 2 * m);
        rotate_interleaved_in_place(a, cos + begin, sin + begin, m);
        narrow(a, out + 2 * pair, 2 * m);
      } else {
        const Eigen::Index hi = rotary_dim / 2 + pair;
        widen(in + pair, a, m);
        widen(in + hi, b, m);
        rotate_half_in_place(a, b, cos + begin, sin + begin, m);
        narrow(a, out + pair, m);
        narrow(b, out + hi, m);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Threads

// Elements (of any storage type) below which a worker thread costs more than it saves:
// starting and joining a std::thread takes ~10-50 us, in which one core moves ~1 MiB.
inline constexpr Eigen::Index min_elements_per_thread = Eigen::Index(1) << 18;

// How many threads to use for `elements` elements when the caller allows `requested`.
inline int threads_for(Eigen::Index elements, int requested) {
  const Eigen::Index useful = std::max<Eigen::Index>(1, elements / min_elements_per_thread);
  return static_cast<int>(std::min<Eigen::Index>(std::max(requested, 1), useful));
}

// Calls body(begin, end) on `threads` contiguous parts of [0, count): parts 1.. on new threads,
// part 0 on the calling thread. body must not throw. If a thread cannot be started, its part
// runs on the calling thread.
template <class Body>
void parallel_for(Eigen::Index count, int threads, const Body& body) {
  threads = static_cast<int>(std::min<Eigen::Index>(std::max(threads, 1), std::max<Eigen::Index>(count, 1)));
  if (threads == 1) {
    body(Eigen::Index(0), count);
    return;
  }
  const auto part_begin = [&](int part) { return count * part / threads; };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  for (int part = 1; part < threads; ++part) {
    try {
      workers.emplace_back([&body, begin = part_begin(part), end = part_begin(part + 1)] {
        body(begin, end);
      });
    } catch (...) {  // std::system_error: no thread; do the part here
      body(part_begin(part), part_begin(part + 1));
    }
  }
  body(part_begin(0), part_begin(1));
  for (auto& worker : workers) worker.join();
}

}  // namespace detail
}  // namespace posemb
