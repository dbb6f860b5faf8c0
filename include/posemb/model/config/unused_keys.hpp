// config.json reader, what it did not use: every key of the rope blocks (`rope_scaling`,
// `rope_parameters`, nested by layer type too) and every position-related top-level key present
// that the reader never looked up (JsonReader's KeyLog). transformers logs "Unrecognized keys in
// `rope_parameters`" for the first kind (modeling_rope_utils.py, _check_received_keys) and keeps
// the second as plain attributes no module reads; posemb names both, and sets apart the rope-block
// keys the config class tells transformers to ignore (ignore_keys_at_rope_validation).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "posemb/detail/json_reader.hpp"
#include "posemb/model/families.hpp"

namespace posemb::detail {

// Top-level keys some family reads for positions or attention; the others (vocab_size, ...)
// are none of posemb's business.
inline const std::vector<std::string>& position_keys() {
  static const std::vector<std::string> keys = {"rope_theta",
                                                "rope_scaling",
                                                "rope_parameters",
                                                "partial_rotary_factor",
                                                "rotary_pct",
                                                "rotary_emb_base",
                                                "rotary_dim",
                                                "rope_local_base_freq",
                                                "original_max_position_embeddings",
                                                "sliding_window",
                                                "sliding_window_pattern",
                                                "use_sliding_window",
                                                "max_window_layers",
                                                "layer_types",
                                                "no_rope_layers",
                                                "no_rope_layer_interval",
                                                "nope_layer_interval",
                                                "attention_chunk_size",
                                                "attn_temperature_tuning",
                                                "floor_scale",
                                                "attn_scale",
                                                "query_pre_attn_scalar",
                                                "attn_logit_softcapping",
                                                "head_dim",
                                                "global_head_dim",
                                                "alibi",
                                                "rope_interleave",
                                                "qk_rope_head_dim",
                                                "qk_nope_head_dim",
                                                "index_head_dim",
                                                "indexer_types",
                                                "full_attention_interval",
                                                "use_bidirectional_attention",
                                                "window_size",
                                                "attention_types",
                                                "position_embedding_type",
                                                "attention_multiplier",
                                                "scale_attn_weights",
                                                "scale_attn_by_inverse_layer_idx",
                                                "cross_attention_layers",
                                                "attn_layer_period",
                                                "attn_layer_offset",
                                                "full_attn_idxs",
                                                "linear_key_head_dim",
                                                "xpos_rel_pos",
                                                "xpos_scale_base",
                                                "per_layer_config"};
  return keys;
}

// The keys of one rope block (path "rope_scaling."), nested by layer type or not, not in log.
inline void unused_block_keys(const nlohmann::json& block, const std::string& path,
                              const KeyLog& log, std::vector<std::string>& out) {
  for (const auto& item : block.items()) {
    const std::string name = path + item.key();
    if (item.value().is_null()) continue;
    if (item.value().is_object() && log.count(name) == 0) {
      bool read = false;  // a block nested by layer type is read through its keys
      for (const auto& inner : item.value().items())
        read = read || log.count(name + "." + inner.key());
      if (read) {
        unused_block_keys(item.value(), name + ".", log, out);
        continue;
      }
    }
    if (log.count(name) == 0) out.push_back(name);
  }
}

inline std::vector<std::string> unused_keys(const nlohmann::json& config, const std::string& path,
                                            const KeyLog& log);

// The position-related attributes of every per_layer_config entry (an object, checked by
// per_layer.hpp) not in log, and a non-empty `skip` (sub-layers a layer leaves out: no module of
// transformers 5.25 reads it, and posemb does not).
inline void unused_per_layer_keys(const nlohmann::json& per_layer, const std::string& path,
                                  const KeyLog& log, std::vector<std::string>& out) {
  for (const auto& item : per_layer.items()) {
    if (!item.value().is_object()) continue;
    const std::string layer = path + item.key() + ".";
    const std::vector<std::string> keys = unused_keys(item.value(), layer, log);
    out.insert(out.end(), keys.begin(), keys.end());
    const auto skip = item.value().find("skip");
    if (skip != item.value().end() && skip->is_array() && !skip->empty())
      out.push_back(layer + "skip");
  }
}

// The position-related keys of the config object at path ("" or "text_config.") not in log,
// sorted.
inline std::vector<std::string> unused_keys(const nlohmann::json& config, const std::string& path,
                                            const KeyLog& log) {
  std::vector<std::string> out;
  for (const std::string& key : position_keys()) {
    const auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    const std::string name = path + key;
    const bool block = key == "rope_scaling" || key == "rope_parameters";
    if (key == "per_layer_config" && it->is_object() && log.count(name) != 0) {
      unused_per_layer_keys(*it, name + ".", log, out);
    } else if (block && it->is_object() && log.count(name) != 0) {
      unused_block_keys(*it, name + ".", log, out);
    } else if (log.count(name) == 0 && !(it->is_object() && it->empty())) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// True when the key path names a key inside a rope block ("rope_parameters.x",
// "text_config.rope_scaling.full_attention.x") whose last name is in the family's
// rope_keys_transformers_ignores.
inline bool transformers_ignores(const ModelFamily& family, const std::string& path) {
  if (family.rope_keys_transformers_ignores == nullptr) return false;
  if (path.find("rope_parameters.") == std::string::npos &&
      path.find("rope_scaling.") == std::string::npos) {
    return false;
  }
  const std::string key = path.substr(path.rfind('.') + 1);
  const std::string list = std::string(", ") + family.rope_keys_transformers_ignores + ", ";
  return list.find(", " + key + ", ") != std::string::npos;
}

// Moves the keys of unused that transformers ignores too (validate_rope in
// modeling_rope_utils.py skips the config class's ignore_keys_at_rope_validation) to ignored.
inline void set_apart_transformers_ignored(const ModelFamily& family,
                                           std::vector<std::string>& unused,
                                           std::vector<std::string>& ignored) {
  const auto moved = std::stable_partition(unused.begin(), unused.end(), [&](const auto& key) {
    return !transformers_ignores(family, key);
  });
  ignored.assign(moved, unused.end());
  unused.erase(moved, unused.end());
}

}  // namespace posemb::detail
