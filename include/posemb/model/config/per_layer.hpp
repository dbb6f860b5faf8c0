// config.json reader, per-layer attributes: `per_layer_config`, a map from a layer index to the
// attributes that differ on that layer ({"5": {"head_dim": 512}}), written by transformers since
// 5.24 (integrations/heterogeneity/configuration_utils.py; Gemma 4's global head width,
// NeoMME's windows). Layer i is read from the config with layer i's attributes replaced, as
// transformers' _get_layer_config builds config.per_layer_config[i]; every key of the reader
// (head_dim, the rope block, partial factor, window, chunk, softcap, ...) is therefore read per
// layer, and a per-layer key the reader does not use is reported (unused_keys.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/families.hpp"

namespace posemb::detail {

// The attributes that shape a layer's rotary embedding. transformers builds one rotary embedding
// per layer type from per_layer_config[layer_type] (modeling_gemma4.py,
// Gemma4TextRotaryEmbedding.__init__), which raises "Layer type 'T' is not homogeneous across
// layers" when the layers of type T differ (_PerLayerConfigView.__getitem__).
inline const std::vector<std::string>& per_type_rope_keys() {
  static const std::vector<std::string> keys = {
      "head_dim",         "rope_parameters",  "rope_scaling",          "rope_theta",
      "rotary_emb_base",  "rotary_dim",       "partial_rotary_factor", "rotary_pct",
      "qk_rope_head_dim", "qk_nope_head_dim", "rope_interleave",       "rope_local_base_freq"};
  return keys;
}

// A per_layer_config key as int() reads it (_apply_heterogeneous_config: int(layer_idx)): an
// optional sign and decimal digits; nullopt for anything else (int() raises ValueError).
inline std::optional<std::int64_t> layer_index_of(const std::string& key) {
  std::size_t start = key.empty() || (key[0] != '+' && key[0] != '-') ? 0 : 1;
  if (start == key.size() || key.size() > 12) return std::nullopt;
  std::int64_t value = 0;
  for (std::size_t i = start; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9') return std::nullopt;
    value = value * 10 + (key[i] - '0');
  }
  return key[0] == '-' ? -value : value;
}

// The layers of one decoder config: each layer's reader (the config's own, or a copy with the
// layer's per_layer_config attributes in place) and where its attributes are.
class PerLayerConfig {
 public:
  // root: the decoder config; types: every layer's type (read_layer_types).
  PerLayerConfig(const JsonReader& root, const ModelFamily& family,
                 const std::vector<std::string>& types)
      : root_(root), readers_(types.size(), nullptr) {
    const nlohmann::json* given = root.object("per_layer_config");
    if (given == nullptr) return;
    const int n_layers = static_cast<int>(types.size());
    for (const auto& item : given->items()) {
      const int layer = layer_index(item.key(), n_layers);
      const std::string path = root.name("per_layer_config." + item.key() + ".");
      check_overrides(item.value(), path);
      auto& reader = readers_[static_cast<std::size_t>(layer)];
      if (reader != nullptr) {
        fail(path.substr(0, path.size() - 1), "{...}",
             "expected one entry per layer (layer " + std::to_string(layer) + " given twice)");
      }
      nlohmann::json& merged = merged_.emplace_back(root.json());
      for (const auto& attribute : item.value().items())
        merged[attribute.key()] = attribute.value();
      reader = &layer_readers_.emplace_back(root.overridden(merged, item.value(), path));
    }
    check_window_or_chunk(family);
    check_homogeneous(types);
  }

  // The reader of layer i.
  const JsonReader& layer(int i) const {
    const JsonReader* reader = readers_[static_cast<std::size_t>(i)];
    return reader != nullptr ? *reader : root_;
  }
  // Whether layer i has attributes of its own.
  bool overridden(int i) const { return readers_[static_cast<std::size_t>(i)] != nullptr; }

 private:
  // The layer index of a key in [0, n_layers) (_validate_layer_indices).
  int layer_index(const std::string& key, int n_layers) const {
    const std::string name = root_.name("per_layer_config." + key);
    const std::string expected =
        "expected a layer index in [0, num_hidden_layers = " + std::to_string(n_layers) + ")";
    const std::optional<std::int64_t> index = layer_index_of(key);
    if (!index) fail(name, "\"" + key + "\"", expected + " (an integer)");
    if (*index < 0 || *index >= n_layers) fail(name, *index, expected);
    return static_cast<int>(*index);
  }

  // A layer's attributes: an object; its `skip` a list of strings (_normalize_layer_overrides);
  // no layer_types (a layer's type is layer_types[i]: transformers reads config.layer_types,
  // which raises AmbiguousGlobalPerLayerAttributeError once it is a per-layer attribute).
  static void check_overrides(const nlohmann::json& overrides, const std::string& path) {
    if (!overrides.is_object()) {
      fail(path.substr(0, path.size() - 1), overrides.dump(),
           "expected an object of the attributes that differ on that layer");
    }
    if (const auto skip = overrides.find("skip"); skip != overrides.end()) {
      bool strings = skip->is_array();
      for (const auto& item : *skip) strings = strings && item.is_string();
      if (!strings) fail(path + "skip", skip->dump(), "expected a list of strings");
    }
    if (overrides.contains("layer_types")) {
      fail(path + "layer_types", overrides.at("layer_types").dump(),
           "expected no per-layer value (a layer's type is the config's layer_types[i])");
    }
  }

  // Whether key is set on layer i as transformers sees it: the layer's value, the config's, else
  // the class default (fallback 0: none); null is none. Not recorded as used.
  bool set_on(int i, const char* key, std::int64_t fallback) const {
    const JsonReader& reader = layer(i);
    if (reader.peek(key) != nullptr) return true;
    return !reader.contains(key) && fallback > 0;
  }

  // _validate_sliding_window_and_attention_chunk_size: no layer has both.
  void check_window_or_chunk(const ModelFamily& family) const {
    for (int i = 0; i < static_cast<int>(readers_.size()); ++i) {
      if (!set_on(i, "sliding_window", family.defaults.sliding_window) ||
          !set_on(i, "attention_chunk_size", family.defaults.attention_chunk_size)) {
        continue;
      }
      fail(layer(i).name("sliding_window"), "set with attention_chunk_size",
           "expected at most one of sliding_window and attention_chunk_size on layer " +
               std::to_string(i) + " (they are mutually exclusive)");
    }
  }

  // The layers of one type agree on every per_type_rope_keys() attribute (transformers: "Layer
  // type 'T' is not homogeneous across layers (layer i differs)").
  void check_homogeneous(const std::vector<std::string>& types) const {
    std::map<std::string, int> first;  // layer type -> its first layer
    for (int i = 0; i < static_cast<int>(types.size()); ++i) {
      const auto [it, inserted] = first.emplace(types[static_cast<std::size_t>(i)], i);
      if (inserted) continue;
      for (const std::string& key : per_type_rope_keys()) {
        const nlohmann::json* mine = layer(i).peek(key);
        const nlohmann::json* theirs = layer(it->second).peek(key);
        if ((mine == nullptr) == (theirs == nullptr) && (mine == nullptr || *mine == *theirs)) {
          continue;
        }
        const int named = overridden(i) && layer(i).name(key) != root_.name(key) ? i : it->second;
        fail(layer(named).name(key), mine != nullptr ? mine->dump() : "absent",
             "expected the value of layer " + std::to_string(it->second) + ", the first " +
                 it->first + " layer: one rotary embedding per layer type (layer " +
                 std::to_string(i) + " differs)");
      }
    }
  }

  const JsonReader& root_;
  std::deque<nlohmann::json> merged_;       // the config with a layer's attributes in place
  std::deque<JsonReader> layer_readers_;    // readers of merged_
  std::vector<const JsonReader*> readers_;  // by layer; nullptr: the config's own
};

}  // namespace posemb::detail
