// posemb freqs CONFIG.json [--layer I] [--seq-len N]: one layer as a JSON object.
// posemb layers CONFIG.json [--seq-len N] [--json]: every layer, a table or a JSON array.
//
// The JSON object of a layer (tests/data/models/README.md):
//   {"layer", "positions", "rope_type", "head_dim", "rotary_dim", "inv_freq", "attention_scale",
//    "pairing", "softmax_scale", "sliding_window", "attention_chunk_size", "query_temperature",
//    "logit_softcap", "attention_sinks", "bias_placement", "mrope_section", "mrope_layout"}
// FoPE layers report rope_type "fope" and their frequencies with the clipped ones as 0.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "arguments.hpp"
#include "command.hpp"
#include "gguf_commands.hpp"
#include "posemb/model/report.hpp"
#include "posemb/model/config.hpp"

namespace posemb::tool {
namespace {

std::string json_string(const std::string& text) { return "\"" + text + "\""; }

template <class T, class Format>
std::string json_or_null(const std::optional<T>& value, Format format) {
  return value ? format(*value) : "null";
}

std::string layer_json(const ModelPositions& model, const LayerPositions& layer,
                       std::optional<std::int64_t> seq_len) {
  std::optional<report::PairFrequencies> rotary;
  std::string rope_type = "null";
  if (layer.kind == PositionKind::Rope) {
    rotary = report::rope_pair_frequencies(*layer.rope, seq_len);
    rope_type = json_string(layer.rope->rope_type);
  } else if (layer.kind == PositionKind::Fope && model.fope) {
    rotary = report::fope_pair_frequencies(*model.fope);
    rope_type = json_string("fope");
  }
  std::string inv_freq;
  if (rotary) {
    for (std::size_t i = 0; i < rotary->pairs.size(); ++i) {
      inv_freq += (i ? ", " : "") + full_precision(rotary->pairs[i].inv_freq);
    }
  }
  const LayerAttention& attention = layer.attention;
  const auto integer = [](std::int64_t value) { return std::to_string(value); };
  std::string json =
      "{\"layer\": " + std::to_string(layer.index) +
      ", \"positions\": " + json_string(to_string(layer.kind)) + ", \"rope_type\": " + rope_type +
      ", \"head_dim\": " + std::to_string(layer.head_dim) +
      ", \"rotary_dim\": " + std::to_string(rotary ? rotary->rotary_dim : 0) +
      ", \"rotary_offset\": " + std::to_string(rotary ? layer.rotary_offset : 0) +
      ", \"inv_freq\": [" + inv_freq + "]" +
      ", \"attention_scale\": " + full_precision(rotary ? rotary->attention_scale : 1.0) +
      ", \"pairing\": " + (rotary ? json_string(to_string(rotary->pairing)) : "null");
  json +=
      ", \"softmax_scale\": " +
      (layer.softmax_attention() ? json_or_null(attention.softmax_scale, full_precision) : "null");
  json += ", \"sliding_window\": " + json_or_null(attention.sliding_window, integer);
  json += ", \"attention_chunk_size\": " + json_or_null(attention.attention_chunk_size, integer);
  json += ", \"query_temperature\": " +
          json_or_null(attention.query_temperature, [](const QueryTemperature& t) {
            return "{\"floor_scale\": " + full_precision(t.floor_scale) +
                   ", \"attn_scale\": " + full_precision(t.attn_scale) +
                   ", \"position_offset\": " + std::to_string(t.position_offset) +
                   (t.form == TemperatureForm::Power ? ", \"form\": \"power\"" : "") + "}";
          });
  json += ", \"logit_softcap\": " + json_or_null(attention.logit_softcap, full_precision);
  json += std::string(", \"attention_sinks\": ") + (attention.attention_sinks ? "true" : "false");
  json += ", \"bias_placement\": " + (layer.kind == PositionKind::Alibi
                                          ? json_string(to_string(attention.bias_placement))
                                          : std::string("null"));
  if (layer.rope && layer.rope->mrope_section) {
    const MropeSections& m = *layer.rope->mrope_section;
    json += ", \"mrope_section\": [" + std::to_string(m[0]) + ", " + std::to_string(m[1]) + ", " +
            std::to_string(m[2]) +
            "], \"mrope_layout\": " + json_string(to_string(layer.rope->mrope_layout));
  } else {
    json += ", \"mrope_section\": null, \"mrope_layout\": null";
  }
  if (layer.relative_bias) {
    json += ", \"stack\": " + (layer.stack.empty() ? "null" : json_string(layer.stack)) +
            ", \"relative_attention\": {\"num_buckets\": " +
            std::to_string(layer.relative_bias->num_buckets) +
            ", \"max_distance\": " + std::to_string(layer.relative_bias->max_distance) +
            ", \"bidirectional\": " + (layer.relative_bias->bidirectional ? "true" : "false") +
            ", \"table_layer\": " + std::to_string(layer.relative_bias_table_layer) + "}";
  }
  return json + "}";
}

std::string layers_json(const ModelPositions& model, std::optional<std::int64_t> seq_len) {
  std::string out = "[";
  for (const LayerPositions& layer : model.layers) {
    out += (layer.index ? ",\n " : "") + layer_json(model, layer, seq_len);
  }
  return out + "]\n";
}

// One row of the `layers` table.
// "floor 8192, scale 0.1" (Llama 4), "..., floor(p/F)" (Ministral 3), "power (1 + (p+1)/2048)^0.1"
// (Beam).
std::string temperature_text(const QueryTemperature& t) {
  if (t.form == TemperatureForm::Power) {
    return "power (1 + (p+" + std::to_string(t.position_offset) + ")/" +
           full_precision(t.floor_scale) + ")^" + full_precision(t.attn_scale);
  }
  return "floor " + full_precision(t.floor_scale) + ", scale " + full_precision(t.attn_scale) +
         (t.position_offset == 0 ? ", floor(p/F)" : "");
}

std::string layer_row(const LayerPositions& layer, std::optional<std::int64_t> seq_len) {
  const LayerAttention& a = layer.attention;
  int rotary_dim = 0;
  const char* pairing = "-";
  if (layer.rope) {
    const RopeSpec spec = layer.rope_spec(seq_len);
    rotary_dim = spec.rotary_dim;
    pairing = to_string(spec.pairing);
  }
  const auto count = [](const std::optional<std::int64_t>& value) {
    return value ? std::to_string(*value) : std::string("-");
  };
  std::string temperature = a.query_temperature ? temperature_text(*a.query_temperature) : "-";
  if (a.logit_softcap) temperature += "; softcap " + full_precision(*a.logit_softcap);
  if (a.attention_sinks) temperature += "; sinks";
  char line[256];
  std::snprintf(
      line, sizeof line, "%5d  %-18s  %-10s  %-12s  %8d  %10d  %-11s  %-24s  %8s  %8s  %s\n",
      layer.index, layer.layer_type.c_str(), to_string(layer.kind),
      layer.rope ? layer.rope->rope_type.c_str() : "-", layer.head_dim, rotary_dim, pairing,
      layer.softmax_attention() && a.softmax_scale ? full_precision(*a.softmax_scale).c_str() : "-",
      count(a.sliding_window).c_str(), count(a.attention_chunk_size).c_str(), temperature.c_str());
  return line;
}

std::string layers_table(const ModelPositions& model, std::optional<std::int64_t> seq_len) {
  char line[256];
  std::snprintf(line, sizeof line,
                "%5s  %-18s  %-10s  %-12s  %8s  %10s  %-11s  %-24s  %8s  %8s  %s\n", "layer",
                "type", "positions", "rope_type", "head_dim", "rotary_dim", "pairing",
                "softmax_scale", "window", "chunk", "query temperature; softcap; sinks");
  std::string out = line;
  for (const LayerPositions& layer : model.layers) out += layer_row(layer, seq_len);
  return out;
}

class FreqsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* freqs = app.add_subcommand(
        "freqs",
        "Print one layer as a JSON object (\"layer\", \"positions\", \"rope_type\", "
        "\"head_dim\", \"rotary_dim\", \"inv_freq\", \"attention_scale\", \"pairing\", "
        "\"softmax_scale\", \"sliding_window\", \"attention_chunk_size\", "
        "\"query_temperature\", \"logit_softcap\", \"attention_sinks\", \"bias_placement\", "
        "...) with 17 significant digits (FoPE: clipped frequencies are "
        "0). Without --layer the layers must all be alike. CONFIG may be a GGUF file: the "
        "values llama.cpp runs it with, --seq-len its context size per sequence.");
    add_config_argument(freqs, config_path_);
    add_seq_len_option(freqs, seq_len_, "default: none known");
    add_integer(freqs, "--layer", layer_index_, std::int64_t{0}, int64_max,
                "The layer (0-based; required when layers differ)");
    add_strict_flag(freqs, strict_);
    return freqs;
  }

  int run() override {
    if (is_gguf_path(config_path_)) return gguf_freqs(config_path_, layer_index_, seq_len_);
    const ModelPositions model = load_config(config_path_, strict_);
    check_layer(layer_index_, model.layers.size(), config_path_);
    if (!layer_index_ && !model.layers_alike()) {
      throw UsageError(config_path_ + ": the layers differ (" + report::layer_pattern(model) +
                       "); choose one with --layer");
    }
    const std::string json = with_context(config_path_, [&] {
      return layer_json(model, model.layer(layer_index_.value_or(0)), seq_len_);
    });
    std::cout << json << "\n";
    return 0;
  }

 private:
  std::string config_path_;
  std::optional<std::int64_t> seq_len_, layer_index_;
  bool strict_ = false;
};

class LayersCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* layers = app.add_subcommand(
        "layers",
        "Print every layer: a table, or with --json an array of freqs' objects. CONFIG "
        "may be a GGUF file (llama.cpp's run-time semantics).");
    add_config_argument(layers, config_path_);
    add_seq_len_option(layers, seq_len_, "default: none known");
    layers->add_flag("--json", as_json_, "A JSON array, one object per layer");
    add_strict_flag(layers, strict_);
    return layers;
  }

  int run() override {
    if (is_gguf_path(config_path_)) return gguf_layers(config_path_, seq_len_, as_json_);
    const ModelPositions model = load_config(config_path_, strict_);
    std::cout << with_context(config_path_, [&] {
      return as_json_ ? layers_json(model, seq_len_) : layers_table(model, seq_len_);
    });
    return 0;
  }

 private:
  std::string config_path_;
  std::optional<std::int64_t> seq_len_;
  bool as_json_ = false;
  bool strict_ = false;
};

}  // namespace

std::unique_ptr<Command> freqs_command() { return std::make_unique<FreqsCommand>(); }
std::unique_ptr<Command> layers_command() { return std::make_unique<LayersCommand>(); }

}  // namespace posemb::tool
