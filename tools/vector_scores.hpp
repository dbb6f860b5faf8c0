// The attention probabilities of `posemb vectors --scores`: one layer's settings (softmax scale,
// sliding window, chunk, query temperature, logit softcap, attention sinks; model/
// layer_attention.hpp) applied by attention_scores (attention/scores.hpp) to a scheme's rotated
// q and k, causal, with queries and keys at the vectors' positions.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "posemb/model/layer_attention.hpp"
#include "posemb/tensor.hpp"

namespace posemb::tool {

// A layer's attention settings as the manifest states them: the softmax scale in use
// (1 / sqrt(head_dim) when the config sets none), window, chunk, temperature, softcap, sinks.
nlohmann::json attention_json(const LayerAttention& attention, int head_dim);

// Seeded sink logits [heads] (standard normal draws rounded to float32), for layers with sinks.
std::vector<float> seeded_sink_logits(std::int64_t heads, std::uint64_t seed);

// Throws UsageError unless kv_heads divides heads and batch * heads * seq^2 <= 2^28.
void check_scores_size(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads,
                       std::int64_t seq);

// Probabilities [batch, heads, seq, seq] (float32) of q_out [batch, seq, heads, head_dim] and
// k_out [batch, seq, kv_heads, head_dim] (BSHD, already rotated), query and key s at
// positions[s]: softmax over keys of causal, masked, scaled (and capped) logits, the sinks
// [heads] in each row's denominator when the layer has them.
std::vector<float> attention_probabilities(const std::vector<float>& q_out,
                                           const std::vector<float>& k_out,
                                           const std::vector<std::int64_t>& q_dims,
                                           std::int64_t kv_heads,
                                           const std::vector<std::int64_t>& positions,
                                           const LayerAttention& attention,
                                           const std::vector<float>& sink_logits);

}  // namespace posemb::tool
