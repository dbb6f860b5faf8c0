// rope_type "linear": position interpolation (Chen et al. 2023, "Extending Context Window of
// Large Language Models via Positional Interpolation"), inv_i / s, attention factor 1
// (transformers 5.24.0 modeling_rope_utils.py, _compute_linear_scaling_rope_parameters).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

struct LinearRopeParams {
  double factor = 1.0;  // s: inv_i / s
};

inline bool operator==(const LinearRopeParams& a, const LinearRopeParams& b) {
  return a.factor == b.factor;
}

struct LinearRope : RopeVariantDefaults {
  using Params = LinearRopeParams;
  static constexpr const char* name = "linear";
  static constexpr bool odd_rotary_dim_rounds_up = true;  // the default's frequencies, divided
  static constexpr bool transformers_checks_factor = true;

  // config.json: {"rope_type": "linear", "factor": s}.
  template <class Context>
  static Params read(const Context& c) {
    return Params{c.block.number("factor", c.why)};
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t>) {
    return linear_rope_spec(b.dims, b.theta, p.factor, b.pairing);
  }
  static RopeBands bands(const Params&, const RopeBasis&, const RopeSpec& spec) {
    return detail::uniform_bands(spec, PairBand::Interpolated);
  }

  static HfFloat32Rope hf_float32(const Params& p, const RopeBasis& b,
                                  std::optional<std::int64_t>) {
    return hf_float32_linear(b.dims, b.theta, p.factor, b.pairing);
  }
  // The division inv_freq /= factor (1).
  static double float32_steps(const Params&, std::optional<std::int64_t>) { return 1.0; }

  // GGUF: rope.scaling.type linear (llama.cpp's default) with rope.scaling.factor s != 1.
  static constexpr const char* gguf_scaling_type = "linear";
  static bool gguf_runs(const GgufRopeKey& k) {
    return k.scaling_type != "yarn" && k.factors.empty() && k.freq_scale != 1.0;
  }
};

}  // namespace posemb
