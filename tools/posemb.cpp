// posemb: inspect and apply a model's positional scheme, with .npy files in and out.
//
//   posemb inspect CONFIG.json [--seq-len N]
//   posemb freqs CONFIG.json [--layer I] [--seq-len N]
//   posemb layers CONFIG.json [--seq-len N] [--json]
//   posemb apply CONFIG.json --input X.npy --output Y.npy [--positions P.npy | --offset K]
//                [--role query|key] [--layout bshd|bhsd] [--output-layout bshd|bhsd] [--inverse]
//                [--pairing interleaved|rotate_half]
//                [--layer I] [--seq-len N] [--fope-sin-coef S.npy --fope-cos-coef C.npy]
//                [--verbose]
//   posemb apply CONFIG.json --vision --grid TxHxW --input X.npy --output Y.npy [--inverse]
//   posemb mrope-index CONFIG.json --segments SPEC --output P.npy
//   posemb alibi --heads H --q-len N --k-len M [--causal | --symmetric] [--q-offset K]
//                [--max-bias B] [--head-begin A --head-end Z] --output B.npy
//   posemb buckets --num-buckets B --max-distance D (--bidirectional | --causal)
//                  --q-len N --k-len M [--q-offset K] --output IDS.npy
//   posemb bias CONFIG.json --table T.npy --q-len N --k-len M [--q-offset K] [--decoder]
//               --output BIAS.npy
//   posemb sinusoidal --dim D --max-len L [--layout interleaved|concat] [--base B] --output T.npy
//   posemb --version [--verbose]
//
// Exit status: 0 on success, 2 for a usage error, 1 for anything else, with one line
// "posemb: error: ..." on stderr naming the file, key or argument at fault. The tables the tool
// builds hold at most 2^28 values (max_output_elements). Outputs are written
// to a temporary file and renamed, so nothing is written to --output on failure.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "npy_files.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/model/config.hpp"
#include "posemb/error.hpp"
#include "posemb/isa.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/mrope_positions.hpp"
#include "posemb/io/npy.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/streaming_stores.hpp"
#include "posemb/absolute/sinusoidal.hpp"
#include "posemb/version.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/xpos.hpp"
#include "model_report.hpp"

namespace {

using namespace posemb;
using posemb::tool::UsageError;

// The largest table the tool builds (alibi, sinusoidal): 2^28 values, 1 GiB of float32.
constexpr std::int64_t max_output_elements = std::int64_t(1) << 28;

// printf("%.17g"): every double printed with full precision.
std::string full_precision(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string fixed(double value, int decimals) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// layers / freqs: one JSON object per layer (tests/data/models/README.md):
//   {"layer", "positions", "rope_type", "head_dim", "rotary_dim", "inv_freq", "attention_scale",
//    "pairing", "softmax_scale", "sliding_window", "attention_chunk_size", "query_temperature",
//    "mrope_section", "mrope_layout"}
// FoPE layers report rope_type "fope" and their frequencies with the clipped ones as 0.

// --layer must name a layer of the model.
void check_layer(const ModelPositions& model, std::optional<std::int64_t> layer,
                 const std::string& config_path) {
  if (layer && (*layer < 0 || *layer >= static_cast<std::int64_t>(model.layers.size()))) {
    throw UsageError("--layer = " + std::to_string(*layer) + ": expected a layer in [0, " +
                     std::to_string(model.layers.size()) + ") for " + config_path);
  }
}

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
  std::string json = "{\"layer\": " + std::to_string(layer.index) +
                     ", \"positions\": " + json_string(to_string(layer.kind)) +
                     ", \"rope_type\": " + rope_type +
                     ", \"head_dim\": " + std::to_string(layer.head_dim) +
                     ", \"rotary_dim\": " + std::to_string(rotary ? rotary->rotary_dim : 0) +
                     ", \"inv_freq\": [" + inv_freq + "]" +
                     ", \"attention_scale\": " + full_precision(rotary ? rotary->attention_scale : 1.0) +
                     ", \"pairing\": " + (rotary ? json_string(to_string(rotary->pairing)) : "null");
  json += ", \"softmax_scale\": " +
          (layer.softmax_attention() ? json_or_null(attention.softmax_scale, full_precision) : "null");
  json += ", \"sliding_window\": " + json_or_null(attention.sliding_window, integer);
  json += ", \"attention_chunk_size\": " + json_or_null(attention.attention_chunk_size, integer);
  json += ", \"query_temperature\": " +
          json_or_null(attention.query_temperature, [](const QueryTemperature& t) {
            return "{\"floor_scale\": " + full_precision(t.floor_scale) +
                   ", \"attn_scale\": " + full_precision(t.attn_scale) + "}";
          });
  if (layer.rope && layer.rope->mrope_section) {
    const MropeSections& m = *layer.rope->mrope_section;
    json += ", \"mrope_section\": [" + std::to_string(m[0]) + ", " + std::to_string(m[1]) + ", " +
            std::to_string(m[2]) + "], \"mrope_layout\": " +
            json_string(to_string(layer.rope->mrope_layout));
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

int run_layers(const std::string& config_path, std::optional<std::int64_t> seq_len, bool as_json) {
  const ModelPositions model = load_model_positions(config_path);
  std::string out;
  try {
    if (as_json) {
      out = "[";
      for (const LayerPositions& layer : model.layers) {
        out += (layer.index ? ",\n " : "") + layer_json(model, layer, seq_len);
      }
      out += "]\n";
    } else {
      char line[256];
      std::snprintf(line, sizeof line, "%5s  %-18s  %-10s  %-12s  %8s  %10s  %-11s  %-24s  %8s  %8s  %s\n",
                    "layer", "type", "positions", "rope_type", "head_dim", "rotary_dim", "pairing",
                    "softmax_scale", "window", "chunk", "query temperature");
      out = line;
      for (const LayerPositions& layer : model.layers) {
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
        const std::string temperature =
            a.query_temperature ? "floor " + full_precision(a.query_temperature->floor_scale) +
                                      ", scale " + full_precision(a.query_temperature->attn_scale)
                                : "-";
        std::snprintf(line, sizeof line, "%5d  %-18s  %-10s  %-12s  %8d  %10d  %-11s  %-24s  %8s  %8s  %s\n",
                      layer.index, layer.layer_type.c_str(), to_string(layer.kind),
                      layer.rope ? layer.rope->rope_type.c_str() : "-", layer.head_dim,
                      rotary_dim, pairing,
                      layer.softmax_attention() && a.softmax_scale
                          ? full_precision(*a.softmax_scale).c_str() : "-",
                      count(a.sliding_window).c_str(), count(a.attention_chunk_size).c_str(),
                      temperature.c_str());
        out += line;
      }
    }
  } catch (Error& error) {
    error.add_context(config_path);
    throw;
  }
  std::cout << out;
  return 0;
}

int run_freqs(const std::string& config_path, std::optional<std::int64_t> layer_index,
              std::optional<std::int64_t> seq_len) {
  const ModelPositions model = load_model_positions(config_path);
  check_layer(model, layer_index, config_path);
  if (!layer_index && !model.layers_alike()) {
    throw UsageError(config_path + ": the layers differ (" + report::layer_pattern(model) +
                     "); choose one with --layer");
  }
  std::string json;
  try {
    json = layer_json(model, model.layer(layer_index.value_or(0)), seq_len);
  } catch (Error& error) {
    error.add_context(config_path);
    throw;
  }
  std::cout << json << "\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// inspect: a human-readable table of the scheme.

// Columns: the default and the scheme's inverse frequency; the wavelength 2 pi / inv_freq in
// tokens the scheme rotates with; the full turns floor(L0 * default_inv_freq / 2 pi) the pair
// made within the original (pre-training) context L0, which decides its band; the band.
void print_pair_table(const report::PairFrequencies& f) {
  if (f.original_context) {
    std::printf("original context L0: %lld\n", static_cast<long long>(*f.original_context));
  }
  std::printf("%5s  %-24s  %-24s  %14s  %11s  %s\n", "pair", "default inv_freq", "inv_freq",
              "wavelength", "turns in L0", "band");
  for (std::size_t i = 0; i < f.pairs.size(); ++i) {
    const report::PairFrequency& pair = f.pairs[i];
    const std::string wavelength =
        pair.inv_freq > 0.0 ? fixed(posemb::two_pi / pair.inv_freq, 2) : "inf";
    const std::string turns =
        f.original_context
            ? std::to_string(static_cast<long long>(
                  std::floor(static_cast<double>(*f.original_context) * pair.default_inv_freq /
                             posemb::two_pi)))
            : "-";
    std::printf("%5zu  %-24s  %-24s  %14s  %11s  %s\n", i,
                full_precision(pair.default_inv_freq).c_str(), full_precision(pair.inv_freq).c_str(),
                wavelength.c_str(), turns.c_str(), pair.band.c_str());
  }
}

void print_fope(const FopeConfig& config) {
  const auto [fope, clip] = resolve_fope_config(config);
  std::printf("positions: fope (Fourier position embedding)\n");
  std::printf("heads: %d (key-value heads %d)\nhead_dim: %d\nrotary_dim: %d\n", fope.n_heads,
              fope.n_kv_heads, fope.head_dim, fope.head_dim);
  std::printf("pairing: rotate_half\nrope_theta: %s\n", full_precision(fope.theta).c_str());
  std::printf("train_length: %lld\nclip floor: %s rad/token (2 pi / N * %s)\n",
              static_cast<long long>(fope.train_length), full_precision(clip.floor).c_str(),
              full_precision(fope.floor_ratio).c_str());
  std::printf("D_in: %d retained frequencies (%d clipped, %s)\nD_out: %d mixed slots, %d "
              "padding slots (C = 1, S = %s)\n",
              clip.d_in(), clip.clipped_count(), fope.drop_clipped ? "dropped" : "kept as 0",
              fope.d_out, fope.head_dim / 2 - fope.d_out, full_precision(fope.padding_sin).c_str());
  std::printf("attention factor: 1\n");
  print_pair_table(report::fope_pair_frequencies(config));
}

// One RoPE scheme: its numbers and its pair table.
void print_rope(const ModelPositions& model, const LayerPositions& layer,
                std::optional<std::int64_t> seq_len) {
  const RopeScheme& scheme = *layer.rope;
  const report::PairFrequencies f =
      report::rope_pair_frequencies(scheme, seq_len, model.max_position_embeddings);
  // Partial rotary is judged against the width RoPE runs over (DeepSeek's qk_rope_head_dim
  // slice, fully rotated, is narrower than its 192-wide heads).
  std::printf("rope_type: %s\nhead_dim: %d\nrotary_dim: %d%s\npairing: %s\nrope_theta: %s\n",
              scheme.rope_type.c_str(), layer.head_dim, f.rotary_dim,
              f.rotary_dim < scheme.head_dim ? " (partial rotary)" : "", to_string(f.pairing),
              full_precision(f.theta).c_str());
  if (model.xpos) {
    std::printf("xpos: gamma %s, scale_base %s\n", full_precision(model.xpos->gamma).c_str(),
                full_precision(model.xpos->scale_base).c_str());
  }
  std::printf("seq_len: %s\nattention factor: %s\n",
              seq_len ? std::to_string(*seq_len).c_str() : "(not given)",
              full_precision(f.attention_scale).c_str());
  print_pair_table(f);
}

int run_inspect(const std::string& config_path, std::optional<std::int64_t> seq_len) {
  const ModelPositions model = load_model_positions(config_path);
  std::printf("config: %s\n", config_path.c_str());
  try {
    const PositionKind kind = model.kind();
    if (kind == PositionKind::Fope && model.fope) {
      print_fope(*model.fope);
      return 0;
    }
    std::printf("model_type: %s\npositions: %s\nheads: %d (key-value heads %d)\n",
                model.model_type.empty() ? "(none)" : model.model_type.c_str(), to_string(kind),
                model.n_heads, model.n_kv_heads);
    if (model.max_position_embeddings) {
      std::printf("max_position_embeddings: %lld\n",
                  static_cast<long long>(*model.max_position_embeddings));
    }
    std::printf("%s\n", report::layer_pattern(model).c_str());
    if (kind == PositionKind::Alibi) {
      const Eigen::VectorXd slopes = alibi_slopes(model.n_heads);
      std::printf("%5s  %s\n", "head", "ALiBi slope");
      for (Eigen::Index h = 0; h < slopes.size(); ++h) {
        std::printf("%5lld  %s\n", static_cast<long long>(h), full_precision(slopes[h]).c_str());
      }
      return 0;
    }
    // Each distinct RoPE scheme once, under the first layer that uses it.
    std::vector<const LayerPositions*> shown;
    for (const LayerPositions& layer : model.layers) {
      if (!layer.rope) continue;
      bool seen = false;
      for (const LayerPositions* other : shown) {
        seen = seen || (*other->rope == *layer.rope && other->head_dim == layer.head_dim);
      }
      if (seen) continue;
      if (!shown.empty() || !model.layers_alike()) {
        std::printf("\nlayer %d (%s):\n", layer.index, layer.layer_type.c_str());
      }
      print_rope(model, layer, seq_len);
      shown.push_back(&layer);
    }
  } catch (Error& error) {
    error.add_context(config_path);
    throw;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// apply

struct ApplyOptions {
  std::string config, input, output, positions;
  std::optional<std::int64_t> offset, seq_len;
  std::string role = "query", layout = "bshd";
  std::optional<std::string> output_layout;  // default: --layout
  bool inverse = false;
  std::optional<std::string> pairing;
  std::string fope_sin_coef, fope_cos_coef;
  std::optional<std::int64_t> layer;
  bool vision = false;  // the vision tower's 2-D RoPE on X [patches, heads, head_dim]
  std::string grid;     // --grid TxHxW
  bool verbose = false;  // print how X, the positions and the scheme were read
};

// The [batch, seq] grid of X's tokens: 4-D X read by --layout (bshd [batch, seq, heads,
// head_dim], bhsd [batch, heads, seq, head_dim]), or 3-D token embeddings [batch, seq, d].
struct TokenGrid {
  std::int64_t batch = 0, seq = 0;
  std::string layout;            // 4-D X: "bshd" or "bhsd"; "" for 3-D X
  std::int64_t heads = -1;       // 4-D X: the heads axis, the seq axis under the other --layout
  std::string x_shape;           // X's shape, "[1, 32, 8, 64]"

  static TokenGrid of(const std::vector<std::int64_t>& shape, const std::string& layout) {
    TokenGrid grid;
    grid.batch = shape[0];
    grid.x_shape = tool::shape_string(shape);
    if (shape.size() != 4) {
      grid.seq = shape[1];
      return grid;
    }
    const bool bshd = layout == "bshd";
    grid.layout = layout;
    grid.seq = bshd ? shape[1] : shape[2];
    grid.heads = bshd ? shape[2] : shape[1];
    return grid;
  }

  // "; 8 is X's seq under --layout bshd ..." when `count` positions fit only the other layout's
  // seq axis (a layout mistake the shapes reveal), else "".
  std::string layout_hint(std::int64_t count) const {
    if (layout.empty() || count == seq || count != heads) return "";
    const bool bshd = layout == "bshd";
    return "; " + std::to_string(count) + " is X's seq under --layout " + (bshd ? "bhsd" : "bshd") +
           ": if X " + x_shape + " is " +
           (bshd ? "[batch, heads, seq, head_dim], pass --layout bhsd"
                 : "[batch, seq, heads, head_dim], pass --layout bshd (the default)");
  }
  // "[1, 32, 8, 64] read as --layout bshd [batch, seq, heads, head_dim]"
  std::string reading() const {
    if (layout.empty()) return x_shape + " read as [batch, seq, d]";
    return x_shape + " read as --layout " + layout +
           (layout == "bshd" ? " [batch, seq, heads, head_dim]" : " [batch, heads, seq, head_dim]");
  }
  std::string described() const { return "X " + reading(); }
};


// The token positions of X: from --positions (int64 or float64, [seq] or [batch, seq]) or
// offset + s. Holds [batch, seq] or [1, seq] integers, or fractions when P is float64.
struct TokenPositions {
  PositionMatrix integers;
  FractionalPositionMatrix fractions;
  bool fractional = false;

  Positions view() const { return fractional ? Positions(fractions) : Positions(integers); }
  // The largest position, or -1 for no token.
  double max() const {
    if (fractional) return fractions.size() == 0 ? -1.0 : fractions.maxCoeff();
    return integers.size() == 0 ? -1.0 : static_cast<double>(integers.maxCoeff());
  }
  // The integer positions of an absolute table; fractions are refused.
  const PositionMatrix& whole(const std::string& file) const {
    if (fractional) throw Error(file + ": float64 positions: expected int64 positions for a table");
    return integers;
  }
};

TokenPositions token_positions(const ApplyOptions& options, const TokenGrid& grid) {
  const std::int64_t batch = grid.batch, seq = grid.seq;
  TokenPositions positions;
  if (options.positions.empty()) {
    positions.integers.resize(1, seq);
    const std::int64_t offset = options.offset.value_or(0);
    for (std::int64_t s = 0; s < seq; ++s) {
      if (s > 0 && offset > std::numeric_limits<std::int64_t>::max() - s) {
        throw UsageError("--offset = " + std::to_string(offset) + ": expected offset + seq to fit in int64");
      }
      positions.integers(0, s) = offset + s;
    }
    return positions;
  }
  const std::string expected = "int64 or float64 [seq] or [batch, seq] = [" + std::to_string(seq) +
                               "] or [" + std::to_string(batch) + ", " + std::to_string(seq) + "]";
  const NpyArray array = tool::read_npy_checked(options.positions, {"<i8", "<f8"}, {1, 2}, expected);
  const std::int64_t rows = array.shape.size() == 2 ? array.shape[0] : 1;
  const std::int64_t cols = array.shape.back();
  if (cols != seq || (rows != 1 && rows != batch)) {
    throw Error(options.positions + ": shape = " + tool::shape_string(array.shape) + ": expected " +
                expected + (cols != seq ? " for " + grid.described() + grid.layout_hint(cols) : ""));
  }
  if (array.dtype == "<f8") {
    const std::vector<double> values = array.values<double>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        throw Error(options.positions + ": position[" + std::to_string(i) +
                    "] = " + full_precision(values[i]) + ": expected a finite position");
      }
    }
    positions.fractional = true;
    positions.fractions.resize(rows, cols);
    std::copy(values.begin(), values.end(), positions.fractions.data());
  } else {
    const std::vector<std::int64_t> values = array.values<std::int64_t>();
    positions.integers.resize(rows, cols);
    std::copy(values.begin(), values.end(), positions.integers.data());
  }
  return positions;
}

// M-RoPE positions (tests/data/multimodal/README.md): --positions int64 [3, seq] or
// [3, batch, seq] (rows t, h, w); 1-D positions ([seq], [batch, seq] whose first dimension is not
// 3, or --offset) put every axis at the same position (text).
struct MropeTokenPositions {
  TokenPositions text;
  PositionMatrix thw;           // [3, seq]
  MropePositionTensor per_row;  // [3, batch, seq]
  enum class Form { Text, Shared, PerRow } form = Form::Text;

  MropePositions view() const {
    if (form == Form::Shared) return thw;
    if (form == Form::PerRow) return per_row;
    return MropePositions::text(text.view());
  }
  double max() const {
    if (form == Form::Text) return text.max();
    const std::int64_t* data = form == Form::Shared ? thw.data() : per_row.data();
    const Eigen::Index size = form == Form::Shared ? thw.size() : per_row.size();
    return size == 0 ? -1.0 : static_cast<double>(*std::max_element(data, data + size));
  }
};

MropeTokenPositions mrope_token_positions(const ApplyOptions& options, const TokenGrid& grid) {
  const std::int64_t batch = grid.batch, seq = grid.seq;
  MropeTokenPositions out;
  const std::string expected = "int64 [3, seq] = [3, " + std::to_string(seq) +
                               "] or [3, batch, seq] = [3, " + std::to_string(batch) + ", " +
                               std::to_string(seq) + "], or 1-D positions [seq] or [batch, seq]";
  if (!options.positions.empty()) {
    const NpyArray array = tool::read_npy_checked(options.positions, {"<i8", "<f8"}, {1, 2, 3}, expected);
    const bool three_axes =
        array.shape.size() == 3 || (array.shape.size() == 2 && array.shape[0] == 3);
    if (three_axes) {
      const bool shared = array.shape.size() == 2;
      if (array.dtype != "<i8" || (!shared && array.shape[0] != 3) || array.shape.back() != seq ||
          (!shared && array.shape[1] != batch && array.shape[1] != 1)) {
        const std::int64_t cols = array.shape.back();
        throw Error(options.positions + ": " + array.dtype + " shape = " +
                    tool::shape_string(array.shape) + ": expected " + expected +
                    (cols != seq ? " for " + grid.described() + grid.layout_hint(cols) : ""));
      }
      const std::vector<std::int64_t> values = array.values<std::int64_t>();
      if (shared) {
        out.form = MropeTokenPositions::Form::Shared;
        out.thw.resize(3, seq);
        std::copy(values.begin(), values.end(), out.thw.data());
      } else {
        out.form = MropeTokenPositions::Form::PerRow;
        out.per_row.resize(3, array.shape[1], seq);
        std::copy(values.begin(), values.end(), out.per_row.data());
      }
      return out;
    }
  }
  out.text = token_positions(options, grid);
  return out;
}

// --grid TxHxW -> {T, H, W}.
std::array<std::int64_t, 3> parse_grid(const std::string& text) {
  std::array<std::int64_t, 3> grid{};
  std::size_t begin = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t end = i < 2 ? text.find('x', begin) : text.size();
    const std::string part = end == std::string::npos ? "" : text.substr(begin, end - begin);
    if (part.empty() || part.size() > 7 || part.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(part) < 1) {
      throw UsageError("--grid = " + text + ": expected TxHxW, three positive integers (e.g. 1x4x6)");
    }
    grid[i] = std::stoll(part);
    begin = end + 1;
  }
  return grid;
}

// apply --vision: the tower's 2-D RoPE (vision_rope.hpp) on X [patches, heads, head_dim], the
// patches of a T x H x W grid in the tower's order.
template <class T>
void apply_vision(const ModelPositions& model, const ApplyOptions& options,
                  const std::vector<std::int64_t>& shape, const std::vector<T>& x, std::vector<T>& y) {
  if (!model.vision) {
    throw Error(options.config + ": no vision tower with 2-D RoPE; expected a vision_config of a "
                "Qwen2-VL family model or of Pixtral");
  }
  const VisionRope& rope = *model.vision;
  const std::array<std::int64_t, 3> grid = parse_grid(options.grid);
  const PositionMatrix patches = vision_patch_positions(rope, grid[0], grid[1], grid[2]);
  if (shape.size() != 3 || shape[0] != patches.cols() || shape[2] != rope.head_dim()) {
    throw Error(options.input + ": shape = " + tool::shape_string(shape) +
                ": expected [patches, heads, head_dim] = [" + std::to_string(patches.cols()) +
                ", heads, " + std::to_string(rope.head_dim()) + "] for --grid " + options.grid);
  }
  y = x;
  TensorMap4<T> map(y.data(), 1, shape[0], shape[1], shape[2]);
  apply_vision_rope_inplace(map, patches, rope, TensorLayout::BSHD, {},
                            options.inverse ? Rotation::Inverse : Rotation::Forward);
}

bool has_fope_coefficients(const ApplyOptions& options) { return !options.fope_sin_coef.empty(); }

// --verbose: how X and its positions are read (stdout).
void print_input(const ApplyOptions& options, const TokenGrid& grid,
                 const std::vector<std::int64_t>& shape, const char* dtype) {
  std::printf("X: %s %s %s", options.input.c_str(), dtype, grid.reading().c_str());
  if (grid.layout.empty()) {
    std::printf(": batch %lld, seq %lld, d %lld\n", static_cast<long long>(shape[0]),
                static_cast<long long>(shape[1]), static_cast<long long>(shape[2]));
  } else {
    std::printf(": batch %lld, seq %lld, heads %lld, head_dim %lld\n",
                static_cast<long long>(grid.batch), static_cast<long long>(grid.seq),
                static_cast<long long>(grid.heads), static_cast<long long>(shape[3]));
  }
  if (options.positions.empty()) {
    const long long offset = options.offset.value_or(0);
    std::printf("positions: --offset %lld: token s at %lld + s\n", offset, offset);
  } else {
    std::printf("positions: %s, one per token along X's seq axis (%lld tokens)\n",
                options.positions.c_str(), static_cast<long long>(grid.seq));
  }
}

// Throws unless X's heads are as wide as the heads of the config's spec (a wider X is not
// rotated in part, a narrower one not cut).
void check_x_head_dim(const ApplyOptions& options, const std::vector<std::int64_t>& shape,
                      const RopeSpec& spec) {
  if (shape[3] == spec.head_dim) return;
  throw Error(options.input + ": head_dim = " + std::to_string(shape[3]) + ": expected " +
              std::to_string(spec.head_dim) + ", the head_dim of " + options.config +
              " (rotary_dim " + std::to_string(spec.rotary_dim) + ")");
}

// --verbose: the rotation applied (stdout).
void print_rope_scheme(const char* kind, const RopeScheme& scheme, const RopeSpec& spec,
                       std::int64_t seq_len) {
  std::printf("scheme: %s, rope_type %s, head_dim %d, rotary_dim %d%s, pairing %s, seq_len %lld, "
              "attention_scale %s\n",
              kind, scheme.rope_type.c_str(), spec.head_dim, spec.rotary_dim,
              spec.partial() ? " (partial rotary: the other features pass through)" : "",
              to_string(spec.pairing), static_cast<long long>(seq_len),
              full_precision(spec.attention_scale).c_str());
}

// The dimensions of a 4-D activation of `shape` (in the input's layout) in the output's layout.
std::vector<std::int64_t> output_shape(const std::vector<std::int64_t>& shape, bool transpose) {
  if (!transpose) return shape;
  return {shape[0], shape[2], shape[1], shape[3]};
}

// Applies the scheme to x (values of type T, shape `shape`) into y (the output's layout; y is
// resized).
template <class T>
void apply_scheme(const ModelPositions& model, const ApplyOptions& options,
                  const std::vector<std::int64_t>& shape, const std::vector<T>& x,
                  std::vector<T>& y) {
  const bool bshd = options.layout == "bshd";
  const TensorLayout layout = bshd ? TensorLayout::BSHD : TensorLayout::BHSD;
  const TensorLayout out_layout =
      options.output_layout.value_or(options.layout) == "bshd" ? TensorLayout::BSHD : TensorLayout::BHSD;
  const Layouts layouts(layout, out_layout);
  const Rotation rotation = options.inverse ? Rotation::Inverse : Rotation::Forward;
  const auto x_error = [&](const std::string& expected) {
    throw Error(options.input + ": shape = " + tool::shape_string(shape) + ": expected " + expected);
  };
  if (options.vision) {
    apply_vision(model, options, shape, x, y);
    return;
  }
  const PositionKind kind = options.layer ? model.layer(*options.layer).kind : model.kind();
  const bool fope = kind == PositionKind::Fope;
  const bool additive = !fope && kind != PositionKind::Rope;
  if (!additive && shape.size() != 4) {
    x_error(std::string("4 dimensions ") +
            (bshd ? "[batch, seq, heads, head_dim] (--layout bshd)"
                  : "[batch, heads, seq, head_dim] (--layout bhsd)"));
  }
  if (additive && (options.inverse || out_layout != layout)) {
    throw UsageError(std::string(options.inverse ? "--inverse" : "--output-layout") +
                     ": the config's positions (" + to_string(kind) +
                     ") are not a rotation; only rotary schemes take it");
  }
  const TokenGrid grid = TokenGrid::of(shape, options.layout);
  if (options.verbose) print_input(options, grid, shape, sizeof(T) == 4 ? "float32" : "float64");
  y.assign(x.size(), T(0));
  const auto in_map = [&] {
    return Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>>(x.data(), shape[0], shape[1],
                                                                       shape[2], shape[3]);
  };
  const auto out_map = [&] {
    const std::vector<std::int64_t> dims = output_shape(shape, out_layout != layout);
    return TensorMap4<T>(y.data(), dims[0], dims[1], dims[2], dims[3]);
  };
  if (has_fope_coefficients(options) && !fope) {
    throw UsageError("--fope-sin-coef: the config " + options.config +
                     " is not a FoPE config (rope_type \"fope\")");
  }

  if (fope) {
    if (options.pairing && *options.pairing != "rotate_half") {
      throw UsageError("--pairing = " + *options.pairing + ": FoPE rotates with rotate_half pairing only");
    }
    const TokenPositions positions = token_positions(options, grid);
    if (options.verbose) std::printf("scheme: fope, head_dim %d\n", model.fope->head_dim);
    auto out = out_map();
    if (has_fope_coefficients(options)) {
      const std::string what = "float32 [n_kv_heads, D_in, D_out]";
      const NpyArray sin_array = tool::read_npy_checked(options.fope_sin_coef, {"<f4"}, {3}, what);
      const NpyArray cos_array = tool::read_npy_checked(options.fope_cos_coef, {"<f4"}, {3}, what);
      const std::vector<float> sin_coef = sin_array.values<float>();
      const std::vector<float> cos_coef = cos_array.values<float>();
      Fope fope = [&] {
        try {
          return fope_with_coefficients(*model.fope, sin_coef.data(), sin_array.shape,
                                        cos_coef.data(), cos_array.shape);
        } catch (Error& error) {
          error.add_context(options.fope_sin_coef + ", " + options.fope_cos_coef);
          throw;
        }
      }();
      apply_fope(in_map(), out, positions.view(), fope, layouts, {}, rotation);
    } else {
      apply_fope(in_map(), out, positions.view(), make_fope(*model.fope), layouts, {}, rotation);
    }
    return;
  }

  switch (kind) {
    case PositionKind::Rope: {
      const RopeScheme& scheme = options.layer ? *model.layer(*options.layer).rope : model.rope_scheme();
      if (scheme.mrope_section) {
        // M-RoPE: three position axes, or 1-D positions on all three (text).
        const MropeTokenPositions positions =
            mrope_token_positions(options, grid);
        const double max_position = std::ceil(positions.max());
        const std::int64_t seq_len = options.seq_len.value_or(
            max_position >= 9.2e18 ? std::numeric_limits<std::int64_t>::max()
                                   : static_cast<std::int64_t>(std::max(max_position, -1.0)) + 1);
        MropeSpec spec = scheme.mrope_spec(seq_len);
        if (options.pairing) {
          spec.rope.pairing = *options.pairing == "interleaved" ? Pairing::Interleaved : Pairing::RotateHalf;
        }
        if (options.verbose) print_rope_scheme("mrope", scheme, spec.rope, seq_len);
        check_x_head_dim(options, shape, spec.rope);
        auto out = out_map();
        apply_mrope(in_map(), out, positions.view(), spec, layouts, {}, rotation);
        return;
      }
      const TokenPositions positions = token_positions(options, grid);
      // As HuggingFace: the sequence length is max(position) + 1 unless --seq-len is given
      // (ceil(max) + 1 for fractional positions: the same comparisons with whole lengths).
      const double max_position = std::ceil(positions.max());
      const std::int64_t seq_len = options.seq_len.value_or(
          max_position >= 9.2e18 ? std::numeric_limits<std::int64_t>::max()
                                 : static_cast<std::int64_t>(std::max(max_position, -1.0)) + 1);
      RopeSpec spec = options.layer ? model.layer(*options.layer).rope_spec(seq_len)
                                    : model.rope_spec(seq_len);
      if (options.pairing) {
        spec.pairing = *options.pairing == "interleaved" ? Pairing::Interleaved : Pairing::RotateHalf;
      }
      if (options.verbose) print_rope_scheme(model.xpos ? "xpos" : "rope", scheme, spec, seq_len);
      check_x_head_dim(options, shape, spec);
      auto out = out_map();
      if (model.xpos) {
        const XposSpec xpos{spec, *model.xpos};
        apply_xpos(in_map(), out, positions.view(), xpos,
                   options.role == "key" ? XposRole::Key : XposRole::Query, layouts, {}, rotation);
      } else {
        apply_rope(in_map(), out, positions.view(), spec, layouts, {}, rotation);
      }
      return;
    }
    case PositionKind::Sinusoidal: {
      // Token embeddings x: [batch, seq, d] plus the sinusoidal table (Vaswani et al. 2017).
      if (shape.size() != 3) x_error("3 dimensions [batch, seq, d] (token embeddings)");
      const TokenPositions token = token_positions(options, grid);
      if (options.verbose) std::printf("scheme: sinusoidal, added to the token embeddings\n");
      const PositionMatrix& positions = token.whole(options.positions);
      if (positions.size() > 0 && positions.minCoeff() < 0) {
        throw Error("position = " + std::to_string(positions.minCoeff()) +
                    ": expected >= 0 for a sinusoidal table");
      }
      if (shape[2] % 2 != 0 || shape[2] > (1 << 20)) {
        x_error("an even embedding width d <= 2^20 for a sinusoidal table");
      }
      const std::int64_t rows = positions.size() == 0 ? 1 : positions.maxCoeff() + 1;
      if (rows > max_output_elements / std::max<std::int64_t>(shape[2], 1)) {
        throw Error("position = " + std::to_string(rows - 1) +
                    ": expected (position + 1) * d <= 2^28 for the sinusoidal table");
      }
      const EmbeddingTable<T> table = sinusoidal_table<T>(rows, static_cast<int>(shape[2]));
      y = x;
      Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor>> map(y.data(), shape[0], shape[1], shape[2]);
      add_position_embeddings_inplace(map, positions, table);
      return;
    }
    case PositionKind::Fope:  // applied above
      return;
    case PositionKind::Learned:
      throw Error(options.config + ": the model uses learned absolute positions; their table is " +
                  "in the checkpoint's weights, not in config.json");
    case PositionKind::None:
      throw Error(options.config + ": the layer has no positional encoding (NoPE); X is " +
                  "used as it is");
    case PositionKind::RelativeBias:
      throw Error(options.config + ": the model uses T5's relative position bias, a bias on " +
                  "attention scores that does not change X; build it with `posemb bias`");
    case PositionKind::Alibi:
      throw Error(options.config + ": the model uses ALiBi, a bias on attention scores that does " +
                  "not change X; build it with `posemb alibi`");
  }
}

int run_apply(const ApplyOptions& options) {
  const ModelPositions model = load_model_positions(options.config);
  check_layer(model, options.layer, options.config);
  const NpyArray x = tool::read_npy_checked(options.input, {"<f4", "<f8"}, {3, 4},
                                            "float32 or float64 [batch, seq, heads, head_dim]");
  std::vector<double> y64;
  std::vector<float> y32;
  try {
    if (x.dtype == "<f8") {
      apply_scheme(model, options, x.shape, x.values<double>(), y64);
    } else {
      apply_scheme(model, options, x.shape, x.values<float>(), y32);
    }
  } catch (Error& error) {
    // The tool's own errors start with the file at fault; the library's name a parameter, so
    // say which run they come from.
    const std::string message = error.message();
    for (const std::string& file : {options.config, options.input, options.positions,
                                    options.fope_sin_coef, options.fope_cos_coef}) {
      if (!file.empty() && message.compare(0, file.size(), file) == 0) throw;
    }
    error.add_context(options.config + " applied to " + options.input);
    throw;
  }
  const bool transpose = x.shape.size() == 4 && options.output_layout.value_or(options.layout) != options.layout;
  const std::vector<std::int64_t> y_shape = output_shape(x.shape, transpose);
  if (x.dtype == "<f8") {
    tool::write_npy_atomic(options.output, y64.data(), y_shape);
  } else {
    tool::write_npy_atomic(options.output, y32.data(), y_shape);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// mrope-index: the M-RoPE positions int64 [3, seq] of a prompt layout and the rope delta
// (mrope_positions.hpp), by the config's get_rope_index rules.

int run_mrope_index(const std::string& config_path, const std::string& segments_text,
                    const std::string& output) {
  const ModelPositions model = load_model_positions(config_path);
  if (!model.mrope_index) {
    throw Error(config_path + ": the model_type has no M-RoPE position rules; expected qwen2_vl, "
                "qwen2_5_vl, qwen3_vl, qwen3_vl_moe, qwen3_5 or qwen3_5_moe");
  }
  std::vector<MropeSegment> segments;
  try {
    segments = parse_mrope_segments(segments_text);
  } catch (const Error& error) {
    throw UsageError("--segments: " + error.message());
  }
  MropeIndex index;
  try {
    index = mrope_position_ids(segments, *model.mrope_index);
  } catch (Error& error) {
    error.add_context(config_path + " --segments " + segments_text);
    throw;
  }
  tool::write_npy_atomic(output, index.positions.data(), {3, index.seq_len()});
  std::cout << "{\"seq_len\": " << index.seq_len() << ", \"rope_delta\": " << index.rope_delta
            << "}\n";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// alibi: B[h, i, j] for query positions q_offset + i and key positions j (alibi.hpp), for all
// heads or the heads [head_begin, head_end) of one tensor-parallel rank.

struct AlibiOptions {
  int heads = 0;
  std::int64_t q_len = 0, k_len = 0;
  std::optional<std::int64_t> q_offset;
  bool symmetric = false, causal = false;
  double max_bias = 8.0;
  std::optional<int> head_begin, head_end;
  std::string output;
};

// The library names its parameters; the tool names its flags: "posemb: max_bias = 0: ..." from
// the library becomes "--max-bias = 0: ...".
[[noreturn]] void rethrow_as_flag(const Error& error, const std::string& parameter, const std::string& flag) {
  const std::string message = error.what();
  const std::string prefix = "posemb: " + parameter + " = ";
  if (message.compare(0, prefix.size(), prefix) == 0) {
    throw UsageError(flag + " = " + message.substr(prefix.size()));
  }
  throw error;
}

// The query positions of a bias or bucket matrix: offset .. offset + q_len - 1, by default the
// last q_len of the k_len key positions (decode with a cache).
std::int64_t query_offset(std::optional<std::int64_t> q_offset, std::int64_t q_len, std::int64_t k_len) {
  const std::int64_t offset = q_offset.value_or(k_len - q_len);
  if (offset > std::numeric_limits<std::int64_t>::max() - (q_len - 1)) {
    throw UsageError("--q-offset = " + std::to_string(offset) + ": expected q_offset + q_len - 1 to fit in int64");
  }
  return offset;
}

int run_alibi(const AlibiOptions& options) {
  const std::int64_t q_len = options.q_len, k_len = options.k_len;
  // Keys sit at 0 .. k_len - 1: a causal query before position 0 would see no key and get a row
  // of -inf only (softmax NaN). --q-offset is >= 0 (add_integer); the default k_len - q_len is
  // too when the queries are no more than the keys.
  if (!options.q_offset && q_len > k_len) {
    throw UsageError("--q-len = " + std::to_string(q_len) + ": expected at most --k-len = " +
                     std::to_string(k_len) + " (the queries are the last q_len keys), or a --q-offset");
  }
  const std::int64_t offset = query_offset(options.q_offset, q_len, k_len);
  const int begin = options.head_begin.value_or(0), end = options.head_end.value_or(options.heads);
  if (begin < 0 || begin >= end || end > options.heads) {
    throw UsageError("--head-begin, --head-end = " + std::to_string(begin) + ", " + std::to_string(end) +
                     ": expected 0 <= begin < end <= --heads = " + std::to_string(options.heads));
  }
  const std::int64_t heads = end - begin;
  if (q_len > max_output_elements / k_len || heads * q_len * k_len > max_output_elements) {
    throw UsageError("heads * --q-len * --k-len = " + std::to_string(heads) + " * " +
                     std::to_string(q_len) + " * " + std::to_string(k_len) +
                     ": expected at most 2^28 elements");
  }
  Eigen::VectorXd slopes;
  try {
    slopes = alibi_slopes(options.heads, options.max_bias, HeadRange{begin, end});
  } catch (const Error& error) {
    rethrow_as_flag(error, "max_bias", "--max-bias");
  }
  PositionVector q_positions(q_len), k_positions(k_len);
  for (std::int64_t i = 0; i < q_len; ++i) q_positions[i] = offset + i;
  for (std::int64_t j = 0; j < k_len; ++j) k_positions[j] = j;
  const AlibiBias<float> bias = alibi_bias<float>(
      slopes, q_positions, k_positions, options.symmetric ? AlibiForm::Symmetric : AlibiForm::Causal);
  tool::write_npy_atomic(options.output, bias.data(), {heads, q_len, k_len});
  return 0;
}

// ---------------------------------------------------------------------------------------------
// buckets: the T5 bucket ids (relative_bias.hpp) of query positions q_offset + i against key
// positions j, int64 [q_len, k_len].

struct BucketsOptions {
  int num_buckets = 0, max_distance = 0;
  bool bidirectional = false, causal = false;
  std::int64_t q_len = 0, k_len = 0;
  std::optional<std::int64_t> q_offset;
  std::string output;
};

int run_buckets(const BucketsOptions& options) {
  if (!options.bidirectional && !options.causal) {
    throw UsageError("buckets: one of --bidirectional or --causal is required");
  }
  const std::int64_t q_len = options.q_len, k_len = options.k_len;
  if (q_len > max_output_elements / k_len) {
    throw UsageError("--q-len * --k-len = " + std::to_string(q_len) + " * " + std::to_string(k_len) +
                     ": expected at most 2^28 elements");
  }
  const std::int64_t offset = query_offset(options.q_offset, q_len, k_len);
  const T5Buckets buckets{options.num_buckets, options.max_distance, options.bidirectional};
  BucketMatrix ids;
  try {
    ids = t5_bucket_matrix(buckets, q_len, k_len, offset);
  } catch (const Error& error) {
    const std::string message = error.what();
    if (message.find("posemb: num_buckets") == 0) rethrow_as_flag(error, "num_buckets", "--num-buckets");
    rethrow_as_flag(error, "max_distance", "--max-distance");
  }
  tool::write_npy_atomic(options.output, ids.data(), {q_len, k_len});
  return 0;
}

// ---------------------------------------------------------------------------------------------
// bias: the T5 relative position bias (relative_bias.hpp) of a T5-family config with the
// checkpoint's table, float32 [heads, q_len, k_len] for query positions q_offset + i and key
// positions j; the encoder's bidirectional buckets, or with --decoder the decoder's causal ones.

struct BiasOptions {
  std::string config, table, output;
  std::int64_t q_len = 0, k_len = 0;
  std::optional<std::int64_t> q_offset;
  bool decoder = false;
};

int run_bias(const BiasOptions& options) {
  const ModelPositions model = load_model_positions(options.config);
  const std::string stack = options.decoder ? "decoder" : "encoder";
  const LayerPositions* layer = nullptr;
  for (const LayerPositions& candidate : model.layers) {
    if (layer == nullptr && candidate.relative_bias &&
        candidate.relative_bias->bidirectional == !options.decoder) {
      layer = &candidate;
    }
  }
  if (layer == nullptr) {
    const bool t5 = !model.layers.empty() && model.layers[0].relative_bias;
    throw Error(options.config + (t5 ? ": the model has no " + stack + " (is_encoder_decoder is "
                                         "false); " + (options.decoder ? "drop" : "pass") + " --decoder"
                                     : std::string(": the model's positions are ") +
                                           to_string(model.layers.at(0).kind) +
                                           ", not a T5 relative position bias"));
  }
  const T5Buckets buckets = *layer->relative_bias;
  const std::int64_t heads = model.n_heads, q_len = options.q_len, k_len = options.k_len;
  if (q_len > max_output_elements / k_len || heads * q_len * k_len > max_output_elements) {
    throw UsageError("heads * --q-len * --k-len = " + std::to_string(heads) + " * " +
                     std::to_string(q_len) + " * " + std::to_string(k_len) +
                     ": expected at most 2^28 elements");
  }
  const std::int64_t offset = query_offset(options.q_offset, q_len, k_len);
  const std::string expected = "float32 [num_buckets, heads] = [" +
                               std::to_string(buckets.num_buckets) + ", " + std::to_string(heads) + "]";
  const NpyArray table = tool::read_npy_checked(options.table, {"<f4"}, {2}, expected);
  if (table.shape[0] != buckets.num_buckets || table.shape[1] != heads) {
    throw Error(options.table + ": shape = " + tool::shape_string(table.shape) + ": expected " + expected);
  }
  const std::vector<float> weights = table.values<float>();
  const T5BiasTable<float> bias_table(buckets, weights.data(), table.shape[0], table.shape[1]);
  PositionVector q_positions(q_len), k_positions(k_len);
  for (std::int64_t i = 0; i < q_len; ++i) q_positions[i] = offset + i;
  for (std::int64_t j = 0; j < k_len; ++j) k_positions[j] = j;
  const RelativeBias<float> bias = t5_bias(bias_table, q_positions, k_positions);
  tool::write_npy_atomic(options.output, bias.data(), {heads, q_len, k_len});
  return 0;
}

// ---------------------------------------------------------------------------------------------
// sinusoidal: T[p, :] for p = 0 .. max_len - 1 (sinusoidal.hpp), float32 [max_len, dim].

int run_sinusoidal(int dim, std::int64_t max_len, const std::string& layout, double base,
                   const std::string& output) {
  if (dim % 2 != 0) throw UsageError("--dim = " + std::to_string(dim) + ": expected an even number");
  if (max_len > max_output_elements / dim) {
    throw UsageError("--max-len * --dim = " + std::to_string(max_len) + " * " + std::to_string(dim) +
                     ": expected at most 2^28 elements");
  }
  const EmbeddingTable<float> table = sinusoidal_table<float>(
      max_len, dim, base, layout == "concat" ? SinusoidalLayout::Concat : SinusoidalLayout::Interleaved);
  tool::write_npy_atomic(output, table.data(), {max_len, dim});
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Numeric options. The text is checked here rather than by CLI11, so that every mistake (out of
// range, not a number, not an integer) gets one line in the tool's form
// "--seq-len = -5: expected an integer >= 1" and exit status 2.

template <class Int>
std::string integer_expectation(Int min, Int max) {
  constexpr Int lowest = std::numeric_limits<Int>::min(), highest = std::numeric_limits<Int>::max();
  if (min == lowest && max == highest) {
    return "expected an integer from " + std::to_string(lowest) + " to " + std::to_string(highest);
  }
  if (max == highest) return "expected an integer >= " + std::to_string(min);
  return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

template <class Int>
Int parse_integer(const std::string& flag, const std::string& text, Int min, Int max) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < min || value > max) {
    throw UsageError(flag + " = " + text + ": " + integer_expectation(min, max));
  }
  return value;
}

// A finite number > 0 (a frequency base, ALiBi's max bias).
double parse_positive_number(const std::string& flag, const std::string& text) {
  char* stop = nullptr;
  const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &stop);
  if (text.empty() || stop != text.c_str() + text.size() || !std::isfinite(value) || !(value > 0.0)) {
    throw UsageError(flag + " = " + text + ": expected a finite number > 0");
  }
  return value;
}

// add_integer(app, "--seq-len", target, 1, max, "...") stores the checked value in target
// (Int or std::optional<Int>); the accepted range is appended to the help text.
template <class Int, class Target>
CLI::Option* add_integer(CLI::App* app, const std::string& flag, Target& target, Int min, Int max,
                         const std::string& description) {
  const std::string range = integer_expectation(min, max).substr(std::string("expected ").size());
  CLI::Option* option = app->add_option(
      flag,
      [flag, &target, min, max](const CLI::results_t& values) {
        target = parse_integer<Int>(flag, values.back(), min, max);
        return true;
      },
      description + " (" + range + ")");
  option->type_name("INT");
  return option;
}

CLI::Option* add_positive_number(CLI::App* app, const std::string& flag, double& target,
                                 const std::string& description) {
  CLI::Option* option = app->add_option(
      flag,
      [flag, &target](const CLI::results_t& values) {
        target = parse_positive_number(flag, values.back());
        return true;
      },
      description + " (a finite number > 0; default " + full_precision(target) + ")");
  option->type_name("FLOAT");
  return option;
}

constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr int int_max = std::numeric_limits<int>::max();

// --q-len and --k-len (required) and --q-offset of a subcommand that writes [q_len, k_len]:
// queries at positions q_offset + i, keys at 0 .. k_len - 1; q_offset >= min_offset.
void add_query_key_options(CLI::App* app, std::int64_t& q_len, std::int64_t& k_len,
                           std::optional<std::int64_t>& q_offset, std::int64_t min_offset) {
  add_integer(app, "--q-len", q_len, std::int64_t{1}, int64_max, "Number of queries")->required();
  add_integer(app, "--k-len", k_len, std::int64_t{1}, int64_max,
              "Number of keys (positions 0..k_len-1)")
      ->required();
  add_integer(app, "--q-offset", q_offset, min_offset, int64_max,
              "Position of the first query (default k_len - q_len: the last q_len keys)");
}

// One line: CLI11 messages may span several.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int error_exit(const std::string& message, int status) {
  std::cerr << "posemb: error: " << one_line(message) << std::endl;
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inspect and apply a model's positional scheme (HuggingFace config.json), with .npy "
               "files in and out.",
               "posemb"};
  app.require_subcommand(1);
  app.fallthrough(false);
  // --version --verbose adds the kernels' instruction-set level and the streaming-store setting
  // with the cache it was derived from (posemb/cache_topology.hpp).
  const bool verbose_version =
      std::any_of(argv + 1, argv + argc, [](const char* arg) { return std::string(arg) == "--verbose"; });
  app.set_version_flag(
      "--version",
      std::function<std::string()>([verbose_version] {
        std::string text = std::string("posemb ") + posemb::version_string;
        if (!verbose_version) return text;
        return text + "\nkernels: level " + posemb::to_string(posemb::isa_level()) +
               " (best on this CPU: " + posemb::to_string(posemb::best_isa_level()) + ")\n" +
               posemb::describe_streaming_stores();
      }),
      "Print the posemb version and exit (with --verbose: the kernels' instruction-set level, "
      "the streaming-store threshold and the last-level cache it comes from)");
  app.footer("Size cap: the tables the tool builds (alibi, buckets, bias, sinusoidal, and the "
             "table apply adds for a sinusoidal model) hold at most 2^28 values (1 GiB of float32); "
             "a larger request is refused. Exit status: 0 on success, 2 for a usage error, "
             "1 for anything else, with one line \"posemb: error: ...\" on stderr.");

  // inspect / freqs / layers
  std::string config_path;
  std::optional<std::int64_t> seq_len, layer_index;
  bool layers_json = false;
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "Print the layer pattern and a table of the config's rotary pairs: default and scaled "
      "inverse frequency, wavelength in tokens, full turns within the original context, band "
      "(kept / ramp / interpolated, or clipped for FoPE), and the attention factor, pairing and "
      "rotary_dim.");
  CLI::App* freqs = app.add_subcommand(
      "freqs",
      "Print one layer as a JSON object (\"layer\", \"positions\", \"rope_type\", "
      "\"head_dim\", \"rotary_dim\", \"inv_freq\", \"attention_scale\", \"pairing\", "
      "\"softmax_scale\", \"sliding_window\", \"attention_chunk_size\", "
      "\"query_temperature\", ...) with 17 significant digits (FoPE: clipped frequencies are "
      "0). Without --layer the layers must all be alike.");
  CLI::App* layers = app.add_subcommand(
      "layers", "Print every layer: a table, or with --json an array of freqs' objects.");
  for (CLI::App* sub : {inspect, freqs, layers}) {
    sub->add_option("CONFIG", config_path, "The model's config.json")->required();
    add_integer(sub, "--seq-len", seq_len, std::int64_t{1}, int64_max,
                "Sequence length for dynamic NTK and LongRoPE (default: none known)");
  }
  add_integer(freqs, "--layer", layer_index, std::int64_t{0}, int64_max,
              "The layer (0-based; required when layers differ)");
  layers->add_flag("--json", layers_json, "A JSON array, one object per layer");

  // apply
  ApplyOptions apply_options;
  CLI::App* apply = app.add_subcommand(
      "apply",
      "Apply the config's positional scheme to X: rotary (RoPE and its scaled variants, xPos, "
      "FoPE) for X of shape [batch, seq, heads, head_dim]; sinusoidal models add their table to "
      "token embeddings [batch, seq, d]. Y has X's shape and dtype.");
  apply->add_option("CONFIG", apply_options.config, "The model's config.json")->required();
  apply->add_option("--input", apply_options.input, "X.npy: float32 or float64")->required();
  apply->add_option("--output", apply_options.output, "Y.npy: same shape and dtype as X")->required();
  CLI::Option* positions_option = apply->add_option(
      "--positions", apply_options.positions,
      "P.npy: int64 or float64 (fractional) [seq] or [batch, seq] (default 0..seq-1 + offset)");
  CLI::Option* offset_option =
      add_integer(apply, "--offset", apply_options.offset, int64_min, int64_max,
                  "Position of the first token (default 0)");
  positions_option->excludes(offset_option);
  apply->add_option("--role", apply_options.role, "query or key (matters for xPos)")
      ->check(CLI::IsMember({"query", "key"}))
      ->capture_default_str();
  apply->add_option("--layout", apply_options.layout,
                    "bshd: [batch, seq, heads, head_dim]; bhsd: [batch, heads, seq, head_dim]")
      ->check(CLI::IsMember({"bshd", "bhsd"}))
      ->capture_default_str();
  apply->add_option("--output-layout", apply_options.output_layout,
                    "Y's layout, bshd or bhsd (default: --layout): rotate and transpose in one pass")
      ->check(CLI::IsMember({"bshd", "bhsd"}));
  apply->add_flag("--inverse", apply_options.inverse,
                  "Apply the inverse rotation R(p)^T = R(-p) (undo a rotary scheme, with its scale)");
  apply->add_option("--pairing", apply_options.pairing,
                    "Override the config's pairing: interleaved (GPT-J) or rotate_half (GPT-NeoX)")
      ->check(CLI::IsMember({"interleaved", "rotate_half"}));
  add_integer(apply, "--layer", apply_options.layer, std::int64_t{0}, int64_max,
              "The layer whose scheme to apply (required when RoPE layers differ)");
  add_integer(apply, "--seq-len", apply_options.seq_len, std::int64_t{1}, int64_max,
              "Sequence length for dynamic NTK and LongRoPE (default: max position + 1)");
  CLI::Option* sin_coef_option = apply->add_option(
      "--fope-sin-coef", apply_options.fope_sin_coef,
      "S.npy: FoPE sine coefficients, float32 [heads, D_in, D_out] (default: initialised from "
      "the config's sigma and seed)");
  CLI::Option* cos_coef_option = apply->add_option(
      "--fope-cos-coef", apply_options.fope_cos_coef, "C.npy: FoPE cosine coefficients, float32 [heads, D_in, D_out]");
  sin_coef_option->needs(cos_coef_option);
  cos_coef_option->needs(sin_coef_option);
  CLI::Option* vision_flag = apply->add_flag(
      "--vision", apply_options.vision,
      "Apply the config's vision tower 2-D RoPE to X [patches, heads, head_dim] (needs --grid)");
  CLI::Option* grid_option = apply->add_option(
      "--grid", apply_options.grid, "TxHxW: the patch grid before the merge (HF's grid_thw)");
  vision_flag->needs(grid_option);
  grid_option->needs(vision_flag);
  apply->add_flag("--verbose", apply_options.verbose,
                  "Print how X is read (--layout and the shape's axes), where the positions come "
                  "from and the scheme applied");

  // mrope-index
  std::string segments_text, mrope_output;
  CLI::App* mrope_index = app.add_subcommand(
      "mrope-index",
      "Write the M-RoPE positions int64 [3, seq] of a prompt layout and print {\"seq_len\", "
      "\"rope_delta\"}, by the config's get_rope_index rules (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).");
  mrope_index->add_option("CONFIG", config_path, "The model's config.json")->required();
  mrope_index->add_option("--segments", segments_text,
                          "text:N,image:TxHxW,video:TxHxW[@S] (grids before the merge; S seconds "
                          "per temporal grid)")
      ->required();
  mrope_index->add_option("--output", mrope_output, "P.npy: int64 [3, seq]")->required();

  // alibi
  AlibiOptions alibi_options;
  CLI::App* alibi = app.add_subcommand(
      "alibi", "Write the ALiBi bias B: float32 [heads, q_len, k_len]; masked entries are -inf.");
  add_integer(alibi, "--heads", alibi_options.heads, 1, 1 << 20, "Number of heads")->required();
  add_query_key_options(alibi, alibi_options.q_len, alibi_options.k_len, alibi_options.q_offset,
                        std::int64_t{0});
  CLI::Option* causal_flag = alibi->add_flag(
      "--causal", alibi_options.causal, "-slope * (q - k), -inf where k > q (the default)");
  CLI::Option* symmetric_flag =
      alibi->add_flag("--symmetric", alibi_options.symmetric, "-slope * |q - k|, nothing masked (encoders)");
  causal_flag->excludes(symmetric_flag);
  add_positive_number(alibi, "--max-bias", alibi_options.max_bias,
                      "B in the slopes 2^(-B h / n) (MPT's alibi_bias_max)");
  CLI::Option* head_begin = add_integer(alibi, "--head-begin", alibi_options.head_begin, 0, 1 << 20,
                                        "First head of a contiguous slice (a tensor-parallel rank)");
  CLI::Option* head_end = add_integer(alibi, "--head-end", alibi_options.head_end, 1, 1 << 20,
                                      "One past the last head of the slice");
  head_begin->needs(head_end);
  head_end->needs(head_begin);
  alibi->add_option("--output", alibi_options.output, "B.npy: float32 [head_end - head_begin, q_len, k_len]")
      ->required();

  // buckets
  BucketsOptions buckets_options;
  CLI::App* buckets = app.add_subcommand(
      "buckets",
      "Write T5's relative position bucket ids: int64 [q_len, k_len], the bucket of key position "
      "j - query position (q_offset + i), as HuggingFace's _relative_position_bucket in float32.");
  add_integer(buckets, "--num-buckets", buckets_options.num_buckets, 2, int_max,
              "relative_attention_num_buckets")
      ->required();
  add_integer(buckets, "--max-distance", buckets_options.max_distance, 1, int_max,
              "relative_attention_max_distance")
      ->required();
  CLI::Option* bidirectional_flag = buckets->add_flag(
      "--bidirectional", buckets_options.bidirectional, "Encoder buckets: half for keys after the query");
  CLI::Option* buckets_causal_flag =
      buckets->add_flag("--causal", buckets_options.causal, "Decoder buckets: keys before the query only");
  bidirectional_flag->excludes(buckets_causal_flag);
  add_query_key_options(buckets, buckets_options.q_len, buckets_options.k_len,
                        buckets_options.q_offset, int64_min);
  buckets->add_option("--output", buckets_options.output, "IDS.npy: int64 [q_len, k_len]")->required();

  // bias
  BiasOptions bias_options;
  CLI::App* bias = app.add_subcommand(
      "bias",
      "Write the T5 relative position bias of a T5-family config (t5, mt5, umt5) with the "
      "checkpoint's relative_attention_bias table: float32 [heads, q_len, k_len], no mask.");
  bias->add_option("CONFIG", bias_options.config, "The model's config.json")->required();
  bias->add_option("--table", bias_options.table,
                   "T.npy: float32 [num_buckets, heads], block 0's relative_attention_bias.weight")
      ->required();
  add_query_key_options(bias, bias_options.q_len, bias_options.k_len, bias_options.q_offset,
                        int64_min);
  bias->add_flag("--decoder", bias_options.decoder,
                 "The decoder's causal buckets (default: the encoder's bidirectional ones)");
  bias->add_option("--output", bias_options.output, "BIAS.npy")->required();

  // sinusoidal
  int dim = 0;
  std::int64_t max_len = 0;
  std::string sinusoidal_layout = "interleaved", sinusoidal_output;
  double base = 10000.0;
  CLI::App* sinusoidal = app.add_subcommand(
      "sinusoidal",
      "Write the sinusoidal table T: float32 [max_len, dim] (Vaswani et al. 2017), sin(p w_i) and "
      "cos(p w_i) with w_i = base^(-2i/dim).");
  add_integer(sinusoidal, "--dim", dim, 2, 1 << 30, "Embedding width (even)")->required();
  add_integer(sinusoidal, "--max-len", max_len, std::int64_t{1}, int64_max, "Number of positions")
      ->required();
  sinusoidal->add_option("--layout", sinusoidal_layout,
                         "interleaved: sin at 2i, cos at 2i+1; concat: sin at i, cos at dim/2+i")
      ->check(CLI::IsMember({"interleaved", "concat"}))
      ->capture_default_str();
  add_positive_number(sinusoidal, "--base", base, "Frequency base");
  sinusoidal->add_option("--output", sinusoidal_output, "T.npy")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    return error_exit(error.what(), 2);
  } catch (const UsageError& error) {  // a numeric option's text (add_integer)
    return error_exit(error.what(), 2);
  }

  try {
    if (*inspect) return run_inspect(config_path, seq_len);
    if (*freqs) return run_freqs(config_path, layer_index, seq_len);
    if (*layers) return run_layers(config_path, seq_len, layers_json);
    if (*apply) return run_apply(apply_options);
    if (*mrope_index) return run_mrope_index(config_path, segments_text, mrope_output);
    if (*alibi) return run_alibi(alibi_options);
    if (*buckets) return run_buckets(buckets_options);
    if (*bias) return run_bias(bias_options);
    if (*sinusoidal) return run_sinusoidal(dim, max_len, sinusoidal_layout, base, sinusoidal_output);
  } catch (const UsageError& error) {
    return error_exit(error.what(), 2);
  } catch (const std::bad_alloc&) {
    return error_exit("out of memory", 1);
  } catch (const Error& error) {
    return error_exit(error.message(), 1);
  } catch (const std::exception& error) {
    return error_exit(error.what(), 1);
  }
  return error_exit("no subcommand", 2);
}
