// The storage types of a KV cache and the conversions from float32 into them, each the rounding
// of its reference so that a cache posemb writes holds the bits the reference writes:
//
//   Float32   copied
//   Float16   IEEE binary16, round to nearest even (PyTorch's x.to(torch.float16))
//   BFloat16  round to nearest even (PyTorch's x.to(torch.bfloat16))
//   Fp8E4m3   float8_e4m3fn with a per-tensor scale: e4m3fn(clamp(x / scale, -448, 448)), round
//             to nearest even, NaN kept (vLLM's cache writer divides by the scale and saturates
//             to +-448 before its cast; PyTorch 2.13's plain CPU cast saturates the same way)
//   Q8_0      llama.cpp's block_q8_0: per 32 values a float16 scale d and 32 int8 q,
//             d = amax / 127, id = 1 / d (0 when d = 0), q = roundf(x * id) (half away from zero)
//             as ggml/src/ggml-quants.c: quantize_row_q8_0_ref
//
// A head vector of head_dim values takes cache_row_bytes(dtype, head_dim) bytes (Q8_0:
// head_dim / 32 blocks of 34 bytes, the scale first, as ggml lays them out).
#pragma once

#include <Eigen/Core>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "posemb/detail/half_io.hpp"
#include "posemb/error.hpp"

namespace posemb {

enum class CacheDtype { Float32, Float16, BFloat16, Fp8E4m3, Q8_0 };

inline const char* to_string(CacheDtype dtype) {
  switch (dtype) {
    case CacheDtype::Float32:
      return "float32";
    case CacheDtype::Float16:
      return "float16";
    case CacheDtype::BFloat16:
      return "bfloat16";
    case CacheDtype::Fp8E4m3:
      return "fp8_e4m3";
    case CacheDtype::Q8_0:
      return "q8_0";
  }
  return "unknown";
}

// llama.cpp's QK8_0 and sizeof(block_q8_0).
inline constexpr Eigen::Index q8_0_block_values = 32;
inline constexpr Eigen::Index q8_0_block_bytes = 34;

// The largest finite float8_e4m3fn value, the bound of vLLM's clamp.
inline constexpr float fp8_e4m3_max = 448.0f;

// Bytes of one head vector of head_dim values in `dtype`. Throws for a Q8_0 head_dim that is not
// a multiple of 32 and for an unknown dtype; `name` names the head_dim in the message.
inline Eigen::Index cache_row_bytes(CacheDtype dtype, Eigen::Index head_dim,
                                    const char* name = "head_dim") {
  switch (dtype) {
    case CacheDtype::Float32:
      return 4 * head_dim;
    case CacheDtype::Float16:
    case CacheDtype::BFloat16:
      return 2 * head_dim;
    case CacheDtype::Fp8E4m3:
      return head_dim;
    case CacheDtype::Q8_0:
      if (head_dim % q8_0_block_values != 0) {
        detail::fail(name, head_dim,
                     "expected a multiple of 32 for a q8_0 cache (32-value blocks)");
      }
      return head_dim / q8_0_block_values * q8_0_block_bytes;
  }
  detail::fail("dtype", static_cast<int>(dtype), "expected a CacheDtype");
}

// float8_e4m3fn bits of x saturated to [-448, 448] (inf included), round to nearest even; NaN
// stays NaN (0x7F with x's sign). e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits, no
// infinities; subnormals m * 2^-9.
inline std::uint8_t fp8_e4m3_bits(float x) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  const auto sign = static_cast<std::uint8_t>((bits >> 24) & 0x80u);
  bits &= 0x7FFFFFFFu;
  if (bits > 0x7F800000u) return static_cast<std::uint8_t>(sign | 0x7Fu);
  float a = 0.0f;
  std::memcpy(&a, &bits, sizeof a);
  if (a > fp8_e4m3_max) a = fp8_e4m3_max;
  if (a < 0x1p-6f) {  // subnormal: a * 2^9 is exact; 8 rounds up to the smallest normal, 0x08
    return static_cast<std::uint8_t>(sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.0f)));
  }
  std::memcpy(&bits, &a, sizeof bits);
  bits += 0x7FFFFu + ((bits >> 20) & 1u);  // round the 23 mantissa bits to 3, ties to even
  return static_cast<std::uint8_t>(sign | ((bits >> 20) - (120u << 3)));  // exponent 127 -> 7
}

namespace detail {

// roundf(v) as an int8 for |v| < 128 (q8_0's range; the caller keeps v there), without the libm
// call: v - trunc(v) is exact, and a fraction of at least one half steps away from zero. NaN
// (from an infinite amax) gives 0. Beyond int's range (an infinity in a block whose amax a NaN
// reset: ggml's MAX(amax, v) forgets what came before a NaN) the conversion to int would be
// undefined, and the machines part (x86-64's cvttss2si gives INT_MIN, aarch64's fcvtzs
// saturates): 0 as well, the byte x86-64 builds of ggml store.
inline std::int8_t round_half_away(float v) {
  if (!(std::fabs(v) < 0x1p31f)) return 0;
  int t = static_cast<int>(v);
  const float fraction = v - static_cast<float>(t);
  t += (fraction >= 0.5f) - (fraction <= -0.5f);
  return static_cast<std::int8_t>(t);
}

// One llama.cpp block_q8_0 of x [32] into out [34]: d (float16 bits), then q [32]; ggml-quants.c:
// quantize_row_q8_0_ref, d = amax / 127, id = 1 / d (0 for d = 0), q = roundf(x * id). Where
// 1 / d overflows (amax below 127 * 2^-128, so d's float16 is 0) ggml converts +-inf to int8,
// which C leaves undefined; here id is 0 then and every q is 0, what any q dequantizes to with
// that scale.
inline void quantize_q8_0_block(const float* x, unsigned char* out) {
  float amax = 0.0f;
  for (Eigen::Index j = 0; j < q8_0_block_values; ++j) {
    const float v = std::fabs(x[j]);
    amax = amax > v ? amax : v;  // ggml's MAX(amax, v)
  }
  const float d = amax / 127.0f;
  const float reciprocal = d != 0.0f ? 1.0f / d : 0.0f;
  const float id = reciprocal <= FLT_MAX ? reciprocal : 0.0f;
  const Eigen::half scale(d);
  std::memcpy(out, &scale, 2);
  for (Eigen::Index j = 0; j < q8_0_block_values; ++j) {
    out[2 + j] = static_cast<unsigned char>(round_half_away(x[j] * id));
  }
}

// The two bytes of a half-precision value at `out` (a cache row need not be aligned for it).
template <class H>
void store_bits(H value, unsigned char* out) {
  std::memcpy(out, &value, sizeof value);
}

// One head vector in [n] of float into `out` (cache_row_bytes(dtype, n) bytes) of `dtype`, one
// value at a time: the reference the vector conversions (kv/convert.hpp: convert_row) match bit
// for bit. fp8's stored value is x / scale.
inline void convert_row_reference(const float* in, Eigen::Index n, CacheDtype dtype, float scale,
                                  unsigned char* out) {
  switch (dtype) {
    case CacheDtype::Float32:
      std::memcpy(out, in, static_cast<std::size_t>(n) * sizeof(float));
      return;
    case CacheDtype::Float16:
      for (Eigen::Index i = 0; i < n; ++i) store_bits(Eigen::half(in[i]), out + 2 * i);
      return;
    case CacheDtype::BFloat16:
      for (Eigen::Index i = 0; i < n; ++i)
        store_bits(store_lane<Eigen::bfloat16>(in[i]), out + 2 * i);
      return;
    case CacheDtype::Fp8E4m3:
      for (Eigen::Index i = 0; i < n; ++i) out[i] = fp8_e4m3_bits(in[i] / scale);
      return;
    case CacheDtype::Q8_0:
      for (Eigen::Index i = 0; i < n; i += q8_0_block_values) {
        quantize_q8_0_block(in + i, out + i / q8_0_block_values * q8_0_block_bytes);
      }
      return;
  }
}

}  // namespace detail
}  // namespace posemb
