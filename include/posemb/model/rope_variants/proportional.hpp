// rope_type "proportional": p-RoPE (Barbero et al. 2024, "Round and Round We Go! What makes
// Rotary Positional Encodings useful?"; Gemma 4): over the whole head H the first
// int(p * H // 2) pairs rotate at base^(-2i/H) / s, the rest never (transformers 5.24.0
// modeling_rope_utils.py, _compute_proportional_rope_parameters; the formulas: rotary/scaled.hpp,
// proportional_rope_spec).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "posemb/model/rope_variants/variant.hpp"
#include "posemb/rotary/scaled.hpp"

namespace posemb {

inline bool operator==(const ProportionalParams& a, const ProportionalParams& b) {
  return a.partial_rotary_factor == b.partial_rotary_factor && a.factor == b.factor;
}

struct ProportionalRope : RopeVariantDefaults {
  using Params = ProportionalParams;
  static constexpr const char* name = "proportional";
  static constexpr bool rotates_whole_head = true;  // p picks the rotating pairs

  // config.json: partial_rotary_factor (the block's, else the config's) and factor (else 1).
  template <class Context>
  static Params read(const Context& c) {
    return Params{c.partial_rotary_factor, c.block.number("factor").value_or(1.0)};
  }
  static std::optional<double> factor(const Params& p) { return p.factor; }

  static RopeSpec spec(const Params& p, const RopeBasis& b, std::optional<std::int64_t>) {
    return proportional_rope_spec(b.dims.head_dim, b.theta, p, b.pairing);
  }
  // Zero beyond the rotating pairs; kept below them, or interpolated when s != 1.
  static RopeBands bands(const Params& p, const RopeBasis&, const RopeSpec& spec) {
    const int rotating = proportional_rotating_pairs(spec.rotary_dim, p);
    RopeBands out;
    for (int i = 0; i < spec.pairs(); ++i) {
      out.pairs.push_back(i >= rotating     ? PairBand::Zero
                          : p.factor == 1.0 ? PairBand::Kept
                                            : PairBand::Interpolated);
    }
    return out;
  }

  static constexpr const char* no_hf_float32 =
      "no float32 transcription of _compute_proportional_rope_parameters (its exponent over the "
      "whole head, the zero tail, inv_freq /= factor) is written and checked against transformers";
  // HF's steps beyond the default power: the division inv_freq /= factor, exact for s = 1.
  static double float32_steps(const Params& p, std::optional<std::int64_t>) {
    return p.factor == 1.0 ? 0.0 : 1.0;
  }

  static constexpr const char* no_gguf =
      "no GGUF rope.scaling.type or rope tensor is read as proportional RoPE (model/gguf.hpp "
      "reads llama.cpp's none, linear, yarn, longrope and rope_freqs)";
};

}  // namespace posemb
