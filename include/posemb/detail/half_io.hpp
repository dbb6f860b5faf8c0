// Half-precision storage to and from float: one lane at a time (bit arithmetic for bfloat16),
// eight at a time with F16C for Eigen::half (level avx2), sixteen at a time with AVX-512 for
// both (level avx512), eight at a time with NEON for both (level neon, aarch64; fcvtl / fcvtn
// for Eigen::half, the integer rounding and a widening shift for bfloat16;
// posemb/machine/isa.hpp). Every path is bit-identical to static_cast (round to nearest even on
// the way back).
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posemb/machine/isa.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Storage lanes: a value of storage type T loaded into its arithmetic type, and stored back
// rounded once (round to nearest even), bit-identical to static_cast. float and double are the
// identity; bfloat16 is bit arithmetic the compiler vectorizes; Eigen::half goes through
// widen/narrow below (F16C), since its scalar conversion does not vectorize.

POSEMB_INLINE float load_lane(float v) { return v; }
POSEMB_INLINE double load_lane(double v) { return v; }
// bfloat16 is the top half of a float32.
POSEMB_INLINE float load_lane(Eigen::bfloat16 v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(Eigen::numext::bit_cast<std::uint16_t>(v));
  return Eigen::numext::bit_cast<float>(bits << 16);
}

template <class T>
POSEMB_INLINE T store_lane(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    // Round to nearest even on bit 16 (as Eigen's float -> bfloat16); a NaN becomes the quiet
    // NaN of its sign instead of rounding into an infinity.
    const std::uint32_t bits = Eigen::numext::bit_cast<std::uint32_t>(v);
    const std::uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    const std::uint32_t nan = ((bits >> 16) & 0x8000u) | 0x7FC0u;
    const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    return Eigen::numext::bit_cast<Eigen::bfloat16>(
        static_cast<std::uint16_t>(is_nan ? nan : rounded));
  } else {
    return v;
  }
}

// ---------------------------------------------------------------------------------------------
// AVX-512 (F, BW for 16-bit lanes, DQ for vfpclassps): 16 lanes of half-precision storage to
// and from 16 floats, bit-identical to static_cast (round to nearest even on the way back).
// Compiled for level avx512 only.

#if POSEMB_ISA_DISPATCH
// Conversions use the zero-masking forms with every lane selected (the same instructions): the
// plain forms pass an undefined register that GCC 12 reports as uninitialized (GCC bug 105593).
inline constexpr __mmask16 all16 = 0xFFFF;

POSEMB_TARGET_AVX512 POSEMB_INLINE __m512 load16(const Eigen::half* p) {
  return _mm512_maskz_cvtph_ps(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// bfloat16 is the top half of a float32.
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512 load16(const Eigen::bfloat16* p) {
  const __m512i bits =
      _mm512_maskz_cvtepu16_epi32(all16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all16, bits, 16));
}

POSEMB_TARGET_AVX512 POSEMB_INLINE void store16(Eigen::half* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_maskz_cvtps_ph(all16, v, _MM_FROUND_TO_NEAREST_INT));
}

// Whether the level's bfloat16 rounding uses AVX512_BF16 (vcvtne2ps2bf16, vcvtneps2bf16): on
// when the CPU has it (checked once); the integer rounding otherwise. Bit-identical either way.
// Tests switch it off to check the integer rounding on such a CPU.
inline bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID leaf 7 sub-leaf 1, EAX bit 5: AVX512_BF16.
  return best_isa_level() == IsaLevel::Avx512 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) &&
         ((eax >> 5) & 1u) != 0;
}

inline std::atomic<bool>& avx512_bf16_enabled() {
  static std::atomic<bool> enabled{cpu_has_avx512_bf16()};
  return enabled;
}

// The BF16 conversions, as inline assembly so that the avx512 level's code can use them
// without the build targeting AVX512_BF16. Round to nearest even; NaN and subnormal inputs are
// left to the caller (below).
// 16 floats -> 16 bfloat16.
POSEMB_TARGET_AVX512 POSEMB_INLINE __m256i convert16_bf16(__m512 v) {
  __m256i result;
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(result) : "v"(v));
  return result;
}
// 32 floats -> 32 bfloat16: 16-bit lanes [bf16(low[0..15]), bf16(high[0..15])].
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i convert32_bf16(__m512 low, __m512 high) {
  __m512i result;
  __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(result) : "v"(high), "v"(low));
  return result;
}

// Lanes the fast bfloat16 rounding below does not handle as Eigen does (vfpclassps classes):
// NaN (Eigen returns the quiet NaN of the sign) and, with BF16 instructions, which treat them
// as zero, subnormal inputs. Vectors with such a lane (in practice rare: a NaN, or a nonzero
// value below 2^-126 in magnitude) are rounded one lane at a time by store_lane.
POSEMB_TARGET_AVX512 POSEMB_INLINE __mmask16 bfloat16_slow_lanes(__m512 v, bool bf16) {
  return bf16 ? _mm512_fpclass_ps_mask(v, 0x01 | 0x80 | 0x20)  // QNaN, SNaN, subnormal
              : _mm512_fpclass_ps_mask(v, 0x01 | 0x80);        // QNaN, SNaN
}

// v rounded to bfloat16 one lane at a time; lane k of the result holds bfloat16(v[k]) in the
// bits [bits_at, bits_at + 16) of 32-bit lane k (the other bits are zero).
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i bfloat16_lanes_exact(__m512 v, int bits_at) {
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
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i bfloat16_rounded_high(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i lsb =
      _mm512_and_si512(_mm512_maskz_srli_epi32(all16, bits, 16), _mm512_set1_epi32(1));
  return _mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7FFF)), lsb);
}

// 16 floats -> 16 bfloat16 (their bits). bf16: use the BF16 instructions.
POSEMB_TARGET_AVX512 POSEMB_INLINE __m256i narrow16_bfloat16(__m512 v, bool bf16) {
  if (bfloat16_slow_lanes(v, bf16) != 0) {
    return _mm512_maskz_cvtepi32_epi16(all16, bfloat16_lanes_exact(v, 0));
  }
  if (bf16) return convert16_bf16(v);
  const __m512i rounded = _mm512_maskz_srli_epi32(all16, bfloat16_rounded_high(v), 16);
  return _mm512_maskz_cvtepi32_epi16(all16, rounded);
}

// 16 or 32 values of T from float (bf16: use the BF16 instructions for bfloat16; Eigen::half
// has one conversion): p[0..15] = first, p[16..31] = second.
POSEMB_TARGET_AVX512 POSEMB_INLINE void store16(Eigen::bfloat16* p, __m512 v, bool bf16) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), narrow16_bfloat16(v, bf16));
}
POSEMB_TARGET_AVX512 POSEMB_INLINE void store16(Eigen::half* p, __m512 v, bool) { store16(p, v); }
POSEMB_TARGET_AVX512 POSEMB_INLINE void store32(Eigen::half* p, __m512 first, __m512 second, bool) {
  store16(p, first);
  store16(p + 16, second);
}
POSEMB_TARGET_AVX512 POSEMB_INLINE void store32(Eigen::bfloat16* p, __m512 first, __m512 second,
                                                bool bf16) {
  if ((bfloat16_slow_lanes(first, bf16) | bfloat16_slow_lanes(second, bf16)) != 0) {
    store16(p, first, bf16);
    store16(p + 16, second, bf16);
    return;
  }
  if (bf16) {
    _mm512_storeu_si512(p, convert32_bf16(first, second));
    return;
  }
  // The top 16 bits of each 32-bit lane: odd 16-bit lanes of first, then of second.
  const __m512i high_halves =
      _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                       25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  _mm512_storeu_si512(p, _mm512_permutex2var_epi16(bfloat16_rounded_high(first), high_halves,
                                                   bfloat16_rounded_high(second)));
}

// 16 interleaved pairs: 32-bit lane k = bfloat16(x[k]) | bfloat16(y[k]) << 16, the memory image
// of (x[k], y[k]) as two bfloat16.
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i narrow16_bfloat16_pairs(__m512 x, __m512 y, bool bf16) {
  if ((bfloat16_slow_lanes(x, bf16) | bfloat16_slow_lanes(y, bf16)) != 0) {
    return _mm512_or_si512(bfloat16_lanes_exact(x, 0), bfloat16_lanes_exact(y, 16));
  }
  if (bf16) {
    // [bf16(x[0..15]), bf16(y[0..15])] as 16-bit lanes, then interleaved.
    const __m512i order =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, convert32_bf16(x, y));
  }
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
  return _mm512_or_si512(_mm512_maskz_srli_epi32(all16, bfloat16_rounded_high(x), 16),
                         _mm512_and_si512(bfloat16_rounded_high(y), high));
}
#endif  // POSEMB_ISA_DISPATCH

// ---------------------------------------------------------------------------------------------
// Half-precision arrays to and from float (round to nearest even on the way back),
// bit-identical to static_cast, by the code of level L. in, out: [n], no overlap.

#if POSEMB_ISA_DISPATCH
// The vector parts: each converts the first multiple of its width and returns how many it did.
POSEMB_TARGET_AVX512 inline Eigen::Index narrow_avx512_lanes(const float* in, Eigen::bfloat16* out,
                                                             Eigen::Index n) {
  const bool bf16 = avx512_bf16_enabled().load(std::memory_order_relaxed);
  Eigen::Index i = 0;
  for (; i + 16 <= n; i += 16) store16(out + i, _mm512_loadu_ps(in + i), bf16);
  return i;
}

POSEMB_TARGET_AVX2 inline Eigen::Index widen_f16c_lanes(const Eigen::half* in, float* out,
                                                        Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  return i;
}

POSEMB_TARGET_AVX2 inline Eigen::Index narrow_f16c_lanes(const float* in, Eigen::half* out,
                                                         Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  return i;
}
#endif

#if POSEMB_ISA_NEON
// NEON (level neon): 8 halves to 8 floats with fcvtl / fcvtl2 (exact), 8 floats to 8 halves
// with fcvtn / fcvtn2 (round to nearest even under the default FPCR, as static_cast). Eigen::half
// and float16_t share the IEEE binary16 layout.
inline Eigen::Index widen_neon_lanes(const Eigen::half* in, float* out, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x8_t h = vld1q_f16(reinterpret_cast<const float16_t*>(in + i));
    vst1q_f32(out + i, vcvt_f32_f16(vget_low_f16(h)));
    vst1q_f32(out + i + 4, vcvt_high_f32_f16(h));
  }
  return i;
}

inline Eigen::Index narrow_neon_lanes(const float* in, Eigen::half* out, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const float16x4_t low = vcvt_f16_f32(vld1q_f32(in + i));
    vst1q_f16(reinterpret_cast<float16_t*>(out + i), vcvt_high_f16_f32(low, vld1q_f32(in + i + 4)));
  }
  return i;
}

// bfloat16 bits of 4 floats: store_lane's integer rounding (bits + 0x7FFF + bit 16, the top 16
// bits kept by a narrowing shift), a NaN the quiet NaN of its sign.
inline uint16x4_t bfloat16_bits4_neon(float32x4_t v) {
  const uint32x4_t bits = vreinterpretq_u32_f32(v);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
  const uint32x4_t rounded = vaddq_u32(vaddq_u32(bits, vdupq_n_u32(0x7FFF)), lsb);
  const uint32x4_t nan =
      vorrq_u32(vandq_u32(bits, vdupq_n_u32(0x80000000u)), vdupq_n_u32(0x7FC00000u));
  const uint32x4_t is_nan =
      vcgtq_u32(vandq_u32(bits, vdupq_n_u32(0x7FFFFFFF)), vdupq_n_u32(0x7F800000));
  return vshrn_n_u32(vbslq_u32(is_nan, nan, rounded), 16);
}

// 8 floats to 8 bfloat16 (bfloat16_bits4_neon), 8 bfloat16 to 8 floats (each the top half of a
// float32: a widening shift by 16, exact).
inline Eigen::Index narrow_neon_lanes(const float* in, Eigen::bfloat16* out, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint16x8_t bits = vcombine_u16(bfloat16_bits4_neon(vld1q_f32(in + i)),
                                         bfloat16_bits4_neon(vld1q_f32(in + i + 4)));
    vst1q_u16(reinterpret_cast<std::uint16_t*>(out + i), bits);
  }
  return i;
}

inline Eigen::Index widen_neon_lanes(const Eigen::bfloat16* in, float* out, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint16x8_t bits = vld1q_u16(reinterpret_cast<const std::uint16_t*>(in + i));
    vst1q_f32(out + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(bits), 16)));
    vst1q_f32(out + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(bits, 16)));
  }
  return i;
}
#endif

// The vector part of the Eigen::half conversions at level L: how many of the first n it did.
template <IsaLevel L>
POSEMB_INLINE Eigen::Index widen_vector_lanes(const Eigen::half* in, float* out, Eigen::Index n) {
#if POSEMB_ISA_DISPATCH
  if constexpr (effective_level_v<L> != IsaLevel::Portable) return widen_f16c_lanes(in, out, n);
#elif POSEMB_ISA_NEON
  return widen_neon_lanes(in, out, n);
#endif
  (void)in, (void)out, (void)n;
  return 0;
}

template <IsaLevel L>
POSEMB_INLINE Eigen::Index narrow_vector_lanes(const float* in, Eigen::half* out, Eigen::Index n) {
#if POSEMB_ISA_DISPATCH
  if constexpr (effective_level_v<L> != IsaLevel::Portable) return narrow_f16c_lanes(in, out, n);
#elif POSEMB_ISA_NEON
  return narrow_neon_lanes(in, out, n);
#endif
  (void)in, (void)out, (void)n;
  return 0;
}

template <IsaLevel L>
POSEMB_INLINE void widen_level(const Eigen::bfloat16* __restrict in, float* __restrict out,
                               Eigen::Index n) {
  Eigen::Index i = 0;
#if POSEMB_ISA_NEON
  i = widen_neon_lanes(in, out, n);
#endif
  for (; i < n; ++i) out[i] = load_lane(in[i]);
}

template <IsaLevel L>
POSEMB_INLINE void narrow_level(const float* __restrict in, Eigen::bfloat16* __restrict out,
                                Eigen::Index n) {
  Eigen::Index i = 0;
#if POSEMB_ISA_DISPATCH
  if constexpr (effective_level_v<L> == IsaLevel::Avx512) i = narrow_avx512_lanes(in, out, n);
#elif POSEMB_ISA_NEON
  i = narrow_neon_lanes(in, out, n);
#endif
  for (; i < n; ++i) out[i] = store_lane<Eigen::bfloat16>(in[i]);
}

template <IsaLevel L>
POSEMB_INLINE void widen_level(const Eigen::half* in, float* out, Eigen::Index n) {
  Eigen::Index i = widen_vector_lanes<L>(in, out, n);
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

template <IsaLevel L>
POSEMB_INLINE void narrow_level(const float* in, Eigen::half* out, Eigen::Index n) {
  Eigen::Index i = narrow_vector_lanes<L>(in, out, n);
  for (; i < n; ++i) out[i] = static_cast<Eigen::half>(in[i]);
}

#if POSEMB_ISA_DISPATCH
template <class H>
POSEMB_TARGET_AVX2 void widen_avx2(const H* in, float* out, Eigen::Index n) {
  widen_level<IsaLevel::Avx2>(in, out, n);
}
template <class H>
POSEMB_TARGET_AVX512 void widen_avx512(const H* in, float* out, Eigen::Index n) {
  widen_level<IsaLevel::Avx512>(in, out, n);
}
template <class H>
POSEMB_TARGET_AVX2 void narrow_avx2(const float* in, H* out, Eigen::Index n) {
  narrow_level<IsaLevel::Avx2>(in, out, n);
}
template <class H>
POSEMB_TARGET_AVX512 void narrow_avx512(const float* in, H* out, Eigen::Index n) {
  narrow_level<IsaLevel::Avx512>(in, out, n);
}
#endif

// Half-precision H (Eigen::half, Eigen::bfloat16) to float at the active level. in, out: [n].
template <class H>
inline void widen(const H* in, float* out, Eigen::Index n) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return widen_avx512(in, out, n);
      case IsaLevel::Avx2:
        return widen_avx2(in, out, n);
      default:
        break;
    }
  }
#endif
  widen_level<IsaLevel::Portable>(in, out, n);
}

// float to half-precision H, round to nearest even, at the active level. in, out: [n].
template <class H>
inline void narrow(const float* in, H* out, Eigen::Index n) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return narrow_avx512(in, out, n);
      case IsaLevel::Avx2:
        return narrow_avx2(in, out, n);
      default:
        break;
    }
  }
#endif
  narrow_level<IsaLevel::Portable>(in, out, n);
}

}  // namespace detail
}  // namespace posemb
