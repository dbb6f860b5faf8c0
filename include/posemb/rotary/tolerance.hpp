// How far a correct RoPE kernel with float32 angles (HuggingFace's arithmetic, or an engine's)
// may land from posemb's exact output: a bound on |delta| per output feature at position p.
//
// An output pair is y = m R(theta) (a, b), m the attention scale, r = |(a, b)| the input pair's
// norm. A correct kernel differs from the exact value (angles in double, output rounded to the
// storage type) by
//   |delta| <= m r (c_s u_s + c_32 u + u p w K)
// where
//   u_s   the storage type's unit roundoff: 2^-24 float32, 2^-11 float16, 2^-8 bfloat16
//   u     float32's, 2^-24
//   w     the largest inverse frequency of the scheme (pair 0; 1 for plain RoPE)
//   p     the position (an integer below 2^24, where float32(p) is exact)
//   c_s = 4.5   cos and sin cast to the storage type, the two rounded products, the rounded
//               sum, the exact output's own rounding: one u_s m r each (|a c| + |b s| <= m r)
//   c_32 = 8    float32 cos/sin (within 1 ulp), the attention-scale product, the exact
//               output's float arithmetic for half storage
//   K           the angle: float32(w_i p) is within u p w_i of p w_i (1), the float32 inverse
//               frequency within a few u of the exact one (the power within 1.5 ulp, the base,
//               the reciprocal: 2.5; 8 leaves room), plus ln(base) when 2i / d is not exact in
//               float32 (the exponent's rounding is amplified by ln(base)), plus each variant's
//               float32 steps (model/hf_float32_scheme.hpp: angle_coefficient)
// The angle term grows with p: at p = 131071 and w = 1, u p w K = 0.0625 K / 8 radians.
//
// Example:
//   const posemb::RotationTolerance tol{posemb::unit_roundoff("bfloat16"), 1.0, 1.0, 8.0};
//   if (std::abs(y_engine - y_exact) > tol.bound(position, pair_norm)) { /* a real defect */ }
#pragma once

#include <cmath>
#include <string>

#include "posemb/error.hpp"

namespace posemb {

inline constexpr double float32_unit_roundoff = 0x1p-24;

// The unit roundoff of a storage type: "float32", "float16" or "bfloat16".
inline double unit_roundoff(const std::string& dtype) {
  if (dtype == "float32") return 0x1p-24;
  if (dtype == "float16") return 0x1p-11;
  if (dtype == "bfloat16") return 0x1p-8;
  detail::fail("dtype", "\"" + dtype + "\"", "expected float32, float16 or bfloat16");
}

struct RotationTolerance {
  static constexpr double storage_coefficient = 4.5;  // c_s
  static constexpr double float32_coefficient = 8.0;  // c_32

  double storage_unit = float32_unit_roundoff;  // u_s
  double max_inv_freq = 1.0;                    // w
  double attention_scale = 1.0;                 // m
  double angle_coefficient = 8.0;               // K

  // |delta| / r at position p: m (c_s u_s + c_32 u + u p w K).
  double relative(double position) const {
    return attention_scale *
           (storage_coefficient * storage_unit + float32_coefficient * float32_unit_roundoff +
            float32_unit_roundoff * std::abs(position) * max_inv_freq * angle_coefficient);
  }
  // The bound on |delta| of either feature of a pair of norm pair_norm at position p.
  double bound(double position, double pair_norm) const { return pair_norm * relative(position); }
};

}  // namespace posemb
