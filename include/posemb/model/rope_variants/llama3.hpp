// rope_type "llama3": Llama 3.1's frequency bands by wavelength, kept / smoothed / interpolated
// (Meta's llama-models reference, apply_scaling; transformers 5.24.0 modeling_rope_utils.py,
// _compute_llama3_parameters; the formulas: rotary/scaled.hpp, llama3_rope_spec).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

inline bool operator==(const Llama3Params& a, const Llama3Params& b) {
  return a.factor == b.factor && a.low_freq_factor == b.low_freq_factor &&
         a.high_freq_factor == b.high_freq_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings;
}

struct Llama3Rope : RopeVariantDefaults {
  using Params = Llama3Params;
  static constexpr const char* name = "llama3";
  static constexpr bool transformers_checks_factor = true;

  // config.json: factor, low_freq_factor, high_freq_factor and original_max_position_embeddings,
  // all required.
  template <class Context>
  static Params read(const Context& c) {
    Params llama3;
    llama3.factor = c.block.number("factor", c.why);
    llama3.low_freq_factor = c.block.number("low_freq_factor", c.why);
    llama3.high_freq_factor = c.block.number("high_freq_factor", c.why);
    llama3.original_max_position_embeddings = c.original_context(true);
    return llama3;
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t>) {
    return llama3_rope_spec(b.dims, b.theta, p, b.pairing);
  }
  // Kept / ramp / interpolated by the default frequency's wavelength.
  static RopeBands bands(const Params& p, const RopeBasis& b, const RopeSpec& spec) {
    const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, b.theta);
    RopeBands out{{}, p.original_max_position_embeddings};
    for (Eigen::Index i = 0; i < base.size(); ++i) {
      const Llama3Band band = llama3_band(base[i], p);
      out.pairs.push_back(band == Llama3Band::Kept   ? PairBand::Kept
                          : band == Llama3Band::Ramp ? PairBand::Ramp
                                                     : PairBand::Interpolated);
    }
    return out;
  }

  static HfFloat32Rope hf_float32(const Params& p, const RopeBasis& b,
                                  std::optional<std::int64_t>) {
    return hf_float32_llama3(b.dims, b.theta, p, b.pairing);
  }
  // 1 / wavelen and L0 / wavelen (relative 2 u, times L0 / wavelen <= high_freq_factor, over
  // high - low), the smoothing (4).
  static double float32_steps(const Params& p, std::optional<std::int64_t>) {
    return 4.0 * p.high_freq_factor / (p.high_freq_factor - p.low_freq_factor) + 4.0;
  }

  // GGUF: no scaling type of its own; the converter writes the per-pair divisors as the
  // rope_freqs tensor (llama_model::get_rope_factors).
  static constexpr const char* gguf_scaling_type = nullptr;
  static bool gguf_runs(const GgufRopeKey& k) {
    return k.scaling_type != "yarn" && k.factors == "rope_freqs.weight";
  }
};

}  // namespace posemb
