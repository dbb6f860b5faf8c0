// posemb: inspect and apply a model's positional scheme, with .npy files in and out.
//
//   posemb inspect CONFIG.json [--seq-len N]
//   posemb freqs CONFIG.json [--seq-len N]
//   posemb apply CONFIG.json --input X.npy --output Y.npy [--positions P.npy | --offset K]
//                [--role query|key] [--layout bshd|bhsd] [--pairing interleaved|rotate_half]
//                [--seq-len N] [--fope-sin-coef S.npy --fope-cos-coef C.npy]
//   posemb alibi --heads H --q-len N --k-len M [--causal | --symmetric] [--q-offset K] --output B.npy
//   posemb sinusoidal --dim D --max-len L [--layout interleaved|concat] [--base B] --output T.npy
//
// Exit status: 0 on success, 2 for a usage error, 1 for anything else, with one line
// "posemb: error: ..." on stderr naming the file, key or argument at fault. Outputs are written
// to a temporary file and renamed, so nothing is written to --output on failure.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "npy_files.hpp"
#include "posemb/alibi.hpp"
#include "posemb/config.hpp"
#include "posemb/error.hpp"
#include "posemb/fope.hpp"
#include "posemb/npy.hpp"
#include "posemb/rope.hpp"
#include "posemb/sinusoidal.hpp"
#include "posemb/xpos.hpp"

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
// freqs: {"inv_freq": [...], "attention_scale": s, "rotary_dim": r, "pairing": "..."}
// For FoPE, inv_freq holds the clipped frequencies as 0 (the clip floor) and the pairing is
// rotate_half.

int run_freqs(const std::string& config_path, std::optional<std::int64_t> seq_len) {
  const ModelPositions model = load_model_positions(config_path);
  PairFrequencies f;
  try {
    f = pair_frequencies(model, seq_len);
  } catch (const Error& error) {
    throw Error(config_path + ": " + posemb::detail::error_body(error));
  }
  std::string json = "{\"inv_freq\": [";
  for (std::size_t i = 0; i < f.pairs.size(); ++i) {
    json += (i ? ", " : "") + full_precision(f.pairs[i].inv_freq);
  }
  json += "], \"attention_scale\": " + full_precision(f.attention_scale) +
          ", \"rotary_dim\": " + std::to_string(f.rotary_dim) + ", \"pairing\": \"" +
          to_string(f.pairing) + "\"}\n";
  std::cout << json;
  return 0;
}

// ---------------------------------------------------------------------------------------------
// inspect: a human-readable table of the scheme.

// Columns: the default and the scheme's inverse frequency; the wavelength 2 pi / inv_freq in
// tokens the scheme rotates with; the full turns floor(L0 * default_inv_freq / 2 pi) the pair
// made within the original (pre-training) context L0, which decides its band; the band.
void print_pair_table(const PairFrequencies& f) {
  if (f.original_context) {
    std::printf("original context L0: %lld\n", static_cast<long long>(*f.original_context));
  }
  std::printf("%5s  %-24s  %-24s  %14s  %11s  %s\n", "pair", "default inv_freq", "inv_freq",
              "wavelength", "turns in L0", "band");
  for (std::size_t i = 0; i < f.pairs.size(); ++i) {
    const PairFrequency& pair = f.pairs[i];
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

int run_inspect(const std::string& config_path, std::optional<std::int64_t> seq_len) {
  const ModelPositions model = load_model_positions(config_path);
  std::printf("config: %s\n", config_path.c_str());
  try {
    if (model.kind == PositionKind::Fope) {
      const auto [fope, clip] = resolve_fope_config(model.fope);
      const PairFrequencies f = pair_frequencies(model, seq_len);
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
                  fope.d_out, fope.head_dim / 2 - fope.d_out,
                  full_precision(fope.padding_sin).c_str());
      std::printf("attention factor: 1\n");
      print_pair_table(f);
      return 0;
    }
    std::printf("model_type: %s\npositions: %s\nheads: %d (key-value heads %d)\n",
                model.model_type.empty() ? "(none)" : model.model_type.c_str(),
                to_string(model.kind), model.n_heads, model.n_kv_heads);
    if (model.max_position_embeddings) {
      std::printf("max_position_embeddings: %lld\n",
                  static_cast<long long>(*model.max_position_embeddings));
    }
    if (model.kind == PositionKind::Alibi) {
      const Eigen::VectorXd slopes = alibi_slopes(model.n_heads);
      std::printf("%5s  %s\n", "head", "ALiBi slope");
      for (Eigen::Index h = 0; h < slopes.size(); ++h) {
        std::printf("%5lld  %s\n", static_cast<long long>(h), full_precision(slopes[h]).c_str());
      }
      return 0;
    }
    if (model.kind != PositionKind::Rope) return 0;
    const PairFrequencies f = pair_frequencies(model, seq_len);
    std::printf("rope_type: %s\nhead_dim: %d\nrotary_dim: %d%s\npairing: %s\nrope_theta: %s\n",
                model.rope_type.c_str(), model.head_dim, f.rotary_dim,
                f.rotary_dim < model.head_dim ? " (partial rotary)" : "", to_string(f.pairing),
                full_precision(f.theta).c_str());
    if (model.xpos) {
      std::printf("xpos: gamma %s, scale_base %s\n", full_precision(model.xpos->gamma).c_str(),
                  full_precision(model.xpos->scale_base).c_str());
    }
    std::printf("seq_len: %s\nattention factor: %s\n",
                seq_len ? std::to_string(*seq_len).c_str() : "(not given)",
                full_precision(f.attention_scale).c_str());
    print_pair_table(f);
  } catch (const Error& error) {
    throw Error(config_path + ": " + posemb::detail::error_body(error));
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// apply

struct ApplyOptions {
  std::string config, input, output, positions;
  std::optional<std::int64_t> offset, seq_len;
  std::string role = "query", layout = "bshd";
  std::optional<std::string> pairing;
  std::string fope_sin_coef, fope_cos_coef;
};

// The token positions of X: from --positions (int64 [seq] or [batch, seq]) or offset + s.
// Returns [batch, seq] or [1, seq].
PositionMatrix token_positions(const ApplyOptions& options, std::int64_t batch, std::int64_t seq) {
  PositionMatrix positions;
  if (options.positions.empty()) {
    positions.resize(1, seq);
    const std::int64_t offset = options.offset.value_or(0);
    for (std::int64_t s = 0; s < seq; ++s) {
      if (s > 0 && offset > std::numeric_limits<std::int64_t>::max() - s) {
        throw UsageError("--offset = " + std::to_string(offset) + ": expected offset + seq to fit in int64");
      }
      positions(0, s) = offset + s;
    }
    return positions;
  }
  const std::string expected = "int64 [seq] or [batch, seq] = [" + std::to_string(seq) + "] or [" +
                               std::to_string(batch) + ", " + std::to_string(seq) + "]";
  const NpyArray array = tool::read_npy_checked(options.positions, {"<i8"}, {1, 2}, expected);
  const std::int64_t rows = array.shape.size() == 2 ? array.shape[0] : 1;
  const std::int64_t cols = array.shape.back();
  if (cols != seq || (rows != 1 && rows != batch)) {
    throw Error(options.positions + ": shape = " + tool::shape_string(array.shape) + ": expected " +
                expected);
  }
  const std::vector<std::int64_t> values = array.values<std::int64_t>();
  positions.resize(rows, cols);
  std::copy(values.begin(), values.end(), positions.data());
  return positions;
}

bool has_fope_coefficients(const ApplyOptions& options) { return !options.fope_sin_coef.empty(); }

// Applies the scheme to x (values of type T, shape `shape`) in place.
template <class T>
void apply_scheme(const ModelPositions& model, const ApplyOptions& options,
                  const std::vector<std::int64_t>& shape, std::vector<T>& x) {
  const bool bshd = options.layout == "bshd";
  const TensorLayout layout = bshd ? TensorLayout::BSHD : TensorLayout::BHSD;
  const auto x_error = [&](const std::string& expected) {
    throw Error(options.input + ": shape = " + tool::shape_string(shape) + ": expected " + expected);
  };
  const bool fope = model.kind == PositionKind::Fope;
  const bool additive = !fope && model.kind != PositionKind::Rope;
  if (!additive && shape.size() != 4) {
    x_error(std::string("4 dimensions ") +
            (bshd ? "[batch, seq, heads, head_dim] (--layout bshd)"
                  : "[batch, heads, seq, head_dim] (--layout bhsd)"));
  }
  if (has_fope_coefficients(options) && !fope) {
    throw UsageError("--fope-sin-coef: the config " + options.config +
                     " is not a FoPE config (rope_type \"fope\")");
  }

  if (fope) {
    if (options.pairing && *options.pairing != "rotate_half") {
      throw UsageError("--pairing = " + *options.pairing + ": FoPE rotates with rotate_half pairing only");
    }
    const PositionMatrix positions = token_positions(options, shape[0], bshd ? shape[1] : shape[2]);
    TensorMap4<T> map(x.data(), shape[0], shape[1], shape[2], shape[3]);
    if (has_fope_coefficients(options)) {
      const std::string what = "float32 [n_kv_heads, D_in, D_out]";
      const NpyArray sin_array = tool::read_npy_checked(options.fope_sin_coef, {"<f4"}, {3}, what);
      const NpyArray cos_array = tool::read_npy_checked(options.fope_cos_coef, {"<f4"}, {3}, what);
      const std::vector<float> sin_coef = sin_array.values<float>();
      const std::vector<float> cos_coef = cos_array.values<float>();
      Fope fope = [&] {
        try {
          return fope_with_coefficients(model.fope, sin_coef.data(), sin_array.shape,
                                        cos_coef.data(), cos_array.shape);
        } catch (const Error& error) {
          throw Error(options.fope_sin_coef + ", " + options.fope_cos_coef + ": " +
                      posemb::detail::error_body(error));
        }
      }();
      apply_fope_inplace(map, positions, fope, layout);
    } else {
      apply_fope_inplace(map, positions, make_fope(model.fope), layout);
    }
    return;
  }

  switch (model.kind) {
    case PositionKind::Rope: {
      const PositionMatrix positions = token_positions(options, shape[0], bshd ? shape[1] : shape[2]);
      // As HuggingFace: the sequence length is max(position) + 1 unless --seq-len is given.
      const std::int64_t max_position = positions.size() == 0 ? -1 : positions.maxCoeff();
      const std::int64_t seq_len = options.seq_len.value_or(
          max_position == std::numeric_limits<std::int64_t>::max() ? max_position
                                                                   : std::max<std::int64_t>(max_position, -1) + 1);
      RopeSpec spec = model.rope_spec_for(seq_len);
      if (options.pairing) {
        spec.pairing = *options.pairing == "interleaved" ? Pairing::Interleaved : Pairing::RotateHalf;
      }
      TensorMap4<T> map(x.data(), shape[0], shape[1], shape[2], shape[3]);
      if (model.xpos) {
        const XposSpec xpos{spec, *model.xpos};
        apply_xpos_inplace(map, positions, xpos,
                           options.role == "key" ? XposRole::Key : XposRole::Query, layout);
      } else {
        apply_rope_inplace(map, positions, spec, layout);
      }
      return;
    }
    case PositionKind::Sinusoidal: {
      // Token embeddings x: [batch, seq, d] plus the sinusoidal table (Vaswani et al. 2017).
      if (shape.size() != 3) x_error("3 dimensions [batch, seq, d] (token embeddings)");
      const PositionMatrix positions = token_positions(options, shape[0], shape[1]);
      if (positions.size() > 0 && positions.minCoeff() < 0) {
        posemb::detail::fail("position", positions.minCoeff(), "expected >= 0 for a sinusoidal table");
      }
      if (shape[2] % 2 != 0 || shape[2] > (1 << 20)) {
        x_error("an even embedding width d <= 2^20 for a sinusoidal table");
      }
      const std::int64_t rows = positions.size() == 0 ? 1 : positions.maxCoeff() + 1;
      if (rows > max_output_elements / std::max<std::int64_t>(shape[2], 1)) {
        posemb::detail::fail("position", rows - 1,
                             "expected (position + 1) * d <= 2^28 for the sinusoidal table");
      }
      const EmbeddingTable<T> table = sinusoidal_table<T>(rows, static_cast<int>(shape[2]));
      Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor>> map(x.data(), shape[0], shape[1], shape[2]);
      add_position_embeddings_inplace(map, positions, table);
      return;
    }
    case PositionKind::Fope:  // applied above
      return;
    case PositionKind::Learned:
      throw Error(options.config + ": the model uses learned absolute positions; their table is " +
                  "in the checkpoint's weights, not in config.json");
    case PositionKind::Alibi:
      throw Error(options.config + ": the model uses ALiBi, a bias on attention scores that does " +
                  "not change X; build it with `posemb alibi`");
  }
}

int run_apply(const ApplyOptions& options) {
  const ModelPositions model = load_model_positions(options.config);
  const NpyArray x = tool::read_npy_checked(options.input, {"<f4", "<f8"}, {3, 4},
                                            "float32 or float64 [batch, seq, heads, head_dim]");
  std::vector<double> y64;
  std::vector<float> y32;
  try {
    if (x.dtype == "<f8") {
      y64 = x.values<double>();
      apply_scheme(model, options, x.shape, y64);
    } else {
      y32 = x.values<float>();
      apply_scheme(model, options, x.shape, y32);
    }
  } catch (const Error& error) {
    const std::string body = posemb::detail::error_body(error);
    // The tool's own errors start with the file at fault; the library's name a parameter, so
    // say which run they come from.
    for (const std::string& file : {options.config, options.input, options.positions,
                                    options.fope_sin_coef, options.fope_cos_coef}) {
      if (!file.empty() && body.compare(0, file.size(), file) == 0) throw;
    }
    throw Error(options.config + " applied to " + options.input + ": " + body);
  }
  if (x.dtype == "<f8") {
    tool::write_npy_atomic(options.output, y64.data(), x.shape);
  } else {
    tool::write_npy_atomic(options.output, y32.data(), x.shape);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// alibi: B[h, i, j] for query positions q_offset + i and key positions j (alibi.hpp).

int run_alibi(int heads, std::int64_t q_len, std::int64_t k_len, bool symmetric,
              std::optional<std::int64_t> q_offset, const std::string& output) {
  // Default: the queries are the last q_len positions of the key sequence (decode with a cache).
  const std::int64_t offset = q_offset.value_or(k_len - q_len);
  if (q_len > max_output_elements / k_len || heads * q_len * k_len > max_output_elements) {
    throw UsageError("--heads * --q-len * --k-len = " + std::to_string(heads) + " * " +
                     std::to_string(q_len) + " * " + std::to_string(k_len) +
                     ": expected at most 2^28 elements");
  }
  PositionVector q_positions(q_len), k_positions(k_len);
  for (std::int64_t i = 0; i < q_len; ++i) q_positions[i] = offset + i;
  for (std::int64_t j = 0; j < k_len; ++j) k_positions[j] = j;
  const AlibiBias<float> bias = alibi_bias<float>(
      heads, q_positions, k_positions, symmetric ? AlibiForm::Symmetric : AlibiForm::Causal);
  tool::write_npy_atomic(output, bias.data(), {heads, q_len, k_len});
  return 0;
}

// ---------------------------------------------------------------------------------------------
// sinusoidal: T[p, :] for p = 0 .. max_len - 1 (sinusoidal.hpp), float32 [max_len, dim].

int run_sinusoidal(int dim, std::int64_t max_len, const std::string& layout, double base,
                   const std::string& output) {
  if (dim % 2 != 0) throw UsageError("--dim = " + std::to_string(dim) + ": expected an even number");
  if (!(std::isfinite(base) && base > 0.0)) {
    throw UsageError("--base = " + full_precision(base) + ": expected a finite number > 0");
  }
  if (max_len > max_output_elements / dim) {
    throw UsageError("--max-len * --dim = " + std::to_string(max_len) + " * " + std::to_string(dim) +
                     ": expected at most 2^28 elements");
  }
  const EmbeddingTable<float> table = sinusoidal_table<float>(
      max_len, dim, base, layout == "concat" ? SinusoidalLayout::Concat : SinusoidalLayout::Interleaved);
  tool::write_npy_atomic(output, table.data(), {max_len, dim});
  return 0;
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

  // inspect / freqs
  std::string config_path;
  std::optional<std::int64_t> seq_len;
  CLI::App* inspect = app.add_subcommand(
      "inspect",
      "Print a table of the config's rotary pairs: default and scaled inverse frequency, "
      "wavelength in tokens, full turns within the original context, band (kept / ramp / "
      "interpolated, or clipped for FoPE), and the attention factor, pairing and rotary_dim.");
  CLI::App* freqs = app.add_subcommand(
      "freqs",
      "Print {\"inv_freq\": [...], \"attention_scale\": s, \"rotary_dim\": r, \"pairing\": "
      "\"interleaved\" | \"rotate_half\"} as JSON with 17 significant digits (FoPE: clipped "
      "frequencies are 0).");
  for (CLI::App* sub : {inspect, freqs}) {
    sub->add_option("CONFIG", config_path, "The model's config.json")->required();
    sub->add_option("--seq-len", seq_len,
                    "Sequence length for dynamic NTK and LongRoPE (default: none known)")
        ->check(CLI::NonNegativeNumber);
  }

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
      "--positions", apply_options.positions, "P.npy: int64 [seq] or [batch, seq] (default 0..seq-1 + offset)");
  CLI::Option* offset_option =
      apply->add_option("--offset", apply_options.offset, "Position of the first token (default 0)");
  positions_option->excludes(offset_option);
  apply->add_option("--role", apply_options.role, "query or key (matters for xPos)")
      ->check(CLI::IsMember({"query", "key"}))
      ->capture_default_str();
  apply->add_option("--layout", apply_options.layout,
                    "bshd: [batch, seq, heads, head_dim]; bhsd: [batch, heads, seq, head_dim]")
      ->check(CLI::IsMember({"bshd", "bhsd"}))
      ->capture_default_str();
  apply->add_option("--pairing", apply_options.pairing,
                    "Override the config's pairing: interleaved (GPT-J) or rotate_half (GPT-NeoX)")
      ->check(CLI::IsMember({"interleaved", "rotate_half"}));
  apply->add_option("--seq-len", apply_options.seq_len,
                    "Sequence length for dynamic NTK and LongRoPE (default: max position + 1)")
      ->check(CLI::NonNegativeNumber);
  CLI::Option* sin_coef_option = apply->add_option(
      "--fope-sin-coef", apply_options.fope_sin_coef,
      "S.npy: FoPE sine coefficients, float32 [heads, D_in, D_out] (default: initialised from "
      "the config's sigma and seed)");
  CLI::Option* cos_coef_option = apply->add_option(
      "--fope-cos-coef", apply_options.fope_cos_coef, "C.npy: FoPE cosine coefficients, float32 [heads, D_in, D_out]");
  sin_coef_option->needs(cos_coef_option);
  cos_coef_option->needs(sin_coef_option);

  // alibi
  int heads = 0;
  std::int64_t q_len = 0, k_len = 0;
  std::optional<std::int64_t> q_offset;
  std::string alibi_output;
  bool symmetric = false, causal = false;
  CLI::App* alibi = app.add_subcommand(
      "alibi", "Write the ALiBi bias B: float32 [heads, q_len, k_len]; masked entries are -inf.");
  alibi->add_option("--heads", heads, "Number of heads")->required()->check(CLI::Range(1, 1 << 20));
  alibi->add_option("--q-len", q_len, "Number of queries")->required()->check(CLI::PositiveNumber);
  alibi->add_option("--k-len", k_len, "Number of keys (positions 0..k_len-1)")
      ->required()
      ->check(CLI::PositiveNumber);
  CLI::Option* causal_flag = alibi->add_flag(
      "--causal", causal, "-slope * (q - k), -inf where k > q (the default)");
  CLI::Option* symmetric_flag =
      alibi->add_flag("--symmetric", symmetric, "-slope * |q - k|, nothing masked (encoders)");
  causal_flag->excludes(symmetric_flag);
  alibi->add_option("--q-offset", q_offset,
                    "Position of the first query (default k_len - q_len: the last q_len keys)");
  alibi->add_option("--output", alibi_output, "B.npy")->required();

  // sinusoidal
  int dim = 0;
  std::int64_t max_len = 0;
  std::string sinusoidal_layout = "interleaved", sinusoidal_output;
  double base = 10000.0;
  CLI::App* sinusoidal = app.add_subcommand(
      "sinusoidal",
      "Write the sinusoidal table T: float32 [max_len, dim] (Vaswani et al. 2017), sin(p w_i) and "
      "cos(p w_i) with w_i = base^(-2i/dim).");
  sinusoidal->add_option("--dim", dim, "Embedding width (even)")->required()->check(CLI::Range(2, 1 << 30));
  sinusoidal->add_option("--max-len", max_len, "Number of positions")
      ->required()
      ->check(CLI::PositiveNumber);
  sinusoidal->add_option("--layout", sinusoidal_layout,
                         "interleaved: sin at 2i, cos at 2i+1; concat: sin at i, cos at dim/2+i")
      ->check(CLI::IsMember({"interleaved", "concat"}))
      ->capture_default_str();
  sinusoidal->add_option("--base", base, "Frequency base")->capture_default_str();
  sinusoidal->add_option("--output", sinusoidal_output, "T.npy")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(error);
    return error_exit(error.what(), 2);
  }

  try {
    if (*inspect) return run_inspect(config_path, seq_len);
    if (*freqs) return run_freqs(config_path, seq_len);
    if (*apply) return run_apply(apply_options);
    if (*alibi) return run_alibi(heads, q_len, k_len, symmetric, q_offset, alibi_output);
    if (*sinusoidal) return run_sinusoidal(dim, max_len, sinusoidal_layout, base, sinusoidal_output);
  } catch (const UsageError& error) {
    return error_exit(error.what(), 2);
  } catch (const std::bad_alloc&) {
    return error_exit("out of memory", 1);
  } catch (const std::exception& error) {
    return error_exit(posemb::detail::error_body(error), 1);
  }
  return error_exit("no subcommand", 2);
}
