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
// Highway would add a build dependency to a header-only library. The only intrinsics are the
// F16C float <-> half conversions, which compilers do not generate from scalar code.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__F16C__)
#include <immintrin.h>
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
// (pi/2 in three parts, Cody-Waite), then Taylor polynomials of sin y and cos y, then the
// quadrant: cos r = {c, -s, -c, s}[q mod 4], sin r = {s, c, -s, -c}[q mod 4].
// Degree: for float output, sin to y^11 and cos to y^12 (truncation <= 7e-12 relative, far
// below a float ulp, so the result is within 1 float ulp of the correctly rounded value; the
// benchmark measures 0-1 ulp over 131072 positions x 64 frequencies); for double output, sin
// to y^17 and cos to y^16 (truncation <= 1e-19, results within a few double ulps).
template <class C>
inline void rope_cos_sin_vectorized(const double* __restrict inv_freq, std::int64_t position,
                                    double scale, Eigen::Index n, C* __restrict cos_out,
                                    C* __restrict sin_out) {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "C is float or double");
  constexpr bool full = std::is_same_v<C, double>;
  constexpr double two_pi = 0x1.921fb54442d18p+2;      // double nearest 2 pi
  constexpr double inv_two_pi = 0x1.45f306dc9c883p-3;  // 1 / (2 pi)
  constexpr double two_over_pi = 0x1.45f306dc9c883p-1;
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
    const double q = std::nearbyint(r * two_over_pi);
    double y = std::fma(-q, pio2_1, r);
    y = std::fma(-q, pio2_2, y);
    if constexpr (full) y = std::fma(-q, pio2_3, y);
#else
    const double r = ((x - k * two_pi_1) - k * two_pi_2) - k * two_pi_3;
    const double q = std::nearbyint(r * two_over_pi);
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
    } else {
      ps = -1.0 / 39916800.0;  // -1/11!
      pc = 1.0 / 479001600.0;  // 1/12!
    }
    ps = ps * z + 1.0 / 362880.0;
    ps = ps * z - 1.0 / 5040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z - 1.0 / 6.0;
    const double s = y + y * z * ps;
    pc = pc * z - 1.0 / 3628800.0;
    pc = pc * z + 1.0 / 40320.0;
    pc = pc * z - 1.0 / 720.0;
    pc = pc * z + 1.0 / 24.0;
    pc = pc * z - 0.5;
    const double c = 1.0 + z * pc;
    const double cos_r = q == 0 ? c : q == 1 ? -s : q == -1 ? s : -c;
    const double sin_r = q == 0 ? s : q == 1 ? c : q == -1 ? -c : -s;
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
// Half-precision arrays to and from float (round to nearest even on the way back),
// bit-identical to static_cast.

inline void widen(const Eigen::bfloat16* __restrict in, float* __restrict out, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) out[i] = load_lane(in[i]);
}

inline void narrow(const float* __restrict in, Eigen::bfloat16* __restrict out, Eigen::Index n) {
  for (Eigen::Index i = 0; i < n; ++i) out[i] = store_lane<Eigen::bfloat16>(in[i]);
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
// One contiguous head vector, pairs [pair_begin, pair_end) of rotary_dim, either pairing.
// in, out: [head_dim] (in == out: in place); cos, sin: [pair_end - pair_begin].

template <class T, class C>
inline void rotate_contiguous(const T* in, T* out, const C* cos, const C* sin, int pair_begin,
                              int pair_end, int rotary_dim, bool interleaved) {
  static_assert(std::is_same_v<C, compute_t<T>>, "cos/sin must be in the arithmetic type of T");
  const Eigen::Index n = pair_end - pair_begin;
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
