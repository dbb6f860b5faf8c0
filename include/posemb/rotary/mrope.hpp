// Multimodal rotary position embedding (M-RoPE): each rotary pair takes its angle from one of
// three position axes (t, h, w) of its token.
//
// Wang et al. 2024, "Qwen2-VL", sec. 2.1; HuggingFace apply_multimodal_rotary_pos_emb
// (models/qwen2_vl/modeling_qwen2_vl.py) and apply_interleaved_mrope
// (models/qwen3_vl/modeling_qwen3_vl.py). One frequency ladder inv_freq[j] (any RopeSpec: default,
// YaRN, ...); pair j turns by
//
//   theta_j = pos[a(j)] * inv_freq[j],   pos = (t, h, w) of the token,
//
// with the axis a(j) set by the sections (s0, s1, s2), s0 + s1 + s2 = rotary_dim / 2:
//   Chunked     (Qwen2-VL, Qwen2.5-VL):   a(j) = t for j < s0, h for j < s0 + s1, else w
//   Interleaved (Qwen3-VL, Qwen3.5):      a(j) = h if j % 3 == 1 and j < 3 s1,
//                                                w if j % 3 == 2 and j < 3 s2, else t
// Sections (4, 2, 2), 8 pairs, the axis of pair 0 .. 7 (ggml draws it per feature):
//   Chunked      [tttthhww]
//   Interleaved  [thwthwtt]
// The pairing (which features form pair j), partial rotary and the attention scale are the
// RopeSpec's, exactly as for 1-D RoPE. With t = h = w every pair turns by pos * inv_freq[j]: the
// rotation is 1-D RoPE bit for bit, and shifting all three axes by d is a 1-D shift by d (the
// KV-cache helpers apply unchanged).
//
// Angles are formed in double (detail/cos_sin.hpp); M-RoPE runs through the one rotary engine
// (detail/rotary_engine.hpp), as a source formed per call (MropeSpec) or gathered from a 1-D
// RoPE table (MropeTable).
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "posemb/detail/cos_sin.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// How the sections map pairs to axes (see the header comment).
enum class MropeLayout { Chunked, Interleaved };

inline const char* to_string(MropeLayout layout) {
  return layout == MropeLayout::Chunked ? "chunked" : "interleaved";
}

// The three position axes of a token.
enum MropeAxis : int { kAxisT = 0, kAxisH = 1, kAxisW = 2 };

// Pairs per axis (s0, s1, s2) = (t, h, w), HF's mrope_section.
using MropeSections = std::array<int, 3>;

// M-RoPE: a RopeSpec (frequencies, scale, pairing, rotary slice) plus the axis of each pair.
struct MropeSpec {
  RopeSpec rope;
  MropeSections sections{};
  MropeLayout layout = MropeLayout::Chunked;

  // Throws posemb::Error unless the RopeSpec is valid, every section is >= 0, the sections sum
  // to rotary_dim / 2 and, interleaved, the h and w pairs (j < 3 s1, j < 3 s2) exist.
  void validate() const {
    rope.validate();
    if (layout != MropeLayout::Chunked && layout != MropeLayout::Interleaved) {
      detail::fail("mrope layout", static_cast<int>(layout),
                   "expected MropeLayout::Chunked or MropeLayout::Interleaved");
    }
    const std::string listed = "[" + std::to_string(sections[0]) + ", " +
                               std::to_string(sections[1]) + ", " + std::to_string(sections[2]) +
                               "]";
    for (std::size_t a = 0; a < 3; ++a) {
      if (sections[a] < 0) {
        detail::fail("mrope_section[" + std::to_string(a) + "]", sections[a], "expected >= 0");
      }
    }
    const long long sum = static_cast<long long>(sections[0]) + sections[1] + sections[2];
    if (sum != rope.pairs()) {
      detail::fail("mrope_section", listed + " (sum " + std::to_string(sum) + ")",
                   "expected a sum of rotary_dim / 2 = " + std::to_string(rope.pairs()));
    }
    if (layout == MropeLayout::Interleaved) {
      // The last h pair is 3 (s1 - 1) + 1, the last w pair 3 (s2 - 1) + 2.
      if (sections[1] > 0 && 3LL * (sections[1] - 1) + 1 >= rope.pairs()) {
        detail::fail("mrope_section", listed,
                     "expected interleaved h pairs 1, 4, ..., 3 s1 - 2 below rotary_dim / 2 = " +
                         std::to_string(rope.pairs()));
      }
      if (sections[2] > 0 && 3LL * (sections[2] - 1) + 2 >= rope.pairs()) {
        detail::fail("mrope_section", listed,
                     "expected interleaved w pairs 2, 5, ..., 3 s2 - 1 below rotary_dim / 2 = " +
                         std::to_string(rope.pairs()));
      }
    }
  }
};

// An M-RoPE spec, validated.
//
// Example (Qwen2-VL-7B: head_dim 128, theta 1e6, mrope_section [16, 24, 24]):
//   const posemb::MropeSpec spec = posemb::make_mrope_spec(
//       posemb::default_rope_spec(128, 1000000.0), {16, 24, 24}, posemb::MropeLayout::Chunked);
inline MropeSpec make_mrope_spec(RopeSpec rope, MropeSections sections, MropeLayout layout) {
  MropeSpec spec{std::move(rope), sections, layout};
  spec.validate();
  return spec;
}

// The axis (kAxisT, kAxisH or kAxisW) whose position turns pair j, 0 <= j < rotary_dim / 2.
inline int mrope_axis(const MropeSections& sections, MropeLayout layout, int j) {
  if (layout == MropeLayout::Chunked) {
    return j < sections[0] ? kAxisT : j < sections[0] + sections[1] ? kAxisH : kAxisW;
  }
  if (j % 3 == 1 && j < 3 * sections[1]) return kAxisH;
  if (j % 3 == 2 && j < 3 * sections[2]) return kAxisW;
  return kAxisT;
}

inline int mrope_axis(const MropeSpec& spec, int j) {
  return mrope_axis(spec.sections, spec.layout, j);
}

// ---------------------------------------------------------------------------------------------
// Positions

// Three-axis positions [3, batch, seq] (HF's position_ids for M-RoPE, rows t, h, w).
using MropePositionTensor = Eigen::Tensor<std::int64_t, 3, Eigen::RowMajor>;
using FractionalMropePositionTensor = Eigen::Tensor<double, 3, Eigen::RowMajor>;

// The (t, h, w) positions of the tokens of a [batch, seq] grid:
//   - a PositionMatrix or FractionalPositionMatrix [3, seq]: rows t, h, w shared by the batch;
//   - an MropePositionTensor or FractionalMropePositionTensor [3, batch, seq]: each batch row
//     its own (or [3, 1, seq], shared);
//   - text(positions): 1-D Positions (an offset, [batch, seq], ...) on all three axes, as text
//     tokens and decode steps (offset cache_length + rope_delta, mrope_positions.hpp) have.
// A view: the matrix or tensor must outlive it. A first dimension other than 3 throws.
//
// Example:
//   posemb::PositionMatrix thw(3, seq);   // e.g. from posemb::mrope_position_ids
//   posemb::rotate_inplace(q, thw, spec);
//   posemb::rotate_inplace(q_step, posemb::MropePositions::text(cache_length + delta), spec);
class MropePositions {
 public:
  MropePositions(const PositionMatrix& thw)  // NOLINT: implicit
      : integers_(thw.data()), rows_(1), cols_(thw.cols()) {
    require_three_axes(thw.rows());
  }
  MropePositions(const FractionalPositionMatrix& thw)  // NOLINT: implicit
      : fractions_(thw.data()), rows_(1), cols_(thw.cols()) {
    require_three_axes(thw.rows());
  }
  MropePositions(const MropePositionTensor& thw)  // NOLINT: implicit
      : integers_(thw.data()), rows_(thw.dimension(1)), cols_(thw.dimension(2)) {
    require_three_axes(thw.dimension(0));
  }
  MropePositions(const FractionalMropePositionTensor& thw)  // NOLINT: implicit
      : fractions_(thw.data()), rows_(thw.dimension(1)), cols_(thw.dimension(2)) {
    require_three_axes(thw.dimension(0));
  }

  // 1-D positions on every axis (t = h = w).
  static MropePositions text(const Positions& positions) { return MropePositions(positions); }

  // The same for an activation of `shape`; 1-D positions name a likely layout mistake as
  // Positions::check does.
  void check(const ActivationShape& shape) const {
    if (!three_axes()) {
      text_.check(shape);
      return;
    }
    check(shape.batch, shape.seq);
  }

  // Throws unless the positions fit a [batch, seq] grid and are finite.
  void check(Eigen::Index batch, Eigen::Index seq) const {
    if (!three_axes()) {
      text_.check(batch, seq);
      return;
    }
    if (cols_ != seq || (rows_ != batch && rows_ != 1)) {
      throw Error("positions shape = [3, " + std::to_string(rows_) + ", " + std::to_string(cols_) +
                  "]: expected [3, batch, seq] = [3, " + std::to_string(batch) + ", " +
                  std::to_string(seq) + "], [3, 1, " + std::to_string(seq) + "] or [3, " +
                  std::to_string(seq) + "]");
    }
    if (fractions_ != nullptr) {
      for (Eigen::Index i = 0; i < 3 * rows_ * cols_; ++i) {
        if (!std::isfinite(fractions_[i])) {
          detail::fail("positions[" + std::to_string(i / (rows_ * cols_)) + ", " +
                           std::to_string(i / cols_ % rows_) + ", " + std::to_string(i % cols_) +
                           "]",
                       fractions_[i], "expected a finite position");
        }
      }
    }
  }
  // The position on `axis` of token s of batch row b.
  double at(int axis, Eigen::Index b, Eigen::Index s) const {
    if (!three_axes()) return text_.at(b, s);
    if (fractions_ != nullptr) return fractions_[index(axis, b, s)];
    return static_cast<double>(integers_[index(axis, b, s)]);
  }
  // The same as an integer, for tables indexed by position; a fractional position throws.
  std::int64_t integer_at(int axis, Eigen::Index b, Eigen::Index s) const {
    if (!three_axes()) return text_.integer_at(b, s);
    if (integers_ != nullptr) return integers_[index(axis, b, s)];
    const double p = fractions_[index(axis, b, s)];
    if (!(p == std::floor(p) && std::fabs(p) < 9.0e18)) {
      detail::fail("position", p, "expected an integer position (a table holds whole positions)");
    }
    return static_cast<std::int64_t>(p);
  }

 private:
  explicit MropePositions(const Positions& text) : text_(text) {}

  static void require_three_axes(Eigen::Index axes) {
    if (axes != 3) {
      detail::fail("positions.dimension(0)", axes,
                   "expected 3 axes (t, h, w); use MropePositions::text for 1-D positions");
    }
  }
  bool three_axes() const { return integers_ != nullptr || fractions_ != nullptr; }
  Eigen::Index index(int axis, Eigen::Index b, Eigen::Index s) const {
    return (axis * rows_ + (rows_ == 1 ? 0 : b)) * cols_ + s;
  }

  Positions text_ = Positions(0);
  const std::int64_t* integers_ = nullptr;
  const double* fractions_ = nullptr;
  Eigen::Index rows_ = 0, cols_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Table

// A precomputed M-RoPE table: the 1-D RoPE table of the spec's frequencies for positions
// [first_position, first_position + count), from which each pair's cos/sin is gathered at its
// axis' position. Every axis' position must lie in the range. Holds compute_t<T>, like RopeTable.
// Immutable after construction: build once, share across threads.
//
// Example:
//   const posemb::MropeTable<float> table(spec, /*first_position=*/0, /*count=*/32768);
//   posemb::rotate_inplace(q, thw, table);
namespace detail {
inline const MropeSpec& validated(const MropeSpec& spec) {
  spec.validate();
  return spec;
}
}  // namespace detail

template <class T>
class MropeTable {
 public:
  using compute_type = compute_t<T>;

  MropeTable(const MropeSpec& spec, std::int64_t first_position, std::int64_t count)
      : rope_(detail::validated(spec).rope, first_position, count),
        sections_(spec.sections),
        layout_(spec.layout) {}

  const RopeTable<T>& rope_table() const { return rope_; }
  const MropeSections& sections() const { return sections_; }
  MropeLayout layout() const { return layout_; }

 private:
  RopeTable<T> rope_;
  MropeSections sections_;
  MropeLayout layout_;
};

namespace detail {

// cos/sin of pairs [begin, end) of a token at pos = (t, h, w): angle pos[a(j)] * inv_freq[j] in
// double, through the one generator (cos_sin_of with magnitude attention_scale: the same product
// and rounding as cos_sin_at, so t = h = w gives RoPE's bits). The inverse: magnitude
// 1 / attention_scale and the sign of sin flipped, as RopeSpecSource.
template <class C>
void mrope_cos_sin(const RopeSpec& rope, const MropeSections& sections, MropeLayout layout,
                   const double* pos, int begin, int end, C* cos, C* sin, Rotation rotation) {
  const bool inverse = rotation == Rotation::Inverse;
  const double scale = inverse ? 1.0 / rope.attention_scale : rope.attention_scale;
  if (end <= begin) return;  // also tells GCC the arrays below are written before use
  double angle[cos_sin_chunk], magnitude[cos_sin_chunk];
  for (int j = begin; j < end; ++j) {
    angle[j - begin] = pos[mrope_axis(sections, layout, j)] * rope.inv_freq[j];
    magnitude[j - begin] = scale;
  }
  cos_sin_of(angle, magnitude, end - begin, cos, sin);
  if (inverse) {
    for (int i = 0; i < end - begin; ++i) sin[i] = -sin[i];
  }
}

// M-RoPE's cos/sin formed in the call (a Pairs source): each pair's angle in double from its
// axis' position, through the one generator (cos_sin_of with magnitude attention_scale; the
// same product and rounding as cos_sin_at, so t = h = w gives RopeSpecSource's bits).
struct MropeSpecSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const MropeSpec& spec;
  const MropePositions& positions;

  MropeSpecSource(const MropeSpec& s, const MropePositions& p) : spec(s), positions(p) {
    spec.validate();
  }
  int rotary_dim() const { return spec.rope.rotary_dim; }
  int rotary_offset() const { return spec.rope.rotary_offset; }
  Pairing pairing() const { return spec.rope.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const {
    check_head_dim(spec.rope, shape);
    positions.check(shape);
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    const double pos[3] = {positions.at(kAxisT, b, s), positions.at(kAxisH, b, s),
                           positions.at(kAxisW, b, s)};
    mrope_cos_sin(spec.rope, spec.sections, spec.layout, pos, begin, end, cos, sin, rotation);
  }
};

// M-RoPE's cos/sin gathered from a 1-D RoPE table (a Pairs source): pair j's values come from
// the table row of its axis' position. The inverse: (cos, -sin) of the rows when the scale is 1,
// otherwise formed as MropeSpecSource forms it, so that both agree bit for bit.
template <class TableT>
struct MropeTableSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const MropeTable<TableT>& table;
  const MropePositions& positions;

  const RopeSpec& rope() const { return table.rope_table().spec(); }
  int rotary_dim() const { return rope().rotary_dim; }
  int rotary_offset() const { return rope().rotary_offset; }
  Pairing pairing() const { return rope().pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  // Every axis' position of every token must have a row (checked before any work).
  void check(const ActivationShape& shape) const {
    check_head_dim(rope(), shape);
    positions.check(shape);
    for (Eigen::Index b = 0; b < shape.batch; ++b) {
      for (Eigen::Index s = 0; s < shape.seq; ++s) {
        for (int a = 0; a < 3; ++a) (void)table.rope_table().cos_row(positions.integer_at(a, b, s));
      }
    }
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    static_assert(std::is_same_v<C, compute_t<TableT>>,
                  "posemb: the table's arithmetic type differs from the tensor's; use "
                  "MropeTable<T> with T the tensor's storage type");
    const RopeTable<TableT>& rows = table.rope_table();
    const MropeSections& sections = table.sections();
    const C* cos_row[3];
    const C* sin_row[3];
    for (int a = 0; a < 3; ++a) {
      const std::int64_t p = positions.integer_at(a, b, s);
      cos_row[a] = rows.cos_row(p);
      sin_row[a] = rows.sin_row(p);
    }
    if (rotation == Rotation::Inverse && rope().attention_scale != 1.0) {
      const double pos[3] = {positions.at(kAxisT, b, s), positions.at(kAxisH, b, s),
                             positions.at(kAxisW, b, s)};
      mrope_cos_sin(rope(), sections, table.layout(), pos, begin, end, cos, sin, rotation);
      return;
    }
    if (table.layout() == MropeLayout::Chunked) {
      // Three runs of consecutive pairs: [0, s0) t, [s0, s0 + s1) h, the rest w.
      const int bounds[4] = {0, sections[0], sections[0] + sections[1], rope().pairs()};
      for (int a = 0; a < 3; ++a) {
        const int from = std::max(begin, bounds[a]), to = std::min(end, bounds[a + 1]);
        for (int j = from; j < to; ++j) {
          cos[j - begin] = cos_row[a][j];
          sin[j - begin] = sin_row[a][j];
        }
      }
    } else {
      for (int j = begin; j < end; ++j) {
        const int a = mrope_axis(sections, MropeLayout::Interleaved, j);
        cos[j - begin] = cos_row[a][j];
        sin[j - begin] = sin_row[a][j];
      }
    }
    if (rotation == Rotation::Inverse) {
      for (int i = 0; i < end - begin; ++i) sin[i] = -sin[i];
    }
  }
};

inline MropeSpecSource rotary_source(const MropeSpec& spec, const MropePositions& positions) {
  return MropeSpecSource(spec, positions);
}
template <class TableT>
MropeTableSource<TableT> rotary_source(const MropeTable<TableT>& table,
                                       const MropePositions& positions) {
  return MropeTableSource<TableT>{table, positions};
}

}  // namespace detail

// The rotate family's sources (rotate.hpp), read at (t, h, w) positions. Tensors only.
template <>
struct rotary_source_traits<MropeSpec>
    : rotary_source_base<MropeSpec, MropePositions, void, false> {
  template <class T>
  static detail::MropeSpecSource engine(const MropeSpec& spec, const MropePositions& positions) {
    return detail::rotary_source(spec, positions);
  }
};
template <class U>
struct rotary_source_traits<MropeTable<U>>
    : rotary_source_base<MropeSpec, MropePositions, compute_t<U>, false> {
  template <class T>
  static detail::MropeTableSource<U> engine(const MropeTable<U>& table,
                                            const MropePositions& positions) {
    return detail::rotary_source(table, positions);
  }
};

}  // namespace posemb
