// config.json reader, decoder and layer rules: head counts, the layer count, the positional kind,
// each layer's q/k head size, which layers have RoPE, each layer's attention type, and T5's
// encoder and decoder stacks. The family's row (families.hpp) decides every model-type rule.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/bias/relative_bias.hpp"
#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/config_options.hpp"
#include "posemb/model/config/attention.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"

namespace posemb::detail {

// num_attention_heads (GPT-2: n_head; else the family's class default), num_key_value_heads
// (Falcon: multi_query means 1) and max_position_embeddings (GPT-2: n_positions; else the
// family's class default) into the model.
inline void read_heads(const JsonReader& root, const ModelFamily& family, ModelPositions& model) {
  auto heads = root.first_of({"num_attention_heads", "n_head", "n_heads", "num_heads"},
                             [&](const std::string& key) { return root.integer(key); });
  if (!heads && family.defaults.num_attention_heads > 0) {
    heads = family.defaults.num_attention_heads;
  }
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
  if (!model.max_position_embeddings && family.defaults.max_position_embeddings > 0) {
    model.max_position_embeddings = family.defaults.max_position_embeddings;
  }
}

// RoBERTa's padding_idx (families.hpp, LearnedTableRule::from_padding_idx): pad_token_id,
// RobertaConfig's default 1 when absent. null is refused as any other non-integer:
// create_position_ids_from_input_ids numbers the tokens from padding_idx + 1.
inline std::int64_t read_padding_idx(const JsonReader& root) {
  const nlohmann::json& config = root.json();
  const auto pad = config.find("pad_token_id");
  if (pad == config.end()) return 1;
  if (!pad->is_number_integer() || pad->get<std::int64_t>() < 0) {
    fail(root.name("pad_token_id"), pad->dump(),
         "expected an integer >= 0 (RoBERTa's padding_idx)");
  }
  return pad->get<std::int64_t>();
}

// The key of the layer count: num_hidden_layers (or n_layer, n_layers, num_layers), as named in
// errors.
inline std::string layer_count_key(const JsonReader& root) {
  const char* key = root.first_key({"num_hidden_layers", "n_layer", "n_layers", "num_layers"});
  return key != nullptr ? key : "num_hidden_layers";
}

// Whether layer_types lists each layer as an (attention type, "mlp") pair of blocks (Dory's
// config.json, families.hpp AttentionMlpPairs).
inline bool layers_in_mlp_pairs(const JsonReader& root, const ModelFamily& family) {
  if (family.layer_types != LayerTypeRule::AttentionMlpPairs) return false;
  const auto types = root.strings("layer_types");
  return types && std::find(types->begin(), types->end(), "mlp") != types->end();
}

// The layer count (layer_count_key); 1 when the config gives none. In (attention, mlp) pairs
// the count is of blocks: half of it (DoryConfig.__post_init__).
inline int read_layer_count(const JsonReader& root, const ModelFamily& family) {
  const std::string key = layer_count_key(root);
  if (!root.has(key)) return 1;
  const std::int64_t n = root.integer(key, "");
  if (n < 1 || n > max_model_layers) {
    fail(root.name(key), n,
         "expected a layer count in [1, " + std::to_string(max_model_layers) + "]");
  }
  if (!layers_in_mlp_pairs(root, family)) return static_cast<int>(n);
  if (n % 2 != 0) {
    fail(root.name(key), n,
         "expected an even count of blocks (layer_types in (attention, mlp) pairs)");
  }
  return static_cast<int>(n / 2);
}

// The model's positional kind: the family's, ALiBi with "alibi": true (Falcon), and MPT's
// attn_config rule (families.hpp, PositionsRule::MptAttnConfig).
inline PositionKind read_position_kind(const JsonReader& root, const ModelFamily& family) {
  PositionKind kind = family.positions;
  if (root.boolean("alibi").value_or(false)) kind = PositionKind::Alibi;
  if (family.positions_rule == PositionsRule::MptAttnConfig) {
    if (mpt_attn_config(root).boolean("alibi").value_or(true)) return PositionKind::Alibi;
    return root.boolean("learned_pos_emb").value_or(true) ? PositionKind::Learned
                                                          : PositionKind::Rope;
  }
  if (family.positions_rule == PositionsRule::PositionEmbeddingType) {
    return root.string("position_embedding_type").value_or("") == "rope" ? PositionKind::Rope
                                                                         : PositionKind::None;
  }
  return kind;
}

// The base head size: head_dim (T5: d_kv; JetMoE: kv_channels, its attribute_map's head_dim),
// else the family's class default, else hidden_size (else its class default) /
// num_attention_heads; 0 if none is known.
inline int base_head_dim(const JsonReader& root, const ModelFamily& family, int n_heads) {
  if (const char* key = root.first_key({"head_dim", "d_kv", "kv_channels"})) {
    return to_head_dim(root.name(key), root.integer(key, ""));
  }
  if (family.defaults.head_dim > 0) return family.defaults.head_dim;
  auto hidden = root.first_of({"hidden_size", "n_embd", "d_model"},
                              [&](const std::string& key) { return root.integer(key); });
  if (!hidden && family.defaults.hidden_size > 0) hidden = family.defaults.hidden_size;
  if (!hidden) return 0;
  return to_head_dim(root.name("hidden_size / num_attention_heads"), *hidden / n_heads);
}

// The q/k head size of a layer of this type: DeepSeek's qk_nope + qk_rope, Gemma 4's
// global_head_dim (default 512) on full layers of a config without per_layer_config
// (configuration_gemma4.py, Gemma4TextConfig.__post_init__ turns it into per_layer_config
// head_dim overrides, which per_layer.hpp reads as the layer's head_dim), Qwen3-Next's
// linear_key_head_dim (default 128) on linear layers, else the base head size.
inline int layer_head_dim(const JsonReader& root, const ModelFamily& family, int n_heads,
                          const std::string& layer_type) {
  if (family.softmax == SoftmaxRule::DeepseekMscale && root.has("qk_rope_head_dim")) {
    const std::int64_t nope = root.integer("qk_nope_head_dim").value_or(0);
    const std::int64_t rope = root.integer("qk_rope_head_dim", "");
    return to_head_dim(root.name("qk_nope_head_dim + qk_rope_head_dim"), nope + rope);
  }
  if (family.split == RopeSplit::Gemma4 && layer_type != "sliding_attention" &&
      !root.contains("per_layer_config")) {
    return to_head_dim(root.name("global_head_dim"), root.integer("global_head_dim").value_or(512));
  }
  if (layer_type == "linear_attention" && family.layer_types == LayerTypeRule::LinearInterval) {
    return to_head_dim(root.name("linear_key_head_dim"),
                       root.integer("linear_key_head_dim").value_or(128));
  }
  return base_head_dim(root, family, n_heads);
}

// Where the rotated slice of a RoPE layer starts in its head of head_dim features: MLA's
// [qk_nope, qk_rope] heads rotate the trailing qk_rope_head_dim (modeling_deepseek_v3.py,
// DeepseekV3Attention.forward: torch.split(q, [qk_nope_head_dim, qk_rope_head_dim]), the rotated
// part concatenated last; the same in every MLA attention of transformers 5.25: DeepSeek-V2,
// V3.2, Mistral 4, Youtu, GLM-4-MoE-Lite, MiniCPM3, HY V4), else 0 (the rotated features lead).
inline int rope_slice_offset(const JsonReader& root, const LayerPositions& layer) {
  if (!layer.rope || !root.has("qk_rope_head_dim") || layer.head_dim <= layer.rope->head_dim) {
    return 0;
  }
  return layer.head_dim - layer.rope->head_dim;
}

// indexer_types' default for a family whose indexers are shared (IndexerTraits): "full" iff
// max(i - offset + 1, 0) % freq == 0 (HYV4Config; GlmMoeDsaConfig.__post_init__, whose
// index_topk_pattern "FS..." or list, index_topk_freq and index_skip_topk_offset set it).
inline std::vector<std::string> default_indexer_types(const JsonReader& root,
                                                      const IndexerTraits& traits, int n_layers) {
  std::int64_t freq = traits.default_freq, offset = traits.default_offset;
  if (traits.schedule_keys) {
    const nlohmann::json* given = root.find("index_topk_pattern");
    if (given != nullptr && given->is_array()) return *root.strings("index_topk_pattern");
    if (const auto pattern = root.string("index_topk_pattern")) {
      std::vector<std::string> types;
      for (const char c : *pattern) {
        if (c != 'F' && c != 'S') {
          fail(root.name("index_topk_pattern"), "\"" + *pattern + "\"",
               "expected one letter F (full) or S (shared) per layer");
        }
        types.push_back(c == 'F' ? "full" : "shared");
      }
      return types;
    }
    freq = std::max<std::int64_t>(root.integer("index_topk_freq").value_or(freq), 1);
    offset = root.integer("index_skip_topk_offset").value_or(offset);
  }
  std::vector<std::string> types;
  for (std::int64_t i = 0; i < n_layers; ++i) {
    types.push_back(std::max<std::int64_t>(i - offset + 1, 0) % freq == 0 ? "full" : "shared");
  }
  return types;
}

// Which of the n_layers layers run a lightning indexer of their own: all of them, or, where the
// family's indexers are shared, those whose indexer_types[i] is "full" ("full" or "shared";
// default_indexer_types when absent).
inline std::vector<bool> read_indexer_owners(const JsonReader& root, const ModelFamily& family,
                                             int n_layers) {
  std::vector<bool> owners(static_cast<std::size_t>(n_layers), true);
  const IndexerTraits& traits = indexer_traits(family.indexer);
  if (!traits.shared) return owners;
  const bool given = root.has("indexer_types");
  const char* key = given || !traits.schedule_keys ? "indexer_types" : "index_topk_pattern";
  const std::vector<std::string> types =
      given ? *root.strings("indexer_types") : default_indexer_types(root, traits, n_layers);
  if (static_cast<int>(types.size()) != n_layers) {
    fail(root.name(key) + ".size()", types.size(),
         "expected num_hidden_layers = " + std::to_string(n_layers));
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string& type = types[i];
    if (type != "full" && type != "shared") {
      fail(root.name(key) + "[" + std::to_string(i) + "]", "\"" + type + "\"",
           "expected \"full\" or \"shared\"");
    }
    owners[i] = type == "full";
  }
  return owners;
}

// The lightning indexer of an indexed_attention RoPE layer (families.hpp, IndexerRule;
// modeling_deepseek_v32.py, DeepseekV32Indexer): index_head_dim features (default 128,
// DeepseekV32Config, HYV4Config, GlmMoeDsaConfig), the layer's frequencies on qk_rope_head_dim of
// them (the layer's rope head; first or last, paired as the rule's IndexerTraits say); nullopt
// for other layers and families. owns_indexer: the layer's entry of read_indexer_owners. An
// options.indexer_interleave_key replaces the rule's pairing (interleaved iff the key is true).
inline std::optional<IndexerRope> read_indexer(const JsonReader& root, const ModelFamily& family,
                                               const ConfigOptions& options,
                                               const LayerPositions& layer, bool owns_indexer) {
  if (family.indexer == IndexerRule::None || layer.layer_type != "indexed_attention" ||
      !layer.rope || !owns_indexer) {
    return std::nullopt;
  }
  const IndexerTraits& traits = indexer_traits(family.indexer);
  IndexerRope indexer;
  indexer.head_dim =
      to_head_dim(root.name("index_head_dim"), root.integer("index_head_dim").value_or(128));
  indexer.rope = *layer.rope;
  indexer.rope.pairing = traits.pairing;
  if (const char* key = options.indexer_interleave_key) {
    indexer.rope.pairing =
        root.boolean(key).value_or(false) ? Pairing::Interleaved : Pairing::RotateHalf;
  }
  if (indexer.rope.head_dim > indexer.head_dim) {
    fail(root.name("index_head_dim"), indexer.head_dim,
         "expected >= the rotated qk_rope_head_dim = " + std::to_string(indexer.rope.head_dim));
  }
  if (traits.rope_last) indexer.rotary_offset = indexer.head_dim - indexer.rope.head_dim;
  return indexer;
}

// T5 (configuration_t5.py, modeling_t5.py): the encoder's num_layers layers, then the
// decoder's num_decoder_layers (default num_layers), or one stack when is_encoder_decoder is
// false (the decoder's when is_decoder). Bidirectional buckets in the encoder, causal in the
// decoder's self-attention; each stack's first layer holds the table, the others share it
// (UMT5: every layer its own, families.hpp bias_table_per_layer).
inline T5Buckets read_t5_buckets(const JsonReader& root) {
  T5Buckets buckets;
  buckets.num_buckets = to_int(root.name("relative_attention_num_buckets"),
                               root.integer("relative_attention_num_buckets").value_or(32));
  buckets.max_distance = to_int(root.name("relative_attention_max_distance"),
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
  if (encoder_layers + decoder_layers > max_model_layers) {
    fail(root.name("num_layers + num_decoder_layers"), encoder_layers + decoder_layers,
         "expected a layer count in [1, " + std::to_string(max_model_layers) + "]");
  }
  for (const auto& [stack, layers] : stacks) {
    const int first = static_cast<int>(model.layers.size());
    for (int i = 0; i < layers; ++i) {
      LayerPositions layer;
      layer.index = first + i;
      layer.kind = PositionKind::RelativeBias;
      layer.head_dim = base_head_dim(root, family, model.n_heads);
      layer.stack = stacks.size() > 1 ? stack : "";
      layer.relative_bias = buckets;
      layer.relative_bias->bidirectional = stack == "encoder";
      layer.relative_bias_table_layer = family.bias_table_per_layer ? layer.index : first;
      read_attention(root, family, layer, 1.0);
      model.layers.push_back(std::move(layer));
    }
  }
}

// The config's value of key (>= 1), else fallback.
inline std::int64_t layer_pattern_or(const JsonReader& root, const char* key,
                                     std::int64_t fallback) {
  const std::int64_t value = root.integer(key).value_or(fallback);
  if (value < 1) fail(root.name(key), value, "expected a layer count >= 1");
  return value;
}

// The family's pattern, or the config's value of key when given (key nullptr: none).
inline std::int64_t layer_pattern(const JsonReader& root, const ModelFamily& family,
                                  const char* key) {
  const std::int64_t value = key ? root.integer(key).value_or(family.pattern) : family.pattern;
  if (value < 1) fail(root.name(key ? key : "pattern"), value, "expected a layer count >= 1");
  return value;
}

// Cohere2-MoE's dense prefix (configuration_cohere2_moe.py, Cohere2MoeConfig.__post_init__):
// first_k_dense_replace in [0, n_layers] (default 0; a key the class pops, not one it saves).
inline int dense_prefix_length(const JsonReader& root, int n_layers) {
  const std::int64_t prefix = root.integer("first_k_dense_replace").value_or(0);
  if (prefix < 0 || prefix > n_layers) {
    fail(root.name("first_k_dense_replace"), prefix,
         "expected a layer count in [0, num_hidden_layers = " + std::to_string(n_layers) + "]");
  }
  return static_cast<int>(prefix);
}

// Cohere2-MoE's force_rope (modeling_cohere2_moe.py, Cohere2MoeAttention.__init__): layer i's
// mlp_layer_types entry is "dense" (default: i < first_k_dense_replace) and
// prefix_dense_sliding_window_pattern is 1 (its default).
inline std::vector<bool> dense_prefix_rope_layers(const JsonReader& root, int n_layers) {
  std::vector<bool> rope(static_cast<std::size_t>(n_layers), false);
  if (layer_pattern_or(root, "prefix_dense_sliding_window_pattern", 1) != 1) return rope;
  const char* key = "mlp_layer_types";
  if (const auto types = root.strings(key)) {
    if (static_cast<int>(types->size()) != n_layers) {
      fail(root.name(key) + ".size()", types->size(),
           "expected num_hidden_layers = " + std::to_string(n_layers));
    }
    for (std::size_t i = 0; i < types->size(); ++i) {
      if ((*types)[i] != "dense" && (*types)[i] != "sparse") {
        fail(root.name(key) + "[" + std::to_string(i) + "]", "\"" + (*types)[i] + "\"",
             "expected \"dense\" or \"sparse\"");
      }
      rope[i] = (*types)[i] == "dense";
    }
    return rope;
  }
  const int prefix = dense_prefix_length(root, n_layers);
  for (int i = 0; i < prefix; ++i) rope[static_cast<std::size_t>(i)] = true;
  return rope;
}

// Per layer: does it have RoPE (no_rope_layers: 1 = RoPE, 0 = NoPE; else every
// no_rope_layer_interval-th layer, default the family's pattern, has none); for Cohere2-MoE,
// is it a force_rope layer (dense_prefix_rope_layers).
inline std::vector<bool> read_rope_layers(const JsonReader& root, const ModelFamily& family,
                                          int n_layers) {
  if (family.nope == NopeRule::SlidingOrDensePrefix) {
    return dense_prefix_rope_layers(root, n_layers);
  }
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

// GraniteSWA (modular_granite_swa.py, GraniteSWAConfig.layer_rope_theta and GraniteSWAModel):
// layer i's rope theta, replacing the block's; 0 means no RoPE. Empty when the family does not
// read the key or the config leaves it out (transformers then repeats rope_theta per layer).
inline std::vector<double> read_layer_thetas(const JsonReader& root, const ModelFamily& family,
                                             int n_layers) {
  const char* key = "layer_rope_theta";
  if (!family.layer_rope_theta || !root.has(key)) return {};
  std::vector<double> thetas = root.numbers(key, "");
  if (static_cast<int>(thetas.size()) != n_layers) {
    fail(root.name(key) + ".size()", thetas.size(),
         "expected num_hidden_layers = " + std::to_string(n_layers));
  }
  for (std::size_t i = 0; i < thetas.size(); ++i) {
    if (thetas[i] != 0.0 && !(thetas[i] > 0.0 && std::isfinite(thetas[i]))) {
      fail(root.name(key) + "[" + std::to_string(i) + "]", thetas[i],
           "expected a rope theta > 0, or 0 for no RoPE");
    }
  }
  return thetas;
}

// Layer i's type by the family's LayerTypeRule, for a config without layer_types.
inline std::string derived_layer_type(const JsonReader& root, const ModelFamily& family, int i,
                                      int n_layers, bool rope_layer) {
  const auto window_enabled = [&] {
    return root.boolean("use_sliding_window").value_or(false) && root.has("sliding_window");
  };
  bool sliding = false;
  switch (family.layer_types) {
    case LayerTypeRule::AllFull:
      break;
    case LayerTypeRule::SlidingPattern:
      // EXAONE 4 (configuration_exaone4.py): without a sliding window every layer is full.
      if (family.nope == NopeRule::NonSlidingWhenWindowed && !window_set(root, family)) break;
      sliding = (i + 1) % layer_pattern(root, family, "sliding_window_pattern") != 0;
      break;
    case LayerTypeRule::FixedPattern:
      sliding = (i + 1) % layer_pattern(root, family, nullptr) != 0;
      break;
    case LayerTypeRule::FixedPatternFromZero:
      sliding = i % layer_pattern(root, family, nullptr) != 0;
      break;
    case LayerTypeRule::AttentionMlpPairs:  // configuration_dory.py, DoryConfig.__post_init__
      sliding = (i + 1) % layer_pattern(root, family, nullptr) != 0;
      break;
    case LayerTypeRule::FixedPatternLastFull:  // configuration_beam.py, BeamConfig.__post_init__
      sliding = (i + 1) % layer_pattern(root, family, nullptr) != 0 && i != n_layers - 1;
      break;
    case LayerTypeRule::GlobalEveryN:
      sliding = (i + 1) % layer_pattern(root, family, "global_attn_every_n_layers") != 0;
      break;
    case LayerTypeRule::GlobalEveryNFromZero:
      sliding = i % layer_pattern(root, family, "global_attn_every_n_layers") != 0;
      break;
    case LayerTypeRule::LaraMiniPeriod: {  // configuration_lara_mini.py, the released pattern
      static const char* const period[] = {"linear_attention", "sliding_attention",
                                           "linear_attention", "full_attention",
                                           "sliding_attention"};
      return period[i % 5];
    }
    case LayerTypeRule::MaxWindowLayers:
      sliding = window_enabled() && i >= root.integer("max_window_layers").value_or(family.pattern);
      break;
    case LayerTypeRule::EvenBelowWindowLayers:
      sliding = window_enabled() && i % 2 == 0 &&
                i < root.integer("max_window_layers").value_or(family.pattern);
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
    case LayerTypeRule::AllMamba:
      return "mamba";
    case LayerTypeRule::DensePrefixPattern: {  // configuration_cohere2_moe.py
      const int prefix = dense_prefix_length(root, n_layers);
      if (i < prefix) {
        sliding = (i + 1) % layer_pattern_or(root, "prefix_dense_sliding_window_pattern", 1) != 0;
      } else {
        sliding = (i - prefix + 1) % layer_pattern(root, family, "sliding_window_pattern") != 0;
      }
      break;
    }
    case LayerTypeRule::LinearOddLayers:
      return (i + 1) % 2 == 0 ? "linear_attention" : "full_attention";
    case LayerTypeRule::AllIndexed:  // configuration_deepseek_v32.py, DeepseekV32Config
      return "indexed_attention";
    default:  // listed_layer_types()
      break;
  }
  return sliding ? "sliding_attention" : "full_attention";
}

// GPT-Neo (configuration_gpt_neo.py, expand_attention_types_params): attention_types
// [[["global", "local"], 12]] repeats each list n times; global layers are full, local sliding.
inline std::vector<std::string> gpt_neo_layer_types(const JsonReader& root) {
  std::vector<std::string> types;
  const nlohmann::json* given = root.find("attention_types");
  const nlohmann::json fallback = nlohmann::json::parse(R"([[["global", "local"], 12]])");
  for (const nlohmann::json& item : given != nullptr ? *given : fallback) {
    if (!item.is_array() || item.size() != 2 || !item[0].is_array() ||
        !item[1].is_number_integer() || item[1].get<std::int64_t>() < 0 ||
        item[1].get<std::int64_t>() > (1 << 16)) {
      root.wrong_type("attention_types", "a list of [[\"global\" or \"local\", ...], count]");
    }
    for (std::int64_t n = 0; n < item[1].get<std::int64_t>(); ++n) {
      for (const nlohmann::json& type : item[0]) {
        if (type != "global" && type != "local") {
          root.wrong_type("attention_types", "a list of [[\"global\" or \"local\", ...], count]");
        }
        types.push_back(type == "local" ? "sliding_attention" : "full_attention");
      }
      if (types.size() > (1u << 16)) break;
    }
  }
  return types;
}

// The layers a list key names (each index in [0, n_layers)), as flags; nullopt when absent.
inline std::optional<std::vector<bool>> listed_layers(const JsonReader& root, const char* key,
                                                      int n_layers) {
  const auto list = root.integers(key);
  if (!list) return std::nullopt;
  std::vector<bool> listed(static_cast<std::size_t>(n_layers), false);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const std::int64_t layer = (*list)[i];
    if (layer < 0 || layer >= n_layers) {
      fail(root.name(key) + "[" + std::to_string(i) + "]", layer,
           "expected a layer index in [0, " + std::to_string(n_layers) + ")");
    }
    listed[static_cast<std::size_t>(layer)] = true;
  }
  return listed;
}

// Layer types of the families whose rule reads a list or a period (GPT-Neo, Jamba, LFM2,
// Mllama); empty for the other families.
inline std::vector<std::string> listed_layer_types(const JsonReader& root,
                                                   const ModelFamily& family, int n_layers) {
  std::vector<std::string> types;
  const auto each = [&](auto type_of) {
    for (int i = 0; i < n_layers; ++i) types.push_back(type_of(static_cast<std::size_t>(i)));
  };
  switch (family.layer_types) {
    case LayerTypeRule::AttentionTypes:
      types = gpt_neo_layer_types(root);
      if (static_cast<int>(types.size()) != n_layers) {
        fail(root.name("attention_types") + " (expanded)", types.size(),
             "expected num_layers = " + std::to_string(n_layers) + " layer types");
      }
      break;
    case LayerTypeRule::AttentionPeriod: {  // configuration_jamba.py, layers_block_type
      const std::int64_t period = layer_pattern_or(root, "attn_layer_period", 8);
      const std::int64_t offset = root.integer("attn_layer_offset").value_or(4);
      each([&](std::size_t i) {
        return static_cast<std::int64_t>(i) % period == offset ? "full_attention" : "mamba";
      });
      break;
    }
    case LayerTypeRule::FullAttnIdxs: {  // configuration_lfm2.py: default every layer
      const auto full = listed_layers(root, "full_attn_idxs", n_layers);
      each([&](std::size_t i) { return !full || (*full)[i] ? "full_attention" : "conv"; });
      break;
    }
    case LayerTypeRule::CrossAttention: {  // configuration_mllama.py
      const auto cross = listed_layers(root, "cross_attention_layers", n_layers);
      each([&](std::size_t i) {
        return cross && (*cross)[i] ? "cross_attention" : "full_attention";
      });
      break;
    }
    default:
      break;
  }
  return types;
}

// Dory's (attention type, "mlp") blocks: the attention types, every second block "mlp".
inline std::vector<std::string> attention_of_mlp_pairs(const JsonReader& root,
                                                       const std::vector<std::string>& blocks) {
  std::vector<std::string> types;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if ((i % 2 == 1) != (blocks[i] == "mlp")) {
      fail(root.name("layer_types") + "[" + std::to_string(i) + "]", "\"" + blocks[i] + "\"",
           i % 2 == 1 ? "expected \"mlp\" (layer_types in (attention, mlp) pairs)"
                      : "expected an attention type (layer_types in (attention, mlp) pairs)");
    }
    if (i % 2 == 0) types.push_back(blocks[i]);
  }
  return types;
}

// The config's layer_types, checked ("attention", Granite 4's name, is full_attention; the
// family's own names are their layer types, layer_type_names).
inline std::vector<std::string> given_layer_types(const JsonReader& root, const ModelFamily& family,
                                                  std::vector<std::string> types, int n_layers) {
  if (layers_in_mlp_pairs(root, family)) types = attention_of_mlp_pairs(root, types);
  if (static_cast<int>(types.size()) != n_layers) {
    fail(root.name("layer_types") + ".size()", types.size(),
         "expected num_hidden_layers = " + std::to_string(n_layers));
  }
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "attention") types[i] = "full_attention";
    types[i] = layer_type_of_name(family, types[i]);
    if (!is_known_layer_type(types[i])) {
      std::string known;
      for (const std::string& type : known_layer_types())
        known += (known.empty() ? "" : ", ") + type;
      fail(root.name("layer_types") + "[" + std::to_string(i) + "]", "\"" + types[i] + "\"",
           "expected one of " + known);
    }
  }
  return types;
}

// Every layer's type: the config's layer_types, else the family's rule.
inline std::vector<std::string> read_layer_types(const JsonReader& root, const ModelFamily& family,
                                                 int n_layers, const std::vector<bool>& rope) {
  std::vector<std::string> types;
  if (auto given = root.strings("layer_types")) {
    types = given_layer_types(root, family, std::move(*given), n_layers);
  } else {
    types = listed_layer_types(root, family, n_layers);
    for (int i = static_cast<int>(types.size()); i < n_layers; ++i) {
      types.push_back(
          derived_layer_type(root, family, i, n_layers, rope[static_cast<std::size_t>(i)]));
    }
  }
  // Gemma 4's config class forces the last layer to full attention.
  if (family.split == RopeSplit::Gemma4) types.back() = "full_attention";
  return types;
}

}  // namespace posemb::detail
