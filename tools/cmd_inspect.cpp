// posemb inspect CONFIG.json [--seq-len N]: a human-readable table of the model's scheme: the
// layer pattern, then each distinct RoPE scheme's numbers and its pair table (FoPE: the clip and
// the mixed slots; ALiBi: the slope of every head).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "arguments.hpp"
#include "command.hpp"
#include "gguf_commands.hpp"
#include "posemb/model/report.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/model/config.hpp"

namespace posemb::tool {
namespace {

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
    const std::string turns = f.original_context ? std::to_string(static_cast<long long>(std::floor(
                                                       static_cast<double>(*f.original_context) *
                                                       pair.default_inv_freq / posemb::two_pi)))
                                                 : "-";
    std::printf("%5zu  %-24s  %-24s  %14s  %11s  %s\n", i,
                full_precision(pair.default_inv_freq).c_str(),
                full_precision(pair.inv_freq).c_str(), wavelength.c_str(), turns.c_str(),
                pair.band.c_str());
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
  std::printf(
      "D_in: %d retained frequencies (%d clipped, %s)\nD_out: %d mixed slots, %d "
      "padding slots (C = 1, S = %s)\n",
      clip.d_in(), clip.clipped_count(), fope.drop_clipped ? "dropped" : "kept as 0", fope.d_out,
      fope.head_dim / 2 - fope.d_out, full_precision(fope.padding_sin).c_str());
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
  // Where the rotated slice sits in the head (MLA: the trailing qk_rope_head_dim).
  std::printf("rotated features: %d-%d of %d\n", layer.rotary_offset,
              layer.rotary_offset + f.rotary_dim - 1,
              layer.head_dim > 0 ? layer.head_dim : scheme.head_dim);
  if (model.xpos) {
    std::printf("xpos: gamma %s, scale_base %s\n", full_precision(model.xpos->gamma).c_str(),
                full_precision(model.xpos->scale_base).c_str());
  }
  std::printf("seq_len: %s\nattention factor: %s\n",
              seq_len ? std::to_string(*seq_len).c_str() : "(not given)",
              full_precision(f.attention_scale).c_str());
  print_pair_table(f);
}

// Each distinct RoPE scheme once, under the first layer that uses it.
void print_rope_schemes(const ModelPositions& model, std::optional<std::int64_t> seq_len) {
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
}

void print_alibi_slopes(const ModelPositions& model) {
  const Eigen::VectorXd slopes = alibi_slopes(model.n_heads);
  std::printf("%5s  %s\n", "head", "ALiBi slope");
  for (Eigen::Index h = 0; h < slopes.size(); ++h) {
    std::printf("%5lld  %s\n", static_cast<long long>(h), full_precision(slopes[h]).c_str());
  }
}

// What transformers would warn about, and the keys the reader did not use.
void print_notes(const ModelPositions& model) {
  for (const std::string& warning : model.warnings) {
    std::printf("transformers warns: %s\n", warning.c_str());
  }
  const auto print_keys = [](const char* label, const std::vector<std::string>& keys) {
    if (keys.empty()) return;
    std::string list;
    for (const std::string& key : keys) list += (list.empty() ? "" : ", ") + key;
    std::printf("%s: %s\n", label, list.c_str());
  };
  print_keys("ignored keys", model.unused_keys);
  print_keys("ignored keys (transformers ignores them too)",
             model.unused_keys_transformers_ignores);
}

void print_model(const ModelPositions& model, std::optional<std::int64_t> seq_len) {
  print_notes(model);
  const PositionKind kind = model.kind();
  if (kind == PositionKind::Fope && model.fope) {
    print_fope(*model.fope);
    return;
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
    print_alibi_slopes(model);
  } else {
    print_rope_schemes(model, seq_len);
  }
}

class InspectCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* inspect = app.add_subcommand(
        "inspect",
        "Print the layer pattern and a table of the config's rotary pairs: default and scaled "
        "inverse frequency, wavelength in tokens, full turns within the original context, band "
        "(kept / ramp / interpolated, or clipped for FoPE), and the attention factor, pairing and "
        "rotary_dim; what transformers would warn about, and the keys the reader did not use "
        "(--strict refuses them). CONFIG may be a GGUF file: the hyperparameters llama.cpp reads "
        "and the "
        "frequencies it runs.");
    add_config_argument(inspect, config_path_);
    add_seq_len_option(inspect, seq_len_, "default: none known");
    add_strict_flag(inspect, strict_);
    return inspect;
  }

  int run() override {
    if (is_gguf_path(config_path_)) return gguf_inspect(config_path_, seq_len_);
    const ModelPositions model = load_config(config_path_, strict_);
    std::printf("config: %s\n", config_path_.c_str());
    with_context(config_path_, [&] { print_model(model, seq_len_); });
    return 0;
  }

 private:
  std::string config_path_;
  std::optional<std::int64_t> seq_len_;
  bool strict_ = false;
};

}  // namespace

std::unique_ptr<Command> inspect_command() { return std::make_unique<InspectCommand>(); }

}  // namespace posemb::tool
