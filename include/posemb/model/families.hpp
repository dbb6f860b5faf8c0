// What the loader knows about each HuggingFace model family (`model_type`): the positional kind,
// the pairing its modeling code uses, the config class's defaults, how it derives its layer
// types, which layers get a sliding window, its softmax scale and which layers have no RoPE.
// ONE table, model_families(); each row cites the transformers file (src/transformers/models/)
// it comes from. A model_type not in the table gets the first row (Llama's rules).
#pragma once

#include <array>
#include <string>

#include "posemb/rotary/rope.hpp"

namespace posemb {

enum class PositionKind {
  Rope,        // rotary, any rope_type but "fope"
  Fope,        // Fourier position embedding (rope_type "fope")
  Alibi,       // linear attention bias (Press et al. 2021)
  Learned,     // learned absolute position embeddings added to the tokens
  Sinusoidal,  // fixed sinusoidal absolute embeddings added to the tokens
  RelativeBias,  // T5's bucketed relative position bias on the attention scores
  None,        // no positional encoding in this layer (NoPE, linear attention)
};

inline const char* to_string(PositionKind kind) {
  switch (kind) {
    case PositionKind::Rope:
      return "rope";
    case PositionKind::Fope:
      return "fope";
    case PositionKind::Alibi:
      return "alibi";
    case PositionKind::Learned:
      return "learned";
    case PositionKind::Sinusoidal:
      return "sinusoidal";
    case PositionKind::RelativeBias:
      return "relative_bias";
    case PositionKind::None:
      return "none";
  }
  return "unknown";
}

// How a config class derives `layer_types` when the config gives none (layer i, 0-based;
// `pattern` is the row's pattern / interval, overridden by the config key named below).
enum class LayerTypeRule {
  AllFull,          // every layer full_attention
  SlidingPattern,   // sliding iff (i+1) % sliding_window_pattern != 0
  FixedPattern,     // sliding iff (i+1) % pattern != 0 (no config key)
  MaxWindowLayers,  // sliding iff use_sliding_window and sliding_window and i >= max_window_layers
  NopeSliding,      // sliding iff use_sliding_window and sliding_window and no_rope_layers[i] == 0
  ChunkedRope,      // chunked_attention for RoPE layers, full_attention for NoPE layers
  LinearInterval,   // linear_attention iff (i+1) % full_attention_interval != 0
};

enum class WindowRule {
  Never,          // sliding_window is not used
  SlidingLayers,  // sliding_window on sliding_attention layers
  EveryLayer,     // sliding_window (if set) on every layer
};

enum class SoftmaxRule {
  HeadDim,             // head_dim^-0.5
  QueryPreAttnScalar,  // query_pre_attn_scalar^-0.5 (default 256)
  One,                 // 1 (q and k are RMS-normalised)
  AttentionMultiplier, // attention_multiplier (default 1)
  DeepseekMscale,      // (qk_nope + qk_rope)^-0.5 * m^2, m = 0.1 mscale_all_dim ln(factor) + 1
  Gpt2,                // head_dim^-0.5 if scale_attn_weights, / (i+1) if scale_attn_by_inverse_layer_idx
  Unscaled,            // 1: T5 folds the scale into its initialisation
};

// Which rope parameters each layer type gets when the config has one block (not nested by type).
enum class RopeSplit {
  OneBlock,      // every layer the same block
  LocalBase,     // full: the block; sliding: plain RoPE at rope_local_base_freq (default 1e4)
  FullOnly,      // full: the block; sliding: plain RoPE at the same rope_theta
  Gemma4,        // nested by type; default {sliding: default 1e4, full: proportional 0.25, 1e6}
};

enum class NopeRule {
  None,              // every layer has the family's positions
  NonSlidingLayers,  // layers that are not sliding have none
  NoRopeLayers,      // no_rope_layers[i] == 0 (1 = RoPE), default every no_rope_layer_interval-th
};

struct ModelFamily {
  const char* model_type;
  const char* source;  // transformers file(s) under src/transformers/models/
  PositionKind positions;
  Pairing pairing;
  double partial_rotary_factor;  // config-class default when the config gives none
  double rope_theta;             // config-class default when the config gives none
  LayerTypeRule layer_types;
  int pattern;  // SlidingPattern / FixedPattern / LinearInterval / MaxWindowLayers default
  WindowRule window;
  SoftmaxRule softmax;
  RopeSplit split;
  NopeRule nope;
  bool query_temperature;  // NoPE layers scale q (Llama 4 attn_temperature_tuning)
};

inline const std::array<ModelFamily, 40>& model_families() {
  using P = Pairing;
  using K = PositionKind;
  using L = LayerTypeRule;
  using W = WindowRule;
  using S = SoftmaxRule;
  using R = RopeSplit;
  using N = NopeRule;
  constexpr P half = P::RotateHalf, inter = P::Interleaved;
  static const std::array<ModelFamily, 40> table{{
      // model_type     source                                          kind  pairing partial theta    layer types      pattern window          softmax                 split          nope                 temperature
      {"llama", "llama/configuration_llama.py, modeling_llama.py", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"mistral", "mistral/modeling_mistral.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, false},
      {"mixtral", "mixtral/modeling_mixtral.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, false},
      {"phi3", "phi3/modeling_phi3.py (sliding_window on every layer)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::EveryLayer, S::HeadDim, R::OneBlock, N::None, false},
      {"qwen2", "qwen2/configuration_qwen2.py (use_sliding_window, max_window_layers 28)", K::Rope, half, 1.0, 1e4, L::MaxWindowLayers, 28, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, false},
      {"qwen3", "qwen3/configuration_qwen3.py (use_sliding_window, max_window_layers 28)", K::Rope, half, 1.0, 1e4, L::MaxWindowLayers, 28, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, false},
      {"qwen3_next", "qwen3_next/configuration_qwen3_next.py (full_attention_interval 4, partial 0.25)", K::Rope, half, 0.25, 1e4, L::LinearInterval, 4, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"gemma2", "gemma2/configuration_gemma2.py, modeling_gemma2.py (query_pre_attn_scalar)", K::Rope, half, 1.0, 1e4, L::FixedPattern, 2, W::SlidingLayers, S::QueryPreAttnScalar, R::OneBlock, N::None, false},
      {"gemma3_text", "gemma3/configuration_gemma3.py (sliding_window_pattern 6, rope_local_base_freq)", K::Rope, half, 1.0, 1e6, L::SlidingPattern, 6, W::SlidingLayers, S::QueryPreAttnScalar, R::LocalBase, N::None, false},
      {"gemma4_text", "gemma4/configuration_gemma4.py, modeling_gemma4.py (global_head_dim, proportional)", K::Rope, half, 1.0, 1e6, L::FixedPattern, 6, W::SlidingLayers, S::One, R::Gemma4, N::None, false},
      {"olmo3", "olmo3/modular_olmo3.py (every 4th layer full, YaRN on full layers)", K::Rope, half, 1.0, 5e5, L::FixedPattern, 4, W::SlidingLayers, S::HeadDim, R::FullOnly, N::None, false},
      {"gpt_oss", "gpt_oss/configuration_gpt_oss.py (sliding and full alternate)", K::Rope, half, 1.0, 1e4, L::FixedPattern, 2, W::SlidingLayers, S::HeadDim, R::OneBlock, N::None, false},
      {"smollm3", "smollm3/configuration_smollm3.py (no_rope_layers, NoPE layers sliding)", K::Rope, half, 1.0, 1e4, L::NopeSliding, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NoRopeLayers, false},
      {"llama4_text", "llama4/configuration_llama4.py, modeling_llama4.py (interleaved, NoPE, chunks)", K::Rope, inter, 1.0, 5e5, L::ChunkedRope, 4, W::Never, S::HeadDim, R::OneBlock, N::NoRopeLayers, true},
      {"cohere", "cohere/modeling_cohere.py (rotate_half on x[..., ::2], x[..., 1::2])", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"cohere2", "cohere2/configuration_cohere2.py, modeling_cohere2.py (RoPE on sliding layers only)", K::Rope, inter, 1.0, 1e4, L::SlidingPattern, 4, W::SlidingLayers, S::HeadDim, R::OneBlock, N::NonSlidingLayers, false},
      {"glm", "glm/configuration_glm.py (partial_rotary_factor 0.5), modeling_glm.py", K::Rope, inter, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"glm4", "glm4/configuration_glm4.py (partial_rotary_factor 0.5), modeling_glm4.py", K::Rope, inter, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"ernie4_5", "ernie4_5/modeling_ernie4_5.py (repeat_interleave'd cos/sin)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"ernie4_5_moe", "ernie4_5_moe/modeling_ernie4_5_moe.py (as ernie4_5)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"deepseek_v2", "deepseek_v2/modeling_deepseek_v2.py (complex multiply on adjacent pairs, MLA)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, false},
      {"deepseek_v3", "deepseek_v3/configuration_deepseek_v3.py (rope_interleave true), modeling_deepseek_v3.py", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::DeepseekMscale, R::OneBlock, N::None, false},
      {"gptj", "gptj/modeling_gptj.py (rotate_every_two, rotary_dim)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"codegen", "codegen/modeling_codegen.py (rotate_every_two, rotary_dim)", K::Rope, inter, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"gpt_neox", "gpt_neox/configuration_gpt_neox.py (rotary_pct 0.25, rotary_emb_base)", K::Rope, half, 0.25, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"phi", "phi/configuration_phi.py (partial_rotary_factor 0.5)", K::Rope, half, 0.5, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"persimmon", "persimmon/configuration_persimmon.py (partial_rotary_factor 0.5)", K::Rope, half, 0.5, 25000.0, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"stablelm", "stablelm/configuration_stablelm.py (partial_rotary_factor 0.25)", K::Rope, half, 0.25, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"granite", "granite/modeling_granite.py (scaling = attention_multiplier)", K::Rope, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::AttentionMultiplier, R::OneBlock, N::None, false},
      {"gpt2", "gpt2/modeling_gpt2.py (wpe, scale_attn_by_inverse_layer_idx)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Gpt2, R::OneBlock, N::None, false},
      {"gpt_bigcode", "gpt_bigcode/modeling_gpt_bigcode.py (wpe)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"gpt_neo", "gpt_neo/modeling_gpt_neo.py (wpe)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"opt", "opt/modeling_opt.py (learned positions)", K::Learned, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"bloom", "bloom/modeling_bloom.py (build_alibi_tensor)", K::Alibi, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"xglm", "xglm/modeling_xglm.py (sinusoidal positions)", K::Sinusoidal, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"m2m_100", "m2m_100/modeling_m2m_100.py (sinusoidal positions)", K::Sinusoidal, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"mpt", "mpt/configuration_mpt.py (attn_config.alibi, default true)", K::Alibi, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::HeadDim, R::OneBlock, N::None, false},
      {"t5", "t5/configuration_t5.py, modeling_t5.py (relative_attention_bias in block 0, no 1/sqrt(d))", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, false},
      {"mt5", "mt5/configuration_mt5.py, modeling_mt5.py (as t5)", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, false},
      {"umt5", "umt5/modeling_umt5.py (a relative_attention_bias in every layer)", K::RelativeBias, half, 1.0, 1e4, L::AllFull, 0, W::Never, S::Unscaled, R::OneBlock, N::None, false},
  }};
  return table;
}

// The row of model_type; unknown types (and configs without one) get Llama's row.
inline const ModelFamily& model_family(const std::string& model_type) {
  for (const ModelFamily& family : model_families()) {
    if (model_type == family.model_type) return family;
  }
  return model_families()[0];
}

// Multimodal wrappers whose decoder is `text_config`: the model_type it has when text_config
// names none (configuration_mistral3.py, configuration_gemma3.py, configuration_gemma4.py,
// configuration_llama4.py).
inline const char* default_text_model_type(const std::string& wrapper_type) {
  static const std::array<std::array<const char*, 2>, 4> wrappers{{
      {"mistral3", "mistral"},
      {"gemma3", "gemma3_text"},
      {"gemma4", "gemma4_text"},
      {"llama4", "llama4_text"},
  }};
  for (const auto& [wrapper, text] : wrappers) {
    if (wrapper_type == wrapper) return text;
  }
  return "";
}

}  // namespace posemb
