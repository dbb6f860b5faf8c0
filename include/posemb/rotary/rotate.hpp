// The one rotary entry family: every rotary scheme is a source of the one engine
// (detail/rotary_engine.hpp), rotated by the same three calls.
//
//   rotate_inplace(x, positions, source, options)        x rotated in place, nothing allocated
//   rotate(x, out, positions, source, options)           into a caller's `out`
//   rotated(x, positions, source, options)               returns a new tensor (or matrix)
//
// x: a 4-D activation, Eigen::Tensor<T, 4, RowMajor> or a TensorMap of one, [batch, seq, heads,
// head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD); or an Eigen matrix [rows, head_dim]
// (or one column vector [head_dim]) of one head's rows.
//
// Sources, each with its rotary_source_traits specialization beside it:
//   RopeSpec, RopeTable<T>            rope.hpp    RoPE and every scaled variant (scaled.hpp)
//   Xpos{spec, role}                  xpos.hpp    xPos for queries or for keys
//   Fope, FopeTable<T>                fope.hpp    FoPE (tensors only)
//   MropeSpec, MropeTable<T>          mrope.hpp   M-RoPE, (t, h, w) positions (tensors only)
//   VisionRope                        vision.hpp  2-D RoPE of vision towers (tensors only)
//   KeyShift{spec}, KeyRerotation{from, to}  kv/rerotate.hpp  cached keys moved or re-rotated
//   HfFloat32Rope                     hf_float32.hpp  HF's float32 arithmetic (tensors only)
//
// positions: what the source reads. For tensors, Positions (an offset: token s at offset + s, or
// per token PositionMatrix [batch, seq] / [1, seq], FractionalPositionMatrix, PositionVector,
// Positions::same(p)) or, for M-RoPE and vision towers, MropePositions. For matrices,
// RowPositions: a PositionVector with one position per row, or one position for every row.
//
// options (RotateOptions): layouts (in, out, and a sequence offset of out: a KV-cache slot),
// threads, rotation (Rotation::Inverse applies R(p)^T = R(-p), at the same speed). Matrices use
// the rotation only.
//
// Example (C++17; with C++20, posemb::RotateOptions{.rotation = posemb::Rotation::Inverse}):
//   posemb::rotate_inplace(q, /*offset=*/cache_length, spec);
//   posemb::rotate(k_proj, k_cache, positions, table,
//                  posemb::RotateOptions().with_layouts(posemb::Layouts(
//                      posemb::TensorLayout::BSHD, posemb::TensorLayout::BHSD, cache_length)));
//   const auto restored = posemb::rotated(q, 0, spec, posemb::RotateOptions().inverse());
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// How to rotate: an aggregate with defaults. C++20 names the fields it sets,
// RotateOptions{.rotation = Rotation::Inverse}; C++17 (where designated initialisers warn under
// -Wpedantic) chains the setters, RotateOptions().inverse().with_threads(Threads{2}), or lists
// the fields in order, RotateOptions{TensorLayout::BHSD, Threads{2}, Rotation::Inverse}.
struct RotateOptions {
  Layouts layouts = TensorLayout::BSHD;   // input and output layout, output sequence offset
  Threads threads = {};                   // up to this many threads (large tensors only)
  Rotation rotation = Rotation::Forward;  // Inverse: R(p)^T = R(-p)

  RotateOptions with_layouts(Layouts value) const {
    RotateOptions options = *this;
    options.layouts = value;
    return options;
  }
  RotateOptions with_threads(Threads value) const {
    RotateOptions options = *this;
    options.threads = std::move(value);
    return options;
  }
  RotateOptions with_rotation(Rotation value) const {
    RotateOptions options = *this;
    options.rotation = value;
    return options;
  }
  RotateOptions inverse() const { return with_rotation(Rotation::Inverse); }
};

// The positions of a matrix's rows: a PositionVector [rows], row r at per_row[r] (a view: the
// vector must outlive it; an Eigen expression of one is copied); or one position for every row
// (e.g. all heads of one decode token, a head per row).
class RowPositions {
 public:
  RowPositions(const PositionVector& per_row)  // NOLINT: implicit
      : positions_(per_row), count_(per_row.size()) {}
  template <class Derived>
  RowPositions(const Eigen::MatrixBase<Derived>& per_row)  // NOLINT: implicit
      : copy_(per_row), positions_(copy_), count_(copy_.size()) {}
  RowPositions(std::int64_t every_row)  // NOLINT: implicit
      : positions_(Positions::same(every_row)) {}
  RowPositions(const RowPositions&) = delete;  // positions_ may point into copy_
  RowPositions& operator=(const RowPositions&) = delete;

  // The positions of a matrix's rows as a [1, rows] grid; throws unless one per row.
  template <class Derived>
  Positions of(const Eigen::MatrixBase<Derived>& x) const {
    const Eigen::Index rows = (x.cols() == 1 && x.rows() != 1) ? 1 : x.rows();
    if (count_ >= 0 && count_ != rows) {
      detail::fail("positions.size()", count_,
                   "expected one position per row = " + std::to_string(rows));
    }
    return positions_;
  }

 private:
  PositionVector copy_;
  Positions positions_;
  Eigen::Index count_ = -1;  // -1: the same position for every row
};

// How a source feeds the engine. Each source type specializes it (deriving from
// rotary_source_base) with
//   template <class T> static auto engine(const Source&, const positions_type&);
// the engine's adapter for storage type T (detail/rotary_engine.hpp: a Rows, Pairs or RowFill
// source), built after validating the source. The primary template marks everything else as
// no source, so that a wrong argument gets posemb's message.
template <class Source>
struct rotary_source_traits {
  static constexpr bool is_source = false;
  using scheme = void;
  using positions_type = Positions;
};

// Scheme: the scheme's spec type (RopeTable's is RopeSpec; fused_rope_scores takes RoPE's).
// PositionsType: what the source reads. TableCompute: a table's arithmetic type (void when cos/sin
// are formed in the call). RotatesRows: whether it rotates matrix rows (one head, 1-D positions).
template <class Scheme, class PositionsType = Positions, class TableCompute = void,
          bool RotatesRows = true>
struct rotary_source_base {
  static constexpr bool is_source = true;
  static constexpr bool rotates_rows = RotatesRows;
  using scheme = Scheme;
  using positions_type = PositionsType;
  using table_compute_type = TableCompute;
};

// The positions a source reads from a tensor X, or a matrix's RowPositions.
template <class X, class Source>
using positions_for_t = std::conditional_t<is_eigen_matrix_v<X>, RowPositions,
                                           typename rotary_source_traits<Source>::positions_type>;

namespace detail {

// A readable compile error for anything but a source, or a table of another arithmetic type
// than storage type T needs. Returns whether both hold.
template <class Source, class T>
constexpr bool require_rotary_source() {
  using Traits = rotary_source_traits<Source>;
  static_assert(Traits::is_source,
                "posemb: the source must be a rotary source: posemb::RopeSpec, RopeTable<T>, "
                "Xpos, Fope, FopeTable<T>, MropeSpec, MropeTable<T>, VisionRope, KeyShift or "
                "KeyRerotation");
  if constexpr (Traits::is_source) {
    using Table = typename Traits::table_compute_type;
    static_assert(std::is_void_v<Table> || std::is_same_v<Table, compute_t<T>>,
                  "posemb: this table holds another arithmetic type than the tensor needs (double "
                  "for double storage, float for float/half/bf16): use RopeTable<T> with T the "
                  "tensor's storage type (likewise FopeTable<T>, MropeTable<T>)");
    return std::is_void_v<Table> || std::is_same_v<Table, compute_t<T>>;
  }
  return false;
}

// The same for a 4-D activation X, and for matrix rows of scalar T.
template <class X, class Source>
constexpr bool require_tensor_source() {
  static_assert(require_activation_tensor<X>());
  if constexpr (is_row_major_tensor_v<X, 4>) return require_rotary_source<Source, scalar_of_t<X>>();
  return false;
}
template <class T, class Source>
constexpr bool require_row_source() {
  if constexpr (require_rotary_source<Source, T>()) {
    static_assert(rotary_source_traits<Source>::rotates_rows,
                  "posemb: this source rotates 4-D tensors only (FoPE's per-head and M-RoPE's "
                  "three-axis cos/sin); matrix rows take RoPE, xPos, KeyShift and KeyRerotation");
    return rotary_source_traits<Source>::rotates_rows;
  }
  return false;
}

// The engine's adapter of `source` for storage type T (rotary_source_traits).
template <class T, class Source, class P>
auto engine_source(const Source& source, const P& positions) {
  return rotary_source_traits<Source>::template engine<T>(source, positions);
}

// Matrix rows in place: x [rows, head_dim], one head per row, as a [1, rows] grid.
template <class Derived, class Source>
void rotate_rows(const Eigen::MatrixBase<Derived>& x, const RowPositions& positions,
                 const Source& source, Rotation rotation) {
  using T = typename Derived::Scalar;
  if constexpr (require_row_source<T, Source>()) {
    const Positions rows = positions.of(x);
    rotate_matrix_rows(x, engine_source<T>(source, rows), rotation);
  }
}

// Whether a source's traits rotate tensors themselves (own_rotation = true, with a static
// rotate_tensor<T>): HfFloat32Rope (hf_float32.hpp), whose arithmetic is not the engine's.
template <class Traits, class = void>
struct has_own_rotation : std::false_type {};
template <class Traits>
struct has_own_rotation<Traits, std::void_t<decltype(Traits::own_rotation)>>
    : std::bool_constant<Traits::own_rotation> {};

// One rotation of a 4-D activation by `source`: the engine, or the source's own rotation.
template <class T, class Source, class P>
void rotate_tensor_by(const Source& source, const P& positions, const ActivationShape& in_shape,
                      const T* in, const ActivationShape& out_shape, Eigen::Index out_seq_offset,
                      T* out, const RotateOptions& options) {
  using Traits = rotary_source_traits<Source>;
  if constexpr (has_own_rotation<Traits>::value) {
    Traits::template rotate_tensor<T>(source, positions, in_shape, in, out_shape, out_seq_offset,
                                      out, options);
  } else {
    rotate_tensor(engine_source<T>(source, positions), in_shape, in, out_shape, out_seq_offset, out,
                  options.threads, options.rotation);
  }
}

// The dimensions of the tensor rotated() returns: x's, in layouts.out.
inline Eigen::array<Eigen::Index, 4> returned_dims(const Eigen::array<Eigen::Index, 4>& dims,
                                                   const Layouts& layouts) {
  if (layouts.out_seq_offset != 0) {
    fail("options.layouts.out_seq_offset", layouts.out_seq_offset,
         "expected 0 for a returned tensor (it holds x's tokens only; rotate into a longer out)");
  }
  ActivationShape shape(dims, layouts.in);
  shape.layout = layouts.out;
  return shape.dims();
}

}  // namespace detail

// In place; allocates nothing (a Fope source: one buffer per thread and call).
//
// Example:
//   posemb::rotate_inplace(q, /*offset=*/cache_length, spec);                 // q: BSHD
//   posemb::rotate_inplace(k, positions, table, posemb::RotateOptions().inverse());
template <class X, class Source>
void rotate_inplace(X&& x, const positions_for_t<X, Source>& positions, const Source& source,
                    const RotateOptions& options = {}) {
  if constexpr (is_eigen_matrix_v<X>) {
    detail::rotate_rows(x, positions, source, options.rotation);
  } else if constexpr (detail::require_tensor_source<X, Source>()) {
    const Layouts& layouts = options.layouts;
    detail::rotate_tensor_by(source, positions, ActivationShape(x.dimensions(), layouts.in),
                             x.data(), ActivationShape(x.dimensions(), layouts.out),
                             layouts.out_seq_offset, x.data(), options);
  }
}

// Out of place into a caller's `out`; allocates nothing. options.layouts may differ between x and
// out (rotate and transpose in one pass) and may place the tokens at a sequence offset of a
// longer out (a KV-cache slot); a single layout means out has x's dimensions. A matrix `out` is
// assigned x's rows (an Eigen::Matrix resizes) and rotated in place.
//
// Example (projection output [1, seq, 8, 128] into a BHSD KV cache [1, 8, 4096, 128] at its
// current length):
//   posemb::rotate(k_proj, k_cache, positions, table,
//                  posemb::RotateOptions().with_layouts(posemb::Layouts(
//                      posemb::TensorLayout::BSHD, posemb::TensorLayout::BHSD, cache_length)));
template <class X, class Y, class Source>
void rotate(const X& x, Y&& out, const positions_for_t<X, Source>& positions, const Source& source,
            const RotateOptions& options = {}) {
  if constexpr (is_eigen_matrix_v<X>) {
    static_assert(is_eigen_matrix_v<Y>, "posemb: a matrix x rotates into a matrix out");
    out = x;
    detail::rotate_rows(out, positions, source, options.rotation);
  } else if constexpr (detail::require_tensor_source<X, Source>() &&
                       require_activation_tensor<Y>()) {
    static_assert(std::is_same_v<scalar_of_t<X>, scalar_of_t<Y>>,
                  "posemb: x and out must have the same scalar type");
    const Layouts& layouts = options.layouts;
    if (!layouts.into_slot) require_same_dims(x, out);
    detail::rotate_tensor_by(source, positions, ActivationShape(x.dimensions(), layouts.in),
                             x.data(), ActivationShape(out.dimensions(), layouts.out),
                             layouts.out_seq_offset, out.data(), options);
  }
}

// Out of place, returning a new Tensor4 in options.layouts.out (x's layout unless changed; no
// sequence offset), or a plain matrix of x's shape.
//
// Example:
//   const posemb::Tensor4<float> q_rot =
//       posemb::rotated(q, 0, posemb::Xpos{spec, posemb::XposRole::Query});
template <class X, class Source>
auto rotated(const X& x, const positions_for_t<X, Source>& positions, const Source& source,
             const RotateOptions& options = {}) {
  if constexpr (is_eigen_matrix_v<X>) {
    typename X::PlainObject out = x;
    detail::rotate_rows(out, positions, source, options.rotation);
    return out;
  } else if constexpr (detail::require_tensor_source<X, Source>()) {
    Tensor4<scalar_of_t<X>> out(detail::returned_dims(x.dimensions(), options.layouts));
    posemb::rotate(x, out, positions, source, options);
    return out;
  }
}

}  // namespace posemb
