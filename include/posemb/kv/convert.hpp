// The cache conversions of kv/storage.hpp with vectors, per instruction-set level
// (posemb/machine/isa.hpp), each bit-identical to its scalar reference (convert_row_reference):
//
//   portable  the scalar reference (what a default build's own code runs when the CPU, or
//             POSEMB_ISA=portable, asks for it)
//   avx2      Float16: F16C's vcvtps2ph, round to nearest even; BFloat16: the reference's integer
//             rounding (bits + 0x7FFF + bit 16), 8 lanes; Fp8E4m3: the reference's bit arithmetic
//             on 8 lanes (the same IEEE division by the scale, the same clamp, subnormals
//             through an exact * 2^9 and a rounding in the default mode; a power-of-two scale
//             multiplies by its exact reciprocal, the same quotient); Q8_0: a block's amax
//             as a vector max (exact, so any order gives the reference's value), d and 1 / d as
//             the reference forms them, q = x * id rounded half away from zero as
//             trunc(v + (0.5 - 2^-25) with v's sign) (round_half_away8); a block holding a NaN
//             or an infinity, or whose 1 / d overflows, is left to the reference (ggml's
//             MAX(amax, v) is order-dependent for a NaN)
//   avx512    Float16 and BFloat16 16 lanes at a time (BFloat16 with AVX512_BF16 where the CPU
//             has it; detail/half_io.hpp); Fp8E4m3 avx2's arithmetic on 16 lanes with masks; Q8_0
//             four blocks at a time: their d and 1 / d in one vector (the same divisions), q on
//             16 lanes; a group holding a block for the reference goes block by block as at avx2
//   neon      Float16: NEON's fcvtn, round to nearest even; BFloat16: the reference's integer
//             rounding, 8 lanes (both detail/half_io.hpp); Fp8E4m3: avx2's arithmetic on 4
//             lanes, 16 codes a step (subnormals rounded by fcvtns, nearest even); Q8_0: a
//             block at a time as at avx2, amax by umaxv, q by fcvtas (round half away from
//             zero, roundf's rounding); the same blocks are left to the reference
//
// Each vector loop converts the first multiple of its width; the rest goes through the
// reference, so a row of any length is the reference's bytes.
#pragma once

#include <Eigen/Core>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "posemb/detail/half_io.hpp"
#include "posemb/kv/storage.hpp"
#include "posemb/machine/isa.hpp"

// GCC 12 reports the _mm512_undefined_* operand inside AVX-512 intrinsics (min, shifts,
// conversions) as maybe uninitialized where they are inlined: a false positive of GCC 12.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace posemb {
namespace detail {

// 1 / scale when scale is a power of two whose reciprocal is a normal float (vLLM's default
// scale 1.0): x * (1 / scale) is then the exact quotient rounded once, x / scale bit for bit,
// without the division's cost. 0 otherwise.
inline float exact_reciprocal(float scale) {
  int exponent = 0;
  const float mantissa = std::frexp(scale, &exponent);  // scale = mantissa * 2^exponent
  if (mantissa != 0.5f || exponent - 1 > 126 || exponent - 1 < -126) return 0.0f;
  return std::ldexp(1.0f, 1 - exponent);
}

#if POSEMB_ISA_DISPATCH
// 32-bit lanes of four vectors, each in 0..255 (unsigned) or -128..127 (is_signed), as 32 bytes
// in order: a[0..7], b[0..7], c[0..7], d[0..7].
template <bool is_signed>
POSEMB_TARGET_AVX2 POSEMB_INLINE __m256i pack_bytes(__m256i a, __m256i b, __m256i c, __m256i d) {
  // The packs work within 128-bit halves: dwords come out as a0-3 b0-3 c0-3 d0-3 a4-7 ... d4-7.
  const __m256i ab = is_signed ? _mm256_packs_epi32(a, b) : _mm256_packus_epi32(a, b);
  const __m256i cd = is_signed ? _mm256_packs_epi32(c, d) : _mm256_packus_epi32(c, d);
  const __m256i bytes = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// bfloat16 bits of 8 floats in the low 16 bits of each 32-bit lane (store_lane's rounding).
POSEMB_TARGET_AVX2 POSEMB_INLINE __m256i bfloat16_bits8(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan =
      _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000)),
                      _mm256_set1_epi32(0x7FC0));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(rounded, nan, is_nan);
}

POSEMB_TARGET_AVX2 inline Eigen::Index bfloat16_avx2_lanes(const float* in, unsigned char* out,
                                                           Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = bfloat16_bits8(_mm256_loadu_ps(in + i));
    const __m256i hi = bfloat16_bits8(_mm256_loadu_ps(in + i + 8));
    // packus within halves: lo0-3 hi0-3 | lo4-7 hi4-7, then the quadwords in order.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), words);
  }
  return i;
}

// fp8_e4m3_bits(x / scale) of 8 floats, each in the low byte of its 32-bit lane; x * reciprocal
// instead of the division when reciprocal (exact_reciprocal) is not 0.
POSEMB_TARGET_AVX2 POSEMB_INLINE __m256i fp8_e4m3_bits8(__m256 x, __m256 scale, __m256 reciprocal,
                                                        bool multiply) {
  const __m256 quotient = multiply ? _mm256_mul_ps(x, reciprocal) : _mm256_div_ps(x, scale);
  const __m256i bits = _mm256_castps_si256(quotient);
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
  const __m256 a = _mm256_min_ps(_mm256_castsi256_ps(magnitude), _mm256_set1_ps(fp8_e4m3_max));
  // Subnormal codes: a * 2^9 rounded in the default mode (nearest even), as std::nearbyint.
  const __m256i subnormal = _mm256_cvtps_epi32(_mm256_mul_ps(a, _mm256_set1_ps(512.0f)));
  const __m256i is_subnormal =
      _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(0x1p-6f), _CMP_LT_OQ));
  __m256i normal = _mm256_castps_si256(a);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(normal, 20), _mm256_set1_epi32(1));
  normal = _mm256_add_epi32(_mm256_add_epi32(normal, _mm256_set1_epi32(0x7FFFF)), lsb);
  normal = _mm256_sub_epi32(_mm256_srli_epi32(normal, 20), _mm256_set1_epi32(120 << 3));
  __m256i code = _mm256_blendv_epi8(normal, subnormal, is_subnormal);
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32(0x7F), is_nan);
  return _mm256_or_si256(code, sign);
}

POSEMB_TARGET_AVX2 inline Eigen::Index fp8_e4m3_avx2_lanes(const float* in, float scale,
                                                           unsigned char* out, Eigen::Index n) {
  const float reciprocal = exact_reciprocal(scale);
  const bool multiply = reciprocal != 0.0f;
  const __m256 s = _mm256_set1_ps(scale), r = _mm256_set1_ps(reciprocal);
  Eigen::Index i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i bytes =
        pack_bytes<false>(fp8_e4m3_bits8(_mm256_loadu_ps(in + i), s, r, multiply),
                          fp8_e4m3_bits8(_mm256_loadu_ps(in + i + 8), s, r, multiply),
                          fp8_e4m3_bits8(_mm256_loadu_ps(in + i + 16), s, r, multiply),
                          fp8_e4m3_bits8(_mm256_loadu_ps(in + i + 24), s, r, multiply));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), bytes);
  }
  for (; i + 8 <= n; i += 8) {
    alignas(32) std::int32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                       fp8_e4m3_bits8(_mm256_loadu_ps(in + i), s, r, multiply));
    for (int k = 0; k < 8; ++k) out[i + k] = static_cast<unsigned char>(lanes[k]);
  }
  return i;
}

// fp8_e4m3_bits8 on 16 lanes with masks, each code in its 32-bit lane: the same operations, the
// exponent's rebias folded into the rounding's addend (normal codes only, whose bits are at least
// 121 << 23, so the integer sum does not wrap). Multiply: x * reciprocal instead of x / scale.
template <bool multiply>
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i fp8_e4m3_bits16(__m512 x, __m512 scale,
                                                           __m512 reciprocal) {
  const __m512 quotient = multiply ? _mm512_mul_ps(x, reciprocal) : _mm512_div_ps(x, scale);
  const __m512i bits = _mm512_castps_si512(quotient);
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7FFFFFFF));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7F800000));
  const __m512 a = _mm512_min_ps(_mm512_castsi512_ps(magnitude), _mm512_set1_ps(fp8_e4m3_max));
  const __mmask16 is_subnormal = _mm512_cmp_ps_mask(a, _mm512_set1_ps(0x1p-6f), _CMP_LT_OQ);
  const __m512i subnormal = _mm512_cvtps_epi32(_mm512_mul_ps(a, _mm512_set1_ps(512.0f)));
  const __m512i normal_bits = _mm512_castps_si512(a);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(normal_bits, 20), _mm512_set1_epi32(1));
  const __m512i normal = _mm512_srli_epi32(
      _mm512_add_epi32(_mm512_add_epi32(normal_bits, _mm512_set1_epi32(0x7FFFF - (960 << 20))),
                       lsb),
      20);
  __m512i code = _mm512_mask_mov_epi32(normal, is_subnormal, subnormal);
  code = _mm512_mask_mov_epi32(code, is_nan, _mm512_set1_epi32(0x7F));
  const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
  return _mm512_or_si512(code, sign);
}

template <bool multiply>
POSEMB_TARGET_AVX512 POSEMB_INLINE Eigen::Index fp8_e4m3_avx512_run(const float* in, float scale,
                                                                    float reciprocal,
                                                                    unsigned char* out,
                                                                    Eigen::Index n) {
  const __m512 s = _mm512_set1_ps(scale), r = _mm512_set1_ps(reciprocal);
  // 64 codes by two packs within 128-bit lanes (lane k: values 4k .. 4k + 3 of each vector),
  // then the dwords in order; the rest 16 at a time.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  Eigen::Index i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i code[4];
    for (int k = 0; k < 4; ++k) {
      code[k] = fp8_e4m3_bits16<multiply>(_mm512_loadu_ps(in + i + 16 * k), s, r);
    }
    const __m512i bytes = _mm512_packus_epi16(_mm512_packus_epi32(code[0], code[1]),
                                              _mm512_packus_epi32(code[2], code[3]));
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi32(order, bytes));
  }
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + i),
        _mm512_cvtepi32_epi8(fp8_e4m3_bits16<multiply>(_mm512_loadu_ps(in + i), s, r)));
  }
  return i;
}

POSEMB_TARGET_AVX512 inline Eigen::Index fp8_e4m3_avx512_lanes(const float* in, float scale,
                                                               unsigned char* out, Eigen::Index n) {
  const float reciprocal = exact_reciprocal(scale);
  return reciprocal != 0.0f ? fp8_e4m3_avx512_run<true>(in, scale, reciprocal, out, n)
                            : fp8_e4m3_avx512_run<false>(in, scale, reciprocal, out, n);
}

// float16 bits of 16 floats at a time (vcvtps2ph on 512 bits: F16C's rounding, nearest even).
POSEMB_TARGET_AVX512 inline Eigen::Index float16_avx512_lanes(const float* in, unsigned char* out,
                                                              Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + 16 <= n; i += 16) {
    // maskz with every lane: _mm512_cvtps_ph's macro form passes its mask as int -1.
    const __m256i h =
        _mm512_maskz_cvtps_ph(0xFFFF, _mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), h);
  }
  return i;
}

// q = round_half_away(v) of 8 floats (|v| < 2^23, no NaN) as int32 lanes: trunc(v + (0.5 - 2^-25)
// with v's sign). The sum rounds up to the next integer exactly when v's fraction is at least
// one half (0.5 - 2^-25 is the float below 0.5; with a fraction of 0.5 - ulp(v) the sum stays
// below the integer), so it is roundf's result with two operations fewer than the reference's
// trunc and compare.
POSEMB_TARGET_AVX2 POSEMB_INLINE __m256i round_half_away8(__m256 v) {
  const __m256 sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
  const __m256 half_below = _mm256_or_ps(sign, _mm256_set1_ps(0x1.fffffep-2f));
  return _mm256_cvttps_epi32(_mm256_add_ps(v, half_below));
}

// One block_q8_0 of x [32] into out [34] as quantize_q8_0_block; false (nothing written) for a
// block the reference must do (a NaN or infinity, or 1 / d not finite). amax is the largest
// magnitude's bit pattern as an integer (for floats >= 0 the integer order is the float order;
// every NaN and infinity is at least 0x7F800000).
POSEMB_TARGET_AVX2 POSEMB_INLINE bool quantize_q8_0_block_avx2(const float* x, unsigned char* out) {
  __m256 v[4];
  const __m256i magnitude_mask = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i amax = _mm256_setzero_si256();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    amax = _mm256_max_epi32(amax, _mm256_and_si256(_mm256_castps_si256(v[k]), magnitude_mask));
  }
  __m128i m = _mm_max_epi32(_mm256_castsi256_si128(amax), _mm256_extracti128_si256(amax, 1));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0x4E));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  const std::int32_t largest_bits = _mm_cvtsi128_si32(m);
  if (largest_bits >= 0x7F800000) return false;
  float largest = 0.0f;
  std::memcpy(&largest, &largest_bits, sizeof largest);
  const float d = largest / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (!(id <= FLT_MAX)) return false;
  const std::uint16_t scale = static_cast<std::uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(d), _MM_FROUND_TO_NEAREST_INT), 0));
  std::memcpy(out, &scale, 2);
  const __m256 ids = _mm256_set1_ps(id);
  const __m256i q = pack_bytes<true>(
      round_half_away8(_mm256_mul_ps(v[0], ids)), round_half_away8(_mm256_mul_ps(v[1], ids)),
      round_half_away8(_mm256_mul_ps(v[2], ids)), round_half_away8(_mm256_mul_ps(v[3], ids)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2), q);
  return true;
}

POSEMB_TARGET_AVX2 inline void q8_0_avx2(const float* in, Eigen::Index n, unsigned char* out) {
  for (Eigen::Index i = 0; i < n; i += q8_0_block_values) {
    unsigned char* block = out + i / q8_0_block_values * q8_0_block_bytes;
    if (!quantize_q8_0_block_avx2(in + i, block)) quantize_q8_0_block(in + i, block);
  }
}
// round_half_away8 on 16 lanes.
POSEMB_TARGET_AVX512 POSEMB_INLINE __m512i round_half_away16(__m512 v) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
  const __m512i half_below =
      _mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(0x1.fffffep-2f)));
  return _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_castsi512_ps(half_below)));
}

// Four block_q8_0 of x [128] into out [4 * 34], each as quantize_q8_0_block_avx2: the four d and
// 1 / d formed in one vector (the same IEEE divisions, a block's 1 / d only where d != 0), each
// q by 16 lanes (|q| <= 127, so the truncation to a byte is the saturating pack's value). false
// (nothing written) when a block must go to the reference.
POSEMB_TARGET_AVX512 POSEMB_INLINE bool quantize_q8_0_4blocks_avx512(const float* x,
                                                                     unsigned char* out) {
  __m512 v[8];
  alignas(16) std::int32_t largest[4];
  const __m512i magnitude_mask = _mm512_set1_epi32(0x7FFFFFFF);
  for (int b = 0; b < 4; ++b) {
    v[2 * b] = _mm512_loadu_ps(x + 32 * b);
    v[2 * b + 1] = _mm512_loadu_ps(x + 32 * b + 16);
    largest[b] = _mm512_reduce_max_epi32(
        _mm512_max_epi32(_mm512_and_si512(_mm512_castps_si512(v[2 * b]), magnitude_mask),
                         _mm512_and_si512(_mm512_castps_si512(v[2 * b + 1]), magnitude_mask)));
  }
  const __m128i bits = _mm_load_si128(reinterpret_cast<const __m128i*>(largest));
  if (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(bits, _mm_set1_epi32(0x7F7FFFFF))))) {
    return false;  // a NaN or an infinity
  }
  const __m128 d = _mm_div_ps(_mm_castsi128_ps(bits), _mm_set1_ps(127.0f));
  const __m128 nonzero = _mm_cmpneq_ps(d, _mm_setzero_ps());
  const __m128 divisor = _mm_blendv_ps(_mm_set1_ps(1.0f), d, nonzero);
  const __m128 id = _mm_and_ps(_mm_div_ps(_mm_set1_ps(1.0f), divisor), nonzero);
  if (_mm_movemask_ps(_mm_cmp_ps(id, _mm_set1_ps(FLT_MAX), _CMP_NLE_UQ))) return false;
  alignas(16) std::uint16_t scales[8];
  _mm_store_si128(reinterpret_cast<__m128i*>(scales), _mm_cvtps_ph(d, _MM_FROUND_TO_NEAREST_INT));
  alignas(16) float ids[4];
  _mm_store_ps(ids, id);
  for (int b = 0; b < 4; ++b) {
    unsigned char* block = out + b * q8_0_block_bytes;
    std::memcpy(block, &scales[b], 2);
    const __m512 idb = _mm512_set1_ps(ids[b]);
    for (int half = 0; half < 2; ++half) {
      const __m512i q = round_half_away16(_mm512_mul_ps(v[2 * b + half], idb));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(block + 2 + 16 * half), _mm512_cvtepi32_epi8(q));
    }
  }
  return true;
}

POSEMB_TARGET_AVX512 inline void q8_0_avx512(const float* in, Eigen::Index n, unsigned char* out) {
  constexpr Eigen::Index group = 4 * q8_0_block_values;
  Eigen::Index i = 0;
  for (; i + group <= n; i += group) {
    unsigned char* blocks = out + i / q8_0_block_values * q8_0_block_bytes;
    if (!quantize_q8_0_4blocks_avx512(in + i, blocks)) q8_0_avx2(in + i, group, blocks);
  }
  q8_0_avx2(in + i, n - i, out + i / q8_0_block_values * q8_0_block_bytes);
}
#endif  // POSEMB_ISA_DISPATCH

#if POSEMB_ISA_NEON
// fp8_e4m3_bits8's arithmetic on 4 lanes (level neon), each code in the low byte of its 32-bit
// lane: the subnormal codes a * 2^9 rounded to nearest even (fcvtns, as std::nearbyint in the
// default mode), the exponent's rebias folded into the rounding's addend as at avx512. A NaN
// lane's min and rounding are garbage, replaced by 0x7F. Multiply: x * reciprocal instead of
// x / scale (exact_reciprocal).
template <bool multiply>
inline uint32x4_t fp8_e4m3_bits4(float32x4_t x, float32x4_t scale, float32x4_t reciprocal) {
  const float32x4_t quotient = multiply ? vmulq_f32(x, reciprocal) : vdivq_f32(x, scale);
  const uint32x4_t bits = vreinterpretq_u32_f32(quotient);
  const uint32x4_t magnitude = vandq_u32(bits, vdupq_n_u32(0x7FFFFFFF));
  const uint32x4_t is_nan = vcgtq_u32(magnitude, vdupq_n_u32(0x7F800000));
  const float32x4_t a = vminq_f32(vreinterpretq_f32_u32(magnitude), vdupq_n_f32(fp8_e4m3_max));
  const uint32x4_t is_subnormal = vcltq_f32(a, vdupq_n_f32(0x1p-6f));
  const uint32x4_t subnormal =
      vreinterpretq_u32_s32(vcvtnq_s32_f32(vmulq_f32(a, vdupq_n_f32(512.0f))));
  const uint32x4_t normal_bits = vreinterpretq_u32_f32(a);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(normal_bits, 20), vdupq_n_u32(1));
  const uint32x4_t normal =
      vshrq_n_u32(vaddq_u32(vaddq_u32(normal_bits, vdupq_n_u32(0x7FFFFu - (960u << 20))), lsb), 20);
  uint32x4_t code = vbslq_u32(is_subnormal, subnormal, normal);
  code = vbslq_u32(is_nan, vdupq_n_u32(0x7F), code);
  return vorrq_u32(code, vandq_u32(vshrq_n_u32(bits, 24), vdupq_n_u32(0x80)));
}

// 16 codes at a time (four vectors narrowed to bytes); returns how many it did.
template <bool multiply>
inline Eigen::Index fp8_e4m3_neon_run(const float* in, float scale, float reciprocal,
                                      unsigned char* out, Eigen::Index n) {
  const float32x4_t s = vdupq_n_f32(scale), r = vdupq_n_f32(reciprocal);
  Eigen::Index i = 0;
  for (; i + 16 <= n; i += 16) {
    uint16x4_t half[4];
    for (int k = 0; k < 4; ++k) {
      half[k] = vmovn_u32(fp8_e4m3_bits4<multiply>(vld1q_f32(in + i + 4 * k), s, r));
    }
    const uint8x8_t low = vmovn_u16(vcombine_u16(half[0], half[1]));
    const uint8x8_t high = vmovn_u16(vcombine_u16(half[2], half[3]));
    vst1q_u8(out + i, vcombine_u8(low, high));
  }
  return i;
}

inline Eigen::Index fp8_e4m3_neon_lanes(const float* in, float scale, unsigned char* out,
                                        Eigen::Index n) {
  const float reciprocal = exact_reciprocal(scale);
  return reciprocal != 0.0f ? fp8_e4m3_neon_run<true>(in, scale, reciprocal, out, n)
                            : fp8_e4m3_neon_run<false>(in, scale, reciprocal, out, n);
}

// One block_q8_0 as quantize_q8_0_block_avx2 on 8 vectors of 4: amax as the largest magnitude's
// bits (umaxv), d and 1 / d as the reference forms them, q = x * id rounded to nearest with ties
// away from zero (fcvtas: roundf's rounding), narrowed to bytes (|q| <= 127). false (nothing
// written) for a block the reference must do (a NaN or infinity, or 1 / d not finite).
inline bool quantize_q8_0_block_neon(const float* x, unsigned char* out) {
  float32x4_t v[8];
  uint32x4_t amax = vdupq_n_u32(0);
  for (int k = 0; k < 8; ++k) {
    v[k] = vld1q_f32(x + 4 * k);
    amax = vmaxq_u32(amax, vandq_u32(vreinterpretq_u32_f32(v[k]), vdupq_n_u32(0x7FFFFFFF)));
  }
  const std::uint32_t largest_bits = vmaxvq_u32(amax);
  if (largest_bits >= 0x7F800000u) return false;
  float largest = 0.0f;
  std::memcpy(&largest, &largest_bits, sizeof largest);
  const float d = largest / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (!(id <= FLT_MAX)) return false;
  store_bits(Eigen::half(d), out);
  const float32x4_t ids = vdupq_n_f32(id);
  int16x4_t q[8];
  for (int k = 0; k < 8; ++k) q[k] = vmovn_s32(vcvtaq_s32_f32(vmulq_f32(v[k], ids)));
  for (int k = 0; k < 8; k += 4) {
    const int8x8_t low = vmovn_s16(vcombine_s16(q[k], q[k + 1]));
    const int8x8_t high = vmovn_s16(vcombine_s16(q[k + 2], q[k + 3]));
    vst1q_s8(reinterpret_cast<std::int8_t*>(out + 2 + 4 * k), vcombine_s8(low, high));
  }
  return true;
}

inline void q8_0_neon(const float* in, Eigen::Index n, unsigned char* out) {
  for (Eigen::Index i = 0; i < n; i += q8_0_block_values) {
    unsigned char* block = out + i / q8_0_block_values * q8_0_block_bytes;
    if (!quantize_q8_0_block_neon(in + i, block)) quantize_q8_0_block(in + i, block);
  }
}
#endif  // POSEMB_ISA_NEON

// One head vector in [n] into `out` (cache_row_bytes(dtype, n) bytes) of `dtype` by the code
// of level L; the reference's bytes.
template <IsaLevel L>
POSEMB_INLINE void convert_row_level(const float* in, Eigen::Index n, CacheDtype dtype, float scale,
                                     unsigned char* out) {
#if POSEMB_ISA_DISPATCH
  if constexpr (effective_level_v<L> != IsaLevel::Portable) {
    switch (dtype) {
      case CacheDtype::Float16: {
        // Eigen::half and Eigen::bfloat16 are two bytes with no alignment beyond them.
        Eigen::Index done = 0;
        if constexpr (effective_level_v<L> == IsaLevel::Avx512) {
          done = float16_avx512_lanes(in, out, n);
        }
        done +=
            narrow_f16c_lanes(in + done, reinterpret_cast<Eigen::half*>(out + 2 * done), n - done);
        return convert_row_reference(in + done, n - done, dtype, scale, out + 2 * done);
      }
      case CacheDtype::BFloat16: {
        Eigen::Index done = 0;
        if constexpr (effective_level_v<L> == IsaLevel::Avx512) {
          done = narrow_avx512_lanes(in, reinterpret_cast<Eigen::bfloat16*>(out), n);
        } else {
          done = bfloat16_avx2_lanes(in, out, n);
        }
        return convert_row_reference(in + done, n - done, dtype, scale, out + 2 * done);
      }
      case CacheDtype::Fp8E4m3: {
        Eigen::Index done = 0;
        if constexpr (effective_level_v<L> == IsaLevel::Avx512) {
          done = fp8_e4m3_avx512_lanes(in, scale, out, n);
        }
        done += fp8_e4m3_avx2_lanes(in + done, scale, out + done, n - done);
        return convert_row_reference(in + done, n - done, dtype, scale, out + done);
      }
      case CacheDtype::Q8_0:
        if constexpr (effective_level_v<L> == IsaLevel::Avx512) return q8_0_avx512(in, n, out);
        return q8_0_avx2(in, n, out);
      default:
        break;
    }
  }
#elif POSEMB_ISA_NEON
  switch (dtype) {
    case CacheDtype::Float16: {
      const Eigen::Index done = narrow_neon_lanes(in, reinterpret_cast<Eigen::half*>(out), n);
      return convert_row_reference(in + done, n - done, dtype, scale, out + 2 * done);
    }
    case CacheDtype::BFloat16: {
      const Eigen::Index done = narrow_neon_lanes(in, reinterpret_cast<Eigen::bfloat16*>(out), n);
      return convert_row_reference(in + done, n - done, dtype, scale, out + 2 * done);
    }
    case CacheDtype::Fp8E4m3: {
      const Eigen::Index done = fp8_e4m3_neon_lanes(in, scale, out, n);
      return convert_row_reference(in + done, n - done, dtype, scale, out + done);
    }
    case CacheDtype::Q8_0:
      return q8_0_neon(in, n, out);
    default:
      break;
  }
#endif
  convert_row_reference(in, n, dtype, scale, out);
}

// `rows` head vectors of n values by the code of level L: row r from in + r * in_stride into
// out + r * out_stride (bytes).
template <IsaLevel L>
POSEMB_INLINE void convert_rows_level(const float* in, Eigen::Index in_stride, unsigned char* out,
                                      Eigen::Index out_stride, Eigen::Index rows, Eigen::Index n,
                                      CacheDtype dtype, float scale) {
  for (Eigen::Index r = 0; r < rows; ++r) {
    convert_row_level<L>(in + r * in_stride, n, dtype, scale, out + r * out_stride);
  }
}

#if POSEMB_ISA_DISPATCH
POSEMB_TARGET_AVX2 inline void convert_rows_avx2(const float* in, Eigen::Index in_stride,
                                                 unsigned char* out, Eigen::Index out_stride,
                                                 Eigen::Index rows, Eigen::Index n,
                                                 CacheDtype dtype, float scale) {
  convert_rows_level<IsaLevel::Avx2>(in, in_stride, out, out_stride, rows, n, dtype, scale);
}
POSEMB_TARGET_AVX512 inline void convert_rows_avx512(const float* in, Eigen::Index in_stride,
                                                     unsigned char* out, Eigen::Index out_stride,
                                                     Eigen::Index rows, Eigen::Index n,
                                                     CacheDtype dtype, float scale) {
  convert_rows_level<IsaLevel::Avx512>(in, in_stride, out, out_stride, rows, n, dtype, scale);
}
#endif

// `rows` head vectors at the active level, one dispatch for all (the reference's bytes at every
// level): row r from in + r * in_stride ([n] floats) into out + r * out_stride
// (cache_row_bytes(dtype, n) bytes).
inline void convert_rows(const float* in, Eigen::Index in_stride, unsigned char* out,
                         Eigen::Index out_stride, Eigen::Index rows, Eigen::Index n,
                         CacheDtype dtype, float scale) {
  if (dtype == CacheDtype::Float32) {
    for (Eigen::Index r = 0; r < rows; ++r) {
      std::memcpy(out + r * out_stride, in + r * in_stride,
                  static_cast<std::size_t>(n) * sizeof(float));
    }
    return;
  }
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return convert_rows_avx512(in, in_stride, out, out_stride, rows, n, dtype, scale);
      case IsaLevel::Avx2:
        return convert_rows_avx2(in, in_stride, out, out_stride, rows, n, dtype, scale);
      default:
        break;
    }
  }
#endif
  convert_rows_level<IsaLevel::Portable>(in, in_stride, out, out_stride, rows, n, dtype, scale);
}

// One head vector at the active level. in: [n]; out: cache_row_bytes(dtype, n) bytes.
inline void convert_row(const float* in, Eigen::Index n, CacheDtype dtype, float scale,
                        unsigned char* out) {
  convert_rows(in, 0, out, 0, 1, n, dtype, scale);
}

}  // namespace detail
}  // namespace posemb

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
