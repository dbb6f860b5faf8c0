// A layer's RoPE scheme in either angle mode, and the tolerance between the two modes.
//
//   AngleMode::Exact        posemb's default: the scheme's RopeSpec (angles in double)
//   AngleMode::HfFloat32    HuggingFace's float32 arithmetic (rotary/hf_float32.hpp)
//
// hf_float32_rope(scheme, seq_len) is RopeScheme::spec's counterpart: the same variant
// parameters, HF's float32 steps (default, linear, dynamic, yarn, llama3, longrope; other rope
// types have no float32 transcription and are refused). rotation_tolerance(scheme, seq_len,
// dtype) is the bound of rotary/tolerance.hpp with the variant's angle coefficient.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "posemb/error.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/tolerance.hpp"

namespace posemb {

enum class AngleMode { Exact, HfFloat32 };

inline std::string to_string(AngleMode mode) {
  return mode == AngleMode::Exact ? "exact" : "hf-float32";
}
// "exact" or "hf-float32"; anything else is an Error naming `what`.
inline AngleMode parse_angle_mode(const std::string& text, const std::string& what = "angles") {
  if (text == "exact") return AngleMode::Exact;
  if (text == "hf-float32") return AngleMode::HfFloat32;
  detail::fail(what, "\"" + text + "\"", "expected exact or hf-float32");
}

// The scheme with HF's float32 arithmetic at seq_len (nullopt: no length known, as
// RopeScheme::spec; HF: max position + 1 for dynamic and longrope).
inline HfFloat32Rope hf_float32_rope(const RopeScheme& scheme,
                                     std::optional<std::int64_t> seq_len = std::nullopt) {
  if (scheme.mrope_section) {
    detail::fail("mrope_section", "set", "expected a plain RoPE scheme for hf-float32 angles");
  }
  const RotaryDims dims = scheme.dims();
  const double base = scheme.theta;
  const Pairing pairing = scheme.pairing;
  return std::visit(
      [&](const auto& p) -> HfFloat32Rope {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, DefaultRopeParams>) {
          return hf_float32_default(dims, base, pairing);
        } else if constexpr (std::is_same_v<P, LinearRopeParams>) {
          return hf_float32_linear(dims, base, p.factor, pairing);
        } else if constexpr (std::is_same_v<P, DynamicNtkParams>) {
          return hf_float32_dynamic_ntk(dims, base, p.factor, p.max_position_embeddings,
                                        seq_len.value_or(p.max_position_embeddings), pairing);
        } else if constexpr (std::is_same_v<P, YarnParams>) {
          return hf_float32_yarn(dims, base, p, pairing);
        } else if constexpr (std::is_same_v<P, Llama3Params>) {
          return hf_float32_llama3(dims, base, p, pairing);
        } else if constexpr (std::is_same_v<P, LongRopeParams>) {
          return hf_float32_longrope(dims, base, p, seq_len, pairing);
        } else {
          detail::fail("rope_type", "\"" + scheme.rope_type + "\"",
                       "expected default, linear, dynamic, yarn, llama3 or longrope for "
                       "hf-float32 angles");
        }
      },
      scheme.params);
}

namespace detail {

// The float32 steps each variant adds to the inverse frequencies, in units of float32's unit
// roundoff relative to the largest default frequency (rotary/tolerance.hpp, K):
//   linear: the division (1); longrope: the factor's rounding and product (1);
//   yarn: the interpolated reciprocal, the ramp and its two complements, the mix (8);
//   llama3: 1 / wavelen and L0 / wavelen (relative 2 u, times L0 / wavelen <= high_freq_factor,
//           over high - low), the smoothing (4);
//   dynamic beyond L: g = s seq / L - (s - 1) loses digits by s seq / (L g), raised to at most
//           d / (d - 2) <= 2 and multiplied by the base (3 s seq / (L g) + 2).
inline double variant_angle_coefficient(const RopeScheme& scheme,
                                        std::optional<std::int64_t> seq_len) {
  return std::visit(
      [&](const auto& p) -> double {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, LinearRopeParams> || std::is_same_v<P, LongRopeParams>) {
          return 1.0;
        } else if constexpr (std::is_same_v<P, YarnParams>) {
          return 8.0;
        } else if constexpr (std::is_same_v<P, Llama3Params>) {
          return 4.0 * p.high_freq_factor / (p.high_freq_factor - p.low_freq_factor) + 4.0;
        } else if constexpr (std::is_same_v<P, DynamicNtkParams>) {
          const std::int64_t length = seq_len.value_or(p.max_position_embeddings);
          if (length <= p.max_position_embeddings) return 0.0;
          const double ratio = p.factor * static_cast<double>(length) /
                               static_cast<double>(p.max_position_embeddings);
          return 3.0 * ratio / (ratio - (p.factor - 1.0)) + 2.0;
        } else {
          return 0.0;
        }
      },
      scheme.params);
}

// Whether 2i / d is exact in float32 for every pair (d a power of two).
inline bool exponents_exact(int rotary_dim) { return (rotary_dim & (rotary_dim - 1)) == 0; }

}  // namespace detail

// The bound between the exact and any correct float32-angle output of `scheme` at seq_len, for
// storage type dtype ("float32", "float16", "bfloat16"): rotary/tolerance.hpp with
// w = the largest exact inverse frequency, m = the attention scale and
// K = 8 + (ln(base') unless 2i / d is exact) + the variant's float32 steps, base' the largest
// base the variant raises (dynamic NTK's grown base).
inline RotationTolerance rotation_tolerance(const RopeScheme& scheme,
                                            std::optional<std::int64_t> seq_len,
                                            const std::string& dtype) {
  const RopeSpec spec = scheme.spec(seq_len);
  RotationTolerance tolerance;
  tolerance.storage_unit = unit_roundoff(dtype);
  tolerance.max_inv_freq = spec.inv_freq.maxCoeff();
  tolerance.attention_scale = spec.attention_scale;
  double k = 8.0 + detail::variant_angle_coefficient(scheme, seq_len);
  if (!detail::exponents_exact(spec.rotary_dim)) {
    // The smallest frequency w_min = base'^(-(d - 2) / d) gives ln(base') back.
    const double d = spec.rotary_dim;
    k += std::abs(std::log(spec.inv_freq.minCoeff())) * d / (d - 2.0);
  }
  tolerance.angle_coefficient = k;
  return tolerance;
}

}  // namespace posemb
