// The rotation of one contiguous head vector, for each pairing, in place and out of place. Raw
// pointers only; the engine (detail/rotary_engine.hpp) does shapes, positions and checks.
//
// With cos/sin for pair i already scaled, pair (a, b) becomes
//   a' = a cos - b sin,  b' = a sin + b cos.
// Which features form the pair (rotary_dim 4 of head_dim 8; c: the first feature of a pair,
// s: the second, .: passed through):
//   interleaved: [cscs....]   pair i = (2i, 2i + 1)
//   rotate-half: [ccss....]   pair i = (i, i + rotary_dim / 2)
//
// How they are vectorized: plain loops over contiguous `__restrict` pointers, one loop per
// pairing and per in-place / out-of-place case, with no branches in the loop bodies, compiled
// once per instruction-set level (posemb/machine/isa.hpp: portable, AVX2, AVX-512) and chosen at
// run time, so that the compiler vectorizes them for each. Half-precision storage is compute-bound
// (widening and rounding cost more than the rotation); at level avx512 it has its own 16-pair
// kernels (detail/rotate_avx512.hpp), otherwise it goes through float buffers on the stack.
//
// Arithmetic: at levels with FMA a' = fma(a, cos, -(b sin)) and b' = fma(a, sin, b cos);
// without FMA each product is rounded. Either is within 1 rounding of C per product of the
// exact rotation of the rounded cos/sin (3 ulp of C relative to |a| + |b|).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "posemb/detail/half_io.hpp"
#include "posemb/detail/rotate_avx512.hpp"
#include "posemb/machine/isa.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Rotation of n pairs of one contiguous head vector; T is float, double or bfloat16 (loaded
// into C = compute_t<T>). With cos/sin for pair i (already scaled):
//   a' = a cos - b sin,  b' = a sin + b cos.
// Fma: the fused forms (code for a level with FMA).

// a cos - b sin and a sin + b cos of one pair.
template <bool Fma, class C>
POSEMB_INLINE C rotated_first(C a, C b, C cos, C sin) {
  if constexpr (Fma) {
    return std::fma(a, cos, -(b * sin));
  } else {
    return a * cos - b * sin;
  }
}
template <bool Fma, class C>
POSEMB_INLINE C rotated_second(C a, C b, C cos, C sin) {
  if constexpr (Fma) {
    return std::fma(a, sin, b * cos);
  } else {
    return a * sin + b * cos;
  }
}

// Each kernel below is a loop over n lanes, N an Eigen::Index or lane_count (a constant), run
// as blocks of lane_block lanes and then the rest (see lane_block in posemb/machine/isa.hpp).

// RotateHalf, out of place: pair i is (lo[i], hi[i]) with lo = head + pair_begin and
// hi = head + rotary_dim / 2 + pair_begin. in_*, out_*, cos, sin: [n], no overlap.
template <bool Fma, class T, class C, class N>
POSEMB_INLINE void rotate_half_out_of_place_n(const T* __restrict in_lo, const T* __restrict in_hi,
                                              T* __restrict out_lo, T* __restrict out_hi,
                                              const C* __restrict cos, const C* __restrict sin,
                                              N n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(in_lo[i]), b = load_lane(in_hi[i]);
    out_lo[i] = store_lane<T>(rotated_first<Fma>(a, b, cos[i], sin[i]));
    out_hi[i] = store_lane<T>(rotated_second<Fma>(a, b, cos[i], sin[i]));
  }
}
template <bool Fma, class T, class C>
POSEMB_INLINE void rotate_half_out_of_place(const T* in_lo, const T* in_hi, T* out_lo, T* out_hi,
                                            const C* cos, const C* sin, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    rotate_half_out_of_place_n<Fma>(in_lo + i, in_hi + i, out_lo + i, out_hi + i, cos + i, sin + i,
                                    lane_count{});
  }
  rotate_half_out_of_place_n<Fma>(in_lo + i, in_hi + i, out_lo + i, out_hi + i, cos + i, sin + i,
                                  n - i);
}

// RotateHalf, in place: lo, hi, cos, sin: [n]; lo and hi do not overlap.
template <bool Fma, class T, class C, class N>
POSEMB_INLINE void rotate_half_in_place_n(T* __restrict lo, T* __restrict hi,
                                          const C* __restrict cos, const C* __restrict sin, N n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(lo[i]), b = load_lane(hi[i]);
    lo[i] = store_lane<T>(rotated_first<Fma>(a, b, cos[i], sin[i]));
    hi[i] = store_lane<T>(rotated_second<Fma>(a, b, cos[i], sin[i]));
  }
}
template <bool Fma, class T, class C>
POSEMB_INLINE void rotate_half_in_place(T* lo, T* hi, const C* cos, const C* sin, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    rotate_half_in_place_n<Fma>(lo + i, hi + i, cos + i, sin + i, lane_count{});
  }
  rotate_half_in_place_n<Fma>(lo + i, hi + i, cos + i, sin + i, n - i);
}

// Interleaved, out of place: pair i is (x[2i], x[2i + 1]). in, out: [2n]; cos, sin: [n].
template <bool Fma, class T, class C, class N>
POSEMB_INLINE void rotate_interleaved_out_of_place_n(const T* __restrict in, T* __restrict out,
                                                     const C* __restrict cos,
                                                     const C* __restrict sin, N n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(in[2 * i]), b = load_lane(in[2 * i + 1]);
    out[2 * i] = store_lane<T>(rotated_first<Fma>(a, b, cos[i], sin[i]));
    out[2 * i + 1] = store_lane<T>(rotated_second<Fma>(a, b, cos[i], sin[i]));
  }
}
template <bool Fma, class T, class C>
POSEMB_INLINE void rotate_interleaved_out_of_place(const T* in, T* out, const C* cos, const C* sin,
                                                   Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    rotate_interleaved_out_of_place_n<Fma>(in + 2 * i, out + 2 * i, cos + i, sin + i, lane_count{});
  }
  rotate_interleaved_out_of_place_n<Fma>(in + 2 * i, out + 2 * i, cos + i, sin + i, n - i);
}

// Interleaved, in place: x: [2n]; cos, sin: [n].
template <bool Fma, class T, class C, class N>
POSEMB_INLINE void rotate_interleaved_in_place_n(T* __restrict x, const C* __restrict cos,
                                                 const C* __restrict sin, N n) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const C a = load_lane(x[2 * i]), b = load_lane(x[2 * i + 1]);
    x[2 * i] = store_lane<T>(rotated_first<Fma>(a, b, cos[i], sin[i]));
    x[2 * i + 1] = store_lane<T>(rotated_second<Fma>(a, b, cos[i], sin[i]));
  }
}
template <bool Fma, class T, class C>
POSEMB_INLINE void rotate_interleaved_in_place(T* x, const C* cos, const C* sin, Eigen::Index n) {
  Eigen::Index i = 0;
  for (; i + lane_block <= n; i += lane_block) {
    rotate_interleaved_in_place_n<Fma>(x + 2 * i, cos + i, sin + i, lane_count{});
  }
  rotate_interleaved_in_place_n<Fma>(x + 2 * i, cos + i, sin + i, n - i);
}

// ---------------------------------------------------------------------------------------------
// One contiguous head vector, pairs [pair_begin, pair_end) of rotary_dim, either pairing.
// in, out: [head_dim] (in == out: in place); cos, sin: [pair_end - pair_begin].

// By the code of level L.
template <IsaLevel L, class T, class C>
POSEMB_INLINE void rotate_contiguous_level(const T* in, T* out, const C* cos, const C* sin,
                                           int pair_begin, int pair_end, int rotary_dim,
                                           bool interleaved) {
  static_assert(std::is_same_v<C, compute_t<T>>, "cos/sin must be in the arithmetic type of T");
  constexpr bool fma = has_fma_v<L>;
  const Eigen::Index n = pair_end - pair_begin;
#if POSEMB_ISA_DISPATCH
  if constexpr ((std::is_same_v<T, Eigen::half> ||
                 std::is_same_v<T, Eigen::bfloat16>)&&effective_level_v<L> == IsaLevel::Avx512) {
    rotate_half_precision_avx512(in, out, cos, sin, pair_begin, n, rotary_dim, interleaved);
    return;
  }
#endif
  if constexpr (!std::is_same_v<T, Eigen::half>) {
    if (interleaved) {
      if (in == out) {
        rotate_interleaved_in_place<fma>(out + 2 * pair_begin, cos, sin, n);
      } else {
        rotate_interleaved_out_of_place<fma>(in + 2 * pair_begin, out + 2 * pair_begin, cos, sin,
                                             n);
      }
    } else {
      const Eigen::Index lo = pair_begin, hi = rotary_dim / 2 + pair_begin;
      if (in == out) {
        rotate_half_in_place<fma>(out + lo, out + hi, cos, sin, n);
      } else {
        rotate_half_out_of_place<fma>(in + lo, in + hi, out + lo, out + hi, cos, sin, n);
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
        widen_level<L>(in + 2 * pair, a, 2 * m);
        rotate_interleaved_in_place<fma>(a, cos + begin, sin + begin, m);
        narrow_level<L>(a, out + 2 * pair, 2 * m);
      } else {
        const Eigen::Index hi = rotary_dim / 2 + pair;
        widen_level<L>(in + pair, a, m);
        widen_level<L>(in + hi, b, m);
        rotate_half_in_place<fma>(a, b, cos + begin, sin + begin, m);
        narrow_level<L>(a, out + pair, m);
        narrow_level<L>(b, out + hi, m);
      }
    }
  }
}

#if POSEMB_ISA_DISPATCH
template <class T, class C>
POSEMB_TARGET_AVX2 void rotate_contiguous_avx2(const T* in, T* out, const C* cos, const C* sin,
                                               int pair_begin, int pair_end, int rotary_dim,
                                               bool interleaved) {
  rotate_contiguous_level<IsaLevel::Avx2>(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                                          interleaved);
}
template <class T, class C>
POSEMB_TARGET_AVX512 void rotate_contiguous_avx512(const T* in, T* out, const C* cos, const C* sin,
                                                   int pair_begin, int pair_end, int rotary_dim,
                                                   bool interleaved) {
  rotate_contiguous_level<IsaLevel::Avx512>(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                                            interleaved);
}
#endif

// ---------------------------------------------------------------------------------------------
// Many head vectors in one call, so that choosing the level costs once per batch rather than
// once per head (a head vector is a few hundred bytes: a call per head would cost as much as
// the rotation). Each: in, out: [head_dim] (in == out: in place); cos, sin: pairs
// [pair_begin, pair_end) of its cos/sin row.
template <class T, class C>
struct HeadRotation {
  const T* in;
  T* out;
  const C* cos;
  const C* sin;
};

template <IsaLevel L, class T, class C>
POSEMB_INLINE void rotate_heads_level(const HeadRotation<T, C>* heads, int count, int pair_begin,
                                      int pair_end, int rotary_dim, bool interleaved) {
#if POSEMB_ISA_DISPATCH
  if constexpr ((std::is_same_v<T, Eigen::half> ||
                 std::is_same_v<T, Eigen::bfloat16>)&&effective_level_v<L> == IsaLevel::Avx512) {
    rotate_heads_half_precision_avx512(heads, count, pair_begin, pair_end - pair_begin, rotary_dim,
                                       interleaved);
    return;
  }
#endif
  for (int k = 0; k < count; ++k) {
    rotate_contiguous_level<L>(heads[k].in, heads[k].out, heads[k].cos, heads[k].sin, pair_begin,
                               pair_end, rotary_dim, interleaved);
  }
}

#if POSEMB_ISA_DISPATCH
template <class T, class C>
POSEMB_TARGET_AVX2 void rotate_heads_avx2(const HeadRotation<T, C>* heads, int count,
                                          int pair_begin, int pair_end, int rotary_dim,
                                          bool interleaved) {
  rotate_heads_level<IsaLevel::Avx2>(heads, count, pair_begin, pair_end, rotary_dim, interleaved);
}
template <class T, class C>
POSEMB_TARGET_AVX512 void rotate_heads_avx512(const HeadRotation<T, C>* heads, int count,
                                              int pair_begin, int pair_end, int rotary_dim,
                                              bool interleaved) {
  rotate_heads_level<IsaLevel::Avx512>(heads, count, pair_begin, pair_end, rotary_dim, interleaved);
}
#endif

// At the active level. heads: [count].
template <class T, class C>
inline void rotate_heads(const HeadRotation<T, C>* heads, int count, int pair_begin, int pair_end,
                         int rotary_dim, bool interleaved) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return rotate_heads_avx512(heads, count, pair_begin, pair_end, rotary_dim, interleaved);
      case IsaLevel::Avx2:
        return rotate_heads_avx2(heads, count, pair_begin, pair_end, rotary_dim, interleaved);
      default:
        break;
    }
  }
#endif
  rotate_heads_level<IsaLevel::Portable>(heads, count, pair_begin, pair_end, rotary_dim,
                                         interleaved);
}

// One head vector at the active level.
template <class T, class C>
inline void rotate_contiguous(const T* in, T* out, const C* cos, const C* sin, int pair_begin,
                              int pair_end, int rotary_dim, bool interleaved) {
#if POSEMB_ISA_DISPATCH
  const IsaLevel level = isa_level();
  if (!runs_inline(level)) {
    switch (level) {
      case IsaLevel::Avx512:
        return rotate_contiguous_avx512(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                                        interleaved);
      case IsaLevel::Avx2:
        return rotate_contiguous_avx2(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                                      interleaved);
      default:
        break;
    }
  }
#endif
  rotate_contiguous_level<IsaLevel::Portable>(in, out, cos, sin, pair_begin, pair_end, rotary_dim,
                                              interleaved);
}

}  // namespace detail
}  // namespace posemb
