// config.json reader, decoder and layer rules: head counts, the layer count, the positional kind,
// each layer's q/k head size, which layers have RoPE, each layer's attention type, and T5's
// encoder and decoder stacks. The family's row (families.hpp) decides every model-type rule.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "posemb/bias/relative_bias.hpp"
#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/config/attention.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"

namespace posemb::detail {

// num_attention_heads (GPT-2: n_head), num_key_value_heads (Falcon: multi_query means 1) and
// max_position_embeddings (GPT-2: n_positions) into the model.
inline void read_heads(const JsonReader& root, ModelPositions& model) {
  const auto heads = root.first_of({"num_attention_heads", "n_head", "n_heads", "num_heads"},
                                   [&](const std::string& key) { return root.integer(key); });
  if (!heads) {
    root.missing("num_attention_heads",
                 "expected num_attention_heads (or n_head, n_heads, num_heads)");
  }
  model.n_heads = to_int(root.name("num_attention_heads"), *heads);
  if (auto kv = root.first_of({"num_key_value_heads", "num_kv_heads"},
                              [&](const std::string& key) { return root.integer(key); })) {
    model.n_kv_heads = to_int(root.name("num_key_value_heads"), *kv);
  } else {
    model.n_kv_heads = root.boolean("multi_query").value_or(false) ? 1 : model.n_heads;
  }
  if (model.n_heads % model.n_kv_heads != 0) {
    fail(root.name("num_key_value_heads"), model.n_kv_heads,
         "expected a divisor of num_attention_heads = " + std::to_string(model.n_heads));
  }
  model.max_position_embeddings =
      root.first_of({"max_position_embeddings", "n_positions", "max_seq_len"},
                    [&](const std::string& key) { return root.integer(key); });
}

// num_hidden_layers (or n_layer, n_layers, num_layers); 1 when the config gives none.
inline int read_layer_count(const JsonReader& root) {
  const char* key = root.first_key({"num_hidden_layers", "n_layer", "n_layers", "num_layers"});
  if (key == nullptr) return 1;
  const std::int64_t n = root.integer(key, "");
  if (n < 1 || n > (1 << 16)) fail(root.name(key), n, "expected a layer count in [1, 65536]");
  return static_cast<int>(n);
}

// The model's positional kind: the family's, ALiBi with "alibi": true (Falcon), and MPT's
// attn_config rule (families.hpp, PositionsRule::MptAttnConfig).
inline PositionKind read_position_kind(const JsonReader& root, const ModelFamily& family) {
  PositionKind kind = family.positions;
  if (root.boolean("alibi").value_or(false)) kind = PositionKind::Alibi;
  if (family.positions_rule == PositionsRule::MptAttnConfig) {
    const nlohmann::json* attn = root.object("attn_config");
    static const nlohmann::json empty = nlohmann::json::object();
    const JsonReader attn_config(attn != nullptr ? *attn : empty, root.name("attn_config."));
    if (attn_config.boolean("alibi").value_or(true)) return PositionKind::Alibi;
    return root.boolean("learned_pos_emb").value_or(true) ? PositionKind::Learned
                                                           : PositionKind::Rope;
  }
  return kind;
}

// The base head size: head_dim (T5: d_kv), else hidden_size / num_attention_heads; 0 if
// neither is given.
inline int base_head_dim(const JsonReader& root, int n_heads) {
  if (const char* key = root.first_key({"head_dim", "d_kv"})) {
    return to_head_dim(root.name(key), root.integer(key, ""));
  }
  const auto hidden = root.first_of({"hidden_size", "n_embd", "d_model"},
                                    [&](const std::string& key) { return root.integer(key); });
  if (!hidden) return 0;
  return to_head_dim(root.name("hidden_size / num_attention_heads"), *hidden / n_heads);
}

// The q/k head size of a layer of this type: DeepSeek's qk_nope + qk_rope, Gemma 4's
// global_head_dim on full layers, Qwen3-Next's linear_key_head_dim on linear layers, else the
// base head size.
inline int layer_head_dim(const JsonReader& root, const ModelFamily& family, int n_heads,
                          const std::string& layer_type) {
  if (family.softmax == SoftmaxRule::DeepseekMscale && root.has("qk_rope_head_dim")) {
    const std::int64_t nope = root.integer("qk_nope_head_dim").value_or(0);
    const std::int64_t rope = root.integer("qk_rope_head_dim", "");
    return to_head_dim(root.name("qk_nope_head_dim + qk_rope_head_dim"), nope + rope);
  }
  if (family.split == RopeSplit::Gemma4 && layer_type != "sliding_attention") {
    if (auto dim = root.integer("global_head_dim")) {
      return to_head_dim(root.name("global_head_dim"), *dim);
    }
  }
  if (layer_type == "linear_attention") {
    if (auto dim = root.integer("linear_key_head_dim")) {
      return to_head_dim(root.name("linear_key_head_dim"), *dim);
    }
  }
  return base_head_dim(root, n_heads);
}

// T5 (configuration_t5.py, modeling_t5.py): the encoder's num_layers layers, then the
// decoder's num_decoder_layers (default num_layers), or one stack when is_encoder_decoder is
// false (the decoder's when is_decoder). Bidirectional buckets in the encoder, causal in the
// decoder's self-attention; each stack's first layer holds the table, the others share it
// (UMT5: every layer its own, families.hpp bias_table_per_layer).
inline T5Buckets read_t5_buckets(const JsonReader& root) {
  T5Buckets buckets;
  buckets.num_buckets =
      to_int(root.name("relative_attention_num_buckets"),
             root.integer("relative_attention_num_buckets").value_or(32));
  buckets.max_distance =
      to_int(root.name("relative_attention_max_distance"),
             root.integer("relative_attention_max_distance").value_or(128));
  try {
    t5_relative_position_bucket(0, buckets.num_buckets, buckets.max_distance, true);
  } catch (Error& error) {
    error.rename_parameter(root.name(error.parameter() == "num_buckets"
                                         ? "relative_attention_num_buckets"
                                         : "relative_attention_max_distance"));
    throw;
  }
  return buckets;
}

inline void read_relative_bias_layers(const JsonReader& root, const ModelFamily& family,
                                      ModelPositions& model) {
  const T5Buckets buckets = read_t5_buckets(root);
  const auto count = [&](const char* key, std::int64_t fallback) {
    return to_int(root.name(key), root.integer(key).value_or(fallback));
  };
  const int encoder_layers = count("num_layers", 6);
  const int decoder_layers =
      root.has("num_decoder_layers") ? count("num_decoder_layers", 6) : encoder_layers;
  std::vector<std::pair<std::string, int>> stacks;
  if (root.boolean("is_encoder_decoder").value_or(true)) {
    stacks = {{"encoder", encoder_layers}, {"decoder", decoder_layers}};
  } else {
    stacks = {{root.boolean("is_decoder").value_or(false) ? "decoder" : "encoder", encoder_layers}};
  }
  if (encoder_layers + decoder_layers > (1 << 16)) {
    fail(root.name("num_layers + num_decoder_layers"), encoder_layers + decoder_layers,
         "expected a layer count in [1, 65536]");
  }
  for (const auto& [stack, layers] : stacks) {
    const int first = static_cast<int>(model.layers.size());
    for (int i = 0; i < layers; ++i) {
      LayerPositions layer;
      layer.index = first + i;
      layer.kind = PositionKind::RelativeBias;
      layer.head_dim = base_head_dim(root, model.n_heads);
      layer.stack = stacks.size() > 1 ? stack : "";
      layer.relative_bias = buckets;
      layer.relative_bias->bidirectional = stack == "encoder";
      layer.relative_bias_table_layer = family.bias_table_per_layer ? layer.index : first;
      read_attention(root, family, layer, 1.0);
      model.layers.push_back(std::move(layer));
    }
  }
}

// Per layer: does it have RoPE (no_rope_layers: 1 = RoPE, 0 = NoPE; else every
// no_rope_layer_interval-th layer, default the family's pattern, has none).
inline std::vector<bool> read_rope_layers(const JsonReader& root, const ModelFamily& family,
                                          int n_layers) {
  std::vector<bool> rope(static_cast<std::size_t>(n_layers), true);
  if (family.nope != NopeRule::NoRopeLayers) return rope;
  const auto list = root.integers("no_rope_layers");
  if (list && !list->empty()) {
    if (static_cast<int>(list->size()) != n_layers) {
      fail(root.name("no_rope_layers") + ".size()", list->size(),
           "expected num_hidden_layers = " + std::to_string(n_layers));
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      const std::int64_t value = (*list)[i];
      if (value != 0 && value != 1) {
        fail(root.name("no_rope_layers") + "[" + std::to_string(i) + "]", value,
             "expected 1 (RoPE) or 0 (no RoPE)");
      }
      rope[i] = value == 1;
    }
    return rope;
  }
  const char* key = root.first_key({"no_rope_layer_interval", "nope_layer_interval"});
  const std::int64_t interval = key ? root.integer(key, "") : family.pattern;
  if (interval < 1) fail(root.name(key ? key : "interval"), interval, "expected an interval >= 1");
  for (int i = 0; i < n_layers; ++i) rope[static_cast<std::size_t>(i)] = (i + 1) % interval != 0;
  return rope;
}

// The family's pattern, or the config's value of key when given (key nullptr: none).
inline std::int64_t layer_pattern(const JsonReader& root, const ModelFamily& family,
                                  const char* key) {
  const std::int64_t value = key ? root.integer(key).value_or(family.pattern) : family.pattern;
  if (value < 1) fail(root.name(key ? key : "pattern"), value, "expected a layer count >= 1");
  return value;
}

// Layer i's type by the family's LayerTypeRule, for a config without layer_types.
inline std::string derived_layer_type(const JsonReader& root, const ModelFamily& family, int i,
                                      bool rope_layer) {
  const auto window_enabled = [&] {
    return root.boolean("use_sliding_window").value_or(false) && root.has("sliding_window");
  };
  bool sliding = false;
  switch (family.layer_types) {
    case LayerTypeRule::AllFull:
      break;
    case LayerTypeRule::SlidingPattern:
      sliding = (i + 1) % layer_pattern(root, family, "sliding_window_pattern") != 0;
      break;
    case LayerTypeRule::FixedPattern:
      sliding = (i + 1) % layer_pattern(root, family, nullptr) != 0;
      break;
    case LayerTypeRule::MaxWindowLayers:
      sliding = window_enabled() && i >= root.integer("max_window_layers").value_or(family.pattern);
      break;
    case LayerTypeRule::NopeSliding:
      sliding = window_enabled() && !rope_layer;
      break;
    case LayerTypeRule::ChunkedRope:
      return rope_layer ? "chunked_attention" : "full_attention";
    case LayerTypeRule::LinearInterval:
      return (i + 1) % layer_pattern(root, family, "full_attention_interval") != 0
                 ? "linear_attention"
                 : "full_attention";
  }
  return sliding ? "sliding_attention" : "full_attention";
}

// Every layer's attention type: the config's layer_types, else the family's rule.
inline std::vector<std::string> read_layer_types(const JsonReader& root,
                                                 const ModelFamily& family, int n_layers,
                                                 const std::vector<bool>& rope) {
  std::vector<std::string> types;
  if (auto given = root.strings("layer_types")) {
    if (static_cast<int>(given->size()) != n_layers) {
      fail(root.name("layer_types") + ".size()", given->size(),
           "expected num_hidden_layers = " + std::to_string(n_layers));
    }
    for (std::size_t i = 0; i < given->size(); ++i) {
      if (!is_known_layer_type((*given)[i])) {
        fail(root.name("layer_types") + "[" + std::to_string(i) + "]", "\"" + (*given)[i] + "\"",
             "expected one of full_attention, sliding_attention, chunked_attention, "
             "linear_attention");
      }
    }
    types = *given;
  } else {
    for (int i = 0; i < n_layers; ++i) {
      types.push_back(derived_layer_type(root, family, i, rope[static_cast<std::size_t>(i)]));
    }
  }
  // Gemma 4's config class forces the last layer to full attention.
  if (family.split == RopeSplit::Gemma4) types.back() = "full_attention";
  return types;
}

}  // namespace posemb::detail
