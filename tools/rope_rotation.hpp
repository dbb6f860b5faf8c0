// RoPE of one layer's scheme in an angle mode (exact or hf-float32) and a storage dtype
// (float32, bfloat16, float16), on float32 values: shared by `apply --angles/--dtype` and
// `vectors`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "posemb/model/hf_float32_scheme.hpp"
#include "posemb/model/rope_scheme.hpp"
#include "posemb/tensor.hpp"

namespace posemb::tool {

// The dtype names of --dtype.
inline const std::vector<std::string>& storage_dtypes() {
  static const std::vector<std::string> names{"float32", "bfloat16", "float16"};
  return names;
}

// One rotation: the scheme at seq_len with an optional pairing override, in angle mode `angles`
// and storage type `dtype`, over heads of head_dim features whose [rotary_offset, rotary_offset +
// rotary_dim) rotate (a layer's plan, LayerPositions::rope_spec; head_dim 0: the scheme's own).
struct RopeRotation {
  const RopeScheme& scheme;
  std::int64_t seq_len = 1;
  std::optional<Pairing> pairing;
  AngleMode angles = AngleMode::Exact;
  std::string dtype = "float32";
  int plan_head_dim = 0;
  int rotary_offset = 0;

  // The inverse frequencies and attention scale the rotation uses (float32 values in
  // hf-float32).
  std::vector<double> inv_freq() const;
  double attention_scale() const;
  int head_dim() const { return plan_head_dim > 0 ? plan_head_dim : scheme.head_dim; }

  // x: [dims] in layouts.in, float32 values each exactly representable in dtype (else an Error
  // naming `input`); returns the rotated values [dims in layouts.out], exact in dtype.
  std::vector<float> rotate(const std::vector<float>& x, const std::vector<std::int64_t>& dims,
                            const Positions& positions, const Layouts& layouts,
                            const std::string& input) const;
};

}  // namespace posemb::tool
