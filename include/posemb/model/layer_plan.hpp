// One flat record per layer of what it does with positions, the same for a config.json
// (HuggingFace semantics) and a GGUF (llama.cpp's run-time semantics), and its JSON object:
//   {"layer", "positions", "rope_type", "head_dim", "rotary_dim", "rotary_offset", "inv_freq",
//    "attention_scale",
//    "pairing", "softmax_scale", "sliding_window", "attention_chunk_size", "query_temperature",
//    "mrope_section", "mrope_layout"}
// (tests/data/models/README.md and tests/data/gguf/README.md §1 define the fields). GGUF layers
// add "rope_mode", ggml's rotation of the GGUF's own tensors ("norm", "neox", "mrope", "imrope");
// a layer owning a lightning indexer adds "indexer": {"head_dim", "rotary_dim", "rotary_offset",
// "pairing"} (its q / k width, where its rotated slice sits and how it pairs).
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "posemb/model/config.hpp"
#include "posemb/model/gguf.hpp"

namespace posemb {

struct LayerPlan {
  int layer = 0;
  std::string positions = "rope";        // to_string(PositionKind)
  std::optional<std::string> rope_type;  // null on layers without RoPE
  int head_dim = 0;
  int rotary_dim = 0;            // 0 without RoPE
  int rotary_offset = 0;         // the first rotated feature of the head (MLA: qk_nope_head_dim)
  std::vector<double> inv_freq;  // [rotary_dim / 2]
  double attention_scale = 1.0;
  std::optional<std::string> pairing;   // "rotate_half" / "interleaved"; null without RoPE
  std::optional<double> softmax_scale;  // null on layers without softmax attention
  std::optional<std::int64_t> sliding_window;
  std::optional<std::int64_t> attention_chunk_size;
  std::optional<QueryTemperature> query_temperature;
  std::optional<MropeSections> mrope_section;
  std::optional<std::string> mrope_layout;
  std::optional<std::string> rope_mode;  // GGUF only
  std::optional<IndexerRope> indexer;    // a layer that owns a lightning indexer
};

namespace detail {

// The fields every source fills the same way: kind, head size, attention side, M-RoPE.
inline LayerPlan layer_plan_common(const LayerPositions& layer) {
  LayerPlan plan;
  plan.layer = layer.index;
  plan.positions = to_string(layer.kind);
  plan.head_dim = layer.head_dim;
  if (layer.softmax_attention()) plan.softmax_scale = layer.attention.softmax_scale;
  plan.sliding_window = layer.attention.sliding_window;
  plan.attention_chunk_size = layer.attention.attention_chunk_size;
  plan.query_temperature = layer.attention.query_temperature;
  plan.indexer = layer.indexer;
  if (layer.rope && layer.rope->mrope_section) {
    plan.mrope_section = layer.rope->mrope_section;
    plan.mrope_layout = to_string(layer.rope->mrope_layout);
  }
  return plan;
}

}  // namespace detail

// A config's layers with HuggingFace semantics at seq_len (RoPE layers: their spec at seq_len;
// other kinds carry no frequencies here).
inline std::vector<LayerPlan> config_layer_plans(const ModelPositions& model,
                                                 std::optional<std::int64_t> seq_len) {
  std::vector<LayerPlan> plans;
  for (const LayerPositions& layer : model.layers) {
    LayerPlan plan = detail::layer_plan_common(layer);
    if (layer.kind == PositionKind::Rope && layer.rope) {
      const RopeSpec spec = layer.rope_spec(seq_len);
      plan.rope_type = layer.rope->rope_type;
      plan.rotary_dim = spec.rotary_dim;
      plan.rotary_offset = spec.rotary_offset;
      plan.inv_freq.assign(spec.inv_freq.data(), spec.inv_freq.data() + spec.inv_freq.size());
      plan.attention_scale = spec.attention_scale;
      plan.pairing = to_string(spec.pairing);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

// A GGUF's layers with llama.cpp's semantics (read_gguf_positions).
inline std::vector<LayerPlan> gguf_layer_plans(const GgufPositions& gguf) {
  std::vector<LayerPlan> plans;
  for (std::size_t il = 0; il < gguf.model.layers.size(); ++il) {
    const LayerPositions& layer = gguf.model.layers[il];
    LayerPlan plan = detail::layer_plan_common(layer);
    if (const std::optional<GgufLayerRope>& rope = gguf.ropes[il]) {
      plan.rope_type = rope->rope_type;
      plan.rotary_dim = layer.rope->rotary_dim;
      plan.rotary_offset = layer.rotary_offset;
      plan.inv_freq.assign(rope->inv_freq.data(), rope->inv_freq.data() + rope->inv_freq.size());
      plan.attention_scale = rope->attention_scale;
      plan.pairing = to_string(layer.rope->pairing);
      plan.rope_mode = to_string(gguf.hparams.rope_mode);
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

// JSON text of single values, as the objects print them ("%.17g" for numbers).
namespace plan_json {

inline std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}
inline std::string string(const std::string& text) { return "\"" + text + "\""; }
template <class T, class Format>
std::string or_null(const std::optional<T>& value, Format format) {
  return value ? format(*value) : "null";
}
inline std::string numbers(const std::vector<double>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + number(values[i]);
  return out + "]";
}
inline std::string integer(std::int64_t value) { return std::to_string(value); }
inline std::string temperature(const QueryTemperature& t) {
  return "{\"floor_scale\": " + number(t.floor_scale) +
         ", \"attn_scale\": " + number(t.attn_scale) + "}";
}
inline std::string indexer(const IndexerRope& i) {
  return "{\"head_dim\": " + std::to_string(i.head_dim) +
         ", \"rotary_dim\": " + std::to_string(i.rope.rotary_dim) +
         ", \"rotary_offset\": " + std::to_string(i.rotary_offset) +
         ", \"pairing\": " + string(to_string(i.rope.pairing)) + "}";
}
inline std::string sections(const MropeSections& m) {
  return "[" + std::to_string(m[0]) + ", " + std::to_string(m[1]) + ", " + std::to_string(m[2]) +
         "]";
}

}  // namespace plan_json

// The layer's JSON object, one line.
inline std::string layer_plan_json(const LayerPlan& p) {
  using namespace plan_json;
  std::string json = "{\"layer\": " + std::to_string(p.layer) +
                     ", \"positions\": " + string(p.positions) +
                     ", \"rope_type\": " + or_null(p.rope_type, string) +
                     ", \"head_dim\": " + std::to_string(p.head_dim) +
                     ", \"rotary_dim\": " + std::to_string(p.rotary_dim) +
                     ", \"rotary_offset\": " + std::to_string(p.rotary_offset) +
                     ", \"inv_freq\": " + numbers(p.inv_freq) +
                     ", \"attention_scale\": " + number(p.attention_scale) +
                     ", \"pairing\": " + or_null(p.pairing, string);
  json += ", \"softmax_scale\": " + or_null(p.softmax_scale, number) +
          ", \"sliding_window\": " + or_null(p.sliding_window, integer) +
          ", \"attention_chunk_size\": " + or_null(p.attention_chunk_size, integer) +
          ", \"query_temperature\": " + or_null(p.query_temperature, temperature) +
          ", \"mrope_section\": " + or_null(p.mrope_section, sections) +
          ", \"mrope_layout\": " + or_null(p.mrope_layout, string);
  if (p.rope_mode) json += ", \"rope_mode\": " + string(*p.rope_mode);
  if (p.indexer) json += ", \"indexer\": " + indexer(*p.indexer);
  return json + "}";
}

// True when two layers are alike apart from their index (`freqs` without --layer).
inline bool same_plan(LayerPlan a, LayerPlan b) {
  a.layer = b.layer = 0;
  return layer_plan_json(a) == layer_plan_json(b);
}

}  // namespace posemb
