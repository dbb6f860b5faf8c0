#include "vector_scores.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "arguments.hpp"
#include "npy_files.hpp"
#include "posemb/attention/scores.hpp"
#include "posemb/random.hpp"

namespace posemb::tool {

nlohmann::json attention_json(const LayerAttention& attention, int head_dim) {
  const auto or_null = [](const auto& value) -> nlohmann::json {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  nlohmann::json temperature = nullptr;
  if (const auto& t = attention.query_temperature) {
    temperature = {{"floor_scale", t->floor_scale},
                   {"attn_scale", t->attn_scale},
                   {"position_offset", t->position_offset}};
    if (t->form == TemperatureForm::Power) temperature["form"] = "power";
  }
  return {{"causal", true},
          {"softmax_scale",
           attention.softmax_scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim)))},
          {"sliding_window", or_null(attention.sliding_window)},
          {"attention_chunk_size", or_null(attention.attention_chunk_size)},
          {"query_temperature", temperature},
          {"logit_softcap", or_null(attention.logit_softcap)},
          {"attention_sinks", attention.attention_sinks}};
}

std::vector<float> seeded_sink_logits(std::int64_t heads, std::uint64_t seed) {
  SeededNormal normal(seed);
  std::vector<float> sinks(static_cast<std::size_t>(heads));
  for (float& s : sinks) s = static_cast<float>(normal());
  return sinks;
}

void check_scores_size(std::int64_t batch, std::int64_t heads, std::int64_t kv_heads,
                       std::int64_t seq) {
  if (heads % kv_heads != 0) {
    throw UsageError("--scores: --heads " + std::to_string(heads) + " and --kv-heads " +
                     std::to_string(kv_heads) + ": expected kv-heads to divide heads");
  }
  if (batch * heads * seq > max_output_elements / seq) {
    throw UsageError("--scores: " + std::to_string(seq) +
                     " positions: expected batch * heads * seq * seq <= 2^28");
  }
}

std::vector<float> attention_probabilities(const std::vector<float>& q_out,
                                           const std::vector<float>& k_out,
                                           const std::vector<std::int64_t>& q_dims,
                                           std::int64_t kv_heads,
                                           const std::vector<std::int64_t>& positions,
                                           const LayerAttention& attention,
                                           const std::vector<float>& sink_logits) {
  const std::int64_t batch = q_dims[0], seq = q_dims[1], heads = q_dims[2], head_dim = q_dims[3];
  check_scores_size(batch, heads, kv_heads, seq);
  Tensor4<float> q(batch, seq, heads, head_dim), k(batch, seq, kv_heads, head_dim);
  std::copy(q_out.begin(), q_out.end(), q.data());
  std::copy(k_out.begin(), k_out.end(), k.data());
  PositionMatrix rows(1, seq);
  for (std::int64_t s = 0; s < seq; ++s) rows(0, s) = positions[static_cast<std::size_t>(s)];
  ScoreOptions options;
  options.layer = attention;
  options.causal = true;
  options.softmax = true;
  if (attention.attention_sinks) {
    options.sink_logits =
        Eigen::Map<const Eigen::VectorXf>(sink_logits.data(), heads).cast<double>();
  }
  const Tensor4<float> p = attention_scores(q, Positions(rows), k, Positions(rows), options);
  return std::vector<float>(p.data(), p.data() + p.size());
}

}  // namespace posemb::tool
