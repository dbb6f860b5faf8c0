// The config.json reader: the definitions behind load.hpp and config.hpp. Header-only by default
// (every function inline, included by load.hpp and config.hpp); with POSEMB_CONFIG_COMPILED
// the headers only declare them and src/config.cpp, the posemb::config library, compiles this
// file once.
//
// The rules follow HuggingFace transformers (v4.57 `rope_scaling` and v5 `rope_parameters`
// layouts; tests/data/hf/README.md and tests/data/models/README.md state them in full):
//   decoder:     `text_config` when present (multimodal wrappers), else the config itself
//   family:      model_families() (families.hpp): pairing, config-class defaults, layer types,
//                sliding windows, softmax scale, NoPE layers, family-only keys; one row per
//                model_type; multimodal_families() for the top-level model_type
//   layers:      config/layers.hpp (heads, layer count, kind, head size, layer types, T5 stacks)
//   rope block:  config/rope_block.hpp (which block, theta, rotary dim, pairing); the variant's
//                parameters by rope_registry.hpp
//   attention:   config/attention.hpp (window, chunk, query temperature, softmax scale)
//   multimodal:  config/multimodal.hpp (M-RoPE index rules, vision tower)
// GPT-2 style spellings (n_embd, n_head, n_positions, n_layer) stand in for hidden_size,
// num_attention_heads, max_position_embeddings and num_hidden_layers. A null value counts as
// absent. A config without num_hidden_layers describes one layer.
//
// Bad input (unknown rope type or layer type, missing required key, wrongly typed value, invalid
// value) throws posemb::Error naming the key, and the file when loaded from a path.
#pragma once

#include "posemb/model/config.hpp"  // the declarations (first: they carry the default arguments)

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "posemb/detail/input_file.hpp"
#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/model/config/attention.hpp"
#include "posemb/model/config/layers.hpp"
#include "posemb/model/config/multimodal.hpp"
#include "posemb/model/config/per_layer.hpp"
#include "posemb/model/config/rope_block.hpp"
#include "posemb/model/config/unused_keys.hpp"
#include "posemb/model/config_options.hpp"
#include "posemb/model/families.hpp"
#include "posemb/model/positions.hpp"

namespace posemb {
namespace detail {

// torchscale-style xPos: `xpos_rel_pos: true` on a RoPE model, xpos_scale_base (512).
inline void read_xpos(const JsonReader& root, PositionKind kind, ModelPositions& model) {
  if (!root.boolean("xpos_rel_pos").value_or(false) || kind != PositionKind::Rope) return;
  XposParams xpos;
  xpos.scale_base = root.number("xpos_scale_base").value_or(xpos.scale_base);
  require_positive_finite("xpos_scale_base", xpos.scale_base);
  model.xpos = xpos;
}

// False for a layer without positions: linear attention, mamba, conv and cross-attention layers,
// and the layers the family's NopeRule names.
inline bool has_positions(const JsonReader& root, const ModelFamily& family,
                          const std::string& layer_type, bool rope_layer) {
  if (layer_type == "linear_attention" || layer_type == "mamba" || layer_type == "conv" ||
      layer_type == "cross_attention") {
    return false;
  }
  const bool sliding = layer_type == "sliding_attention";
  switch (family.nope) {
    case NopeRule::None:
      return true;
    case NopeRule::NonSlidingLayers:
      return sliding;
    case NopeRule::NonSlidingWhenWindowed:  // modeling_exaone4.py
      return sliding || !window_set(root, family);
    case NopeRule::NoRopeLayers:
      return rope_layer;
    case NopeRule::SlidingOrDensePrefix:  // modeling_cohere2_moe.py, Cohere2MoeAttention
      return (sliding && window_set(root, family)) || rope_layer;
  }
  return true;
}

// What the config says of one decoder layer before its RoPE block is read (read_decoder).
struct LayerRow {
  int index = 0;
  std::string layer_type;
  bool rope_layer = true;
  std::optional<double> theta;  // its own rope theta (read_layer_thetas), replacing its block's
  bool owns_indexer = false;    // its own lightning indexer (read_indexer_owners)
};

// One layer of a decoder whose layers are not T5's: its kind (none by has_positions(), a layer
// theta of 0 or null rope parameters for its type, FoPE by its block), RoPE scheme, indexer and
// attention.
inline LayerPositions read_layer(const JsonReader& root, const ModelFamily& family,
                                 const ConfigOptions& options, RopeBlockReader& blocks,
                                 PositionKind kind, int n_heads, LayerRow row) {
  LayerPositions layer;
  layer.index = row.index;
  layer.layer_type = std::move(row.layer_type);
  layer.kind = kind;
  if (!has_positions(root, family, layer.layer_type, row.rope_layer) || row.theta == 0.0 ||
      (kind == PositionKind::Rope && blocks.without_rope(layer.layer_type))) {
    layer.kind = PositionKind::None;
  }
  layer.head_dim = layer_head_dim(root, family, n_heads, layer.layer_type);
  double softmax_factor = 1.0;
  std::optional<QueryTemperature> block_temperature;
  if (layer.kind == PositionKind::Rope) {
    const RopeBlock& block = blocks.block(layer.layer_type, row.theta);
    softmax_factor = block.softmax_factor;
    block_temperature = block.temperature;
    if (block.fope) {
      layer.kind = PositionKind::Fope;
    } else {
      layer.rope = block.scheme;
    }
  }
  layer.rotary_offset = rope_slice_offset(root, layer);
  layer.indexer = read_indexer(root, family, options, layer, row.owns_indexer);
  read_attention(root, family, layer, softmax_factor, block_temperature);
  return layer;
}

// A sliding_attention layer without a window contradicts layer_types: a per-layer
// sliding_window of null on one (transformers: NeoMMEAttention adds 1 to None, Gemma 4 and the
// families reading config.sliding_window raise AmbiguousGlobalPerLayerAttributeError).
inline void check_layer_window(const JsonReader& layer_root, const LayerPositions& layer) {
  const std::string key = layer_root.name("sliding_window");
  if (layer.layer_type != "sliding_attention" || layer.attention.sliding_window ||
      key.find("per_layer_config.") == std::string::npos) {
    return;
  }
  fail(key, "null",
       "expected a window > 0 on layer " + std::to_string(layer.index) +
           ", a sliding_attention layer by layer_types");
}

// Every layer of the decoder config `root` into model (model.model_type set).
inline void read_decoder(const JsonReader& root, const ConfigOptions& options,
                         ModelPositions& model) {
  const ModelFamily& family = model_family(model.model_type);
  read_heads(root, family, model);
  const int n_layers = read_layer_count(root, family);
  const PositionKind kind = read_position_kind(root, family);
  if (family.learned_table.from_padding_idx) model.padding_idx = read_padding_idx(root);
  if (kind == PositionKind::Learned && !model.max_position_embeddings) {
    root.missing("n_positions",
                 "expected n_positions (or max_position_embeddings) for learned positions");
  }
  read_xpos(root, kind, model);
  if (std::string note = temperature_switch_note(root, family); !note.empty()) {
    model.warnings.push_back(std::move(note));
  }
  if (kind == PositionKind::RelativeBias) {
    read_relative_bias_layers(root, family, model);
    return;
  }
  const std::vector<bool> rope_layers = read_rope_layers(root, family, n_layers);
  const std::vector<std::string> types = read_layer_types(root, family, n_layers, rope_layers);
  const std::vector<double> thetas = read_layer_thetas(root, family, n_layers);
  const std::vector<bool> indexer_owners = read_indexer_owners(root, family, n_layers);
  RopeBlockReader blocks(root, family, options, model);
  const PerLayerConfig per_layer(root, family, types);
  const std::string layers_key = root.name(layer_count_key(root));
  std::int64_t rope_pairs = 0;
  for (int i = 0; i < n_layers; ++i) {
    const auto at = static_cast<std::size_t>(i);
    LayerRow row{i, types[at], rope_layers[at], std::nullopt, indexer_owners[at]};
    if (!thetas.empty()) row.theta = thetas[at];
    const JsonReader& layer_root = per_layer.layer(i);
    if (per_layer.overridden(i)) {
      RopeBlockReader layer_blocks(layer_root, family, options, model);
      model.layers.push_back(read_layer(layer_root, family, options, layer_blocks, kind,
                                        model.n_heads, std::move(row)));
    } else {
      model.layers.push_back(
          read_layer(root, family, options, blocks, kind, model.n_heads, std::move(row)));
    }
    check_layer_window(layer_root, model.layers.back());
    if (const auto& rope = model.layers.back().rope) rope_pairs += rope->rotary_dim / 2;
    require_model_rope_pairs(layers_key, n_layers, rope_pairs);
  }
}

// Parses config.json's text; errors from a read error of `file` (when given) win over the parse
// error they cause.
inline nlohmann::json parse_config(const std::string& text, std::FILE* file) {
  try {
    errno = 0;
    return file != nullptr ? nlohmann::json::parse(file) : nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    // parse_error, or out_of_range for a number beyond double ("1e400"). A read error ends
    // the input early: report it, not the parse error it causes.
    if (file != nullptr && std::ferror(file)) {
      throw Error("cannot read config file: " + errno_reason(errno));
    }
    throw Error(std::string("malformed JSON: ") + error.what());
  }
}

}  // namespace detail

POSEMB_CONFIG_FUNC ModelPositions model_positions_from_json(const nlohmann::json& config,
                                                            const ConfigOptions& options) {
  if (!config.is_object()) {
    detail::fail("config", config.type_name(), "expected a JSON object");
  }
  detail::KeyLog used;  // every key the reader looked up, for model.unused_keys
  const detail::JsonReader top(config, "", &used);
  ModelPositions model;
  const std::string top_type = top.string("model_type").value_or("");
  // Multimodal wrappers: the decoder is text_config; the top-level keys are not read.
  if (const nlohmann::json* text = top.object("text_config")) {
    const detail::JsonReader root = top.child(*text, "text_config.");
    model.model_type = root.string("model_type").value_or(default_text_model_type(top_type));
    detail::read_decoder(root, options, model);
  } else {
    model.model_type = top_type;
    detail::read_decoder(top, options, model);
  }
  detail::read_multimodal(top, top_type, model);
  model.unused_keys = detail::unused_keys(config, "", used);
  if (const nlohmann::json* text = top.object("text_config")) {
    const std::vector<std::string> text_unused = detail::unused_keys(*text, "text_config.", used);
    model.unused_keys.insert(model.unused_keys.end(), text_unused.begin(), text_unused.end());
  }
  std::sort(model.unused_keys.begin(), model.unused_keys.end());
  detail::set_apart_transformers_ignored(model_family(model.model_type), model.unused_keys,
                                         model.unused_keys_transformers_ignores);
  return model;
}

POSEMB_CONFIG_FUNC ModelPositions parse_model_positions(const std::string& json_text,
                                                        const ConfigOptions& options) {
  return model_positions_from_json(detail::parse_config(json_text, nullptr), options);
}

POSEMB_CONFIG_FUNC ModelPositions load_model_positions(const std::string& path,
                                                       const ConfigOptions& options) {
  detail::InputFile file(path, "config file", "a JSON object");
  try {
    const nlohmann::json config = detail::parse_config("", file.get());
    if (std::ferror(file.get())) {
      throw Error("cannot read config file: " + detail::errno_reason(errno));
    }
    return model_positions_from_json(config, options);
  } catch (Error& error) {
    error.add_context(path);
    throw;
  }
}

}  // namespace posemb
