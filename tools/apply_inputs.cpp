// What `posemb apply` reads (apply_inputs.hpp).
#include "apply_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "arguments.hpp"
#include "npy_files.hpp"

namespace posemb::tool {

TensorLayout ApplyOptions::layout() const { return layout_named(layout_name); }

TensorLayout ApplyOptions::output_layout() const {
  return layout_named(output_layout_name.value_or(layout_name));
}

std::optional<Pairing> ApplyOptions::pairing() const {
  if (!pairing_name) return std::nullopt;
  return pairing_named(*pairing_name);
}

// ---------------------------------------------------------------------------------------------
// TokenGrid

TokenGrid TokenGrid::of(const std::vector<std::int64_t>& shape, TensorLayout layout) {
  TokenGrid grid;
  grid.batch = shape[0];
  grid.x_shape = shape_string(shape);
  if (shape.size() != 4) {
    grid.seq = shape[1];
    return grid;
  }
  const bool bshd = layout == TensorLayout::BSHD;
  grid.layout = layout;
  grid.seq = bshd ? shape[1] : shape[2];
  grid.heads = bshd ? shape[2] : shape[1];
  return grid;
}

std::string TokenGrid::layout_hint(std::int64_t count) const {
  if (!layout || count == seq || count != heads) return "";
  const TensorLayout other =
      *layout == TensorLayout::BSHD ? TensorLayout::BHSD : TensorLayout::BSHD;
  return "; " + std::to_string(count) + " is X's seq under --layout " + to_string(other) +
         ": if X " + x_shape + " is " + layout_axes(other) + ", pass --layout " + to_string(other) +
         (other == TensorLayout::BSHD ? " (the default)" : "");
}

std::string TokenGrid::reading() const {
  if (!layout) return x_shape + " read as [batch, seq, d]";
  return x_shape + " read as --layout " + to_string(*layout) + " " + layout_axes(*layout);
}

// ---------------------------------------------------------------------------------------------
// 1-D positions

double TokenPositions::max() const {
  if (fractional) return fractions.size() == 0 ? -1.0 : fractions.maxCoeff();
  return integers.size() == 0 ? -1.0 : static_cast<double>(integers.maxCoeff());
}

const PositionMatrix& TokenPositions::whole(const std::string& file) const {
  if (fractional) throw Error(file + ": float64 positions: expected int64 positions for a table");
  return integers;
}

namespace {

// offset + s for the seq tokens: [1, seq].
TokenPositions offset_positions(std::int64_t offset, std::int64_t seq) {
  TokenPositions positions;
  positions.integers.resize(1, seq);
  for (std::int64_t s = 0; s < seq; ++s) {
    if (s > 0 && offset > std::numeric_limits<std::int64_t>::max() - s) {
      throw UsageError("--offset = " + std::to_string(offset) +
                       ": expected offset + seq to fit in int64");
    }
    positions.integers(0, s) = offset + s;
  }
  return positions;
}

}  // namespace

TokenPositions token_positions(const ApplyOptions& options, const TokenGrid& grid) {
  const std::int64_t batch = grid.batch, seq = grid.seq;
  if (options.positions.empty()) return offset_positions(options.offset.value_or(0), seq);
  TokenPositions positions;
  const std::string expected = "int64 or float64 [seq] or [batch, seq] = [" + std::to_string(seq) +
                               "] or [" + std::to_string(batch) + ", " + std::to_string(seq) + "]";
  const NpyArray array = read_npy_checked(options.positions, {"<i8", "<f8"}, {1, 2}, expected);
  const std::int64_t rows = array.shape.size() == 2 ? array.shape[0] : 1;
  const std::int64_t cols = array.shape.back();
  if (cols != seq || (rows != 1 && rows != batch)) {
    throw Error(options.positions + ": shape = " + shape_string(array.shape) + ": expected " +
                expected +
                (cols != seq ? " for " + grid.described() + grid.layout_hint(cols) : ""));
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

// ---------------------------------------------------------------------------------------------
// M-RoPE positions

MropePositions MropeTokenPositions::view() const {
  if (form == Form::Shared) return thw;
  if (form == Form::PerRow) return per_row;
  return MropePositions::text(text.view());
}

double MropeTokenPositions::max() const {
  if (form == Form::Text) return text.max();
  const std::int64_t* data = form == Form::Shared ? thw.data() : per_row.data();
  const Eigen::Index size = form == Form::Shared ? thw.size() : per_row.size();
  return size == 0 ? -1.0 : static_cast<double>(*std::max_element(data, data + size));
}

MropeTokenPositions mrope_token_positions(const ApplyOptions& options, const TokenGrid& grid) {
  const std::int64_t batch = grid.batch, seq = grid.seq;
  MropeTokenPositions out;
  const std::string expected = "int64 [3, seq] = [3, " + std::to_string(seq) +
                               "] or [3, batch, seq] = [3, " + std::to_string(batch) + ", " +
                               std::to_string(seq) + "], or 1-D positions [seq] or [batch, seq]";
  if (!options.positions.empty()) {
    const NpyArray array = read_npy_checked(options.positions, {"<i8", "<f8"}, {1, 2, 3}, expected);
    const bool three_axes =
        array.shape.size() == 3 || (array.shape.size() == 2 && array.shape[0] == 3);
    if (three_axes) {
      const bool shared = array.shape.size() == 2;
      if (array.dtype != "<i8" || (!shared && array.shape[0] != 3) || array.shape.back() != seq ||
          (!shared && array.shape[1] != batch && array.shape[1] != 1)) {
        const std::int64_t cols = array.shape.back();
        throw Error(options.positions + ": " + array.dtype +
                    " shape = " + shape_string(array.shape) + ": expected " + expected +
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
    if (part.empty() || part.size() > 7 ||
        part.find_first_not_of("0123456789") != std::string::npos || std::stoll(part) < 1) {
      throw UsageError("--grid = " + text +
                       ": expected TxHxW, three positive integers (e.g. 1x4x6)");
    }
    grid[i] = std::stoll(part);
    begin = end + 1;
  }
  return grid;
}

}  // namespace posemb::tool
