// rope_type "default": RoFormer's frequencies (Su et al. 2021, "RoFormer: Enhanced Transformer
// with Rotary Position Embedding", eq. 15), inv_i = theta^(-2i/d), attention factor 1
// (transformers 5.24.0 modeling_rope_utils.py, _compute_default_rope_parameters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/rope.hpp"

namespace posemb {

struct DefaultRopeParams {};

inline bool operator==(const DefaultRopeParams&, const DefaultRopeParams&) { return true; }

struct DefaultRope : RopeVariantDefaults {
  using Params = DefaultRopeParams;
  static constexpr const char* name = "default";
  static constexpr bool odd_rotary_dim_rounds_up = true;

  // config.json: no keys of its own.
  template <class Context>
  static Params read(const Context&) {
    return {};
  }
  static std::optional<double> factor(const Params&) { return std::nullopt; }

  static RopeSpec spec(const Params&, const RopeBasis& b, std::optional<std::int64_t>) {
    return default_rope_spec(b.dims, b.theta, b.pairing);
  }
  static RopeBands bands(const Params&, const RopeBasis&, const RopeSpec& spec) {
    return detail::uniform_bands(spec, PairBand::Kept);
  }

  static HfFloat32Rope hf_float32(const Params&, const RopeBasis& b, std::optional<std::int64_t>) {
    return hf_float32_default(b.dims, b.theta, b.pairing);
  }
  // No float32 step beyond the default power every variant has.
  static double float32_steps(const Params&, std::optional<std::int64_t>) { return 0.0; }

  // GGUF: rope.scaling.type none (or linear with factor 1), no rope tensor.
  static constexpr const char* gguf_scaling_type = "none";
  static bool gguf_runs(const GgufRopeKey& k) {
    return k.scaling_type != "yarn" && k.factors.empty() && k.freq_scale == 1.0;
  }
};

}  // namespace posemb
