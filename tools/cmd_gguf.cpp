// freqs, layers and inspect of a GGUF model file (gguf_commands.hpp). Every value is what
// llama.cpp computes at run time for the file (posemb/model/gguf.hpp), not what the config it
// was converted from says; `posemb diff` compares the two.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "gguf_commands.hpp"
#include "posemb/model/gguf.hpp"
#include "posemb/model/layer_plan.hpp"

namespace posemb::tool {

bool is_gguf_path(const std::string& path) {
  std::string suffix = path.size() >= 5 ? path.substr(path.size() - 5) : "";
  std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (suffix == ".gguf") return true;
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

namespace {

// The plan of every layer, with the file named in front of any error of the plan's own.
struct GgufLayers {
  GgufPositions plan;
  std::vector<LayerPlan> layers;

  GgufLayers(const std::string& path, std::optional<std::int64_t> seq_len)
      : plan(read_gguf_positions(path, seq_len)), layers(gguf_layer_plans(plan)) {}
};

std::string optional_count(const std::optional<std::int64_t>& value) {
  return value ? std::to_string(*value) : "-";
}

// What a layer does in a few words: "rope llama3", "rope default, window 512", "none, chunk 8192".
std::string layer_summary(const LayerPlan& p) {
  std::string text = p.positions + (p.rope_type ? " " + *p.rope_type : "");
  if (p.sliding_window) text += ", window " + std::to_string(*p.sliding_window);
  if (p.attention_chunk_size) text += ", chunk " + std::to_string(*p.attention_chunk_size);
  if (p.query_temperature) text += ", query temperature";
  return text;
}

// Runs of consecutive alike layers: "layers 0-4: rope default, window 512; layer 5: rope default".
std::string layer_pattern(const std::vector<LayerPlan>& layers) {
  std::string out;
  for (std::size_t begin = 0, end = 0; begin < layers.size(); begin = end) {
    const std::string summary = layer_summary(layers[begin]);
    while (end < layers.size() && layer_summary(layers[end]) == summary) ++end;
    out += std::string(out.empty() ? "" : "; ") + (end - begin > 1 ? "layers " : "layer ") +
           std::to_string(begin) + (end - begin > 1 ? "-" + std::to_string(end - 1) : "") + ": " +
           summary;
  }
  return out;
}

// One row of the `layers` table.
std::string layer_row(const LayerPlan& p) {
  const std::string temperature =
      p.query_temperature ? "floor " + full_precision(p.query_temperature->floor_scale) +
                                ", scale " + full_precision(p.query_temperature->attn_scale)
                          : "-";
  const std::string mrope = p.mrope_section
                                ? std::to_string((*p.mrope_section)[0]) + "/" +
                                      std::to_string((*p.mrope_section)[1]) + "/" +
                                      std::to_string((*p.mrope_section)[2]) + " " + *p.mrope_layout
                                : "-";
  char line[320];
  std::snprintf(line, sizeof line,
                "%5d  %-9s  %-8s  %8d  %10d  %-11s  %-22s  %-24s  %8s  %8s  %-18s  %s\n", p.layer,
                p.positions.c_str(), p.rope_type.value_or("-").c_str(), p.head_dim, p.rotary_dim,
                p.pairing.value_or("-").c_str(), full_precision(p.attention_scale).c_str(),
                p.softmax_scale ? full_precision(*p.softmax_scale).c_str() : "-",
                optional_count(p.sliding_window).c_str(),
                optional_count(p.attention_chunk_size).c_str(), mrope.c_str(), temperature.c_str());
  return line;
}

std::string layers_table(const std::vector<LayerPlan>& layers) {
  char line[320];
  std::snprintf(line, sizeof line,
                "%5s  %-9s  %-8s  %8s  %10s  %-11s  %-22s  %-24s  %8s  %8s  %-18s  %s\n", "layer",
                "positions", "rope", "head_dim", "rotary_dim", "pairing", "attention_scale",
                "softmax_scale", "window", "chunk", "mrope", "query temperature");
  std::string out = line;
  for (const LayerPlan& layer : layers) out += layer_row(layer);
  return out;
}

// The hyperparameters llama.cpp reads for positions.
void print_hparams(const std::string& path, const GgufPositions& plan,
                   const std::vector<LayerPlan>& layers) {
  const GgufHparams& h = plan.hparams;
  std::printf("gguf: %s\narch: %s\nrope mode: %s, on the GGUF's feature order%s\n", path.c_str(),
              h.arch.c_str(), to_string(h.rope_mode),
              h.permuted ? " (the converter permuted the q/k rows: HF's rotate_half)" : "");
  std::printf(
      "layers: %lld\ncontext_length: %lld\ncontext per sequence (n_ctx_seq): %lld\n"
      "original context (n_ctx_orig): %lld\n",
      static_cast<long long>(h.n_layer), static_cast<long long>(h.n_ctx_train),
      static_cast<long long>(plan.n_ctx_seq), static_cast<long long>(h.n_ctx_orig));
  std::printf("head_dim: %lld\nn_rot: %lld\nscaling type: %s\nfreq_base: %s, freq_scale: %s\n",
              static_cast<long long>(h.head_dim), static_cast<long long>(h.n_rot),
              h.scaling_type.c_str(), full_precision(h.freq_base).c_str(),
              full_precision(h.freq_scale).c_str());
  if (h.rules.compressed_attention) {
    // deepseek4: every layer slides; the compressed layers have their own base (gguf.hpp,
    // gguf_compressed_layer).
    std::printf(
        "sliding window: %lld, every layer; compressed layers (attention.compress_ratios != 0): "
        "freq_base %s, freq_scale %s; the others: freq_base %s, freq_scale 1\n",
        static_cast<long long>(h.n_swa), full_precision(h.freq_base_compress).c_str(),
        full_precision(h.freq_scale).c_str(), full_precision(h.freq_base).c_str());
  } else if (h.n_swa > 0) {
    std::printf("sliding window: %lld; SWA layers: freq_base %s, freq_scale %s\n",
                static_cast<long long>(h.n_swa), full_precision(h.freq_base_swa).c_str(),
                full_precision(h.freq_scale_swa).c_str());
  }
  std::printf("rope.scaling.attn_factor: %s\n%s\n", full_precision(h.attn_factor).c_str(),
              layer_pattern(layers).c_str());
}

// One rotation: its label, magnitude and pair table (inverse frequency, wavelength in tokens).
void print_rotation(const LayerPlan& p) {
  std::printf("rope_type: %s\nrotary_dim: %d of head_dim %d\npairing: %s\nattention_scale: %s\n",
              p.rope_type.value_or("-").c_str(), p.rotary_dim, p.head_dim,
              p.pairing.value_or("-").c_str(), full_precision(p.attention_scale).c_str());
  std::printf("%5s  %-24s  %14s\n", "pair", "inv_freq", "wavelength");
  for (std::size_t i = 0; i < p.inv_freq.size(); ++i) {
    const double inv = p.inv_freq[i];
    std::printf("%5zu  %-24s  %14s\n", i, full_precision(inv).c_str(),
                inv > 0.0 ? fixed(posemb::two_pi / inv, 2).c_str() : "inf");
  }
}

}  // namespace

int gguf_freqs(const std::string& path, std::optional<std::int64_t> layer,
               std::optional<std::int64_t> seq_len) {
  const GgufLayers gguf(path, seq_len);
  check_layer(layer, gguf.layers.size(), path);
  if (!layer) {
    for (const LayerPlan& other : gguf.layers) {
      if (same_plan(gguf.layers[0], other)) continue;
      throw UsageError(path + ": the layers differ (" + layer_pattern(gguf.layers) +
                       "); choose one with --layer");
    }
  }
  std::cout << layer_plan_json(gguf.layers[static_cast<std::size_t>(layer.value_or(0))]) << "\n";
  return 0;
}

int gguf_layers(const std::string& path, std::optional<std::int64_t> seq_len, bool as_json) {
  const GgufLayers gguf(path, seq_len);
  if (!as_json) {
    std::cout << layers_table(gguf.layers);
    return 0;
  }
  std::string out = "[";
  for (const LayerPlan& layer : gguf.layers) {
    out += (layer.layer ? ",\n " : "") + layer_plan_json(layer);
  }
  std::cout << out << "]\n";
  return 0;
}

int gguf_inspect(const std::string& path, std::optional<std::int64_t> seq_len) {
  const GgufLayers gguf(path, seq_len);
  print_hparams(path, gguf.plan, gguf.layers);
  // Each distinct rotation once, under the first layer that uses it.
  std::vector<const LayerPlan*> shown;
  for (const LayerPlan& layer : gguf.layers) {
    if (!layer.rope_type) continue;
    const bool seen = std::any_of(shown.begin(), shown.end(), [&](const LayerPlan* other) {
      return other->inv_freq == layer.inv_freq && other->attention_scale == layer.attention_scale &&
             other->rope_type == layer.rope_type;
    });
    if (seen) continue;
    std::printf("\nlayer %d:\n", layer.layer);
    print_rotation(layer);
    shown.push_back(&layer);
  }
  return 0;
}

}  // namespace posemb::tool
