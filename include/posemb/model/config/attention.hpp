// config.json reader, attention rules: each layer's LayerAttention (layer_attention.hpp) from the
// family's row (families.hpp): sliding window, chunk, Llama 4's query temperature and the softmax
// scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"

namespace posemb::detail {

// MPT's attn_config object ({} when absent).
inline JsonReader mpt_attn_config(const JsonReader& root) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* attn = root.object("attn_config");
  return root.child(attn != nullptr ? *attn : empty, root.name("attn_config."));
}

// A token count at key (> 0), or nullopt when absent.
inline std::optional<std::int64_t> read_token_count(const JsonReader& root, const char* key) {
  const auto value = root.integer(key);
  if (value && *value <= 0) fail(root.name(key), *value, "expected a number of tokens > 0");
  return value;
}

// The key of the family's sliding window (GPT-Neo: window_size; ModernBERT: local_attention, the
// whole band).
inline const char* window_key(const ModelFamily& family) {
  if (family.window == WindowRule::HalfLocalAttention ||
      family.window == WindowRule::HalfLocalAttentionPlusOne) {
    return "local_attention";
  }
  return family.layer_types == LayerTypeRule::AttentionTypes ? "window_size" : "sliding_window";
}

// True when the config sets a window, or leaves it out and the class has one (an explicit null
// is no window).
inline bool window_set(const JsonReader& root, const ModelFamily& family) {
  const char* key = window_key(family);
  if (root.has(key)) return true;
  return !root.contains(key) && family.defaults.sliding_window > 0;
}

// The window W: the config's (> 0), else the class default when the key is absent (an explicit
// null is none); W // 2 + 1 with use_bidirectional_attention (true, or Gemma 4's "all") in the
// families whose config class halves it (configuration_gemma3.py, configuration_gemma4.py).
inline std::optional<std::int64_t> read_window(const JsonReader& root, const ModelFamily& family) {
  const char* key = window_key(family);
  std::optional<std::int64_t> window = read_token_count(root, key);
  if (!window && window_set(root, family)) window = family.defaults.sliding_window;
  if (window && family.bidirectional_window) {
    const nlohmann::json* bidirectional = root.find("use_bidirectional_attention");
    if (bidirectional != nullptr && (*bidirectional == true || *bidirectional == "all")) {
      window = *window / 2 + 1;
    }
  }
  return window;
}

// The window the attention is given from the config's band: UltraBERT's radius r sees |i - j| <= r,
// so W = r + 1 (modeling_ultrabert.py, UltrabertAttention); ModernBERT's local_attention L is the
// whole band, W = L // 2 + 1 (modeling_modernbert.py, ModernBertAttention), its decoder's
// L // 2 (configuration_modernbert_decoder.py, sliding_window).
inline std::optional<std::int64_t> band_window(WindowRule rule, std::optional<std::int64_t> band) {
  if (!band) return band;
  if (rule == WindowRule::SlidingLayersRadius) return *band + 1;
  return *band / 2 + (rule == WindowRule::HalfLocalAttentionPlusOne ? 1 : 0);
}

// The window on the layers the family's WindowRule names; Qwen2-style families and SmolLM3
// only with use_sliding_window.
inline std::optional<std::int64_t> read_sliding_window(const JsonReader& root,
                                                       const ModelFamily& family,
                                                       const LayerPositions& layer) {
  switch (family.window) {
    case WindowRule::Never:
      return std::nullopt;
    case WindowRule::SlidingLayers: {
      if (layer.layer_type != "sliding_attention") return std::nullopt;
      const bool gated = family.layer_types == LayerTypeRule::MaxWindowLayers ||
                         family.layer_types == LayerTypeRule::EvenBelowWindowLayers ||
                         family.layer_types == LayerTypeRule::NopeSliding;
      if (gated && !root.boolean("use_sliding_window").value_or(false)) return std::nullopt;
      return read_window(root, family);
    }
    case WindowRule::EveryLayer:
      return read_window(root, family);
    case WindowRule::EveryLayerIfEnabled:
      if (!root.boolean("use_sliding_window").value_or(false)) return std::nullopt;
      return read_window(root, family);
    case WindowRule::SlidingLayersRadius:
    case WindowRule::HalfLocalAttention:
    case WindowRule::HalfLocalAttentionPlusOne:
      if (layer.layer_type != "sliding_attention") return std::nullopt;
      return band_window(family.window, read_window(root, family));
  }
  return std::nullopt;
}

// Ministral 3's query temperature from its rope block (modeling_ministral3.py,
// _get_llama_4_attn_scale): 1 + llama_4_scaling_beta · ln(1 + floor(p / L0)), L0 the block's
// original_max_position_embeddings; nullopt when the block has no llama_4_scaling_beta.
inline std::optional<QueryTemperature> read_beta_temperature(const JsonReader& block) {
  if (!block.has("llama_4_scaling_beta")) return std::nullopt;
  QueryTemperature temperature;
  temperature.attn_scale = block.number("llama_4_scaling_beta", "");
  if (!std::isfinite(temperature.attn_scale)) {
    fail(block.name("llama_4_scaling_beta"), temperature.attn_scale, "expected a finite number");
  }
  const std::int64_t original =
      block.integer("original_max_position_embeddings", "required with llama_4_scaling_beta");
  require_positive_finite(block.name("original_max_position_embeddings"),
                          static_cast<double>(original));
  temperature.floor_scale = static_cast<double>(original);
  temperature.position_offset = 0;
  return temperature;
}

// The query temperature by the family's TemperatureRule (layer_attention.hpp): Llama 4
// (modeling_llama4.py) on NoPE layers when attn_temperature_tuning is truthy (default true),
// floor_scale (8192), attn_scale (0.1), floor((p + 1) / F); Ministral 3 on every softmax layer,
// block_temperature (read_beta_temperature); Beam (modeling_beam.py,
// compute_attention_scaling, constants in the code) on its softmax layers without RoPE:
// (1 + (p + 1) / 2048)^0.1.
inline std::optional<QueryTemperature> read_query_temperature(
    const JsonReader& root, const ModelFamily& family, const LayerPositions& layer,
    const std::optional<QueryTemperature>& block_temperature) {
  if (family.temperature == TemperatureRule::EveryLayerLlama4Beta) {
    return layer.softmax_attention() ? block_temperature : std::nullopt;
  }
  if (family.temperature == TemperatureRule::PowerNopeLayers) {
    if (layer.kind != PositionKind::None || !layer.softmax_attention()) return std::nullopt;
    return QueryTemperature{2048.0, 0.1, 1, TemperatureForm::Power};
  }
  if (family.temperature != TemperatureRule::Llama4NopeLayers || layer.kind != PositionKind::None ||
      !root.truthy("attn_temperature_tuning").value_or(true)) {
    return std::nullopt;
  }
  QueryTemperature temperature;
  temperature.floor_scale = root.number("floor_scale").value_or(temperature.floor_scale);
  temperature.attn_scale = root.number("attn_scale").value_or(temperature.attn_scale);
  require_positive_finite(root.name("floor_scale"), temperature.floor_scale);
  if (!std::isfinite(temperature.attn_scale)) {
    fail(root.name("attn_scale"), temperature.attn_scale, "expected a finite number");
  }
  return temperature;
}

// Llama 4's attn_temperature_tuning as a number (Llama-4-Scout-17B-16E's config.json: 4): the
// original code tests its truthiness (`if self.attn_temperature_tuning`, as posemb reads it),
// while transformers 5.24 / 5.25 refuse to load it (Llama4TextConfig's @strict bool field:
// StrictDataclassFieldValidationError); the warning says so. Empty for other values.
inline std::string temperature_switch_note(const JsonReader& root, const ModelFamily& family) {
  const nlohmann::json* value = root.peek("attn_temperature_tuning");
  if (family.temperature != TemperatureRule::Llama4NopeLayers || value == nullptr ||
      !value->is_number()) {
    return "";
  }
  return root.name("attn_temperature_tuning") + " = " + value->dump() +
         " is not true or false: transformers 5.25 refuses to load it (Llama4TextConfig expects a "
         "bool); posemb reads it as Python's truth value, as the original Llama 4 code (" +
         (value->get<double>() != 0.0 ? "on" : "off") + ")";
}

// attn_logit_softcapping (> 0), else the class default when the key is absent (null: none).
inline std::optional<double> read_logit_softcap(const JsonReader& root, const ModelFamily& family) {
  const char* key = "attn_logit_softcapping";
  std::optional<double> cap = root.number(key);
  if (!cap && !root.contains(key) && family.defaults.logit_softcap > 0.0) {
    cap = family.defaults.logit_softcap;
  }
  if (cap) require_positive_finite(root.name(key), *cap);
  return cap;
}

// The softmax scale by the family's SoftmaxRule; softmax_factor is DeepSeek's m^2 of the layer's
// rope block (1 otherwise).
inline double read_softmax_scale(const JsonReader& root, const ModelFamily& family,
                                 const LayerPositions& layer, double softmax_factor) {
  const double inverse_sqrt_head = 1.0 / std::sqrt(static_cast<double>(layer.head_dim));
  switch (family.softmax) {
    case SoftmaxRule::HeadDim:
      if (family.positions_rule == PositionsRule::MptAttnConfig) {
        const JsonReader attn_config = mpt_attn_config(root);
        if (auto scale = attn_config.number("softmax_scale")) {
          require_positive_finite(attn_config.name("softmax_scale"), *scale);
          return *scale;
        }
      }
      return inverse_sqrt_head;
    case SoftmaxRule::QueryPreAttnScalar: {
      const double scalar = root.number("query_pre_attn_scalar").value_or(256.0);
      require_positive_finite(root.name("query_pre_attn_scalar"), scalar);
      return 1.0 / std::sqrt(scalar);
    }
    case SoftmaxRule::One:
    case SoftmaxRule::Unscaled:
      return 1.0;
    case SoftmaxRule::AttentionMultiplier: {
      // attention_multiplier, else the class default (GraniteDoclingTextConfig: 0.015625), else
      // GraniteConfig's 1.
      const double fallback =
          family.defaults.attention_multiplier > 0.0 ? family.defaults.attention_multiplier : 1.0;
      const double scale = root.number("attention_multiplier").value_or(fallback);
      require_positive_finite(root.name("attention_multiplier"), scale);
      return scale;
    }
    case SoftmaxRule::DeepseekMscale:
      return inverse_sqrt_head * softmax_factor;
    case SoftmaxRule::KeyMultiplier: {
      // FalconH1Attention.forward (modular_falcon_h1.py): k = k_proj(x) * key_multiplier before
      // RoPE, which is linear, so q.k and the scores scale by key_multiplier (null: 1).
      const double multiplier = root.number("key_multiplier").value_or(1.0);
      require_positive_finite(root.name("key_multiplier"), multiplier);
      return inverse_sqrt_head * multiplier;
    }
    case SoftmaxRule::Gpt2: {
      double scale = root.boolean("scale_attn_weights").value_or(true) ? inverse_sqrt_head : 1.0;
      if (root.boolean("scale_attn_by_inverse_layer_idx").value_or(false)) {
        scale /= static_cast<double>(layer.index + 1);
      }
      return scale;
    }
  }
  return inverse_sqrt_head;
}

// The layer's LayerAttention; the softmax scale on softmax layers whose head size is known.
// block_temperature: the query temperature the layer's rope block implies (Ministral 3).
inline void read_attention(const JsonReader& root, const ModelFamily& family, LayerPositions& layer,
                           double softmax_factor,
                           const std::optional<QueryTemperature>& block_temperature = {}) {
  LayerAttention& attention = layer.attention;
  attention.sliding_window = read_sliding_window(root, family, layer);
  if (layer.layer_type == "chunked_attention") {
    attention.attention_chunk_size = read_token_count(root, "attention_chunk_size");
    if (!attention.attention_chunk_size && !root.contains("attention_chunk_size") &&
        family.defaults.attention_chunk_size > 0) {
      attention.attention_chunk_size = family.defaults.attention_chunk_size;
    }
  }
  attention.query_temperature = read_query_temperature(root, family, layer, block_temperature);
  if (layer.kind == PositionKind::Alibi) attention.bias_placement = family.bias_placement;
  if (!layer.softmax_attention()) return;
  attention.logit_softcap = read_logit_softcap(root, family);
  attention.attention_sinks = family.attention_sinks;
  if (layer.head_dim == 0) return;
  attention.softmax_scale = read_softmax_scale(root, family, layer, softmax_factor);
}

}  // namespace posemb::detail
