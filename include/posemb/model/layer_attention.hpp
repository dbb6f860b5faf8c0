// What one attention layer does around q·kᵀ besides the positions themselves: the softmax scale,
// the sliding window, the chunked (block-local) mask, the query temperature, the logit softcap,
// the attention sinks and where an additive bias (ALiBi) enters relative to the scale. A model's
// config gives one of these per layer (model/config.hpp); the attention helper
// (attention/scores.hpp) applies it. Every default leaves a plain softmax attention unchanged.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace posemb {

// How a query temperature grows with the position (QueryTemperature::factor).
enum class TemperatureForm {
  FloorLog,  // 1 + attn_scale · ln(1 + floor((p + position_offset) / floor_scale))
  Power,     // (1 + (p + position_offset) / floor_scale) ^ attn_scale
};

inline const char* to_string(TemperatureForm form) {
  return form == TemperatureForm::Power ? "power" : "floor_log";
}

// A query scale that grows with the position, multiplying q before the product; p the 0-based
// query position. Three families use it:
//   Llama 4 (modeling_llama4.py, Llama4TextAttention._get_attn_scale, on its layers without
//   RoPE): FloorLog, floor((p + 1) / floor_scale), position_offset 1, floor_scale 8192,
//   attn_scale 0.1.
//   Ministral 3 (modular_ministral3.py, _get_llama_4_attn_scale, on every layer after RoPE):
//   FloorLog, 1 + beta · ln(1 + floor(p / L0)), position_offset 0, floor_scale L0 =
//   rope_parameters.original_max_position_embeddings, attn_scale beta = llama_4_scaling_beta.
//   Beam (modeling_beam.py, compute_attention_scaling, on its layers without RoPE): Power,
//   exp(0.1 · ln(1 + (p + 1) / 2048)), position_offset 1, floor_scale 2048, attn_scale 0.1.
// Example: {8192, 0.1} (Llama 4) gives 1 at p = 8190 and 1.0693147180559945 (1 + 0.1 ln 2) at
// 8191; {8192, 0.1, 0} gives 1.0693147180559945 from p = 8192; {2048, 0.1, 1, Power} gives
// 2^0.1 = 1.0717734625362931 at p = 2047.
struct QueryTemperature {
  double floor_scale = 8192.0;
  double attn_scale = 0.1;
  std::int64_t position_offset = 1;
  TemperatureForm form = TemperatureForm::FloorLog;

  double factor(double position) const {
    const double shifted = position + static_cast<double>(position_offset);
    if (form == TemperatureForm::Power)
      return std::exp(attn_scale * std::log1p(shifted / floor_scale));
    return std::log1p(std::floor(shifted / floor_scale)) * attn_scale + 1.0;
  }
};

inline bool operator==(const QueryTemperature& a, const QueryTemperature& b) {
  return a.floor_scale == b.floor_scale && a.attn_scale == b.attn_scale &&
         a.position_offset == b.position_offset && a.form == b.form;
}

// Where an additive bias (ALiBi) enters the logits relative to the softmax scale:
//   AfterScale   logits = scale · q kᵀ + bias       MPT (modeling_mpt.py, MptAttention.forward:
//                scores · softmax_scale + position_bias, softmax_scale from attn_config or
//                1 / sqrt(head_dim)); BLOOM (modeling_bloom.py, BloomAttention.forward:
//                alibi.baddbmm(q, kᵀ, beta = 1, alpha = 1 / sqrt(head_dim)): the bias unscaled)
//   BeforeScale  logits = scale · (q kᵀ + bias)     Falcon (modeling_falcon.py,
//                FalconAttention.forward: (scores + alibi) · inv_norm_factor), so the scores
//                see the effective slope slope · scale = slope / sqrt(head_dim)
enum class BiasPlacement { AfterScale, BeforeScale };

// The attention-side parameters of one layer. Absent optionals mean "not used by this layer".
//   softmax_scale:        logits = softmax_scale · q kᵀ; nullopt: 1 / sqrt(head_dim)
//   sliding_window W:     key j is visible to query i iff 0 <= pos_i - pos_j < W (HF semantics)
//   attention_chunk_size C: key j is visible to query i iff pos_j <= pos_i and
//                         floor(pos_i / C) == floor(pos_j / C) (Llama 4 chunked attention)
//   query_temperature:    q at position p is multiplied by query_temperature->factor(p)
//   logit_softcap c:      logits = c · tanh(logits / c) after the scale (Gemma 2,
//                         modeling_gemma2.py, eager_attention_forward: attn_logit_softcapping)
//   attention_sinks:      one learned logit per query head joins each softmax row's denominator
//                         and is dropped after it (gpt-oss, modeling_gpt_oss.py,
//                         eager_attention_forward: the sinks concatenated as a last column)
//   bias_placement:       where ALiBi's bias enters relative to softmax_scale (above)
struct LayerAttention {
  std::optional<double> softmax_scale;
  std::optional<std::int64_t> sliding_window;
  std::optional<std::int64_t> attention_chunk_size;
  std::optional<QueryTemperature> query_temperature;
  std::optional<double> logit_softcap;
  bool attention_sinks = false;
  BiasPlacement bias_placement = BiasPlacement::AfterScale;
};

// The slope ALiBi's bias has in the logits, for a head's slope and the layer's softmax scale:
// slope · scale when the bias enters before the scale (Falcon), the slope itself otherwise.
// Example: Falcon with head_dim 64 and slope 0.5: effective_alibi_slope(0.5, 0.125, BeforeScale)
// is 0.0625.
inline double effective_alibi_slope(double slope, double softmax_scale, BiasPlacement placement) {
  return placement == BiasPlacement::BeforeScale ? slope * softmax_scale : slope;
}

// True when two layers' attention parameters are equal, every field of LayerAttention compared
// (a field added above belongs here too).
inline bool same_attention(const LayerAttention& a, const LayerAttention& b) {
  return a.softmax_scale == b.softmax_scale && a.sliding_window == b.sliding_window &&
         a.attention_chunk_size == b.attention_chunk_size &&
         a.query_temperature == b.query_temperature && a.logit_softcap == b.logit_softcap &&
         a.attention_sinks == b.attention_sinks && a.bias_placement == b.bias_placement;
}

inline const char* to_string(BiasPlacement placement) {
  return placement == BiasPlacement::BeforeScale ? "before_scale" : "after_scale";
}

}  // namespace posemb
