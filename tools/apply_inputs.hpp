// What `posemb apply` reads: its options, the [batch, seq] grid of X's tokens, and the token
// positions (1-D, or M-RoPE's three axes) from --positions or --offset.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "posemb/rotary/mrope.hpp"
#include "posemb/tensor.hpp"

namespace posemb::tool {

struct ApplyOptions {
  std::string config, input, output, positions;
  std::optional<std::int64_t> offset, seq_len;
  std::string role = "query";
  std::string layout_name = "bshd";               // --layout, checked by CLI11
  std::optional<std::string> output_layout_name;  // --output-layout (default: --layout)
  bool inverse = false;
  std::optional<std::string> pairing_name;  // --pairing: overrides the config's pairing
  std::string fope_sin_coef, fope_cos_coef;
  std::string weights;  // --weights: a safetensors checkpoint with a learned position table
  std::optional<std::int64_t> layer;
  bool vision = false;            // the vision tower's 2-D RoPE on X [patches, heads, head_dim]
  std::string grid;               // --grid TxHxW
  bool verbose = false;           // print how X, the positions and the scheme were read
  bool strict = false;            // refuse keys the config reader did not use
  std::string angles = "exact";   // --angles exact|hf-float32 (rope_rotation.hpp)
  std::string dtype = "float32";  // --dtype: the storage type X's values are rotated in

  // The names above as values (arguments.hpp).
  TensorLayout layout() const;
  TensorLayout output_layout() const;
  std::optional<Pairing> pairing() const;
  Rotation rotation() const { return inverse ? Rotation::Inverse : Rotation::Forward; }
  bool has_fope_coefficients() const { return !fope_sin_coef.empty(); }
};

// The [batch, seq] grid of X's tokens: 4-D X read by --layout (bshd [batch, seq, heads,
// head_dim], bhsd [batch, heads, seq, head_dim]), or 3-D token embeddings [batch, seq, d].
struct TokenGrid {
  std::int64_t batch = 0, seq = 0;
  std::optional<TensorLayout> layout;  // 4-D X: --layout; none for 3-D X
  std::int64_t heads = -1;  // 4-D X: the heads axis, the seq axis under the other --layout
  std::string x_shape;      // X's shape, "[1, 32, 8, 64]"

  static TokenGrid of(const std::vector<std::int64_t>& shape, TensorLayout layout);

  // "; 8 is X's seq under --layout bshd ..." when `count` positions fit only the other layout's
  // seq axis (a layout mistake the shapes reveal), else "".
  std::string layout_hint(std::int64_t count) const;
  // "[1, 32, 8, 64] read as --layout bshd [batch, seq, heads, head_dim]"
  std::string reading() const;
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
  double max() const;
  // The integer positions of an absolute table; fractions are refused.
  const PositionMatrix& whole(const std::string& file) const;
};

TokenPositions token_positions(const ApplyOptions& options, const TokenGrid& grid);

// M-RoPE positions (tests/data/multimodal/README.md): --positions int64 [3, seq] or
// [3, batch, seq] (rows t, h, w); 1-D positions ([seq], [batch, seq] whose first dimension is not
// 3, or --offset) put every axis at the same position (text).
struct MropeTokenPositions {
  TokenPositions text;
  PositionMatrix thw;           // [3, seq]
  MropePositionTensor per_row;  // [3, batch, seq]
  enum class Form { Text, Shared, PerRow } form = Form::Text;

  MropePositions view() const;
  double max() const;  // the largest position, or -1 for no token
};

MropeTokenPositions mrope_token_positions(const ApplyOptions& options, const TokenGrid& grid);

// --grid TxHxW -> {T, H, W}.
std::array<std::int64_t, 3> parse_grid(const std::string& text);

}  // namespace posemb::tool
