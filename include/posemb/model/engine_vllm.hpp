// What vLLM 0.33.0 runs for a config.json, and where it departs from transformers: the config's
// layers as vLLM's model code reads them (vllm_readings(): its own defaults for a model_type),
// then each row of vllm_departures() applied, compared field by field as diff.hpp compares a
// GGUF (docs/conformance-vllm.md has the evidence of each row: conformance/vllm/run.py rotates
// the same q/k with vLLM's own rotary layers).
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
#include <utility>
#include <variant>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/model/config.hpp"
#include "posemb/model/config_options.hpp"
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

// A model_type whose vLLM model code reads config.json otherwise than transformers: the
// ConfigOptions of vLLM's reading and the one-line why.
struct VllmReading {
  const char* model_type;
  ConfigOptions options;
  const char* why;
};

// GLM-4V's text model: vLLM runs it as Glm4ForCausalLM (glm4_1v.py,
// Glm4vForConditionalGeneration.__init__: architectures ["Glm4ForCausalLM"] for model_type
// glm4v), whose Glm4Attention.__init__ (glm4.py) does
//   config.rope_parameters.setdefault("partial_rotary_factor", 0.5)
// where transformers 5.25 takes 1.0 (modeling_glm4v.py,
// Glm4vTextRotaryEmbedding.compute_default_rope_parameters); and vLLM uses M-RoPE only when the
// rope block has mrope_section (vllm/transformers_utils/config.py, uses_mrope; get_rope builds
// MRotaryEmbedding only then), where transformers takes [8, 12, 12] without one.
inline ConfigOptions vllm_glm4v_text_options() {
  ConfigOptions options;
  options.partial_rotary_factor = 0.5;
  options.default_mrope_section = false;
  return options;
}

// GLM-4.5V's text (Glm4MoeForCausalLM, glm4_moe.py): the same setdefault of 0.5, transformers'
// default too (configuration_glm4v_moe.py), and the same M-RoPE rule.
inline ConfigOptions vllm_glm4v_moe_text_options() {
  ConfigOptions options;
  options.default_mrope_section = false;
  return options;
}

// The lightning indexer of DeepSeek-V3.2 and GLM-5 (GlmMoeDsaForCausalLM runs on the same
// file): DeepseekV32Attention.__init__ (vllm/models/deepseek_v32/attention.py) builds
//   indexer_rope_emb = get_rope(..., is_neox_style=not getattr(config,
//                               "indexer_rope_interleave", False))
// where transformers pairs by the model and ignores the key (modeling_deepseek_v32.py
// DeepseekV32Indexer: rotate-half; modeling_glm_moe_dsa.py GlmMoeDsaIndexer: interleaved).
inline ConfigOptions vllm_indexer_options() {
  ConfigOptions options;
  options.indexer_interleave_key = "indexer_rope_interleave";
  return options;
}

inline constexpr const char* vllm_indexer_why =
    "vLLM pairs the lightning indexer by indexer_rope_interleave (absent: false, rotate-half), "
    "transformers by the model (DeepSeek-V3.2 rotate-half, GLM-5 interleaved) "
    "(vllm/models/deepseek_v32/attention.py, DeepseekV32Attention.__init__)";

inline const std::vector<VllmReading>& vllm_readings() {
  static const std::vector<VllmReading> rows = {
      {"deepseek_v32", vllm_indexer_options(), vllm_indexer_why},
      {"glm4v_text", vllm_glm4v_text_options(),
       "vLLM runs GLM-4V's text as Glm4ForCausalLM, whose Glm4Attention setdefault()s "
       "partial_rotary_factor 0.5 (transformers: 1.0) and has M-RoPE only with the block's "
       "mrope_section (transformers: [8, 12, 12]) (vllm/model_executor/models/glm4.py, "
       "Glm4Attention.__init__; glm4_1v.py)"},
      {"glm4v_moe_text", vllm_glm4v_moe_text_options(),
       "vLLM has M-RoPE only with the block's mrope_section (transformers: [8, 12, 12]) "
       "(vllm/transformers_utils/config.py, uses_mrope; glm4_1v.py runs GLM-4.5V's text as "
       "Glm4MoeForCausalLM)"},
      {"glm_moe_dsa", vllm_indexer_options(), vllm_indexer_why},
  };
  return rows;
}

inline const VllmReading* vllm_reading(const std::string& model_type) {
  for (const VllmReading& row : vllm_readings()) {
    if (model_type == row.model_type) return &row;
  }
  return nullptr;
}

// The indexer's pairing where vLLM's differs from transformers' (field "indexer_pairing").
inline std::optional<PlanDifference> vllm_indexer_pairing(const LayerPositions& vllm,
                                                          const LayerPositions& config,
                                                          const char* why) {
  if (!vllm.indexer || !config.indexer) return std::nullopt;
  const Pairing v = vllm.indexer->rope.pairing, c = config.indexer->rope.pairing;
  if (v == c) return std::nullopt;
  return PlanDifference{config.index, "indexer_pairing", plan_json::string(to_string(v)),
                        plan_json::string(to_string(c)), why};
}

inline void check_max_model_len(std::int64_t max_model_len) {
  if (max_model_len <= 0) {
    fail("max_model_len", max_model_len, "expected a positive number of positions");
  }
}

}  // namespace detail

// A config.json as transformers reads it and as vLLM 0.33.0's model code does (the row of
// detail::vllm_readings() for its model_type; without one, the same reading).
struct VllmView {
  ModelPositions config;              // transformers'
  ModelPositions vllm;                // vLLM's
  const char* reading_why = nullptr;  // the reading's row, or nullptr
};

namespace detail {

// vLLM's reading of a config transformers reads as config, by read(options).
template <class Read>
VllmView vllm_view(ModelPositions config, const Read& read) {
  const VllmReading* row = vllm_reading(config.model_type);
  if (row == nullptr) return VllmView{config, config, nullptr};
  try {
    return VllmView{std::move(config), read(row->options), row->why};
  } catch (Error& error) {
    throw error.add_context(std::string("as vLLM 0.33.0 reads it (") + row->why + ")");
  }
}

}  // namespace detail

// The view of config.json's text.
inline VllmView parse_vllm_view(const std::string& json_text) {
  return detail::vllm_view(parse_model_positions(json_text), [&](const ConfigOptions& options) {
    return parse_model_positions(json_text, options);
  });
}

// The view of the config.json at config_path.
inline VllmView load_vllm_view(const std::string& config_path) {
  return detail::vllm_view(load_model_positions(config_path), [&](const ConfigOptions& options) {
    return load_model_positions(config_path, options);
  });
}

// The layers of a config as vLLM 0.33.0 runs them with max_model_len (every position below it).
inline std::vector<LayerPlan> vllm_layer_plans(const VllmView& view, std::int64_t max_model_len) {
  detail::check_max_model_len(max_model_len);
  std::vector<LayerPlan> plans = config_layer_plans(view.vllm, std::nullopt);
  for (std::size_t il = 0; il < plans.size(); ++il) {
    const LayerPositions& layer = view.vllm.layers[il];
    const detail::VllmDeparture* row = detail::vllm_departure(layer);
    if (row == nullptr) continue;
    const RopeSpec spec = layer.rope_spec(row->frequencies_at(*layer.rope, max_model_len));
    plans[il].inv_freq.assign(spec.inv_freq.data(), spec.inv_freq.data() + spec.inv_freq.size());
    plans[il].attention_scale = spec.attention_scale;
  }
  return plans;
}

// Where vLLM (max_model_len) departs from transformers at seq_len (nullopt: a sequence within
// the original context): `vllm` values in PlanDifference::gguf, each with its why. Beside the
// plan's fields: positions_cached (the dynamic NTK cache) and indexer_pairing.
inline std::vector<PlanDifference> diff_vllm_plans(const VllmView& view, std::int64_t max_model_len,
                                                   std::optional<std::int64_t> seq_len) {
  const std::vector<LayerPlan> v = vllm_layer_plans(view, max_model_len);
  const std::vector<LayerPlan> c = config_layer_plans(view.config, seq_len);
  const char* reading = view.reading_why ? view.reading_why : "";
  std::vector<PlanDifference> out;
  for (std::size_t il = 0; il < c.size(); ++il) {
    const detail::VllmDeparture* row = detail::vllm_departure(view.vllm.layers[il]);
    for (const detail::PlanField& field : detail::plan_fields()) {
      if (field.same(v[il], c[il])) continue;
      out.push_back({c[il].layer, field.name, field.json(v[il]), field.json(c[il]),
                     row ? row->why : reading});
    }
    if (auto cache = detail::vllm_cache_length(view.vllm.layers[il], max_model_len)) {
      out.push_back(*cache);
    }
    if (auto indexer =
            detail::vllm_indexer_pairing(view.vllm.layers[il], view.config.layers[il], reading)) {
      out.push_back(*indexer);
    }
  }
  return out;
}

// diff_vllm_plans of the config.json at config_path.
inline std::vector<PlanDifference> diff_vllm_config(const std::string& config_path,
                                                    std::int64_t max_model_len,
                                                    std::optional<std::int64_t> seq_len) {
  const VllmView view = load_vllm_view(config_path);
  try {
    return diff_vllm_plans(view, max_model_len, seq_len);
  } catch (Error& error) {
    throw error.add_context(config_path);
  }
}

}  // namespace posemb
