// What one attention layer does around q·kᵀ besides the positions themselves: the softmax scale,
// the sliding window, the chunked (block-local) mask and Llama 4's query temperature. A model's
// config gives one of these per layer (config.hpp); the attention helpers (attention.hpp,
// fused_attention.hpp) apply it.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

namespace posemb {

// Llama 4's attention temperature tuning on its layers without RoPE (modeling_llama4.py):
//   q *= log1p(floor((p + 1) / floor_scale)) * attn_scale + 1,   p the 0-based query position.
// Example: floor_scale 8192, attn_scale 0.1 gives 1 at p = 8190 and 1.0693147180559945 at 8191.
struct QueryTemperature {
  double floor_scale = 8192.0;
  double attn_scale = 0.1;

  double factor(double position) const {
    return std::log1p(std::floor((position + 1.0) / floor_scale)) * attn_scale + 1.0;
  }
};

// The attention-side parameters of one layer. Absent optionals mean "not used by this layer".
//   softmax_scale:        logits = softmax_scale · q kᵀ; nullopt: 1 / sqrt(head_dim)
//   sliding_window W:     key j is visible to query i iff 0 <= pos_i - pos_j < W (HF semantics)
//   attention_chunk_size C: key j is visible to query i iff pos_j <= pos_i and
//                         floor(pos_i / C) == floor(pos_j / C) (Llama 4 chunked attention)
//   query_temperature:    q at position p is multiplied by query_temperature->factor(p)
struct LayerAttention {
  std::optional<double> softmax_scale;
  std::optional<std::int64_t> sliding_window;
  std::optional<std::int64_t> attention_chunk_size;
  std::optional<QueryTemperature> query_temperature;
};

}  // namespace posemb
