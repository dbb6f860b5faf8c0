// posemb vectors CONFIG.json --positions LIST --output DIR [--angles exact|hf-float32]
//                [--dtype float32|bfloat16|float16] [--batch B] [--heads H] [--kv-heads K]
//                [--seed S] [--layers all|I,J,...] [--scores]
//
// Test vectors for an engine's RoPE kernel: for every distinct RoPE scheme among the chosen
// layers, seeded q [B, seq, H, head_dim] and k [B, seq, K, head_dim] (BSHD) and their rotations,
// the positions, and DIR/manifest.json (tests/data/vectors/manifest.schema.json):
//   {"config", "posemb_version", "angles", "dtype", "positions": "positions.npy",
//    "schemes": [{"layers", "rope_type", "seq_len", "layout": "bshd", "pairing", "head_dim",
//                 "rotary_dim", "inv_freq", "attention_scale", "q_in", "q_out", "k_in", "k_out",
//                 "tolerance": {...}, "attention"?, "scores"?, "sinks"?}],
//    "skipped_layers": [...]}
// File names are relative to DIR; every array is float32 (bfloat16 and float16 values stored
// exactly in float32). `posemb apply CONFIG --layer L --input <q_in> --positions positions.npy
// --angles A --dtype D` reproduces <q_out> bit for bit. The tolerance is rotary/tolerance.hpp's
// bound for a correct float32-angle kernel against the exact vectors, with per-token bounds
// ("q_atol", "k_atol": [seq], the bound at each token's position for its largest input pair).
// With --scores, layers of one RoPE scheme are grouped by their attention settings too, and each
// entry adds "attention" (the settings), "scores" (probabilities [batch, heads, seq, seq] of
// q_out and k_out under them: tools/vector_scores.hpp) and, for layers with attention sinks,
// "sinks" (the seeded sink logits [heads] the scores use).
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "arguments.hpp"
#include "command.hpp"
#include "npy_files.hpp"
#include "posemb/random.hpp"
#include "posemb/model/config.hpp"
#include "posemb/model/hf_float32_scheme.hpp"
#include "posemb/version.hpp"
#include "rope_rotation.hpp"
#include "vector_scores.hpp"

namespace posemb::tool {
namespace {

struct VectorsOptions {
  std::string config, positions, output;
  std::string angles = "exact", dtype = "float32", layers = "all";
  std::int64_t batch = 1, heads = 2, kv_heads = 1, seed = 0;
  bool scores = false;
};

// "0,5,100-103" -> 0 5 100 101 102 103 (ranges inclusive); at most 2^20 positions.
std::vector<std::int64_t> parse_positions(const std::string& text) {
  std::vector<std::int64_t> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const std::size_t dash = item.find('-', 1);
    try {
      std::size_t used = 0;
      const std::int64_t first = std::stoll(item.substr(0, dash), &used);
      const std::int64_t last =
          dash == std::string::npos ? first : std::stoll(item.substr(dash + 1));
      if (used != item.substr(0, dash).size() || first < 0 || last < first ||
          last - first >= (1 << 20) - static_cast<std::int64_t>(out.size())) {
        throw std::invalid_argument(item);
      }
      for (std::int64_t p = first; p <= last; ++p) out.push_back(p);
    } catch (const std::exception&) {
      throw UsageError("--positions = " + text +
                       ": expected a comma-separated list of positions "
                       ">= 0 and ranges A-B (A <= B), at most 2^20 in all");
    }
    begin = end + 1;
  }
  return out;
}

// The layers to cover: every layer, or the listed ones.
std::vector<std::size_t> chosen_layers(const std::string& text, std::size_t count,
                                       const std::string& config) {
  std::vector<std::size_t> out;
  if (text == "all") {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (const std::int64_t layer : parse_positions(text)) {
    check_layer(layer, count, config);
    out.push_back(static_cast<std::size_t>(layer));
  }
  return out;
}

// Seeded values of `count` standard normal draws, rounded to dtype (held in float32).
std::vector<float> seeded_values(std::int64_t count, std::uint64_t seed, const std::string& dtype) {
  SeededNormal normal(seed);
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& v : values) {
    const float x = static_cast<float>(normal());
    v = dtype == "bfloat16"  ? static_cast<float>(Eigen::bfloat16(x))
        : dtype == "float16" ? static_cast<float>(Eigen::half(x))
                             : x;
  }
  return values;
}

// The bound at each token's position for its largest input pair: [seq].
std::vector<float> token_bounds(const RotationTolerance& tolerance, const std::vector<float>& x,
                                const std::vector<std::int64_t>& dims, int rotary_dim,
                                Pairing pairing, const std::vector<std::int64_t>& positions) {
  const std::int64_t seq = dims[1], heads = dims[2], head_dim = dims[3], half = rotary_dim / 2;
  std::vector<float> bounds(static_cast<std::size_t>(seq));
  for (std::int64_t s = 0; s < seq; ++s) {
    double norm = 0.0;
    for (std::int64_t b = 0; b < dims[0]; ++b) {
      for (std::int64_t h = 0; h < heads; ++h) {
        const float* v = x.data() + ((b * seq + s) * heads + h) * head_dim;
        for (std::int64_t i = 0; i < half; ++i) {
          const bool inter = pairing == Pairing::Interleaved;
          norm = std::max(norm, std::hypot(double{v[inter ? 2 * i : i]},
                                           double{v[inter ? 2 * i + 1 : i + half]}));
        }
      }
    }
    // Rounded up so that the float32 bound is never below the double one.
    const double bound =
        tolerance.bound(static_cast<double>(positions[static_cast<std::size_t>(s)]), norm);
    bounds[static_cast<std::size_t>(s)] = std::nextafter(static_cast<float>(bound), INFINITY);
  }
  return bounds;
}

nlohmann::json tolerance_json(const RotationTolerance& t) {
  return {{"formula",
           "abs(out - q_out) <= pair_norm * attention_scale * (storage_coefficient * "
           "storage_unit + float32_coefficient * float32_unit + float32_unit * "
           "position * max_inv_freq * angle_coefficient)"},
          {"storage_unit", t.storage_unit},
          {"float32_unit", float32_unit_roundoff},
          {"storage_coefficient", RotationTolerance::storage_coefficient},
          {"float32_coefficient", RotationTolerance::float32_coefficient},
          {"angle_coefficient", t.angle_coefficient},
          {"max_inv_freq", t.max_inv_freq},
          {"attention_scale", t.attention_scale}};
}

// The attention probabilities of `layer`'s settings over q_out, k_out ([q dims], [k dims]):
// scheme<index>_scores.npy (and _sinks.npy), entered in `entry`.
void write_scores(const VectorsOptions& o, const LayerPositions& layer, std::size_t index,
                  const std::vector<float>& q_out, const std::vector<float>& k_out,
                  const std::vector<std::int64_t>& q_dims,
                  const std::vector<std::int64_t>& positions, nlohmann::json& entry) {
  const std::string prefix = "scheme" + std::to_string(index) + "_";
  const std::int64_t seq = q_dims[1];
  std::vector<float> sinks;
  if (layer.attention.attention_sinks) {
    sinks =
        seeded_sink_logits(o.heads, static_cast<std::uint64_t>(o.seed) * 1000003u + 7919u + index);
    write_npy_atomic(o.output + "/" + prefix + "sinks.npy", sinks.data(), {o.heads});
    entry["sinks"] = prefix + "sinks.npy";
  }
  const std::vector<float> p =
      attention_probabilities(q_out, k_out, q_dims, o.kv_heads, positions, layer.attention, sinks);
  write_npy_atomic(o.output + "/" + prefix + "scores.npy", p.data(), {o.batch, o.heads, seq, seq});
  entry["attention"] = attention_json(layer.attention, layer.head_dim);
  entry["scores"] = prefix + "scores.npy";
}

// One scheme's arrays, written as scheme<index>_{q,k}_{in,out,atol}.npy (with --scores also
// _scores.npy), and its manifest entry; `layer` is the first layer of the entry.
nlohmann::json write_scheme(const VectorsOptions& o, const LayerPositions& layer, std::size_t index,
                            const std::vector<std::int64_t>& positions) {
  const RopeScheme& scheme = *layer.rope;
  const std::int64_t seq = static_cast<std::int64_t>(positions.size());
  if (o.batch * seq * std::max(o.heads, o.kv_heads) * scheme.head_dim > max_output_elements) {
    throw UsageError("--positions: " + std::to_string(seq) +
                     " positions: expected batch * seq * "
                     "heads * head_dim <= 2^28");
  }
  const PositionVector position_vector =
      Eigen::Map<const PositionVector>(positions.data(), static_cast<Eigen::Index>(seq));
  const std::int64_t seq_len = sequence_length(std::nullopt, static_cast<double>(positions.back()));
  const RopeRotation rotation{scheme, seq_len, std::nullopt, parse_angle_mode(o.angles, "--angles"),
                              o.dtype};
  const RotationTolerance tolerance = rotation_tolerance(scheme, seq_len, o.dtype);
  const std::string prefix = "scheme" + std::to_string(index) + "_";
  nlohmann::json entry = {{"rope_type", scheme.rope_type},
                          {"seq_len", seq_len},
                          {"layout", "bshd"},
                          {"pairing", to_string(scheme.pairing)},
                          {"head_dim", scheme.head_dim},
                          {"rotary_dim", scheme.rotary_dim},
                          {"inv_freq", rotation.inv_freq()},
                          {"attention_scale", rotation.attention_scale()}};
  nlohmann::json bounds = tolerance_json(tolerance);
  std::vector<float> outputs[2];  // q_out, k_out
  for (const char* role : {"q", "k"}) {
    const std::int64_t heads = role[0] == 'q' ? o.heads : o.kv_heads;
    const std::vector<std::int64_t> dims{o.batch, seq, heads, scheme.head_dim};
    const std::uint64_t seed =
        static_cast<std::uint64_t>(o.seed) * 1000003u + 2 * index + (role[0] == 'k');
    const std::vector<float> x =
        seeded_values(o.batch * seq * heads * scheme.head_dim, seed, o.dtype);
    const std::vector<float> y = rotation.rotate(x, dims, Positions(position_vector),
                                                 Layouts(TensorLayout::BSHD), prefix + role);
    const std::string name = prefix + role;
    write_npy_atomic(o.output + "/" + name + "_in.npy", x.data(), dims);
    write_npy_atomic(o.output + "/" + name + "_out.npy", y.data(), dims);
    const std::vector<float> atol =
        token_bounds(tolerance, x, dims, scheme.rotary_dim, scheme.pairing, positions);
    write_npy_atomic(o.output + "/" + name + "_atol.npy", atol.data(), {seq});
    entry[std::string(role) + "_in"] = name + "_in.npy";
    entry[std::string(role) + "_out"] = name + "_out.npy";
    bounds[std::string(role) + "_atol"] = name + "_atol.npy";
    outputs[role[0] == 'k'] = y;
  }
  entry["tolerance"] = bounds;
  if (o.scores) {
    write_scores(o, layer, index, outputs[0], outputs[1], {o.batch, seq, o.heads, scheme.head_dim},
                 positions, entry);
  }
  return entry;
}

int run_vectors(const VectorsOptions& o) {
  const ModelPositions model = load_model_positions(o.config);
  const std::vector<std::int64_t> positions = parse_positions(o.positions);
  const std::vector<std::size_t> layers = chosen_layers(o.layers, model.layers.size(), o.config);
  if (o.scores) {
    check_scores_size(o.batch, o.heads, o.kv_heads, static_cast<std::int64_t>(positions.size()));
  }
  if (::mkdir(o.output.c_str(), 0777) != 0 && errno != EEXIST) {
    throw Error(o.output + ": cannot create the directory: " + std::strerror(errno));
  }
  std::vector<const LayerPositions*> groups;  // the first layer of each entry
  nlohmann::json entries = nlohmann::json::array(), skipped = nlohmann::json::array();
  for (const std::size_t il : layers) {
    const LayerPositions& layer = model.layers[il];
    if (layer.kind != PositionKind::Rope || !layer.rope || layer.rope->mrope_section ||
        model.xpos) {
      skipped.push_back({{"layer", il}, {"positions", to_string(layer.kind)}});
      continue;
    }
    // One entry per RoPE scheme (and, with --scores, per attention setting).
    const auto same_group = [&](const LayerPositions* first) {
      return *first->rope == *layer.rope &&
             (!o.scores || same_attention(first->attention, layer.attention));
    };
    std::size_t s = 0;
    while (s < groups.size() && !same_group(groups[s])) ++s;
    if (s == groups.size()) {
      groups.push_back(&layer);
      entries.push_back(write_scheme(o, layer, s, positions));
      entries.back()["layers"] = nlohmann::json::array();
    }
    entries[s]["layers"].push_back(il);
  }
  write_npy_atomic(o.output + "/positions.npy", positions.data(),
                   {static_cast<std::int64_t>(positions.size())});
  const nlohmann::json manifest = {
      {"config", o.config},       {"posemb_version", version_string}, {"angles", o.angles},
      {"dtype", o.dtype},         {"positions", "positions.npy"},     {"schemes", entries},
      {"skipped_layers", skipped}};
  std::ofstream(o.output + "/manifest.json") << manifest.dump(1) << "\n";
  return 0;
}

class VectorsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* cmd = app.add_subcommand(
        "vectors",
        "Write test vectors for an engine's RoPE kernel: seeded q/k of every distinct RoPE scheme "
        "among the layers, their rotations, the positions and DIR/manifest.json with tolerances");
    add_config_argument(cmd, o_.config);
    cmd->add_option("--positions", o_.positions,
                    "LIST: positions and ranges, e.g. 0-63,4095,131071")
        ->required();
    cmd->add_option("--output", o_.output, "DIR: created if absent")->required();
    cmd->add_option("--angles", o_.angles, "exact or hf-float32")
        ->check(CLI::IsMember({"exact", "hf-float32"}))
        ->capture_default_str();
    cmd->add_option("--dtype", o_.dtype, "float32, bfloat16 or float16")
        ->check(CLI::IsMember(storage_dtypes()))
        ->capture_default_str();
    add_integer(cmd, "--batch", o_.batch, std::int64_t{1}, std::int64_t{64}, "Batch rows");
    add_integer(cmd, "--heads", o_.heads, std::int64_t{1}, std::int64_t{256}, "Query heads");
    add_integer(cmd, "--kv-heads", o_.kv_heads, std::int64_t{1}, std::int64_t{256}, "Key heads");
    add_integer(cmd, "--seed", o_.seed, std::int64_t{0}, std::int64_t{1} << 40, "Seed of q and k");
    cmd->add_option("--layers", o_.layers, "all, or a list of layer indices I,J,...")
        ->capture_default_str();
    cmd->add_flag("--scores", o_.scores,
                  "Also write each layer's causal attention probabilities of q_out and k_out "
                  "(scale, window, chunk, temperature, softcap, sinks)");
    return cmd;
  }
  int run() override { return run_vectors(o_); }

 private:
  VectorsOptions o_;
};

}  // namespace

std::unique_ptr<Command> vectors_command() { return std::make_unique<VectorsCommand>(); }

}  // namespace posemb::tool
