// RoPE with HuggingFace transformers' float32 arithmetic, op by op: the angle mode "hf-float32".
//
// posemb's default ("exact") forms angles in double and reduces them mod 2 pi (rope.hpp). A
// model run by transformers forms them in float32, and at long positions the two differ by far
// more than a rounding of the output (7e-4 to 4e-3 of |x| at position 131071 on Llama 3.1). This
// header reproduces transformers' own arithmetic so that an engine can be compared with
// HuggingFace's logits; the tolerance model (rotary/tolerance.hpp) bounds the gap between both.
//
// What is formed, and how (transformers modeling_rope_utils.py, `_compute_*_parameters`, and
// `LlamaRotaryEmbedding.forward` / `apply_rotary_pos_emb` in models/llama/modeling_llama.py):
//   inv_freq   float32, each variant's steps in HF's order (below), every op rounded to float32;
//              python floats (theta, factors) are rounded to float32 where they meet a tensor,
//              and `scalar / tensor` is `tensor.reciprocal() * scalar` as torch's __rtruediv__ is
//   angle      float32(inv_freq * float32(position)): HF's `inv_freq @ position_ids` is a
//              [d/2, 1] x [1, seq] product, one rounded product per element, no accumulation
//   cos, sin   of that float32 angle, rounded to float32, times float32(attention_scaling)
//              (rounded), then cast to x's dtype (`cos.to(x.dtype)`)
//   rotation   `x * cos + rotate_half(x) * sin` in x's dtype: each product rounded to x's dtype,
//              then the sum (bfloat16 and float16 multiply as PyTorch's CPU kernels do: in
//              float32, rounded to the storage type after every op)
//
// How each rounding is made exact: the power is std::pow in double of the float32 base and
// exponent, rounded to float32 (glibc's double pow is within 0.52 ulp, so its float32 rounding
// is the correctly rounded float32 power unless the exact power lies within 2^-29 float ulps of
// a midpoint); cos and sin are std::cos / std::sin in double of the float32 angle, rounded to
// float32 (correctly rounded float32 values, likewise). A float32 product is formed in double
// (exact: 24 + 24 bits < 53) and rounded to float32, and a sum of two float32 values formed in
// double and rounded, which is the float32 sum (exact in double unless the exponents differ by
// more than 29, where no rounding tie is possible). No expression here holds a multiply feeding
// an add: every rounded value passes through a volatile float (detail::rounded), so that the
// compiler's contraction into FMA (-ffp-contract=fast, the GCC default outside ISO mode, which
// otherwise narrows (float)((double)a * b) to a float product and fuses it with the next sum)
// cannot change a result; tests/rotary/test_hf_float32.cpp is compiled with FMA and
// -ffp-contract=fast to check it.
//
// What cannot be reproduced bit for bit, and why:
//   - PyTorch's CPU float32 pow is not always correctly rounded (SLEEF's vectorized powf is
//     within 1 ulp): with Debian's PyTorch 1.13, 1 to 5 of 16 to 128 inverse frequencies differ
//     by one ulp from the correctly rounded power for theta 10000, 25000, 150000, 500000, 1e6.
//     Which pairs differ depends on the build and the vector width; CUDA's powf differs again.
//     On those pairs no reference matches every HF build; posemb takes the correctly rounded
//     value and the tolerance model covers the difference.
//   - PyTorch's vectorized float32 cos/sin (SLEEF, 1 ulp) may differ from the correctly rounded
//     value by one ulp.
//   - CUDA divides a tensor by a scalar as a multiplication by its reciprocal (linear's
//     `inv_freq /= factor`); the CPU divides. posemb follows the CPU.
//   - Dynamic NTK's grown base is a 0-dimensional float32 tensor whose `** (dim / (dim - 2))`
//     PyTorch's CPU kernel computes in double with the exponent in double (its scalar path);
//     posemb does the same.
//
// The backward (Rotation::Transpose, rotary/backward.hpp): what autograd gives through that
// forward. cos and sin are constants (HF forms them from a buffer and positions, no gradient),
// so the gradient of q is the sum of the gradients of its two uses, `q * cos` and `rotate_half(q)`
// (whose transpose moves g_b to a's slot and -g_a to b's), each in x's dtype:
//   g_a' = T(T(g_a c) + T(g_b s)),  g_b' = T(T(g_b c) + T(-(g_a s)))
// which is the forward's rotation of g with s negated, rounding for rounding (the negation is
// exact, and the zeros autograd adds from the other slice change no value).
//
// Sources of the rotate family (rotate.hpp): HfFloat32Rope, tensors of float, Eigen::bfloat16
// or Eigen::half only (HF's float64 models are not covered), forward rotation and its transpose
// (no inverse), one thread (a reference, not a fast path).
//
// Example:
//   const posemb::HfFloat32Rope rope = posemb::hf_float32_llama3(128, 500000.0, llama3_params);
//   posemb::rotate_inplace(q, positions, rope);   // q: [batch, seq, heads, 128] bfloat16
//   posemb::rotate_backward_inplace(grad_q, positions, rope);   // autograd's grad of q through HF
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/rotary/scaled.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// Everything HF's rotary embedding holds: the float32 inv_freq buffer and attention_scaling.
struct HfFloat32Rope {
  Eigen::VectorXf inv_freq;               // [rotary_dim / 2], HF's `inv_freq` buffer
  double attention_scale = 1.0;           // HF's `attention_scaling` (a python float)
  Pairing pairing = Pairing::RotateHalf;  // Interleaved: cos/sin repeat_interleave'd (GLM,
                                          // Cohere, DeepSeek), pairs (2i, 2i + 1)
  int rotary_dim = 0;     // features [rotary_offset, rotary_offset + rotary_dim) rotate
  int rotary_offset = 0;  // 0: HF's `q[..., :rotary_dim]`; MLA: qk_nope_head_dim (the slice
                          // last, as RopeSpec::rotary_offset), the rest pass
  int head_dim = 0;       // the width of the heads it rotates

  int pairs() const { return rotary_dim / 2; }

  // Throws posemb::Error unless the fields are consistent.
  void validate() const {
    RotaryDims{head_dim, rotary_dim}.validate();
    if (rotary_offset < 0 || head_dim < static_cast<long long>(rotary_offset) + rotary_dim) {
      detail::fail("rotary_offset", rotary_offset,
                   "expected 0 .. head_dim - rotary_dim = " + std::to_string(head_dim) + " - " +
                       std::to_string(rotary_dim));
    }
    if (inv_freq.size() != pairs()) {
      detail::fail("inv_freq.size()", inv_freq.size(),
                   "expected rotary_dim / 2 = " + std::to_string(pairs()));
    }
    for (Eigen::Index i = 0; i < inv_freq.size(); ++i) {
      if (!std::isfinite(inv_freq[i])) {
        detail::fail("inv_freq[" + std::to_string(i) + "]", inv_freq[i],
                     "expected a finite number");
      }
    }
    detail::require_positive_finite("attention_scale", attention_scale);
  }
};

namespace detail {

// A float32 value the compiler must hold as such: it cannot fuse the op that formed it with the
// op that uses it (without this, GCC turns (float)((double)a * b) into a float product and,
// with FMA, fuses it with the next addition: -ffp-contract=fast, its default outside ISO mode).
inline float rounded(float value) {
  volatile float stored = value;
  return stored;
}
// float32 rounding of a python float or of a value formed in double.
inline float f32(double value) { return rounded(static_cast<float>(value)); }
// a * b, a / b, a + b, a - b of float32 values, each rounded once (see the header comment).
inline float mul32(float a, float b) { return f32(double{a} * double{b}); }
inline float div32(float a, float b) { return rounded(a / b); }  // IEEE division: one rounding
inline float add32(float a, float b) { return f32(double{a} + double{b}); }
inline float sub32(float a, float b) { return f32(double{a} - double{b}); }
// torch's `scalar / tensor`: tensor.reciprocal() * scalar (torch/_tensor.py, __rtruediv__).
inline float rdiv32(double scalar, float x) { return mul32(div32(1.0f, x), f32(scalar)); }

// base ** (torch.arange(0, dim, 2).float() / dim): [dim / 2], base a float32 (a python float
// meeting a float32 tensor), the exponent 2i / dim divided in float32, the power correctly
// rounded. HF: `_compute_default_rope_parameters` and the first line of every variant.
inline Eigen::VectorXf hf_pos_freqs(int dim, float base) {
  require_even_positive("rotary_dim", dim);
  require_positive_finite("base", base);
  Eigen::VectorXf pos_freqs(dim / 2);
  for (int i = 0; i < dim / 2; ++i) {
    const float exponent = div32(static_cast<float>(2 * i), static_cast<float>(dim));
    pos_freqs[i] = f32(std::pow(double{base}, double{exponent}));
  }
  return pos_freqs;
}

// 1.0 / (base ** (arange(0, dim, 2).float() / dim)), i.e. reciprocal() * 1.0.
inline Eigen::VectorXf hf_default_inv_freq(int dim, float base) {
  Eigen::VectorXf inv = hf_pos_freqs(dim, base);
  for (Eigen::Index i = 0; i < inv.size(); ++i) inv[i] = div32(1.0f, inv[i]);
  return inv;
}

inline HfFloat32Rope make_hf_float32_rope(Eigen::VectorXf inv_freq, double attention_scale,
                                          const RotaryDims& dims, Pairing pairing) {
  HfFloat32Rope rope;
  rope.inv_freq = std::move(inv_freq);
  rope.attention_scale = attention_scale;
  rope.pairing = pairing;
  rope.rotary_dim = dims.rotary_dim;
  rope.head_dim = dims.head_dim;
  rope.validate();
  return rope;
}

}  // namespace detail

// HF `_compute_default_rope_parameters`: inv_freq = 1.0 / (base ** (arange(0, d, 2).float() / d)).
inline HfFloat32Rope hf_float32_default(RotaryDims dims, double base,
                                        Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  return detail::make_hf_float32_rope(
      detail::hf_default_inv_freq(dims.rotary_dim, detail::f32(base)), 1.0, dims, pairing);
}

// HF `_compute_linear_scaling_rope_parameters`: the default, then `inv_freq /= factor` (a
// float32 division by float32(factor), as PyTorch's CPU kernel divides).
inline HfFloat32Rope hf_float32_linear(RotaryDims dims, double base, double factor,
                                       Pairing pairing = Pairing::RotateHalf) {
  dims.validate();
  detail::require_positive_finite("factor", factor);
  Eigen::VectorXf inv = detail::hf_default_inv_freq(dims.rotary_dim, detail::f32(base));
  for (Eigen::Index i = 0; i < inv.size(); ++i) inv[i] = detail::div32(inv[i], detail::f32(factor));
  return detail::make_hf_float32_rope(std::move(inv), 1.0, dims, pairing);
}

// HF `_compute_dynamic_ntk_parameters` at seq_len (HF's `dynamic_rope_update`: max position
// + 1). Up to L = max_position_embeddings the init-time python arithmetic in double,
//   base' = base * ((factor * L / L) - (factor - 1)) ** (d / (d - 2));
// beyond, seq_len is a 0-dim int64 tensor and every step is a float32 op:
//   g = float32(factor) * float32(seq_len) / float32(L) - float32(factor - 1)   (each rounded)
//   base' = float32(base) * float32(double(g) ** (d / (d - 2)))                  (rounded)
// then inv_freq = 1.0 / (base' ** (arange(0, d, 2).float() / d)) in float32.
inline HfFloat32Rope hf_float32_dynamic_ntk(RotaryDims dims, double base, double factor,
                                            std::int64_t max_position_embeddings,
                                            std::int64_t seq_len,
                                            Pairing pairing = Pairing::RotateHalf) {
  using namespace detail;
  dims.validate();
  require_ntk_rotary_dim(dims.rotary_dim);
  require_positive_finite("base", base);
  require_positive_finite("factor", factor);
  require_context_length("max_position_embeddings", max_position_embeddings);
  if (seq_len < 0) fail("seq_len", seq_len, "expected >= 0");
  const double d = dims.rotary_dim, exponent = d / (d - 2.0);
  const double L = static_cast<double>(max_position_embeddings);
  float scaled_base;
  if (seq_len <= max_position_embeddings) {
    scaled_base = f32(base * std::pow((factor * L / L) - (factor - 1.0), exponent));
  } else {
    float g = mul32(f32(factor), static_cast<float>(seq_len));
    g = sub32(div32(g, static_cast<float>(max_position_embeddings)), f32(factor - 1.0));
    require_positive_finite("dynamic NTK growth (s * seq_len / L - (s - 1))", g);
    scaled_base = mul32(f32(base), f32(std::pow(double{g}, exponent)));
  }
  require_positive_finite("scaled base", scaled_base);
  return make_hf_float32_rope(hf_default_inv_freq(dims.rotary_dim, scaled_base), 1.0, dims,
                              pairing);
}

// HF `_compute_yarn_parameters`, the float32 steps:
//   pos_freqs = base ** (arange(0, d, 2).float() / d)
//   extrapolation = 1.0 / pos_freqs,  interpolation = 1.0 / (factor * pos_freqs)
//   ramp = clamp((arange(d // 2, float32) - low) / (high - low), 0, 1)   (low, high in python,
//          as yarn_ramp forms them; high - low a python difference)
//   e = 1 - ramp
//   inv_freq = interpolation * (1 - e) + extrapolation * e
// attention_scaling: yarn_attention_factor (a python float).
inline HfFloat32Rope hf_float32_yarn(RotaryDims dims, double base, const YarnParams& params,
                                     Pairing pairing = Pairing::RotateHalf) {
  using namespace detail;
  dims.validate();
  require_positive_finite("factor", params.factor);
  const YarnRampBounds bounds = yarn_ramp_bounds(dims.rotary_dim, base, params);
  const Eigen::VectorXf pos_freqs = hf_pos_freqs(dims.rotary_dim, f32(base));
  const float low = f32(bounds.low), span = f32(bounds.high - bounds.low);
  Eigen::VectorXf inv(pos_freqs.size());
  for (Eigen::Index i = 0; i < inv.size(); ++i) {
    const float extrapolation = div32(1.0f, pos_freqs[i]);
    const float interpolation = div32(1.0f, mul32(f32(params.factor), pos_freqs[i]));
    const float ramp = std::clamp(div32(sub32(static_cast<float>(i), low), span), 0.0f, 1.0f);
    const float e = sub32(1.0f, ramp);
    inv[i] = add32(mul32(interpolation, sub32(1.0f, e)), mul32(extrapolation, e));
  }
  return make_hf_float32_rope(std::move(inv), yarn_attention_factor(params), dims, pairing);
}

// HF `_compute_llama3_parameters`, the float32 steps after the default inv_freq:
//   wavelen = 2 * math.pi / inv_freq                      (reciprocal, times float32(2 pi))
//   llama = where(wavelen > L0 / low_freq_factor, inv_freq / factor, inv_freq)
//   smooth = (L0 / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
//   smoothed = (1 - smooth) * llama / factor + smooth * llama
//   medium = !(wavelen < L0 / high_freq_factor) and !(wavelen > L0 / low_freq_factor)
//   inv_freq = where(medium, smoothed, llama)
// (python quotients of python floats, rounded to float32 where they meet the tensors.)
inline HfFloat32Rope hf_float32_llama3(RotaryDims dims, double base, const Llama3Params& params,
                                       Pairing pairing = Pairing::RotateHalf) {
  using namespace detail;
  dims.validate();
  validate_llama3_params(params);
  const double L0 = static_cast<double>(params.original_max_position_embeddings);
  const float low_wavelen = f32(L0 / params.low_freq_factor);
  const float high_wavelen = f32(L0 / params.high_freq_factor);
  const float factor = f32(params.factor);
  Eigen::VectorXf inv = hf_default_inv_freq(dims.rotary_dim, f32(base));
  for (Eigen::Index i = 0; i < inv.size(); ++i) {
    const float wavelen = rdiv32(two_pi, inv[i]);
    const float llama = wavelen > low_wavelen ? div32(inv[i], factor) : inv[i];
    const float smooth = div32(sub32(rdiv32(L0, wavelen), f32(params.low_freq_factor)),
                               f32(params.high_freq_factor - params.low_freq_factor));
    const float smoothed =
        add32(div32(mul32(sub32(1.0f, smooth), llama), factor), mul32(smooth, llama));
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    inv[i] = medium ? smoothed : llama;
  }
  return make_hf_float32_rope(std::move(inv), 1.0, dims, pairing);
}

// HF `_compute_longrope_parameters`: ext = torch.tensor(long_factor or short_factor, float32)
// (long when seq_len > L0: `longrope_frequency_update` with max position + 1);
//   inv_freq = 1.0 / (ext * base ** (arange(0, d, 2).float() / d)).
// attention_scaling: longrope_attention_factor (a python float; PhiMoE's short / long mscale).
inline HfFloat32Rope hf_float32_longrope(RotaryDims dims, double base, const LongRopeParams& params,
                                         std::optional<std::int64_t> seq_len,
                                         Pairing pairing = Pairing::RotateHalf) {
  using namespace detail;
  dims.validate();
  // The same checks and the same choice of factors as the exact spec.
  (void)longrope_rope_spec(dims, base, params, seq_len, pairing);
  const bool use_long = seq_len && *seq_len > params.original_max_position_embeddings;
  const std::vector<double>& ext = use_long ? params.long_factor : params.short_factor;
  const Eigen::VectorXf pos_freqs = hf_pos_freqs(dims.rotary_dim, f32(base));
  Eigen::VectorXf inv(pos_freqs.size());
  for (Eigen::Index i = 0; i < inv.size(); ++i) {
    inv[i] = div32(1.0f, mul32(f32(ext[static_cast<std::size_t>(i)]), pos_freqs[i]));
  }
  return make_hf_float32_rope(std::move(inv), longrope_attention_factor(params, seq_len), dims,
                              pairing);
}

// cos and sin of one token as HF's forward forms them, in storage type T (held in float):
// angle = float32(inv_freq[i] * float32(position)), cos/sin rounded to float32, times
// float32(attention_scale), cast to T. inv_freq, cos, sin: [pairs].
template <class T>
void hf_float32_cos_sin(const HfFloat32Rope& rope, double position, float* cos, float* sin) {
  const float p = detail::f32(position);  // position_ids.float()
  const float scale = detail::f32(rope.attention_scale);
  for (int i = 0; i < rope.pairs(); ++i) {
    const double angle = double{detail::mul32(rope.inv_freq[i], p)};
    cos[i] = static_cast<float>(static_cast<T>(detail::mul32(detail::f32(std::cos(angle)), scale)));
    sin[i] = static_cast<float>(static_cast<T>(detail::mul32(detail::f32(std::sin(angle)), scale)));
  }
}

namespace detail {

// One pair (a, b) of storage type T rotated as `x * cos + rotate_half(x) * sin` in T:
//   a' = T(T(a c) + T(-b s)),  b' = T(T(b c) + T(a s))
// (c, s already in T). T's products of float/bf16/half values are exact in double, and T's
// sums of two T values are exact in double or free of ties (see the header comment).
template <class T>
void hf_rotate_pair(T& a, T& b, float c, float s) {
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  const auto to_t = [](float v) { return rounded(static_cast<float>(static_cast<T>(v))); };
  const float ac = to_t(mul32(fa, c)), bs = to_t(mul32(-fb, s));
  const float bc = to_t(mul32(fb, c)), as = to_t(mul32(fa, s));
  a = static_cast<T>(add32(ac, bs));
  b = static_cast<T>(add32(bc, as));
}

// Rotates the slice [rotary_offset, rotary_offset + rotary_dim) of one head vector `head`
// [head_dim] in place by cos, sin [pairs] (values of T).
template <class T>
void hf_rotate_head(T* head, const HfFloat32Rope& rope, const float* cos, const float* sin) {
  const int pairs = rope.pairs();
  const bool interleaved = rope.pairing == Pairing::Interleaved;
  T* slice = head + rope.rotary_offset;
  for (int i = 0; i < pairs; ++i) {
    T& a = slice[interleaved ? 2 * i : i];
    T& b = slice[interleaved ? 2 * i + 1 : i + pairs];
    hf_rotate_pair(a, b, cos[i], sin[i]);
  }
}

// Rotates `in` (in_shape) into `out` (out_shape, tokens from out_seq_offset on) token by token,
// after the engine's checks; features outside the rotated slice are copied. Rotation::Transpose
// (the backward, see the header comment) negates sin.
template <class T>
void hf_float32_rotate_tensor(const HfFloat32Rope& rope, const Positions& positions,
                              const ActivationShape& in_shape, const T* in,
                              const ActivationShape& out_shape, Eigen::Index out_seq_offset, T* out,
                              const RotateOptions& options) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, Eigen::bfloat16> ||
                    std::is_same_v<T, Eigen::half>,
                "posemb: HfFloat32Rope rotates float, Eigen::bfloat16 and Eigen::half tensors");
  check_threads(options.threads);
  if (options.rotation == Rotation::Inverse) {
    fail("options.rotation", "Inverse",
         "expected Forward or Transpose (HF's float32 rotation has no inverse)");
  }
  const float sin_sign = options.rotation == Rotation::Transpose ? -1.0f : 1.0f;
  rope.validate();
  if (in_shape.head_dim != rope.head_dim) {
    fail("head_dim", in_shape.head_dim,
         "expected " + std::to_string(rope.head_dim) + ", the head_dim this rope was made for");
  }
  positions.check(in_shape);
  if (out != in) check_output(in_shape, out_shape, out_seq_offset);
  std::vector<float> cos(static_cast<std::size_t>(rope.pairs())), sin(cos.size());
  std::vector<T> head(static_cast<std::size_t>(in_shape.head_dim));
  for (Eigen::Index b = 0; b < in_shape.batch; ++b) {
    for (Eigen::Index s = 0; s < in_shape.seq; ++s) {
      hf_float32_cos_sin<T>(rope, positions.at(b, s), cos.data(), sin.data());
      for (float& value : sin) value *= sin_sign;
      for (Eigen::Index h = 0; h < in_shape.heads; ++h) {
        const T* from = in + in_shape.offset(b, s, h);
        std::copy(from, from + in_shape.head_dim, head.begin());
        hf_rotate_head(head.data(), rope, cos.data(), sin.data());
        std::copy(head.begin(), head.end(), out + out_shape.offset(b, out_seq_offset + s, h));
      }
    }
  }
}

}  // namespace detail

// The rotate family's source (rotate.hpp): tensors only, with its own rotation (the engine's
// kernels fuse and round in float; this one rounds as PyTorch does).
template <>
struct rotary_source_traits<HfFloat32Rope>
    : rotary_source_base<HfFloat32Rope, Positions, void, /*RotatesRows=*/false> {
  static constexpr bool own_rotation = true;
  template <class T>
  static void rotate_tensor(const HfFloat32Rope& rope, const Positions& positions,
                            const ActivationShape& in_shape, const T* in,
                            const ActivationShape& out_shape, Eigen::Index out_seq_offset, T* out,
                            const RotateOptions& options) {
    detail::hf_float32_rotate_tensor(rope, positions, in_shape, in, out_shape, out_seq_offset, out,
                                     options);
  }
};

}  // namespace posemb
