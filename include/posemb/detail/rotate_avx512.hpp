// AVX-512 rotation for half-precision storage (Eigen::half, Eigen::bfloat16): 16 pairs per
// step, widened to float, rotated, rounded once: one pass, no staging buffers. Compiled for
// level avx512 (posemb/machine/isa.hpp) on x86-64 with GCC or clang.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "posemb/detail/half_io.hpp"
#include "posemb/machine/isa.hpp"

namespace posemb {
namespace detail {

// ---------------------------------------------------------------------------------------------
// AVX-512 rotation for half-precision storage T (Eigen::half, Eigen::bfloat16), 16 pairs per
// step, widened to float, rotated, rounded once: one pass, no staging buffers.

#if POSEMB_ISA_DISPATCH
// RotateHalf, pairs [0, 16 * floor(n / 16)) of (lo[i], hi[i]), 32 at a time while it can;
// returns how many were done.
// in_lo, in_hi, out_lo, out_hi: [n] (out == in: in place); cos, sin: [n].
template <class T>
POSEMB_TARGET_AVX512 POSEMB_INLINE Eigen::Index rotate_half_avx512(const T* in_lo, const T* in_hi,
                                                                   T* out_lo, T* out_hi,
                                                                   const float* cos,
                                                                   const float* sin, Eigen::Index n,
                                                                   bool bf16) {
  Eigen::Index i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 a0 = load16(in_lo + i), b0 = load16(in_hi + i);
    const __m512 a1 = load16(in_lo + i + 16), b1 = load16(in_hi + i + 16);
    const __m512 c0 = _mm512_loadu_ps(cos + i), s0 = _mm512_loadu_ps(sin + i);
    const __m512 c1 = _mm512_loadu_ps(cos + i + 16), s1 = _mm512_loadu_ps(sin + i + 16);
    store32(out_lo + i, _mm512_fmsub_ps(a0, c0, _mm512_mul_ps(b0, s0)),
            _mm512_fmsub_ps(a1, c1, _mm512_mul_ps(b1, s1)), bf16);
    store32(out_hi + i, _mm512_fmadd_ps(a0, s0, _mm512_mul_ps(b0, c0)),
            _mm512_fmadd_ps(a1, s1, _mm512_mul_ps(b1, c1)), bf16);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 a = load16(in_lo + i), b = load16(in_hi + i);
    const __m512 c = _mm512_loadu_ps(cos + i), s = _mm512_loadu_ps(sin + i);
    store16(out_lo + i, _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s)), bf16);
    store16(out_hi + i, _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c)), bf16);
  }
  return i;
}

// Interleaved, pairs [0, 16 * floor(n / 16)) of (x[2i], x[2i + 1]); returns how many were done.
// in, out: [2n] (out == in: in place); cos, sin: [n].
template <class T>
POSEMB_TARGET_AVX512 POSEMB_INLINE Eigen::Index rotate_interleaved_avx512(
    const T* in, T* out, const float* cos, const float* sin, Eigen::Index n, bool bf16) {
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
      _mm512_storeu_si512(out + 2 * i, narrow16_bfloat16_pairs(x, y, bf16));
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
      store16(out + 2 * i, _mm512_permutex2var_ps(x, first, y), bf16);
      store16(out + 2 * i + 16, _mm512_permutex2var_ps(x, second, y), bf16);
    }
  }
  return i;
}

// rotate_contiguous (detail/rotate.hpp) for half-precision T: the AVX-512 kernels, then the
// last n mod 16 pairs one at a time, with the same fused arithmetic. bf16: round bfloat16 with
// the BF16 instructions (detail/half_io.hpp).
template <class T>
POSEMB_TARGET_AVX512 POSEMB_INLINE void rotate_half_precision_avx512_kernel(
    const T* in, T* out, const float* cos, const float* sin, Eigen::Index pair_begin,
    Eigen::Index n, Eigen::Index rotary_dim, bool interleaved, bool bf16) {
  const Eigen::Index half = rotary_dim / 2;
  const Eigen::Index done =
      interleaved
          ? rotate_interleaved_avx512(in + 2 * pair_begin, out + 2 * pair_begin, cos, sin, n, bf16)
          : rotate_half_avx512(in + pair_begin, in + half + pair_begin, out + pair_begin,
                               out + half + pair_begin, cos, sin, n, bf16);
  for (Eigen::Index i = done; i < n; ++i) {
    const Eigen::Index ia = interleaved ? 2 * (pair_begin + i) : pair_begin + i;
    const Eigen::Index ib = interleaved ? ia + 1 : ia + half;
    const float a = static_cast<float>(in[ia]), b = static_cast<float>(in[ib]);
    out[ia] = static_cast<T>(std::fma(a, cos[i], -(b * sin[i])));
    out[ib] = static_cast<T>(std::fma(a, sin[i], b * cos[i]));
  }
}

// One head vector, as rotate_contiguous.
template <class T>
POSEMB_TARGET_AVX512 inline void rotate_half_precision_avx512(
    const T* in, T* out, const float* cos, const float* sin, Eigen::Index pair_begin,
    Eigen::Index n, Eigen::Index rotary_dim, bool interleaved) {
  rotate_half_precision_avx512_kernel(in, out, cos, sin, pair_begin, n, rotary_dim, interleaved,
                                      avx512_bf16_enabled().load(std::memory_order_relaxed));
}

// heads[0 .. count) (detail/rotate.hpp: HeadRotation) in one call, as rotate_heads.
template <class Heads>
POSEMB_TARGET_AVX512 inline void rotate_heads_half_precision_avx512(const Heads* heads, int count,
                                                                    Eigen::Index pair_begin,
                                                                    Eigen::Index n,
                                                                    Eigen::Index rotary_dim,
                                                                    bool interleaved) {
  const bool bf16 = avx512_bf16_enabled().load(std::memory_order_relaxed);
  for (int k = 0; k < count; ++k) {
    rotate_half_precision_avx512_kernel(heads[k].in, heads[k].out, heads[k].cos, heads[k].sin,
                                        pair_begin, n, rotary_dim, interleaved, bf16);
  }
}

// ---------------------------------------------------------------------------------------------
// Float head vectors rotated whole and written with streaming (non-temporal) stores straight
// from the registers (posemb/machine/streaming_stores.hpp), 16 pairs per step, with the arithmetic
// of the float kernels at levels with FMA (a cos - b sin = fmsub(a, cos, b sin), a sin + b cos =
// fmadd(a, sin, b cos)), so the bits are theirs. The caller fences.
POSEMB_TARGET_AVX512 POSEMB_INLINE void rotate_16_pairs(__m512 a, __m512 b, __m512 c, __m512 s,
                                                        __m512& x, __m512& y) {
  x = _mm512_fmsub_ps(a, c, _mm512_mul_ps(b, s));
  y = _mm512_fmadd_ps(a, s, _mm512_mul_ps(b, c));
}

// One head: in [2 * pairs], out [2 * pairs] 64-byte aligned, cos, sin [pairs]; pairs a multiple
// of 16. Every load of a step is issued before its streaming stores, two steps of 16 pairs at
// once where they can (rotate-half: one step measured 0.77 of a streaming copy, two 0.84-0.86,
// four no better; interleaved, [1, 2048, 32, 128] from a table: 0.89 with one, 0.91 with two,
// medians of 3 runs, Zen 4).
POSEMB_TARGET_AVX512 POSEMB_INLINE void rotate_head_float_streaming(const float* in, float* out,
                                                                    const float* cos,
                                                                    const float* sin,
                                                                    Eigen::Index pairs,
                                                                    bool interleaved) {
  Eigen::Index i = 0;
  if (interleaved) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    for (; i + 32 <= pairs; i += 32) {
      const __m512 v0 = _mm512_loadu_ps(in + 2 * i), v1 = _mm512_loadu_ps(in + 2 * i + 16);
      const __m512 v2 = _mm512_loadu_ps(in + 2 * i + 32), v3 = _mm512_loadu_ps(in + 2 * i + 48);
      __m512 x0, y0, x1, y1;
      rotate_16_pairs(_mm512_permutex2var_ps(v0, even, v1), _mm512_permutex2var_ps(v0, odd, v1),
                      _mm512_loadu_ps(cos + i), _mm512_loadu_ps(sin + i), x0, y0);
      rotate_16_pairs(_mm512_permutex2var_ps(v2, even, v3), _mm512_permutex2var_ps(v2, odd, v3),
                      _mm512_loadu_ps(cos + i + 16), _mm512_loadu_ps(sin + i + 16), x1, y1);
      _mm512_stream_ps(out + 2 * i, _mm512_permutex2var_ps(x0, first, y0));
      _mm512_stream_ps(out + 2 * i + 16, _mm512_permutex2var_ps(x0, second, y0));
      _mm512_stream_ps(out + 2 * i + 32, _mm512_permutex2var_ps(x1, first, y1));
      _mm512_stream_ps(out + 2 * i + 48, _mm512_permutex2var_ps(x1, second, y1));
    }
    for (; i < pairs; i += 16) {
      const __m512 v0 = _mm512_loadu_ps(in + 2 * i), v1 = _mm512_loadu_ps(in + 2 * i + 16);
      __m512 x, y;
      rotate_16_pairs(_mm512_permutex2var_ps(v0, even, v1), _mm512_permutex2var_ps(v0, odd, v1),
                      _mm512_loadu_ps(cos + i), _mm512_loadu_ps(sin + i), x, y);
      _mm512_stream_ps(out + 2 * i, _mm512_permutex2var_ps(x, first, y));
      _mm512_stream_ps(out + 2 * i + 16, _mm512_permutex2var_ps(x, second, y));
    }
    return;
  }
  for (; i + 32 <= pairs; i += 32) {
    const __m512 a0 = _mm512_loadu_ps(in + i), b0 = _mm512_loadu_ps(in + pairs + i);
    const __m512 a1 = _mm512_loadu_ps(in + i + 16), b1 = _mm512_loadu_ps(in + pairs + i + 16);
    __m512 x0, y0, x1, y1;
    rotate_16_pairs(a0, b0, _mm512_loadu_ps(cos + i), _mm512_loadu_ps(sin + i), x0, y0);
    rotate_16_pairs(a1, b1, _mm512_loadu_ps(cos + i + 16), _mm512_loadu_ps(sin + i + 16), x1, y1);
    _mm512_stream_ps(out + i, x0);
    _mm512_stream_ps(out + i + 16, x1);
    _mm512_stream_ps(out + pairs + i, y0);
    _mm512_stream_ps(out + pairs + i + 16, y1);
  }
  for (; i < pairs; i += 16) {
    __m512 x, y;
    rotate_16_pairs(_mm512_loadu_ps(in + i), _mm512_loadu_ps(in + pairs + i),
                    _mm512_loadu_ps(cos + i), _mm512_loadu_ps(sin + i), x, y);
    _mm512_stream_ps(out + i, x);
    _mm512_stream_ps(out + pairs + i, y);
  }
}

// Asks for the lines of the `pairs` pairs' head vector `stream_prefetch_bytes` past `in` to be
// brought into L2 ahead of their loads (_MM_HINT_T1). With x read from memory ([1, 16384, 32,
// 128] float, 256 MiB, out of place; a 2-CPU Intel KVM guest, its threads alone on the cores,
// medians of 9-15 back-to-back pairs, one thread, of a streaming copy): without, 0.72-0.93
// (interleaved from a table 0.78-0.86, in the call 0.67-0.83); into L2 2 KiB ahead, 0.87-1.07
// (0.87-0.96 and 0.74-1.03); into L1 (_MM_HINT_T0) rotate-half gained as much but interleaved
// lost (0.64-0.76 at any distance from 1 to 8 KiB), and 1, 4 or 8 KiB ahead gained less. At
// 2048 tokens (x 32 MiB, partly in L3) the figures stayed within run-to-run noise (0.91-0.98).
inline constexpr Eigen::Index stream_prefetch_bytes = 2048;

POSEMB_TARGET_AVX512 POSEMB_INLINE void prefetch_head_ahead(const float* in, Eigen::Index pairs) {
  // An address, not a pointer into x: it may lie past x's end (a prefetch never faults).
  const std::uintptr_t ahead = reinterpret_cast<std::uintptr_t>(in) + stream_prefetch_bytes;
  for (std::uintptr_t line = 0; line < static_cast<std::uintptr_t>(2 * pairs) * sizeof(float);
       line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T1);
  }
}

// heads[0 .. count) (detail/rotate.hpp: HeadRotation), each as rotate_head_float_streaming.
template <class Heads>
POSEMB_TARGET_AVX512 inline void rotate_heads_float_streaming_avx512(const Heads* heads, int count,
                                                                     Eigen::Index pairs,
                                                                     bool interleaved) {
  for (int k = 0; k < count; ++k) {
    rotate_head_float_streaming(heads[k].in, heads[k].out, heads[k].cos, heads[k].sin, pairs,
                                interleaved);
  }
}

// `count` heads that share one cos/sin row, as rotate_head_float_streaming: head k at
// in + k * in_stride and out + k * out_stride (out_stride a multiple of 16 floats, so every head's
// out is 64-byte aligned when the first is). One call per token for the heads that share its
// cos/sin row (all of a BSHD token, a group of BHSD heads): no per-head bookkeeping between the
// memory operations.
POSEMB_TARGET_AVX512 inline void rotate_strided_heads_float_streaming_avx512(
    const float* in, Eigen::Index in_stride, float* out, Eigen::Index out_stride,
    Eigen::Index count, const float* cos, const float* sin, Eigen::Index pairs, bool interleaved) {
  for (Eigen::Index k = 0; k < count; ++k, in += in_stride, out += out_stride) {
    prefetch_head_ahead(in, pairs);
    rotate_head_float_streaming(in, out, cos, sin, pairs, interleaved);
  }
}
#endif  // POSEMB_ISA_DISPATCH

}  // namespace detail
}  // namespace posemb
