// Sinusoidal absolute position embeddings, and adding any absolute table to token embeddings.
//
// Vaswani et al. 2017, "Attention Is All You Need", sec. 3.5. Position p, model width d:
//
//   w_i = base^(-2i / d),  i = 0 .. d/2 - 1          (base = 10000 in the paper)
//   Interleaved (the paper, the original Transformer):  pe[p, 2i] = sin(p w_i),  pe[p, 2i+1] = cos(p w_i)
//   Concat:                                            pe[p, i]  = sin(p w_i),  pe[p, d/2 + i] = cos(p w_i)
//
// Concat is the [sin | cos] order of tensor2tensor's get_timing_signal_1d and fairseq. Those
// implementations also space their frequencies differently, w_i = exp(-i ln(base) / (d/2 - 1)),
// so their tables are not a permutation of this one; posemb uses the paper's w_i in both layouts.
//
// The angle p w_i is formed in double and reduced mod 2 pi (as in rope.hpp); only the final
// sin/cos is rounded to the storage type. Every row has norm sqrt(d/2) (sin^2 + cos^2 = 1 per pair).
//
// add_position_embeddings adds rows of any absolute table (this one, or a learned one from
// learned.hpp) to token embeddings at per-token positions: x[t] += table[positions[t]].
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "posemb/detail/storage.hpp"
#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rope.hpp"

namespace posemb {

enum class SinusoidalLayout {
  Interleaved,  // sin at 2i, cos at 2i + 1 (Vaswani et al. 2017)
  Concat,       // sin at i, cos at d/2 + i (tensor2tensor / fairseq order)
};

inline const char* to_string(SinusoidalLayout layout) {
  return layout == SinusoidalLayout::Interleaved ? "interleaved" : "concat";
}

// An absolute position table [max_len, d]: row p is the embedding of position p.
template <class T>
using EmbeddingTable = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Token embeddings of a batch: [batch, seq, d].
template <class T>
using EmbeddingTensor = Eigen::Tensor<T, 3, Eigen::RowMajor>;

namespace detail {

inline void check_sinusoidal_layout(SinusoidalLayout layout) {
  if (layout != SinusoidalLayout::Interleaved && layout != SinusoidalLayout::Concat) {
    fail("layout", static_cast<int>(layout),
         "expected SinusoidalLayout::Interleaved or SinusoidalLayout::Concat");
  }
}

// max_len > 0, dim > 0 and max_len * dim representable as an element count.
inline void check_table_size(std::int64_t max_len, std::int64_t dim) {
  require_positive("max_len", max_len);
  require_positive("d", dim);
  if (max_len > std::numeric_limits<Eigen::Index>::max() / dim) {
    fail("max_len", max_len, "expected max_len * d = max_len * " + std::to_string(dim) +
                                 " to fit in Eigen::Index");
  }
}

// Rounds a double to storage type T (through float for half-precision types).
template <class T>
T round_to_storage(double value) {
  return static_cast<T>(static_cast<compute_t<T>>(value));
}

// Writes the embedding of `position` into out[0 .. d), rounded to T.
// inv_freq: [d / 2], w_i = base^(-2i/d).
template <class T>
void sinusoidal_row(std::int64_t position, const Eigen::VectorXd& inv_freq, SinusoidalLayout layout,
                    T* out) {
  const Eigen::Index half = inv_freq.size();
  for (Eigen::Index i = 0; i < half; ++i) {
    const double angle = rope_angle(position, inv_freq[i]);
    const Eigen::Index sin_at = layout == SinusoidalLayout::Interleaved ? 2 * i : i;
    const Eigen::Index cos_at = layout == SinusoidalLayout::Interleaved ? 2 * i + 1 : half + i;
    out[sin_at] = round_to_storage<T>(std::sin(angle));
    out[cos_at] = round_to_storage<T>(std::cos(angle));
  }
}

// The table row of `position`; throws unless 0 <= position < table_rows.
inline Eigen::Index table_row_of(std::int64_t position, Eigen::Index table_rows) {
  if (position < 0 || position >= table_rows) {
    fail("position", position,
         "outside the position table's range [0, " + std::to_string(table_rows) + ")");
  }
  return static_cast<Eigen::Index>(position);
}

template <class X>
using if_tensor3 = if_row_major_tensor<X, 3>;

// x[0 .. d) += table row `row`, in the arithmetic type of T, rounded once to T.
template <class T, class Table>
void add_table_row(T* x, const Table& table, Eigen::Index row) {
  using C = compute_t<T>;
  for (Eigen::Index c = 0; c < table.cols(); ++c) {
    x[c] = static_cast<T>(static_cast<C>(x[c]) + static_cast<C>(table(row, c)));
  }
}

}  // namespace detail

// The embedding of one position, in double: [d]. Any position (negative too) is accepted.
inline Eigen::VectorXd sinusoidal_embedding(std::int64_t position, int d, double base = 10000.0,
                                            SinusoidalLayout layout = SinusoidalLayout::Interleaved) {
  detail::check_sinusoidal_layout(layout);
  detail::require_even_positive("d", d);
  const Eigen::VectorXd inv_freq = default_inv_freq(d, base);  // checks base
  Eigen::VectorXd out(d);
  detail::sinusoidal_row(position, inv_freq, layout, out.data());
  return out;
}

// The table for positions 0 .. max_len - 1, stored as T: [max_len, d].
template <class T = float>
EmbeddingTable<T> sinusoidal_table(std::int64_t max_len, int d, double base = 10000.0,
                                   SinusoidalLayout layout = SinusoidalLayout::Interleaved) {
  static_assert(detail::is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_sinusoidal_layout(layout);
  detail::require_even_positive("d", d);
  detail::check_table_size(max_len, d);
  const Eigen::VectorXd inv_freq = default_inv_freq(d, base);  // checks base
  EmbeddingTable<T> table(static_cast<Eigen::Index>(max_len), d);
  for (Eigen::Index p = 0; p < table.rows(); ++p) {
    detail::sinusoidal_row(p, inv_freq, layout, table.row(p).data());
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// Adding an absolute table to token embeddings: x[t] += table[position of t]. `table` is any
// Eigen matrix [max_len, d] (a sinusoidal_table, a LearnedPositionTable's weights(), a Map of a
// model's weights); positions must lie in [0, max_len), all are checked before x is changed.
// Arithmetic is in float (double for double x), rounded once to x's type.

// x: [tokens, d]; positions: [tokens], row t at positions[t].
template <class Derived, class TableDerived>
void add_position_embeddings_inplace(const Eigen::MatrixBase<Derived>& x,
                                     const PositionVector& positions,
                                     const Eigen::MatrixBase<TableDerived>& table) {
  Derived& m = const_cast<Derived&>(x.derived());
  if (m.cols() != table.cols()) {
    detail::fail("x.cols()", m.cols(), "expected the table width d = " + std::to_string(table.cols()));
  }
  if (positions.size() != m.rows()) {
    detail::fail("positions.size()", positions.size(),
                 "expected one position per row of x = " + std::to_string(m.rows()));
  }
  for (Eigen::Index t = 0; t < m.rows(); ++t) detail::table_row_of(positions[t], table.rows());
  using T = typename Derived::Scalar;
  using C = detail::compute_t<T>;
  for (Eigen::Index t = 0; t < m.rows(); ++t) {
    const Eigen::Index row = static_cast<Eigen::Index>(positions[t]);
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      m(t, c) = static_cast<T>(static_cast<C>(m(t, c)) + static_cast<C>(table(row, c)));
    }
  }
}

// Out of place: returns x + table rows as a plain matrix of x's shape.
template <class Derived, class TableDerived>
typename Derived::PlainObject add_position_embeddings(const Eigen::MatrixBase<Derived>& x,
                                                      const PositionVector& positions,
                                                      const Eigen::MatrixBase<TableDerived>& table) {
  typename Derived::PlainObject out = x;
  add_position_embeddings_inplace(out, positions, table);
  return out;
}

// x: [batch, seq, d], an Eigen::Tensor<T, 3, RowMajor> or a TensorMap of one. positions: a
// PositionMatrix [batch, seq] (or [1, seq] shared by every batch row) or a scalar offset (token s
// at offset + s). Allocates nothing.
template <class X, class TableDerived, detail::if_tensor3<X> = 0>
void add_position_embeddings_inplace(X&& x, const detail::TokenPositions& positions,
                                     const Eigen::MatrixBase<TableDerived>& table) {
  const Eigen::Index batch = x.dimension(0), seq = x.dimension(1), d = x.dimension(2);
  if (d != table.cols()) {
    detail::fail("x.dimension(2)", d, "expected the table width d = " + std::to_string(table.cols()));
  }
  positions.check(batch, seq);
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) detail::table_row_of(positions.at(b, s), table.rows());
  }
  auto* data = x.data();
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      const Eigen::Index row = static_cast<Eigen::Index>(positions.at(b, s));
      detail::add_table_row(data + (b * seq + s) * d, table.derived(), row);
    }
  }
}

// Out of place, returning a new tensor [batch, seq, d].
template <class X, class TableDerived, detail::if_tensor3<X> = 0>
EmbeddingTensor<std::remove_const_t<typename std::remove_reference_t<X>::Scalar>>
add_position_embeddings(const X& x, const detail::TokenPositions& positions,
                        const Eigen::MatrixBase<TableDerived>& table) {
  EmbeddingTensor<std::remove_const_t<typename std::remove_reference_t<X>::Scalar>> out = x;
  add_position_embeddings_inplace(out, positions, table);
  return out;
}

}  // namespace posemb
