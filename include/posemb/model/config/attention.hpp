// config.json reader, attention rules: each layer's LayerAttention (layer_attention.hpp) from the
// family's row (families.hpp): sliding window, chunk, Llama 4's query temperature and the softmax
// scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"

namespace posemb::detail {

// A token count at key (> 0), or nullopt when absent.
inline std::optional<std::int64_t> read_token_count(const JsonReader& root, const char* key) {
  const auto value = root.integer(key);
  if (value && *value <= 0) fail(root.name(key), *value, "expected a number of tokens > 0");
  return value;
}

// sliding_window on the layers the family's WindowRule names; Qwen2-style families and SmolLM3
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
                         family.layer_types == LayerTypeRule::NopeSliding;
      if (gated && !root.boolean("use_sliding_window").value_or(false)) return std::nullopt;
      return read_token_count(root, "sliding_window");
    }
    case WindowRule::EveryLayer:
      return read_token_count(root, "sliding_window");
  }
  return std::nullopt;
}

// Llama 4 (modeling_llama4.py): NoPE layers scale q when attn_temperature_tuning is truthy.
inline std::optional<QueryTemperature> read_query_temperature(const JsonReader& root,
                                                              const ModelFamily& family,
                                                              const LayerPositions& layer) {
  if (!family.query_temperature || layer.kind != PositionKind::None ||
      !root.truthy("attn_temperature_tuning").value_or(false)) {
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

// The softmax scale by the family's SoftmaxRule; softmax_factor is DeepSeek's m^2 of the layer's
// rope block (1 otherwise).
inline double read_softmax_scale(const JsonReader& root, const ModelFamily& family,
                                 const LayerPositions& layer, double softmax_factor) {
  const double inverse_sqrt_head = 1.0 / std::sqrt(static_cast<double>(layer.head_dim));
  switch (family.softmax) {
    case SoftmaxRule::HeadDim:
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
      const double scale = root.number("attention_multiplier").value_or(1.0);
      require_positive_finite(root.name("attention_multiplier"), scale);
      return scale;
    }
    case SoftmaxRule::DeepseekMscale:
      return inverse_sqrt_head * softmax_factor;
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
inline void read_attention(const JsonReader& root, const ModelFamily& family,
                           LayerPositions& layer, double softmax_factor) {
  LayerAttention& attention = layer.attention;
  attention.sliding_window = read_sliding_window(root, family, layer);
  if (layer.layer_type == "chunked_attention") {
    attention.attention_chunk_size = read_token_count(root, "attention_chunk_size");
  }
  attention.query_temperature = read_query_temperature(root, family, layer);
  if (!layer.softmax_attention() || layer.head_dim == 0) return;
  attention.softmax_scale = read_softmax_scale(root, family, layer, softmax_factor);
}

}  // namespace posemb::detail
