// A HuggingFace model's config.json -> what every layer does with positions. Needs nlohmann-json
// (the core headers do not; posemb.hpp does not include this one).
//
// A model's positions are per layer (LayerPositions): the positional kind (RoPE, none, ALiBi,
// learned, sinusoidal, FoPE), the RoPE scheme of RoPE layers, the layer's q/k head size and its
// attention-side parameters (softmax scale, sliding window, chunk, query temperature). Models
// whose layers agree are as easy to use as one scheme: ModelPositions::rope_spec().
//
// The rules follow HuggingFace transformers (v4.57 `rope_scaling` and v5 `rope_parameters`
// layouts; tests/data/hf/README.md and tests/data/models/README.md state them in full):
//   decoder:     `text_config` when present (multimodal wrappers), else the config itself
//   family:      model_families() (model_families.hpp): pairing, config-class defaults, layer
//                types, sliding windows, softmax scale, NoPE layers; one row per model_type
//   rope block:  `rope_scaling` if a non-empty object, else `rope_parameters`, else {}; a block
//                whose keys are layer types holds one block per layer type (v5)
//   rope type:   P.rope_type, else legacy P.type, else "default"; the registry in rope_registry.hpp
//                reads its parameters ("su" is read as "longrope")
//   theta:       P.rope_theta, else rope_theta, else rotary_emb_base (GPT-NeoX), else the family's
//   head dim:    qk_rope_head_dim (DeepSeek), else head_dim, else hidden_size / num_attention_heads
//   rotary dim:  int(head_dim * partial factor) with the factor from partial_rotary_factor, else
//                P.partial_rotary_factor, else rotary_pct (GPT-NeoX), else the family's default;
//                GPT-J / CodeGen give `rotary_dim` directly
// GPT-2 style spellings (n_embd, n_head, n_positions, n_layer) stand in for hidden_size,
// num_attention_heads, max_position_embeddings and num_hidden_layers. A null value counts as
// absent. A config without num_hidden_layers describes one layer.
//
// T5-family configs (t5, mt5, umt5) list the encoder's num_layers layers, then the decoder's
// num_decoder_layers; their positions are "relative_bias" (relative_bias.hpp).
//
// FoPE (rope_type "fope", Hua et al. 2024) reads its block as the authors' settings:
//   train_length (else max_position_embeddings) = N, floor_ratio (1), ignore_zero (true: drop the
//   clipped frequencies), clip_floor_to_zero (must be true), d_out, sigma (0.3), seed (0),
//   padding_sin (1); see fope.hpp. FoPE rotates whole heads with rotate-half pairs.
//
// Bad input (unknown rope type or layer type, missing required key, wrongly typed value, invalid
// value) throws posemb::Error naming the key, and the file when loaded from a path.
#pragma once

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posemb/detail/input_file.hpp"
#include "posemb/detail/json_reader.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/model/layer_attention.hpp"
#include "posemb/model/families.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/model/rope_registry.hpp"
#include "posemb/rotary/scaled.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/xpos.hpp"

namespace posemb {

// The attention types of HuggingFace's `layer_types`.
inline const std::vector<std::string>& known_layer_types() {
  static const std::vector<std::string> types = {"full_attention", "sliding_attention",
                                                 "chunked_attention", "linear_attention"};
  return types;
}

// What one decoder layer does with positions.
struct LayerPositions {
  int index = 0;
  std::string layer_type = "full_attention";  // one of known_layer_types()
  PositionKind kind = PositionKind::Rope;
  int head_dim = 0;                // the width q·kᵀ runs over (0: not given by the config)
  std::optional<RopeScheme> rope;  // kind == Rope
  LayerAttention attention;        // softmax_scale is set on every softmax layer
  // Encoder-decoder models (T5): "encoder" or "decoder"; "" for one stack of layers.
  std::string stack;
  // kind == RelativeBias: the buckets (bidirectional in the encoder, causal in the decoder's
  // self-attention) and the layer whose [num_buckets, heads] table this layer adds (the first
  // layer of its stack, which holds the table; UMT5: every layer its own).
  std::optional<T5Buckets> relative_bias;
  int relative_bias_table_layer = 0;

  // Linear-attention layers (Qwen3-Next's gated DeltaNet) have no softmax over q·kᵀ.
  bool softmax_attention() const { return layer_type != "linear_attention"; }

  // The layer's RoPE spec at seq_len; throws unless kind == Rope.
  RopeSpec rope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!rope) detail::fail("kind", to_string(kind), "expected rope for a RoPE spec");
    return rope->spec(seq_len);
  }
};

inline bool operator==(const QueryTemperature& a, const QueryTemperature& b) {
  return a.floor_scale == b.floor_scale && a.attn_scale == b.attn_scale;
}

// True when two layers do the same (everything but the index).
inline bool same_positions(const LayerPositions& a, const LayerPositions& b) {
  return a.kind == b.kind && a.head_dim == b.head_dim && a.rope == b.rope &&
         a.softmax_attention() == b.softmax_attention() &&
         a.attention.softmax_scale == b.attention.softmax_scale &&
         a.attention.sliding_window == b.attention.sliding_window &&
         a.attention.attention_chunk_size == b.attention.attention_chunk_size &&
         a.attention.query_temperature == b.attention.query_temperature && a.stack == b.stack &&
         a.relative_bias.has_value() == b.relative_bias.has_value() &&
         (!a.relative_bias ||
          (a.relative_bias->num_buckets == b.relative_bias->num_buckets &&
           a.relative_bias->max_distance == b.relative_bias->max_distance &&
           a.relative_bias->bidirectional == b.relative_bias->bidirectional &&
           a.relative_bias_table_layer == b.relative_bias_table_layer));
}

// The positional scheme of one model, layer by layer, as read from its config.json.
//
// Example:
//   const posemb::ModelPositions model = posemb::load_model_positions("config.json");
//   for (const posemb::LayerPositions& layer : model.layers) {
//     if (layer.kind == posemb::PositionKind::Rope) {
//       const posemb::RopeSpec spec = layer.rope_spec(seq_len);  // rotate q and k of this layer
//     }
//     // layer.attention: softmax scale, sliding window, chunk, query temperature
//   }
struct ModelPositions {
  std::string model_type;  // of the decoder ("" if the config has none)
  int n_heads = 0;         // query heads
  int n_kv_heads = 0;      // key/value heads (grouped-query attention); n_heads if not given
  std::optional<std::int64_t> max_position_embeddings;
  std::vector<LayerPositions> layers;  // [num_hidden_layers]
  std::optional<XposParams> xpos;      // torchscale-style `xpos_rel_pos: true`
  std::optional<FopeConfig> fope;      // rope_type "fope": pass to make_fope
  // Multimodal models (Qwen2-VL family, Pixtral): get_rope_index's rules from the top-level
  // model_type and vision_config (mrope_positions.hpp), and the vision tower's 2-D RoPE
  // (vision_rope.hpp).
  std::optional<MropeIndexRules> mrope_index;
  std::optional<VisionRope> vision;

  // Layer i; throws naming `layer` when out of range.
  const LayerPositions& layer(std::int64_t i) const {
    if (i < 0 || i >= static_cast<std::int64_t>(layers.size())) {
      detail::fail("layer", i,
                   "expected a layer index in [0, " + std::to_string(layers.size()) + ")");
    }
    return layers[static_cast<std::size_t>(i)];
  }

  // True when every layer does the same as layer 0.
  bool layers_alike() const {
    for (const LayerPositions& layer : layers) {
      if (!same_positions(layer, layers.front())) return false;
    }
    return true;
  }

  // The kind of every layer that has positions (NoPE layers aside); None if no layer has any.
  PositionKind kind() const {
    std::optional<PositionKind> kind;
    for (const LayerPositions& layer : layers) {
      if (layer.kind == PositionKind::None) continue;
      if (kind && *kind != layer.kind) {
        detail::fail("kind", to_string(layer.kind),
                     std::string("expected every layer to be ") + to_string(*kind));
      }
      kind = layer.kind;
    }
    return kind.value_or(PositionKind::None);
  }

  // The one RoPE scheme every RoPE layer uses; throws when there is none or the layers differ
  // (then use layers[i].rope).
  const RopeScheme& rope_scheme() const {
    const RopeScheme* scheme = nullptr;
    for (const LayerPositions& layer : layers) {
      if (!layer.rope) continue;
      if (scheme != nullptr && !(*scheme == *layer.rope)) {
        detail::fail("layer", layer.index,
                     "its RoPE scheme differs from layer 0's; expected one scheme for the "
                     "model (use layers[i].rope_spec())");
      }
      if (scheme == nullptr) scheme = &*layer.rope;
    }
    if (scheme == nullptr) detail::fail("kind", to_string(kind()), "expected rope for a RoPE spec");
    return *scheme;
  }

  // The RoPE spec at seq_len of a model with one RoPE scheme (see rope_scheme()).
  RopeSpec rope_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    return rope_scheme().spec(seq_len);
  }

  // xPos spec at seq_len; throws unless the model uses xPos.
  XposSpec xpos_spec(std::optional<std::int64_t> seq_len = std::nullopt) const {
    if (!xpos) detail::fail("xpos_rel_pos", "absent", "expected an xPos model");
    return XposSpec{rope_spec(seq_len), *xpos};
  }
};

struct ConfigOptions {
  std::optional<Pairing> pairing;  // overrides the pairing implied by model_type
};

namespace detail {

// The loader's state for one config: the decoder's keys, its family, and the rope blocks.
class ConfigReader {
 public:
  ConfigReader(const JsonReader& root, const ConfigOptions& options, ModelPositions& model)
      : root_(root), options_(options), model_(model), family_(model_family(model.model_type)) {}

  void read() {
    read_heads();
    const int n_layers = read_layer_count();
    PositionKind kind = family_.positions;
    if (root_.boolean("alibi").value_or(false)) kind = PositionKind::Alibi;  // Falcon
    if (model_.model_type == "mpt") kind = mpt_kind();
    if (kind == PositionKind::Learned && !model_.max_position_embeddings) {
      root_.missing("n_positions",
                    "expected n_positions (or max_position_embeddings) for learned positions");
    }
    if (root_.boolean("xpos_rel_pos").value_or(false) && kind == PositionKind::Rope) {
      XposParams xpos;
      xpos.scale_base = root_.number("xpos_scale_base").value_or(xpos.scale_base);
      require_positive_finite("xpos_scale_base", xpos.scale_base);
      model_.xpos = xpos;
    }

    if (kind == PositionKind::RelativeBias) {
      read_relative_bias_layers();
      return;
    }
    const std::vector<bool> rope_layers = read_rope_layers(n_layers);
    const std::vector<std::string> types = read_layer_types(n_layers, rope_layers);
    for (int i = 0; i < n_layers; ++i) {
      LayerPositions layer;
      layer.index = i;
      layer.layer_type = types[static_cast<std::size_t>(i)];
      layer.kind = kind;
      const bool sliding = layer.layer_type == "sliding_attention";
      if (layer.layer_type == "linear_attention" ||
          (family_.nope == NopeRule::NonSlidingLayers && !sliding) ||
          (family_.nope == NopeRule::NoRopeLayers && !rope_layers[static_cast<std::size_t>(i)])) {
        layer.kind = PositionKind::None;
      }
      layer.head_dim = layer_head_dim(layer.layer_type);
      const RopeBlock* block = nullptr;
      if (layer.kind == PositionKind::Rope) {
        block = &rope_block(layer.layer_type);
        if (block->fope) {
          layer.kind = PositionKind::Fope;
        } else {
          layer.rope = block->scheme;
        }
      }
      read_attention(layer, block);
      model_.layers.push_back(std::move(layer));
    }
  }

 private:
  // One rope parameter block, read for one layer type.
  struct RopeBlock {
    RopeScheme scheme;
    bool fope = false;
    double softmax_factor = 1.0;  // DeepSeek's m^2
  };

  void read_heads() {
    const auto heads = root_.first_of({"num_attention_heads", "n_head", "n_heads", "num_heads"},
                                      [&](const std::string& key) { return root_.integer(key); });
    if (!heads) {
      root_.missing("num_attention_heads",
                    "expected num_attention_heads (or n_head, n_heads, num_heads)");
    }
    model_.n_heads = to_int(root_.name("num_attention_heads"), *heads);
    if (auto kv = root_.first_of({"num_key_value_heads", "num_kv_heads"},
                                 [&](const std::string& key) { return root_.integer(key); })) {
      model_.n_kv_heads = to_int(root_.name("num_key_value_heads"), *kv);
    } else {
      model_.n_kv_heads = root_.boolean("multi_query").value_or(false) ? 1 : model_.n_heads;
    }
    if (model_.n_heads % model_.n_kv_heads != 0) {
      fail(root_.name("num_key_value_heads"), model_.n_kv_heads,
           "expected a divisor of num_attention_heads = " + std::to_string(model_.n_heads));
    }
    model_.max_position_embeddings =
        root_.first_of({"max_position_embeddings", "n_positions", "max_seq_len"},
                       [&](const std::string& key) { return root_.integer(key); });
  }

  int read_layer_count() const {
    const char* key = root_.first_key({"num_hidden_layers", "n_layer", "n_layers", "num_layers"});
    if (key == nullptr) return 1;
    const std::int64_t n = root_.integer(key, "");
    if (n < 1 || n > (1 << 16)) fail(root_.name(key), n, "expected a layer count in [1, 65536]");
    return static_cast<int>(n);
  }

  PositionKind mpt_kind() const {
    const nlohmann::json* attn = root_.object("attn_config");
    static const nlohmann::json empty = nlohmann::json::object();
    const JsonReader attn_config(attn != nullptr ? *attn : empty, root_.name("attn_config."));
    if (attn_config.boolean("alibi").value_or(true)) return PositionKind::Alibi;  // MPT's default
    return root_.boolean("learned_pos_emb").value_or(true) ? PositionKind::Learned
                                                            : PositionKind::Rope;
  }

  // The base head size: head_dim (T5: d_kv), else hidden_size / num_attention_heads; 0 if
  // neither is given.
  int base_head_dim() const {
    if (const char* key = root_.first_key({"head_dim", "d_kv"})) {
      return to_head_dim(root_.name(key), root_.integer(key, ""));
    }
    const auto hidden = root_.first_of({"hidden_size", "n_embd", "d_model"},
                                       [&](const std::string& key) { return root_.integer(key); });
    if (!hidden) return 0;
    return to_head_dim(root_.name("hidden_size / num_attention_heads"), *hidden / model_.n_heads);
  }

  // The q/k head size of a layer of this type.
  int layer_head_dim(const std::string& layer_type) const {
    if (family_.softmax == SoftmaxRule::DeepseekMscale && root_.has("qk_rope_head_dim")) {
      const std::int64_t nope = root_.integer("qk_nope_head_dim").value_or(0);
      const std::int64_t rope = root_.integer("qk_rope_head_dim", "");
      return to_head_dim(root_.name("qk_nope_head_dim + qk_rope_head_dim"), nope + rope);
    }
    if (family_.split == RopeSplit::Gemma4 && layer_type != "sliding_attention") {
      if (auto dim = root_.integer("global_head_dim")) {
        return to_head_dim(root_.name("global_head_dim"), *dim);
      }
    }
    if (layer_type == "linear_attention") {
      if (auto dim = root_.integer("linear_key_head_dim")) {
        return to_head_dim(root_.name("linear_key_head_dim"), *dim);
      }
    }
    return base_head_dim();
  }

  // T5 (configuration_t5.py, modeling_t5.py): the encoder's num_layers layers, then the
  // decoder's num_decoder_layers (default num_layers), or one stack when is_encoder_decoder is
  // false (the decoder's when is_decoder). Bidirectional buckets in the encoder, causal in the
  // decoder's self-attention; each stack's first layer holds the table, the others share it.
  void read_relative_bias_layers() {
    T5Buckets buckets;
    const auto count = [&](const char* key, std::int64_t fallback) {
      return to_int(root_.name(key), root_.integer(key).value_or(fallback));
    };
    buckets.num_buckets = count("relative_attention_num_buckets", 32);
    buckets.max_distance = count("relative_attention_max_distance", 128);
    try {
      t5_relative_position_bucket(0, buckets.num_buckets, buckets.max_distance, true);
    } catch (Error& error) {
      error.rename_parameter(root_.name(error.parameter() == "num_buckets"
                                            ? "relative_attention_num_buckets"
                                            : "relative_attention_max_distance"));
      throw;
    }
    const int encoder_layers = count("num_layers", 6);
    const int decoder_layers =
        root_.has("num_decoder_layers") ? count("num_decoder_layers", 6) : encoder_layers;
    std::vector<std::pair<std::string, int>> stacks;
    if (root_.boolean("is_encoder_decoder").value_or(true)) {
      stacks = {{"encoder", encoder_layers}, {"decoder", decoder_layers}};
    } else {
      stacks = {{root_.boolean("is_decoder").value_or(false) ? "decoder" : "encoder", encoder_layers}};
    }
    if (encoder_layers + decoder_layers > (1 << 16)) {
      fail(root_.name("num_layers + num_decoder_layers"), encoder_layers + decoder_layers,
           "expected a layer count in [1, 65536]");
    }
    const bool table_per_layer = model_.model_type == "umt5";
    for (const auto& [stack, layers] : stacks) {
      const int first = static_cast<int>(model_.layers.size());
      for (int i = 0; i < layers; ++i) {
        LayerPositions layer;
        layer.index = first + i;
        layer.kind = PositionKind::RelativeBias;
        layer.head_dim = base_head_dim();
        layer.stack = stacks.size() > 1 ? stack : "";
        layer.relative_bias = buckets;
        layer.relative_bias->bidirectional = stack == "encoder";
        layer.relative_bias_table_layer = table_per_layer ? layer.index : first;
        read_attention(layer, nullptr);
        model_.layers.push_back(std::move(layer));
      }
    }
  }

  // Per layer: does it have RoPE (no_rope_layers: 1 = RoPE, 0 = NoPE).
  std::vector<bool> read_rope_layers(int n_layers) const {
    std::vector<bool> rope(static_cast<std::size_t>(n_layers), true);
    if (family_.nope != NopeRule::NoRopeLayers) return rope;
    const auto list = root_.integers("no_rope_layers");
    if (list && !list->empty()) {
      if (static_cast<int>(list->size()) != n_layers) {
        fail(root_.name("no_rope_layers") + ".size()", list->size(),
             "expected num_hidden_layers = " + std::to_string(n_layers));
      }
      for (std::size_t i = 0; i < list->size(); ++i) {
        const std::int64_t value = (*list)[i];
        if (value != 0 && value != 1) {
          fail(root_.name("no_rope_layers") + "[" + std::to_string(i) + "]", value,
               "expected 1 (RoPE) or 0 (no RoPE)");
        }
        rope[i] = value == 1;
      }
      return rope;
    }
    const char* key = root_.first_key({"no_rope_layer_interval", "nope_layer_interval"});
    const std::int64_t interval = key ? root_.integer(key, "") : family_.pattern;
    if (interval < 1) fail(root_.name(key ? key : "interval"), interval, "expected an interval >= 1");
    for (int i = 0; i < n_layers; ++i) rope[static_cast<std::size_t>(i)] = (i + 1) % interval != 0;
    return rope;
  }

  std::int64_t pattern(const char* key) const {
    const std::int64_t value = key ? root_.integer(key).value_or(family_.pattern) : family_.pattern;
    if (value < 1) fail(root_.name(key ? key : "pattern"), value, "expected a layer count >= 1");
    return value;
  }

  bool sliding_window_enabled() const {
    return root_.boolean("use_sliding_window").value_or(false) && root_.has("sliding_window");
  }

  std::vector<std::string> read_layer_types(int n_layers, const std::vector<bool>& rope) const {
    std::vector<std::string> types;
    if (auto given = root_.strings("layer_types")) {
      if (static_cast<int>(given->size()) != n_layers) {
        fail(root_.name("layer_types") + ".size()", given->size(),
             "expected num_hidden_layers = " + std::to_string(n_layers));
      }
      for (std::size_t i = 0; i < given->size(); ++i) {
        if (!in_list((*given)[i], known_layer_types())) {
          fail(root_.name("layer_types") + "[" + std::to_string(i) + "]", "\"" + (*given)[i] + "\"",
               "expected one of full_attention, sliding_attention, chunked_attention, "
               "linear_attention");
        }
      }
      types = *given;
    } else {
      for (int i = 0; i < n_layers; ++i) {
        const bool rope_layer = rope[static_cast<std::size_t>(i)];
        bool sliding = false;
        switch (family_.layer_types) {
          case LayerTypeRule::AllFull:
            break;
          case LayerTypeRule::SlidingPattern:
            sliding = (i + 1) % pattern("sliding_window_pattern") != 0;
            break;
          case LayerTypeRule::FixedPattern:
            sliding = (i + 1) % pattern(nullptr) != 0;
            break;
          case LayerTypeRule::MaxWindowLayers:
            sliding = sliding_window_enabled() && i >= root_.integer("max_window_layers")
                                                            .value_or(family_.pattern);
            break;
          case LayerTypeRule::NopeSliding:
            sliding = sliding_window_enabled() && !rope_layer;
            break;
          case LayerTypeRule::ChunkedRope:
            types.push_back(rope_layer ? "chunked_attention" : "full_attention");
            continue;
          case LayerTypeRule::LinearInterval:
            types.push_back((i + 1) % pattern("full_attention_interval") != 0 ? "linear_attention"
                                                                                : "full_attention");
            continue;
        }
        types.push_back(sliding ? "sliding_attention" : "full_attention");
      }
    }
    // Gemma 4's config class forces the last layer to full attention.
    if (family_.split == RopeSplit::Gemma4) types.back() = "full_attention";
    return types;
  }

  static bool in_list(const std::string& value, const std::vector<std::string>& list) {
    for (const std::string& item : list) {
      if (value == item) return true;
    }
    return false;
  }

  // The block P and whether it is nested by layer type.
  void find_rope_block() {
    if (block_found_) return;
    block_found_ = true;
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
      const nlohmann::json* value = root_.object(key);
      if (value != nullptr && !value->empty()) {
        block_name_ = key;
        block_ = value;
        break;
      }
    }
    if (block_ == nullptr) return;
    const JsonReader block(*block_, root_.name(block_name_ + "."));
    if (block.has("rope_type") || block.has("type")) return;
    for (const auto& item : block_->items()) {
      if (!item.value().is_object()) continue;
      nested_ = true;
      if (!in_list(item.key(), known_layer_types())) {
        fail(block.name(item.key()), "{...}",
             "expected rope parameters, or rope parameters per layer type (full_attention, "
             "sliding_attention, chunked_attention, linear_attention)");
      }
    }
  }

  const RopeBlock& rope_block(const std::string& layer_type) {
    const auto cached = blocks_.find(layer_type);
    if (cached != blocks_.end()) return cached->second;
    find_rope_block();
    const bool sliding = layer_type == "sliding_attention";
    std::string name = block_name_;
    const nlohmann::json* json = block_;
    nlohmann::json& synthetic = synthetic_[layer_type];
    synthetic = nlohmann::json::object();
    if (nested_) {
      name = block_name_ + "." + layer_type;
      if (!block_->contains(layer_type) || !block_->at(layer_type).is_object()) {
        JsonReader(*block_, root_.name(block_name_ + "."))
            .missing(layer_type, "expected rope parameters for every layer type in use");
      }
      json = &block_->at(layer_type);
    } else if (family_.split == RopeSplit::Gemma4 && block_ == nullptr) {
      // configuration_gemma4.py's defaults.
      synthetic = sliding ? nlohmann::json{{"rope_type", "default"}, {"rope_theta", 1e4}}
                          : nlohmann::json{{"rope_type", "proportional"},
                                           {"partial_rotary_factor", 0.25},
                                           {"rope_theta", 1e6}};
      json = &synthetic;
      name.clear();
    } else if (sliding && family_.split == RopeSplit::LocalBase) {
      const double local_base = root_.number("rope_local_base_freq").value_or(1e4);
      require_positive_finite(root_.name("rope_local_base_freq"), local_base);
      synthetic = {{"rope_type", "default"}, {"rope_theta", local_base}};
      json = &synthetic;
      name.clear();
    } else if (sliding && family_.split == RopeSplit::FullOnly) {
      synthetic = {{"rope_type", "default"}};
      json = &synthetic;
      name.clear();
    }
    // Gemma 4's sliding layers take head_dim whole (Gemma4TextRotaryEmbedding).
    const bool ignore_partial = family_.split == RopeSplit::Gemma4 && sliding;
    static const nlohmann::json empty = nlohmann::json::object();
    const JsonReader block(json != nullptr ? *json : empty,
                           name.empty() ? root_.name("") : root_.name(name + "."));
    RopeBlock out = read_rope_block(block, name.empty() ? "" : root_.name(name), layer_type,
                                    ignore_partial);
    return blocks_.emplace(layer_type, std::move(out)).first->second;
  }

  // block_name: where the block is, for errors from its values ("" for the config itself).
  RopeBlock read_rope_block(const JsonReader& block, const std::string& block_name,
                            const std::string& layer_type, bool ignore_partial) {
    RopeBlock out;
    RopeScheme& scheme = out.scheme;
    const char* type_key = block.first_key({"rope_type", "type"});
    scheme.rope_type = type_key ? *block.string(type_key) : "default";
    if (scheme.rope_type == "su") scheme.rope_type = "longrope";  // Phi-3's first name
    if (scheme.rope_type == "mrope") scheme.rope_type = "default";  // Qwen2VLConfig's rewrite
    if (auto theta = block.number("rope_theta")) {
      scheme.theta = *theta;
    } else {
      scheme.theta = root_.first_of({"rope_theta", "rotary_emb_base"},
                                    [&](const std::string& key) { return root_.number(key); })
                         .value_or(family_.rope_theta);
    }
    require_positive_finite(root_.name("rope_theta"), scheme.theta);

    // The head size the rotation runs over.
    int head_dim = 0;
    if (auto dim = root_.integer("qk_rope_head_dim")) {
      head_dim = to_head_dim(root_.name("qk_rope_head_dim"), *dim);
    } else {
      head_dim = layer_head_dim(layer_type);
      if (head_dim == 0) {
        root_.missing("hidden_size", "expected hidden_size (or n_embd) or head_dim for RoPE");
      }
    }
    std::string partial_key = root_.name("partial_rotary_factor");
    std::optional<double> partial = root_.number("partial_rotary_factor");
    if (!partial && (partial = block.number("partial_rotary_factor"))) {
      partial_key = block.name("partial_rotary_factor");
    }
    if (!partial && (partial = root_.number("rotary_pct"))) partial_key = root_.name("rotary_pct");
    double fraction = partial.value_or(family_.partial_rotary_factor);
    if (ignore_partial) fraction = 1.0;
    if (!(fraction > 0.0 && fraction <= 1.0)) fail(partial_key, fraction, "expected in (0, 1]");

    if (scheme.rope_type == "fope") {
      read_fope(block, head_dim, scheme.theta, fraction);
      out.fope = true;
      return out;
    }
    const detail::RopeVariant* variant = detail::find_rope_variant(scheme.rope_type);
    if (variant == nullptr) {
      fail(block.name(type_key), "\"" + scheme.rope_type + "\"",
           "expected one of " + rope_type_names() + ", fope");
    }
    scheme.head_dim = head_dim;
    const bool gptj = in(model_.model_type, {"gptj", "codegen"});
    if (gptj && root_.has("rotary_dim")) {
      scheme.rotary_dim = to_int(root_.name("rotary_dim"), root_.integer("rotary_dim", ""));
    } else if (variant->rotates_whole_head) {
      scheme.rotary_dim = head_dim;
    } else {
      // As HF: int(head_dim * factor), a double product truncated.
      scheme.rotary_dim = static_cast<int>(static_cast<double>(head_dim) * fraction);
    }
    if (scheme.rotary_dim < 2 || scheme.rotary_dim % 2 != 0 || scheme.rotary_dim > head_dim) {
      fail("rotary_dim", scheme.rotary_dim,
           "expected an even number in [2, head_dim = " + std::to_string(head_dim) + "]");
    }
    scheme.pairing = family_.pairing;
    if (model_.model_type == "deepseek_v3" && !root_.boolean("rope_interleave").value_or(true)) {
      scheme.pairing = Pairing::RotateHalf;
    }
    scheme.pairing = options_.pairing.value_or(scheme.pairing);

    const std::optional<std::int64_t> top_original =
        root_.integer("original_max_position_embeddings");
    const detail::RopeReadContext context{root_,
                                  block,
                                  model_.max_position_embeddings,
                                  top_original,
                                  fraction,
                                  "required for rope_type \"" + scheme.rope_type + "\""};
    scheme.params = variant->read(context);
    if (block.has("mrope_section")) read_mrope(block, scheme);

    // DeepSeek-V2/V3 (modeling_deepseek_v3.py): scaling *= m^2 for a scaled rope type with
    // mscale_all_dim != 0, m = 0.1 mscale_all_dim ln(factor) + 1.
    if (family_.softmax == SoftmaxRule::DeepseekMscale && scheme.rope_type != "default") {
      const double all_dim = block.number("mscale_all_dim").value_or(0.0);
      if (all_dim != 0.0) {
        const auto* yarn = std::get_if<YarnParams>(&scheme.params);
        const double m =
            yarn_mscale(yarn ? yarn->factor : block.number("factor", context.why), all_dim);
        out.softmax_factor = m * m;
      }
    }
    // Build the spec(s) once so that an invalid value fails here, named by its block.
    try {
      scheme.spec(std::nullopt);
      if (scheme.mrope_section) scheme.mrope_spec(std::nullopt);
      if (const auto* longrope = std::get_if<LongRopeParams>(&scheme.params)) {
        const std::int64_t original = longrope->original_max_position_embeddings;
        if (original < std::numeric_limits<std::int64_t>::max()) scheme.spec(original + 1);
      }
    } catch (Error& error) {
      if (!block_name.empty()) error.add_context(block_name);
      throw;
    }
    return out;
  }

  // M-RoPE (mrope.hpp, the Qwen2-VL family): mrope_section [t, h, w] pairs summing to
  // rotary_dim / 2; interleaved when mrope_interleaved is true (Qwen3-VL, Qwen3.5), else chunked.
  static void read_mrope(const JsonReader& block, RopeScheme& scheme) {
    const auto sections = block.integers("mrope_section");
    if (!sections || sections->size() != 3) {
      fail(block.name("mrope_section"), block.json().at("mrope_section").dump(),
           "expected three integers [t, h, w]");
    }
    MropeSections out{};
    for (std::size_t a = 0; a < 3; ++a) {
      const std::int64_t value = (*sections)[a];
      if (value < 0 || value > (1 << 16)) {
        fail(block.name("mrope_section") + "[" + std::to_string(a) + "]", value,
             "expected an integer in [0, 65536]");
      }
      out[a] = static_cast<int>(value);
    }
    scheme.mrope_section = out;
    scheme.mrope_layout = block.boolean("mrope_interleaved").value_or(false)
                              ? MropeLayout::Interleaved
                              : MropeLayout::Chunked;
  }

  // Reads FoPE's settings from the block P into model.fope and validates them.
  void read_fope(const JsonReader& block, int head_dim, double theta, double fraction) {
    if (fraction != 1.0 || options_.pairing.value_or(family_.pairing) != Pairing::RotateHalf) {
      fail(block.name("rope_type"), "\"fope\"",
           "FoPE rotates whole heads in rotate-half pairs; expected no partial rotary and no "
           "interleaved pairing");
    }
    FopeConfig fope;
    fope.head_dim = head_dim;
    fope.n_heads = model_.n_heads;
    fope.n_kv_heads = model_.n_kv_heads;
    fope.theta = theta;
    if (auto n = block.integer("train_length")) {
      fope.train_length = *n;
    } else if (model_.max_position_embeddings) {
      fope.train_length = *model_.max_position_embeddings;
    } else {
      block.missing("train_length",
                    "required for rope_type \"fope\" (or max_position_embeddings)");
    }
    fope.floor_ratio = block.number("floor_ratio").value_or(1.0);
    if (!block.boolean("clip_floor_to_zero").value_or(true)) {
      fail(block.name("clip_floor_to_zero"), "false",
           "expected true (frequencies below the floor are set to 0; clamping to the floor is "
           "not supported)");
    }
    fope.drop_clipped = block.boolean("ignore_zero").value_or(true);
    if (auto d_out = block.integer("d_out")) fope.d_out = to_int(block.name("d_out"), *d_out);
    fope.sigma = block.number("sigma").value_or(fope.sigma);
    if (auto seed = block.integer("seed")) {
      if (*seed < 0) fail(block.name("seed"), *seed, "expected an integer >= 0");
      fope.seed = static_cast<std::uint64_t>(*seed);
    }
    fope.padding_sin = block.number("padding_sin").value_or(1.0);
    try {
      resolve_fope_config(fope);
    } catch (Error& error) {
      error.qualify(block.name(""));  // the FoPE settings are named as their keys
      throw;
    }
    model_.fope = fope;
  }

  std::optional<std::int64_t> positive(const char* key) const {
    const auto value = root_.integer(key);
    if (value && *value <= 0) fail(root_.name(key), *value, "expected a number of tokens > 0");
    return value;
  }

  void read_attention(LayerPositions& layer, const RopeBlock* block) const {
    LayerAttention& attention = layer.attention;
    const bool sliding = layer.layer_type == "sliding_attention";
    switch (family_.window) {
      case WindowRule::Never:
        break;
      case WindowRule::SlidingLayers:
        if (sliding) {
          const bool gated = family_.layer_types == LayerTypeRule::MaxWindowLayers ||
                             family_.layer_types == LayerTypeRule::NopeSliding;
          if (!gated || root_.boolean("use_sliding_window").value_or(false)) {
            attention.sliding_window = positive("sliding_window");
          }
        }
        break;
      case WindowRule::EveryLayer:
        attention.sliding_window = positive("sliding_window");
        break;
    }
    if (layer.layer_type == "chunked_attention") {
      attention.attention_chunk_size = positive("attention_chunk_size");
    }
    if (family_.query_temperature && layer.kind == PositionKind::None &&
        root_.truthy("attn_temperature_tuning").value_or(false)) {
      QueryTemperature temperature;
      temperature.floor_scale = root_.number("floor_scale").value_or(temperature.floor_scale);
      temperature.attn_scale = root_.number("attn_scale").value_or(temperature.attn_scale);
      require_positive_finite(root_.name("floor_scale"), temperature.floor_scale);
      if (!std::isfinite(temperature.attn_scale)) {
        fail(root_.name("attn_scale"), temperature.attn_scale, "expected a finite number");
      }
      attention.query_temperature = temperature;
    }
    if (!layer.softmax_attention() || layer.head_dim == 0) return;
    const double inverse_sqrt_head = 1.0 / std::sqrt(static_cast<double>(layer.head_dim));
    double scale = inverse_sqrt_head;
    switch (family_.softmax) {
      case SoftmaxRule::HeadDim:
        break;
      case SoftmaxRule::QueryPreAttnScalar: {
        const double scalar = root_.number("query_pre_attn_scalar").value_or(256.0);
        require_positive_finite(root_.name("query_pre_attn_scalar"), scalar);
        scale = 1.0 / std::sqrt(scalar);
        break;
      }
      case SoftmaxRule::One:
      case SoftmaxRule::Unscaled:
        scale = 1.0;
        break;
      case SoftmaxRule::AttentionMultiplier:
        scale = root_.number("attention_multiplier").value_or(1.0);
        require_positive_finite(root_.name("attention_multiplier"), scale);
        break;
      case SoftmaxRule::DeepseekMscale:
        scale = inverse_sqrt_head * (block != nullptr ? block->softmax_factor : 1.0);
        break;
      case SoftmaxRule::Gpt2:
        if (!root_.boolean("scale_attn_weights").value_or(true)) scale = 1.0;
        if (root_.boolean("scale_attn_by_inverse_layer_idx").value_or(false)) {
          scale /= static_cast<double>(layer.index + 1);
        }
        break;
    }
    attention.softmax_scale = scale;
  }

  const JsonReader& root_;
  const ConfigOptions& options_;
  ModelPositions& model_;
  const ModelFamily& family_;
  bool block_found_ = false;
  bool nested_ = false;
  std::string block_name_;
  const nlohmann::json* block_ = nullptr;
  std::map<std::string, RopeBlock> blocks_;       // by layer type
  std::map<std::string, nlohmann::json> synthetic_;  // blocks the family implies, by layer type
};

}  // namespace detail

namespace detail {

// The multimodal parts of a config: get_rope_index's family from the top-level model_type
// (qwen2_vl; qwen2_5_vl; qwen3_vl, qwen3_vl_moe, qwen3_5, qwen3_5_moe), vision_config's
// spatial_merge_size (2) and tokens_per_second (4, Qwen2_5_VLVisionConfig's default), and the
// vision tower: Pixtral when vision_config.model_type or model_type is "pixtral" (head_dim, else
// hidden_size / num_attention_heads; rope_theta, else rope_parameters.rope_theta, else 1e4), the
// Qwen tower for the Qwen families (embed_dim / num_heads, else hidden_size / num_heads).
inline void read_multimodal(const JsonReader& top, const std::string& top_type,
                            ModelPositions& model) {
  static const nlohmann::json empty = nlohmann::json::object();
  const nlohmann::json* vision_json = top.object("vision_config");
  const JsonReader vision(vision_json != nullptr ? *vision_json : empty, "vision_config.");
  std::optional<MropeFamily> family;
  if (top_type == "qwen2_vl") family = MropeFamily::Qwen2VL;
  if (top_type == "qwen2_5_vl") family = MropeFamily::Qwen25VL;
  for (const char* qwen3 : {"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"}) {
    if (top_type == qwen3) family = MropeFamily::Qwen3VL;
  }
  const std::int64_t merge = vision.integer("spatial_merge_size").value_or(2);
  if (merge < 1 || merge > 64) {
    fail(vision.name("spatial_merge_size"), merge, "expected an integer in [1, 64]");
  }
  if (family) {
    MropeIndexRules rules;
    rules.family = *family;
    rules.spatial_merge_size = static_cast<int>(merge);
    rules.tokens_per_second = vision.number("tokens_per_second").value_or(4.0);
    require_positive_finite(vision.name("tokens_per_second"), rules.tokens_per_second);
    model.mrope_index = rules;
  }
  if (vision_json == nullptr) return;
  const auto head_dim_of = [&](const char* width_key, const char* heads_key) {
    const std::string why = "required for the vision tower's head_dim";
    const std::int64_t width = vision.integer(width_key, why);
    const std::int64_t heads = vision.integer(heads_key, why);
    if (heads < 1 || width % heads != 0) {
      fail(vision.name(heads_key), heads, "expected a divisor of " + vision.name(width_key));
    }
    return to_head_dim(vision.name(std::string(width_key) + " / " + heads_key), width / heads);
  };
  try {
    if (vision.string("model_type").value_or("") == "pixtral" || top_type == "pixtral") {
      const int head_dim = vision.has("head_dim")
                               ? to_head_dim(vision.name("head_dim"), vision.integer("head_dim", ""))
                               : head_dim_of("hidden_size", "num_attention_heads");
      std::optional<double> theta = vision.number("rope_theta");
      if (const nlohmann::json* parameters = vision.object("rope_parameters"); !theta && parameters) {
        theta = JsonReader(*parameters, vision.name("rope_parameters.")).number("rope_theta");
      }
      model.vision = pixtral_vision_rope(head_dim, theta.value_or(1e4));
    } else if (family) {
      model.vision = qwen2_vl_vision_rope(
          head_dim_of(vision.has("embed_dim") ? "embed_dim" : "hidden_size", "num_heads"),
          static_cast<int>(merge));
    }
  } catch (Error& error) {
    error.add_context("vision_config");
    throw;
  }
}

}  // namespace detail

// Reads every layer's positions from a parsed config.json.
inline ModelPositions model_positions_from_json(const nlohmann::json& config,
                                                const ConfigOptions& options = {}) {
  if (!config.is_object()) {
    detail::fail("config", config.type_name(), "expected a JSON object");
  }
  const detail::JsonReader top(config, "");
  ModelPositions model;
  const std::string top_type = top.string("model_type").value_or("");
  // Multimodal wrappers: the decoder is text_config; the top-level keys are not read.
  if (const nlohmann::json* text = top.object("text_config")) {
    const detail::JsonReader root(*text, "text_config.");
    model.model_type = root.string("model_type").value_or(default_text_model_type(top_type));
    detail::ConfigReader(root, options, model).read();
  } else {
    model.model_type = top_type;
    detail::ConfigReader(top, options, model).read();
  }
  detail::read_multimodal(top, top_type, model);
  return model;
}

// Reads every layer's positions from a config.json file; errors name the file, including a
// file that cannot be opened or read (missing, a directory, no permission) or is empty.
inline ModelPositions load_model_positions(const std::string& path,
                                           const ConfigOptions& options = {}) {
  detail::InputFile file(path, "config file", "a JSON object");
  try {
    nlohmann::json config;
    try {
      errno = 0;
      config = nlohmann::json::parse(file.get());
    } catch (const nlohmann::json::exception& error) {
      // parse_error, or out_of_range for a number beyond double ("1e400"). A read error ends
      // the input early: report it, not the parse error it causes.
      if (std::ferror(file.get())) throw Error("cannot read config file: " + detail::errno_reason(errno));
      throw Error(std::string("malformed JSON: ") + error.what());
    }
    if (std::ferror(file.get())) throw Error("cannot read config file: " + detail::errno_reason(errno));
    return model_positions_from_json(config, options);
  } catch (Error& error) {
    error.add_context(path);
    throw;
  }
}

}  // namespace posemb
