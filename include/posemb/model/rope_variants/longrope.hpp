// rope_type "longrope" (Phi-3's first name "su"): LongRoPE (Ding et al. 2024, "LongRoPE:
// Extending LLM Context Window Beyond 2 Million Tokens"): searched per-pair divisors, the short
// list up to L0 tokens and the long one beyond (transformers 5.24.0 modeling_rope_utils.py,
// _compute_longrope_parameters; the formulas: rotary/scaled.hpp, longrope_rope_spec).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/hf_float32.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

inline bool operator==(const LongRopeParams& a, const LongRopeParams& b) {
  return a.short_factor == b.short_factor && a.long_factor == b.long_factor &&
         a.original_max_position_embeddings == b.original_max_position_embeddings &&
         a.factor == b.factor && a.attention_factor == b.attention_factor &&
         a.short_mscale == b.short_mscale && a.long_mscale == b.long_mscale;
}

struct LongRopeRope : RopeVariantDefaults {
  using Params = LongRopeParams;
  static constexpr const char* name = "longrope";
  static constexpr const char* legacy_name = "su";

  // config.json: short_factor and long_factor (required), original_max_position_embeddings
  // (else max_position_embeddings), factor (else max_position_embeddings / L0),
  // attention_factor (PhiMoE's short_mscale / long_mscale: model/config/rope_block.hpp).
  template <class Context>
  static Params read(const Context& c) {
    Params longrope;
    longrope.short_factor = c.block.numbers("short_factor", c.why);
    longrope.long_factor = c.block.numbers("long_factor", c.why);
    longrope.original_max_position_embeddings = c.original_context(false);
    longrope.factor = c.factor_or_ratio(longrope.original_max_position_embeddings);
    longrope.attention_factor = c.block.number("attention_factor");
    return longrope;
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  // seq_len nullopt: the short factors.
  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t> seq_len) {
    return longrope_rope_spec(b.dims, b.theta, p, seq_len, b.pairing);
  }
  static RopeBands bands(const Params& p, const RopeBasis& b, const RopeSpec& spec) {
    RopeBands out = detail::changed_bands(b, spec, PairBand::Rescaled);
    out.original_context = p.original_max_position_embeddings;
    return out;
  }

  static HfFloat32Rope hf_float32(const Params& p, const RopeBasis& b,
                                  std::optional<std::int64_t> seq_len) {
    return hf_float32_longrope(b.dims, b.theta, p, seq_len, b.pairing);
  }
  // The factor's rounding and product (1).
  static double float32_steps(const Params&, std::optional<std::int64_t>) { return 1.0; }

  // GGUF: rope.scaling.type longrope with the rope_factors_long / rope_factors_short tensors
  // (phi3 reads them whatever the type says; llama.cpp picks one by context size).
  static constexpr const char* gguf_scaling_type = "longrope";
  static bool gguf_runs(const GgufRopeKey& k) {
    return k.scaling_type != "yarn" &&
           (k.factors == "rope_factors_long.weight" || k.factors == "rope_factors_short.weight");
  }
  static std::string diff_note(const RopeDiffContext& c, const std::string& field) {
    if (c.gguf_type != name || field != "inv_freq") return "";
    return "llama.cpp picks LongRoPE factors once by context size (" + std::to_string(c.n_ctx_seq) +
           (c.n_ctx_seq > c.n_ctx_orig ? " > " : " <= ") + std::to_string(c.n_ctx_orig) +
           "), HF per call by sequence length";
  }
};

}  // namespace posemb
