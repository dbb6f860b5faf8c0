// What vLLM 0.33.0 runs for a config.json, and where it departs from transformers: the config's
// layers with HuggingFace semantics, then each row of vllm_departures() applied, compared field
// by field as diff.hpp compares a GGUF (docs/conformance-vllm.md has the evidence of each row:
// conformance/vllm/run.py rotates the same q/k with vLLM's own rotary layers).
//
// vLLM builds one rotary layer per attention at load time (get_rope, vllm/model_executor/layers/
// rotary_embedding/__init__.py) with a cos/sin cache of a fixed length: nothing in it depends on
// the sequence it runs, only on the config and the engine's max_model_len.
//
// Example:
//   const auto differences = posemb::diff_vllm_config("config.json", 131072, std::nullopt);
//   std::cout << posemb::differences_text(differences, "vllm");
//   return differences.empty() ? 0 : 3;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/model/config.hpp"
#include "posemb/model/diff.hpp"
#include "posemb/model/layer_plan.hpp"

namespace posemb {

namespace detail {

// The vLLM source cited by every row.
inline constexpr const char* vllm_rotary = "vllm/model_executor/layers/rotary_embedding/";

// One departure: which layers it touches, the seq_len vLLM's frequencies correspond to for
// them, and the one-line why. frequencies_at returns nullopt for layers it does not touch.
struct VllmDeparture {
  const char* rope_type;
  std::optional<std::int64_t> (*frequencies_at)(const RopeScheme& scheme,
                                                std::int64_t max_model_len);
  const char* why;
};

// DynamicNTKScalingRotaryEmbedding._compute_cos_sin_cache (dynamic_ntk_scaling_rope.py):
//   base' = base * (factor * max_position / max_trained_positions - (factor - 1))^(d / (d - 2))
// with max_trained_positions = max_position (get_rope's default) is base' = base: the default
// frequencies at every length (transformers' at a sequence within max_position_embeddings).
// Hunyuan's alpha (DynamicNTKAlphaRotaryEmbedding) is static in both: no departure.
inline std::optional<std::int64_t> vllm_dynamic_ntk(const RopeScheme& scheme, std::int64_t) {
  const auto* p = std::get_if<DynamicNtkParams>(&scheme.params);
  if (p == nullptr || p->alpha) return std::nullopt;
  return p->max_position_embeddings;
}

// Phi3LongRoPEScaledRotaryEmbedding.__init__ / forward (phi3_long_rope_scaled_rope.py):
// use_long_rope = max_model_len > original_max_position_embeddings, then long_factor (and
// long_mscale) for every position, else short_factor; transformers picks per call.
inline std::optional<std::int64_t> vllm_longrope(const RopeScheme& scheme,
                                                 std::int64_t max_model_len) {
  if (!std::holds_alternative<LongRopeParams>(scheme.params)) return std::nullopt;
  return max_model_len;
}

inline const std::vector<VllmDeparture>& vllm_departures() {
  static const std::vector<VllmDeparture> rows = {
      {"dynamic", vllm_dynamic_ntk,
       "vLLM's dynamic NTK is a constant base: base * (factor * max_position / "
       "max_trained_positions - (factor - 1))^(d/(d-2)) = base, default frequencies at every "
       "length (dynamic_ntk_scaling_rope.py; vllm-project/vllm#41236)"},
      {"longrope", vllm_longrope,
       "vLLM picks LongRoPE factors once by max_model_len (long iff > "
       "original_max_position_embeddings) for every position, transformers per call by "
       "sequence length (phi3_long_rope_scaled_rope.py; vllm-project/vllm#27431)"},
  };
  return rows;
}

inline const VllmDeparture* vllm_departure(const LayerPositions& layer) {
  if (layer.kind != PositionKind::Rope || !layer.rope) return nullptr;
  for (const VllmDeparture& row : vllm_departures()) {
    if (layer.rope->rope_type == row.rope_type) return &row;
  }
  return nullptr;
}

// The dynamic NTK layer's cos/sin cache: max_position_embeddings rows
// (DynamicNTKScalingRotaryEmbedding keeps RotaryEmbedding's length) while vLLM's default
// max_model_len is max_position_embeddings * factor (vllm/config/model.py,
// _get_and_verify_max_len): a position past the cache indexes out of it.
inline std::optional<PlanDifference> vllm_cache_length(const LayerPositions& layer,
                                                       std::int64_t max_model_len) {
  if (!layer.rope) return std::nullopt;
  const auto* p = std::get_if<DynamicNtkParams>(&layer.rope->params);
  if (p == nullptr || p->alpha || max_model_len <= p->max_position_embeddings) return std::nullopt;
  return PlanDifference{layer.index, "positions_cached", std::to_string(p->max_position_embeddings),
                        std::to_string(max_model_len),
                        std::string("vLLM's dynamic NTK cos_sin_cache has max_position_embeddings "
                                    "rows; positions past it index out of the cache (") +
                            vllm_rotary + "dynamic_ntk_scaling_rope.py)"};
}

inline void check_max_model_len(std::int64_t max_model_len) {
  if (max_model_len <= 0) {
    fail("max_model_len", max_model_len, "expected a positive number of positions");
  }
}

}  // namespace detail

// The layers of a config as vLLM 0.33.0 runs them with max_model_len (every position below it).
inline std::vector<LayerPlan> vllm_layer_plans(const ModelPositions& config,
                                               std::int64_t max_model_len) {
  detail::check_max_model_len(max_model_len);
  std::vector<LayerPlan> plans = config_layer_plans(config, std::nullopt);
  for (std::size_t il = 0; il < plans.size(); ++il) {
    const LayerPositions& layer = config.layers[il];
    const detail::VllmDeparture* row = detail::vllm_departure(layer);
    if (row == nullptr) continue;
    const RopeSpec spec = layer.rope_spec(row->frequencies_at(*layer.rope, max_model_len));
    plans[il].inv_freq.assign(spec.inv_freq.data(), spec.inv_freq.data() + spec.inv_freq.size());
    plans[il].attention_scale = spec.attention_scale;
  }
  return plans;
}

// Where vLLM (max_model_len) departs from transformers at seq_len (nullopt: a sequence within
// the original context): `vllm` values in PlanDifference::gguf, each with its why.
inline std::vector<PlanDifference> diff_vllm_plans(const ModelPositions& config,
                                                   std::int64_t max_model_len,
                                                   std::optional<std::int64_t> seq_len) {
  const std::vector<LayerPlan> v = vllm_layer_plans(config, max_model_len);
  const std::vector<LayerPlan> c = config_layer_plans(config, seq_len);
  std::vector<PlanDifference> out;
  for (std::size_t il = 0; il < c.size(); ++il) {
    const detail::VllmDeparture* row = detail::vllm_departure(config.layers[il]);
    for (const detail::PlanField& field : detail::plan_fields()) {
      if (field.same(v[il], c[il])) continue;
      out.push_back(
          {c[il].layer, field.name, field.json(v[il]), field.json(c[il]), row ? row->why : ""});
    }
    if (auto cache = detail::vllm_cache_length(config.layers[il], max_model_len)) {
      out.push_back(*cache);
    }
  }
  return out;
}

// diff_vllm_plans of the config.json at config_path.
inline std::vector<PlanDifference> diff_vllm_config(const std::string& config_path,
                                                    std::int64_t max_model_len,
                                                    std::optional<std::int64_t> seq_len) {
  const ModelPositions config = load_model_positions(config_path);
  try {
    return diff_vllm_plans(config, max_model_len, seq_len);
  } catch (Error& error) {
    throw error.add_context(config_path);
  }
}

}  // namespace posemb
