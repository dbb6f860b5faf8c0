// rope_type "dynamic": dynamic NTK (bloc97, "Dynamically Scaled RoPE further increases
// performance of long context LLaMA", r/LocalLLaMA 2023): up to L = max_position_embeddings
// tokens the default, beyond the base grows to theta * (s seq / L - (s - 1))^(d / (d - 2))
// (transformers 5.24.0 modeling_rope_utils.py, _compute_dynamic_ntk_parameters). With Hunyuan's
// alpha, the static NTK base theta * alpha^(d / (d - 2)) at every length.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

struct DynamicNtkParams {
  double factor = 1.0;                       // s
  std::int64_t max_position_embeddings = 0;  // L: no change up to L tokens
  // Hunyuan's alpha: the base is theta * alpha^(d / (d - 2)) at every length (static NTK;
  // HunYuanDenseV1RotaryEmbedding gives it rope_type "ntk_alpha", which dynamic_rope_update
  // leaves alone).
  std::optional<double> alpha = std::nullopt;
};

inline bool operator==(const DynamicNtkParams& a, const DynamicNtkParams& b) {
  return a.factor == b.factor && a.max_position_embeddings == b.max_position_embeddings &&
         a.alpha == b.alpha;
}

struct DynamicNtkRope : RopeVariantDefaults {
  using Params = DynamicNtkParams;
  static constexpr const char* name = "dynamic";
  static constexpr bool transformers_checks_factor = true;

  // config.json: {"rope_type": "dynamic", "factor": s} and the top-level max_position_embeddings
  // (alpha: model/config/rope_block.hpp, for the families that read it).
  template <class Context>
  static Params read(const Context& c) {
    const double factor = c.block.number("factor", c.why);
    return Params{factor, c.max_position(c.why)};
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  // Hunyuan's static base theta * alpha^(d / (d - 2)).
  static double alpha_base(const Params& p, const RopeBasis& b) {
    const double d = b.dims.rotary_dim;
    return b.theta * std::pow(*p.alpha, d / (d - 2.0));
  }

  // seq_len nullopt: L (no growth).
  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t> seq_len) {
    if (p.alpha) return ntk_rope_spec(b.dims, b.theta, *p.alpha, b.pairing);
    return dynamic_ntk_rope_spec(b.dims, b.theta, p.factor, p.max_position_embeddings,
                                 seq_len.value_or(p.max_position_embeddings), b.pairing);
  }
  static RopeBands bands(const Params& p, const RopeBasis& b, const RopeSpec& spec) {
    RopeBands out = detail::changed_bands(b, spec, PairBand::Ntk);
    out.original_context = p.max_position_embeddings;
    return out;
  }

  // With alpha: HunYuanDenseV1RotaryEmbedding.compute_ntk_alpha_rope_parameters
  // (modeling_hunyuan_v1_dense.py), the base theta * alpha^(d / (d - 2)) in python (double),
  // then the default's float32 steps.
  static HfFloat32Rope hf_float32(const Params& p, const RopeBasis& b,
                                  std::optional<std::int64_t> seq_len) {
    if (p.alpha) return hf_float32_default(b.dims, alpha_base(p, b), b.pairing);
    return hf_float32_dynamic_ntk(b.dims, b.theta, p.factor, p.max_position_embeddings,
                                  seq_len.value_or(p.max_position_embeddings), b.pairing);
  }
  // Beyond L: g = s seq / L - (s - 1) loses digits by s seq / (L g), raised to at most
  // d / (d - 2) <= 2 and multiplied by the base (3 s seq / (L g) + 2); up to L none.
  static double float32_steps(const Params& p, std::optional<std::int64_t> seq_len) {
    const std::int64_t length = seq_len.value_or(p.max_position_embeddings);
    if (length <= p.max_position_embeddings) return 0.0;
    const double ratio =
        p.factor * static_cast<double>(length) / static_cast<double>(p.max_position_embeddings);
    return 3.0 * ratio / (ratio - (p.factor - 1.0)) + 2.0;
  }

  static constexpr const char* no_gguf =
      "llama.cpp has no dynamic NTK (no rope.scaling.type grows the base with the sequence)";
  static std::string diff_note(const RopeDiffContext& c, const std::string& field) {
    if (c.config_type == name && field == "inv_freq") {
      return "dynamic NTK has no llama.cpp counterpart";
    }
    return "";
  }
};

}  // namespace posemb
