// config.json reader, what it did not use: every key of the rope blocks (`rope_scaling`,
// `rope_parameters`, nested by layer type too) and every position-related top-level key present
// that the reader never looked up (JsonReader's KeyLog). transformers logs "Unrecognized keys in
// `rope_parameters`" for the first kind (modeling_rope_utils.py, _check_received_keys) and keeps
// the second as plain attributes no module reads; posemb names both.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "posemb/detail/json_reader.hpp"

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
                                                "xpos_scale_base"};
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
    if (block && it->is_object() && log.count(name) != 0) {
      unused_block_keys(*it, name + ".", log, out);
    } else if (log.count(name) == 0 && !(block && it->is_object() && it->empty())) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace posemb::detail
