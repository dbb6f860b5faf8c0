// posemb apply CONFIG.json --input X.npy --output Y.npy [--positions P.npy | --offset K]
//              [--role query|key] [--layout bshd|bhsd] [--output-layout bshd|bhsd] [--inverse]
//              [--pairing interleaved|rotate_half] [--layer I] [--seq-len N]
//              [--fope-sin-coef S.npy --fope-cos-coef C.npy] [--angles exact|hf-float32]
//              [--dtype float32|bfloat16|float16] [--verbose]
// posemb apply CONFIG.json --weights W --input X.npy --output Y.npy [--positions P | --offset K]
//              (checkpoint_weights.cpp; a FoPE config: the coefficients of block --layer of W)
// posemb apply CONFIG.json --vision --grid TxHxW --input X.npy --output Y.npy [--inverse]
//
// Applies the config's positional scheme to X: a rotation (RoPE and its scaled variants, xPos,
// M-RoPE, FoPE, a vision tower's 2-D RoPE) or the sinusoidal table added to token embeddings.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "apply_inputs.hpp"
#include "arguments.hpp"
#include "checkpoint_weights.hpp"
#include "command.hpp"
#include "npy_files.hpp"
#include "rope_rotation.hpp"
#include "posemb/absolute/sinusoidal.hpp"
#include "posemb/model/checkpoint_positions.hpp"
#include "posemb/model/config.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/xpos.hpp"

namespace posemb::tool {
namespace {

// The dimensions of a 4-D activation of `shape` (in the input's layout) in the output's layout.
std::vector<std::int64_t> output_shape(const std::vector<std::int64_t>& shape, bool transpose) {
  if (!transpose) return shape;
  return {shape[0], shape[2], shape[1], shape[3]};
}

// One application: X (values of type T, `shape` in --layout) and Y (resized by the caller, in
// --output-layout), with the run's options and model.
template <class T>
struct Activation {
  const ModelPositions& model;
  const ApplyOptions& options;
  const std::vector<std::int64_t>& shape;
  const std::vector<T>& x;
  std::vector<T>& y;
  TokenGrid grid;

  // x: [batch, seq, heads, head_dim] or [batch, heads, seq, head_dim] (--layout)
  Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>> in() const {
    return {x.data(), shape[0], shape[1], shape[2], shape[3]};
  }
  // y: x's shape in --output-layout
  TensorMap4<T> out() const {
    const std::vector<std::int64_t> dims =
        output_shape(shape, options.output_layout() != options.layout());
    return TensorMap4<T>(y.data(), dims[0], dims[1], dims[2], dims[3]);
  }
  Layouts layouts() const { return Layouts(options.layout(), options.output_layout()); }
  // --layout, --output-layout and --inverse as the rotate family's options (one thread).
  RotateOptions rotate_options() const {
    return RotateOptions().with_layouts(layouts()).with_rotation(options.rotation());
  }
  [[noreturn]] void shape_error(const std::string& expected) const {
    throw Error(options.input + ": shape = " + shape_string(shape) + ": expected " + expected);
  }
};

// apply --vision: the tower's 2-D RoPE (rotary/vision.hpp) on X [patches, heads, head_dim], the
// patches of a T x H x W grid in the tower's order.
template <class T>
void apply_vision(const ModelPositions& model, const ApplyOptions& options,
                  const std::vector<std::int64_t>& shape, const std::vector<T>& x,
                  std::vector<T>& y) {
  if (!model.vision) {
    throw Error(options.config +
                ": no vision tower with 2-D RoPE; expected a vision_config of a "
                "Qwen2-VL family model or of Pixtral");
  }
  const VisionRope& rope = *model.vision;
  const std::array<std::int64_t, 3> grid = parse_grid(options.grid);
  const PositionMatrix patches = vision_patch_positions(rope, grid[0], grid[1], grid[2]);
  if (shape.size() != 3 || shape[0] != patches.cols() || shape[2] != rope.head_dim()) {
    throw Error(options.input + ": shape = " + shape_string(shape) +
                ": expected [patches, heads, head_dim] = [" + std::to_string(patches.cols()) +
                ", heads, " + std::to_string(rope.head_dim()) + "] for --grid " + options.grid);
  }
  y = x;
  TensorMap4<T> map(y.data(), 1, shape[0], shape[1], shape[2]);
  posemb::rotate_inplace(map, patches, rope, RotateOptions().with_rotation(options.rotation()));
}

// --verbose: how X and its positions are read (stdout).
void print_input(const ApplyOptions& options, const TokenGrid& grid,
                 const std::vector<std::int64_t>& shape, const char* dtype) {
  std::printf("X: %s %s %s", options.input.c_str(), dtype, grid.reading().c_str());
  if (!grid.layout) {
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
  std::printf(
      "scheme: %s, rope_type %s, head_dim %d, rotary_dim %d%s, pairing %s, seq_len %lld, "
      "attention_scale %s\n",
      kind, scheme.rope_type.c_str(), spec.head_dim, spec.rotary_dim,
      spec.partial() ? " (partial rotary: the other features pass through)" : "",
      to_string(spec.pairing), static_cast<long long>(seq_len),
      full_precision(spec.attention_scale).c_str());
}

// FoPE: the config's coefficients (initialised from its sigma and seed), the checkpoint's
// from --fope-sin-coef and --fope-cos-coef, or those of block --layer of --weights.
template <class T>
void apply_fope_scheme(const Activation<T>& a) {
  const ApplyOptions& options = a.options;
  if (options.pairing() && *options.pairing() != Pairing::RotateHalf) {
    throw UsageError("--pairing = " + *options.pairing_name +
                     ": FoPE rotates with rotate_half pairing only");
  }
  const TokenPositions positions = token_positions(options, a.grid);
  if (options.verbose) std::printf("scheme: fope, head_dim %d\n", a.model.fope->head_dim);
  auto out = a.out();
  if (!options.weights.empty()) {
    // The checkpoint's coefficients of block --layer (default 0).
    const SafetensorsCheckpoint weights(options.weights);
    const CheckpointFopeCoefficients coef =
        fope_checkpoint_coefficients(weights, options.layer.value_or(0));
    const Fope fope = with_context(options.weights, [&] {
      return fope_with_coefficients(*a.model.fope, coef.sin_coef.data(), coef.sin_shape,
                                    coef.cos_coef.data(), coef.cos_shape);
    });
    posemb::rotate(a.in(), out, positions.view(), fope, a.rotate_options());
    return;
  }
  if (!options.has_fope_coefficients()) {
    posemb::rotate(a.in(), out, positions.view(), make_fope(*a.model.fope), a.rotate_options());
    return;
  }
  const std::string what = "float32 [n_kv_heads, D_in, D_out]";
  const NpyArray sin_array = read_npy_checked(options.fope_sin_coef, {"<f4"}, {3}, what);
  const NpyArray cos_array = read_npy_checked(options.fope_cos_coef, {"<f4"}, {3}, what);
  const std::vector<float> sin_coef = sin_array.values<float>();
  const std::vector<float> cos_coef = cos_array.values<float>();
  const Fope fope = with_context(options.fope_sin_coef + ", " + options.fope_cos_coef, [&] {
    return fope_with_coefficients(*a.model.fope, sin_coef.data(), sin_array.shape, cos_coef.data(),
                                  cos_array.shape);
  });
  posemb::rotate(a.in(), out, positions.view(), fope, a.rotate_options());
}

// M-RoPE: three position axes, or 1-D positions on all three (text).
template <class T>
void apply_mrope_scheme(const Activation<T>& a, const RopeScheme& scheme) {
  const ApplyOptions& options = a.options;
  const MropeTokenPositions positions = mrope_token_positions(options, a.grid);
  const std::int64_t seq_len = sequence_length(options.seq_len, positions.max());
  MropeSpec spec = scheme.mrope_spec(seq_len);
  if (options.pairing()) spec.rope.pairing = *options.pairing();
  if (options.verbose) print_rope_scheme("mrope", scheme, spec.rope, seq_len);
  check_x_head_dim(options, a.shape, spec.rope);
  auto out = a.out();
  posemb::rotate(a.in(), out, positions.view(), spec, a.rotate_options());
}

// --angles hf-float32 or --dtype bfloat16/float16: plain RoPE of float32 X in that mode and
// storage type (rope_rotation.hpp), forward only.
// spec: the plan's whole head and rotated slice (exact angles).
template <class T>
void rotate_in_mode(const Activation<T>& a, const RopeScheme& scheme, const RopeSpec& spec,
                    std::int64_t seq_len, const TokenPositions& positions) {
  const ApplyOptions& options = a.options;
  if (a.model.xpos || options.inverse) {
    throw UsageError(std::string(a.model.xpos ? "the config's xPos" : "--inverse") +
                     ": --angles hf-float32 and --dtype other than float32 rotate plain RoPE "
                     "forward only");
  }
  if constexpr (!std::is_same_v<T, float>) {
    throw UsageError(options.input + ": float64 X: --angles hf-float32 and --dtype take float32 X");
  } else {
    const RopeRotation rotation{scheme,
                                seq_len,
                                options.pairing(),
                                parse_angle_mode(options.angles, "--angles"),
                                options.dtype,
                                spec.head_dim,
                                spec.rotary_offset};
    a.y = rotation.rotate(a.x, a.shape, positions.view(), a.layouts(), options.input);
  }
}

// RoPE, its scaled variants and xPos (--role picks the query's or the key's scale).
template <class T>
void apply_rope_scheme(const Activation<T>& a) {
  const ModelPositions& model = a.model;
  const ApplyOptions& options = a.options;
  const RopeScheme& scheme =
      options.layer ? *model.layer(*options.layer).rope : model.rope_scheme();
  if (scheme.mrope_section) {
    apply_mrope_scheme(a, scheme);
    return;
  }
  const TokenPositions positions = token_positions(options, a.grid);
  const std::int64_t seq_len = sequence_length(options.seq_len, positions.max());
  RopeSpec spec =
      options.layer ? model.layer(*options.layer).rope_spec(seq_len) : model.rope_spec(seq_len);
  if (options.pairing()) spec.pairing = *options.pairing();
  if (options.verbose) print_rope_scheme(model.xpos ? "xpos" : "rope", scheme, spec, seq_len);
  check_x_head_dim(options, a.shape, spec);
  if (options.angles != "exact" || options.dtype != "float32") {
    rotate_in_mode(a, scheme, spec, seq_len, positions);
    return;
  }
  auto out = a.out();
  if (model.xpos) {
    const XposSpec xpos{spec, *model.xpos};
    const XposRole role = options.role == "key" ? XposRole::Key : XposRole::Query;
    posemb::rotate(a.in(), out, positions.view(), Xpos{xpos, role}, a.rotate_options());
  } else {
    posemb::rotate(a.in(), out, positions.view(), spec, a.rotate_options());
  }
}

// Token embeddings x: [batch, seq, d] plus the sinusoidal table (Vaswani et al. 2017).
template <class T>
void add_sinusoidal(const Activation<T>& a) {
  const std::vector<std::int64_t>& shape = a.shape;
  if (shape.size() != 3) a.shape_error("3 dimensions [batch, seq, d] (token embeddings)");
  const TokenPositions token = token_positions(a.options, a.grid);
  if (a.options.verbose) std::printf("scheme: sinusoidal, added to the token embeddings\n");
  const PositionMatrix& positions = token.whole(a.options.positions);
  if (positions.size() > 0 && positions.minCoeff() < 0) {
    throw Error("position = " + std::to_string(positions.minCoeff()) +
                ": expected >= 0 for a sinusoidal table");
  }
  if (shape[2] % 2 != 0 || shape[2] > (1 << 20)) {
    a.shape_error("an even embedding width d <= 2^20 for a sinusoidal table");
  }
  const std::int64_t rows = positions.size() == 0 ? 1 : positions.maxCoeff() + 1;
  if (rows > max_output_elements / std::max<std::int64_t>(shape[2], 1)) {
    throw Error("position = " + std::to_string(rows - 1) +
                ": expected (position + 1) * d <= 2^28 for the sinusoidal table");
  }
  const EmbeddingTable<T> table = sinusoidal_table<T>(rows, static_cast<int>(shape[2]));
  a.y = a.x;
  Eigen::TensorMap<Eigen::Tensor<T, 3, Eigen::RowMajor>> map(a.y.data(), shape[0], shape[1],
                                                             shape[2]);
  add_position_embeddings_inplace(map, positions, table);
}

// Checks X's shape and the flags against the scheme's kind (rotary or additive).
void check_kind(const ApplyOptions& options, PositionKind kind,
                const std::vector<std::int64_t>& shape) {
  const bool additive = kind != PositionKind::Fope && kind != PositionKind::Rope;
  if (!additive && shape.size() != 4) {
    throw Error(options.input + ": shape = " + shape_string(shape) + ": expected 4 dimensions " +
                layout_axes(options.layout()) + " (--layout " + to_string(options.layout()) + ")");
  }
  if (additive && (options.inverse || options.output_layout() != options.layout())) {
    throw UsageError(std::string(options.inverse ? "--inverse" : "--output-layout") +
                     ": the config's positions (" + to_string(kind) +
                     ") are not a rotation; only rotary schemes take it");
  }
}

// Applies the scheme to x (values of type T, shape `shape`) into y (the output's layout; y is
// resized).
template <class T>
void apply_scheme(const ModelPositions& model, const ApplyOptions& options,
                  const std::vector<std::int64_t>& shape, const std::vector<T>& x,
                  std::vector<T>& y) {
  if (options.vision) {
    apply_vision(model, options, shape, x, y);
    return;
  }
  const PositionKind kind = options.layer ? model.layer(*options.layer).kind : model.kind();
  check_kind(options, kind, shape);
  const Activation<T> a{model, options, shape, x, y, TokenGrid::of(shape, options.layout())};
  if (options.verbose) print_input(options, a.grid, shape, sizeof(T) == 4 ? "float32" : "float64");
  y.assign(x.size(), T(0));
  if (options.has_fope_coefficients() && kind != PositionKind::Fope) {
    throw UsageError("--fope-sin-coef: the config " + options.config +
                     " is not a FoPE config (rope_type \"fope\")");
  }
  switch (kind) {
    case PositionKind::Fope:
      return apply_fope_scheme(a);
    case PositionKind::Rope:
      return apply_rope_scheme(a);
    case PositionKind::Sinusoidal:
      return add_sinusoidal(a);
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

// Reads X, applies the scheme and writes Y (Y's shape: X's in --output-layout).
int run_apply(const ApplyOptions& options) {
  const ModelPositions model = load_config(options.config, options.strict);
  check_layer(options.layer, model.layers.size(), options.config);
  const bool fope =
      (options.layer ? model.layer(*options.layer).kind : model.kind()) == PositionKind::Fope;
  if (!options.weights.empty() && !fope) return apply_checkpoint_table(options, model);
  const NpyArray x = read_npy_checked(options.input, {"<f4", "<f8"}, {3, 4},
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
  const bool transpose = x.shape.size() == 4 && options.output_layout() != options.layout();
  const std::vector<std::int64_t> y_shape = output_shape(x.shape, transpose);
  if (x.dtype == "<f8") {
    write_npy_atomic(options.output, y64.data(), y_shape);
  } else {
    write_npy_atomic(options.output, y32.data(), y_shape);
  }
  return 0;
}

class ApplyCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* apply = app.add_subcommand(
        "apply",
        "Apply the config's positional scheme to X: rotary (RoPE and its scaled variants, xPos, "
        "FoPE) for X of shape [batch, seq, heads, head_dim]; sinusoidal models add their table to "
        "token embeddings [batch, seq, d]. Y has X's shape and dtype.");
    add_config_argument(apply, o_.config);
    apply->add_option("--input", o_.input, "X.npy: float32 or float64")->required();
    apply->add_option("--output", o_.output, "Y.npy: same shape and dtype as X")->required();
    add_position_options(apply);
    add_layout_options(apply);
    add_integer(apply, "--layer", o_.layer, std::int64_t{0}, int64_max,
                "The layer whose scheme to apply (required when RoPE layers differ)");
    add_seq_len_option(apply, o_.seq_len, "default: max position + 1");
    add_strict_flag(apply, o_.strict);
    add_fope_and_vision_options(apply);
    add_weights_option(apply, o_);
    apply
        ->add_option("--angles", o_.angles,
                     "exact (angles in double, the default) or hf-float32 (HuggingFace "
                     "transformers' float32 arithmetic, op by op; plain RoPE only)")
        ->check(CLI::IsMember({"exact", "hf-float32"}))
        ->capture_default_str();
    apply
        ->add_option("--dtype", o_.dtype,
                     "The storage type X is rotated in: float32, bfloat16 or float16 (X and Y "
                     "stay float32 .npy holding values exact in it)")
        ->check(CLI::IsMember(storage_dtypes()))
        ->capture_default_str();
    apply->add_flag("--verbose", o_.verbose,
                    "Print how X is read (--layout and the shape's axes), where the positions come "
                    "from and the scheme applied");
    return apply;
  }

  int run() override { return run_apply(o_); }

 private:
  void add_position_options(CLI::App* apply) {
    CLI::Option* positions = apply->add_option(
        "--positions", o_.positions,
        "P.npy: int64 or float64 (fractional) [seq] or [batch, seq] (default 0..seq-1 + offset)");
    CLI::Option* offset = add_integer(apply, "--offset", o_.offset, int64_min, int64_max,
                                      "Position of the first token (default 0)");
    positions->excludes(offset);
  }

  // --role, --layout, --output-layout, --inverse, --pairing.
  void add_layout_options(CLI::App* apply) {
    apply->add_option("--role", o_.role, "query or key (matters for xPos)")
        ->check(CLI::IsMember({"query", "key"}))
        ->capture_default_str();
    apply
        ->add_option("--layout", o_.layout_name,
                     "bshd: [batch, seq, heads, head_dim]; bhsd: [batch, heads, seq, head_dim]")
        ->check(CLI::IsMember({"bshd", "bhsd"}))
        ->capture_default_str();
    apply
        ->add_option(
            "--output-layout", o_.output_layout_name,
            "Y's layout, bshd or bhsd (default: --layout): rotate and transpose in one pass")
        ->check(CLI::IsMember({"bshd", "bhsd"}));
    apply->add_flag(
        "--inverse", o_.inverse,
        "Apply the inverse rotation R(p)^T = R(-p) (undo a rotary scheme, with its scale)");
    apply
        ->add_option("--pairing", o_.pairing_name,
                     "Override the config's pairing: interleaved (GPT-J) or rotate_half (GPT-NeoX)")
        ->check(CLI::IsMember({"interleaved", "rotate_half"}));
  }

  void add_fope_and_vision_options(CLI::App* apply) {
    CLI::Option* sin_coef = apply->add_option(
        "--fope-sin-coef", o_.fope_sin_coef,
        "S.npy: FoPE sine coefficients, float32 [heads, D_in, D_out] (default: initialised from "
        "the config's sigma and seed)");
    CLI::Option* cos_coef =
        apply->add_option("--fope-cos-coef", o_.fope_cos_coef,
                          "C.npy: FoPE cosine coefficients, float32 [heads, D_in, D_out]");
    sin_coef->needs(cos_coef);
    cos_coef->needs(sin_coef);
    CLI::Option* vision = apply->add_flag(
        "--vision", o_.vision,
        "Apply the config's vision tower 2-D RoPE to X [patches, heads, head_dim] (needs --grid)");
    CLI::Option* grid = apply->add_option("--grid", o_.grid,
                                          "TxHxW: the patch grid before the merge (HF's grid_thw)");
    vision->needs(grid);
    grid->needs(vision);
  }

  ApplyOptions o_;
};

}  // namespace

std::unique_ptr<Command> apply_command() { return std::make_unique<ApplyCommand>(); }

}  // namespace posemb::tool
