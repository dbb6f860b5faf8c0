// A layer's RoPE scheme in either angle mode, and the tolerance between the two modes.
//
//   AngleMode::Exact        posemb's default: the scheme's RopeSpec (angles in double)
//   AngleMode::HfFloat32    HuggingFace's float32 arithmetic (rotary/hf_float32.hpp)
//
// hf_float32_rope(scheme, seq_len) is RopeScheme::spec's counterpart: the same variant
// parameters, HF's float32 steps (each variant's hf_float32 facet, model/rope_variants/; a
// variant without one states why in no_hf_float32, and is refused with that reason).
// rotation_tolerance(scheme, seq_len, dtype) is the bound of rotary/tolerance.hpp with the
// variant's float32 steps (its float32_steps facet).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/error.hpp"
#include "posemb/model/positions.hpp"
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
  const detail::RopeVariant& variant = detail::rope_variant(scheme.rope_type);
  if (variant.hf_float32 == nullptr) {
    detail::fail(
        "rope_type", "\"" + scheme.rope_type + "\"",
        "expected " +
            detail::rope_variant_names(
                [](const detail::RopeVariant& v) { return v.hf_float32 != nullptr; }, " or ") +
            " for hf-float32 angles (" + variant.rope_type + ": " + variant.no_hf_float32 + ")");
  }
  return variant.hf_float32(scheme.params, scheme.basis(), seq_len);
}

// The layer's RoPE with HF's float32 arithmetic over its whole head, as LayerPositions::rope_spec
// in exact angles: q and k of the layer's head_dim features are given whole, [rotary_offset,
// rotary_offset + rotary_dim) rotate (MLA: the trailing qk_rope_head_dim, as transformers splits
// q [nope, rope]), the rest pass. Throws unless kind == Rope.
//   q, k: [batch, seq, heads, head_dim]
inline HfFloat32Rope hf_float32_rope(const LayerPositions& layer,
                                     std::optional<std::int64_t> seq_len = std::nullopt) {
  if (!layer.rope) detail::fail("kind", to_string(layer.kind), "expected rope for a RoPE spec");
  HfFloat32Rope rope = hf_float32_rope(*layer.rope, seq_len);
  if (layer.head_dim > 0) {
    rope.head_dim = layer.head_dim;
    rope.rotary_offset = layer.rotary_offset;
    rope.validate();
  }
  return rope;
}

namespace detail {

// The float32 steps the scheme's variant adds to the inverse frequencies, in units of float32's
// unit roundoff relative to the largest default frequency (rotary/tolerance.hpp, K; each
// variant's float32_steps facet says which steps it counts).
inline double variant_angle_coefficient(const RopeScheme& scheme,
                                        std::optional<std::int64_t> seq_len) {
  return rope_variant(scheme.rope_type).float32_steps(scheme.params, seq_len);
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
