// What `posemb inspect` / `posemb freqs` (tools/) and examples/long_context.cpp print about a
// model: every rotary pair with its default and scaled frequency and its band, and the layer
// pattern in one line, from the numbers (RopeScheme::spec) and bands (rope_bands) of the model
// layer. Needs nlohmann-json (through model/config.hpp).
#pragma once

#include "posemb/model/config.hpp"
#include "posemb/model/rope_variants.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace posemb::report {

inline const char* to_string(PairBand band) {
  switch (band) {
    case PairBand::Kept:
      return "kept";
    case PairBand::Interpolated:
      return "interpolated";
    case PairBand::Ramp:
      return "ramp";
    case PairBand::Ntk:
      return "ntk";
    case PairBand::Rescaled:
      return "rescaled";
    case PairBand::Zero:
      return "zero";
  }
  return "unknown";
}

// One rotary pair: its default inverse frequency base^(-2i/d), the one the scheme uses (radians
// per token), and its band: "kept", "interpolated" (divided by the factor), "ramp" (in between,
// YaRN / Llama 3), "ntk" (dynamic NTK's grown base), "rescaled" (LongRoPE's per-pair factor),
// "zero" (proportional RoPE's pairs that never rotate) or "clipped" (FoPE: below the floor
// 2 pi / N, set to 0).
struct PairFrequency {
  double default_inv_freq = 0.0;
  double inv_freq = 0.0;
  std::string band;
};

struct PairFrequencies {
  std::vector<PairFrequency> pairs;  // [rotary_dim / 2]
  double attention_scale = 1.0;
  int rotary_dim = 0;
  Pairing pairing = Pairing::RotateHalf;
  double theta = 10000.0;
  std::optional<std::int64_t> original_context;  // the context the bands refer to, if known
};

// FoPE's pairs: the default frequencies, the clipped ones (below 2 pi / N) set to 0.
inline PairFrequencies fope_pair_frequencies(const FopeConfig& config) {
  const auto [fope, clip] = resolve_fope_config(config);
  PairFrequencies out;
  out.rotary_dim = fope.head_dim;
  out.theta = fope.theta;
  out.original_context = fope.train_length;
  for (int k = 0; k < clip.pairs(); ++k) {
    const bool clipped = clip.clipped[k];
    out.pairs.push_back({clip.base_inv_freq[k], clipped ? 0.0 : clip.base_inv_freq[k],
                         clipped ? "clipped" : "kept"});
  }
  return out;
}

// The pairs of one RoPE scheme at seq_len (dynamic NTK and LongRoPE depend on it; nullopt: no
// length known). max_position_embeddings is the context of variants that name none.
inline PairFrequencies rope_pair_frequencies(
    const RopeScheme& scheme, std::optional<std::int64_t> seq_len,
    std::optional<std::int64_t> max_position_embeddings = std::nullopt) {
  const RopeSpec spec = scheme.spec(seq_len);
  const RopeBands bands = rope_bands(scheme, spec);
  const Eigen::VectorXd base = default_inv_freq(spec.rotary_dim, scheme.theta);
  PairFrequencies out;
  out.attention_scale = spec.attention_scale;
  out.rotary_dim = spec.rotary_dim;
  out.pairing = spec.pairing;
  out.theta = scheme.theta;
  out.original_context = bands.original_context ? bands.original_context : max_position_embeddings;
  for (int i = 0; i < spec.pairs(); ++i) {
    out.pairs.push_back(
        {base[i], spec.inv_freq[i], to_string(bands.pairs[static_cast<std::size_t>(i)])});
  }
  return out;
}

// The pairs of a model with one rotary scheme (RoPE or FoPE); throws for other models.
inline PairFrequencies pair_frequencies(const ModelPositions& model,
                                        std::optional<std::int64_t> seq_len = std::nullopt) {
  const PositionKind kind = model.kind();
  if (kind == PositionKind::Fope && model.fope) return fope_pair_frequencies(*model.fope);
  if (kind != PositionKind::Rope) {
    throw Error(std::string("the model's positions are ") + posemb::to_string(kind) +
                ", not rotary: there are no RoPE frequencies");
  }
  return rope_pair_frequencies(model.rope_scheme(), seq_len, model.max_position_embeddings);
}

// A number as short as it reads: 10000 as 1e4, 150000 as 1.5e5, 0.25 as 0.25.
inline std::string short_number(double value) {
  char text[40];
  if (value >= 1e4 && std::isfinite(value)) {
    const int exponent = static_cast<int>(std::floor(std::log10(value)));
    const double scale = std::pow(10.0, exponent);
    std::snprintf(text, sizeof text, "%.4g", value / scale);
    if (std::strtod(text, nullptr) * scale == value) {
      std::snprintf(text + std::strlen(text), sizeof text - std::strlen(text), "e%d", exponent);
      return text;
    }
  }
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// The factor a scaled variant applies ("" for default RoPE).
inline std::string variant_summary(const RopeScheme& scheme) {
  const std::optional<double> factor = detail::rope_variant(scheme.rope_type).factor(scheme.params);
  std::string text = scheme.rope_type;
  if (factor) text += " " + short_number(*factor);
  if (const auto* p = std::get_if<ProportionalParams>(&scheme.params)) {
    text += ", p " + short_number(p->partial_rotary_factor);
  }
  if (const auto* p = std::get_if<DynamicNtkParams>(&scheme.params); p && p->alpha) {
    text += ", alpha " + short_number(*p->alpha);
  }
  return text;
}

// One layer in a few words: "sliding (1e4, window 512)", "global (1e6, linear 8)".
inline std::string describe_layer(const LayerPositions& layer, int common_head_dim) {
  std::string type = !layer.stack.empty()                      ? layer.stack
                     : layer.layer_type == "sliding_attention" ? "sliding"
                     : layer.layer_type == "chunked_attention" ? "chunked"
                     : layer.layer_type == "linear_attention"  ? "linear attention"
                     : layer.layer_type == "indexed_attention" ? "indexed"
                                                               : "global";
  std::vector<std::string> parts;
  if (layer.rope) {
    std::string rope = short_number(layer.rope->theta);
    if (layer.rope->rope_type != "default") rope += ", " + variant_summary(*layer.rope);
    if (layer.rope->rotary_dim < layer.head_dim &&
        !detail::rope_variant(layer.rope->rope_type).rotates_whole_head) {
      rope += ", rotary " + std::to_string(layer.rope->rotary_dim);
    }
    parts.push_back(rope);
  } else if (layer.relative_bias) {
    parts.push_back(std::string(layer.relative_bias->bidirectional ? "bidirectional" : "causal") +
                    " relative bias, " + std::to_string(layer.relative_bias->num_buckets) +
                    " buckets, " +
                    (layer.relative_bias_table_layer == layer.index
                         ? std::string("own table")
                         : "table of layer " + std::to_string(layer.relative_bias_table_layer)));
  } else {
    parts.push_back(layer.kind == PositionKind::None ? "no positions"
                                                     : posemb::to_string(layer.kind));
  }
  if (layer.head_dim != common_head_dim)
    parts.push_back("head_dim " + std::to_string(layer.head_dim));
  if (const auto& indexer = layer.indexer) {  // "indexer rotate_half 0-63 of 128"
    parts.push_back("indexer " + std::string(posemb::to_string(indexer->rope.pairing)) + " " +
                    std::to_string(indexer->rotary_offset) + "-" +
                    std::to_string(indexer->rotary_offset + indexer->rope.rotary_dim - 1) + " of " +
                    std::to_string(indexer->head_dim));
  }
  const LayerAttention& attention = layer.attention;
  if (attention.sliding_window)
    parts.push_back("window " + std::to_string(*attention.sliding_window));
  if (attention.attention_chunk_size) {
    parts.push_back("chunk " + std::to_string(*attention.attention_chunk_size));
  }
  if (attention.query_temperature) parts.push_back("query temperature");
  std::string text = type + " (";
  for (std::size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
  return text + ")";
}

// The layer pattern in one line, the shortest repeating period first:
//   "layers 0-4 sliding (1e4, window 512), 5 global (1e6, linear 8), repeating every 6 of 26"
inline std::string layer_pattern(const ModelPositions& model) {
  const std::size_t n = model.layers.size();
  if (n == 0) return "no layers";
  std::vector<std::string> words;
  for (const LayerPositions& layer : model.layers) {
    words.push_back(describe_layer(layer, model.layers.front().head_dim));
  }
  std::size_t period = 1;
  while (period < n) {
    bool repeats = true;
    for (std::size_t i = period; i < n && repeats; ++i) repeats = words[i] == words[i % period];
    if (repeats) break;
    ++period;
  }
  if (n == 1) return "layer 0 " + words[0];
  if (period == 1) return "layers 0-" + std::to_string(n - 1) + " " + words[0];
  std::string text = "layers ";
  for (std::size_t begin = 0; begin < period;) {
    std::size_t end = begin + 1;
    while (end < period && words[end] == words[begin]) ++end;
    text += (begin ? ", " : "") + std::to_string(begin) +
            (end - begin > 1 ? "-" + std::to_string(end - 1) : "") + " " + words[begin];
    begin = end;
  }
  if (period < n) {
    text += ", repeating every " + std::to_string(period) + " of " + std::to_string(n);
  }
  return text;
}

}  // namespace posemb::report
