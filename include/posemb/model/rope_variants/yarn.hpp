// rope_type "yarn": YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension of Large
// Language Models", §3.3-3.4): a ramp between kept and interpolated pairs and an attention factor
// on cos/sin (transformers 5.24.0 modeling_rope_utils.py, _compute_yarn_parameters; the
// formulas: rotary/scaled.hpp, yarn_rope_spec).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

inline bool operator==(const YarnParams& a, const YarnParams& b) {
  return a.factor == b.factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.beta_fast == b.beta_fast && a.beta_slow == b.beta_slow && a.truncate == b.truncate &&
         a.attention_factor == b.attention_factor && a.mscale == b.mscale &&
         a.mscale_all_dim == b.mscale_all_dim;
}

struct YarnRope : RopeVariantDefaults {
  using Params = YarnParams;
  static constexpr const char* name = "yarn";
  static constexpr bool transformers_checks_factor = true;

  // config.json: factor (else max_position_embeddings / L0), original_max_position_embeddings
  // (else max_position_embeddings), beta_fast 32, beta_slow 1, truncate true, attention_factor,
  // mscale, mscale_all_dim (HF's defaults where absent).
  template <class Context>
  static Params read(const Context& c) {
    Params yarn;
    yarn.original_max_position_embeddings = c.original_context(false);
    yarn.factor = c.factor_or_ratio(yarn.original_max_position_embeddings);
    yarn.beta_fast = c.block.number("beta_fast").value_or(32.0);
    yarn.beta_slow = c.block.number("beta_slow").value_or(1.0);
    yarn.truncate = c.block.boolean("truncate").value_or(true);
    yarn.attention_factor = c.block.number("attention_factor");
    yarn.mscale = c.block.number("mscale");
    yarn.mscale_all_dim = c.block.number("mscale_all_dim");
    return yarn;
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t>) {
    return yarn_rope_spec(b.dims, b.theta, p, b.pairing);
  }
  // Kept where the ramp is 0, interpolated where it is 1, ramp between.
  static RopeBands bands(const Params& p, const RopeBasis& b, const RopeSpec& spec) {
    const Eigen::VectorXd ramp = yarn_ramp(spec.rotary_dim, b.theta, p);
    RopeBands out{{}, p.original_max_position_embeddings};
    for (Eigen::Index i = 0; i < ramp.size(); ++i) {
      out.pairs.push_back(ramp[i] == 0.0   ? PairBand::Kept
                          : ramp[i] == 1.0 ? PairBand::Interpolated
                                           : PairBand::Ramp);
    }
    return out;
  }

  static HfFloat32Rope hf_float32(const Params& p, const RopeBasis& b,
                                  std::optional<std::int64_t>) {
    return hf_float32_yarn(b.dims, b.theta, p, b.pairing);
  }
  // The interpolated reciprocal, the ramp and its two complements, the mix (8).
  static double float32_steps(const Params&, std::optional<std::int64_t>) { return 8.0; }

  // GGUF: rope.scaling.type yarn (whatever rope tensor the arch has).
  static constexpr const char* gguf_scaling_type = "yarn";
  static bool gguf_runs(const GgufRopeKey& k) { return k.scaling_type == "yarn"; }
  static std::string diff_note(const RopeDiffContext& c, const std::string& field) {
    if (c.gguf_type == name && c.config_type == name &&
        (field == "inv_freq" || field == "attention_scale")) {
      return "llama.cpp's YaRN floors the ramp with beta 32/1 and uses the magnitude 0.1 ln s + 1";
    }
    return "";
  }
};

}  // namespace posemb
