// Absolute position tables and adding them to token embeddings: x[t] += table[position of t].
// The tables are sinusoidal (sinusoidal.hpp) or learned (learned.hpp); any Eigen matrix
// [max_len, d] works, e.g. a Map of a model's own weights.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// An absolute position table [max_len, d]: row p is the embedding of position p.
template <class T>
using EmbeddingTable = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Token embeddings of a batch: [batch, seq, d].
template <class T>
using EmbeddingTensor = Eigen::Tensor<T, 3, Eigen::RowMajor>;

namespace detail {

// max_len > 0, dim > 0 and max_len * dim representable as an element count.
inline void check_table_size(std::int64_t max_len, std::int64_t dim) {
  require_positive("max_len", max_len);
  require_positive("d", dim);
  if (max_len > std::numeric_limits<Eigen::Index>::max() / dim) {
    fail("max_len", max_len,
         "expected max_len * d = max_len * " + std::to_string(dim) + " to fit in Eigen::Index");
  }
}

// Rounds a double to storage type T (through float for half-precision types).
template <class T>
T round_to_storage(double value) {
  return static_cast<T>(static_cast<compute_t<T>>(value));
}

// The table row of `position`; throws unless 0 <= position < table_rows.
inline Eigen::Index table_row_of(std::int64_t position, Eigen::Index table_rows) {
  if (position < 0 || position >= table_rows) {
    fail("position", position,
         "outside the position table's range [0, " + std::to_string(table_rows) + ")");
  }
  return static_cast<Eigen::Index>(position);
}

// x[0 .. d) += table row `row`, in the arithmetic type of T, rounded once to T.
template <class T, class Table>
void add_table_row(T* x, const Table& table, Eigen::Index row) {
  using C = compute_t<T>;
  for (Eigen::Index c = 0; c < table.cols(); ++c) {
    x[c] = static_cast<T>(static_cast<C>(x[c]) + static_cast<C>(table(row, c)));
  }
}

}  // namespace detail

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
    detail::fail("x.cols()", m.cols(),
                 "expected the table width d = " + std::to_string(table.cols()));
  }
  if (positions.size() != m.rows()) {
    detail::fail("positions.size()", positions.size(),
                 "expected one position per row of x = " + std::to_string(m.rows()));
  }
  for (Eigen::Index t = 0; t < m.rows(); ++t) detail::table_row_of(positions[t], table.rows());
  using T = typename Derived::Scalar;
  using C = compute_t<T>;
  for (Eigen::Index t = 0; t < m.rows(); ++t) {
    const Eigen::Index row = static_cast<Eigen::Index>(positions[t]);
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      m(t, c) = static_cast<T>(static_cast<C>(m(t, c)) + static_cast<C>(table(row, c)));
    }
  }
}

// Out of place: returns x + table rows as a plain matrix of x's shape.
template <class Derived, class TableDerived>
typename Derived::PlainObject add_position_embeddings(
    const Eigen::MatrixBase<Derived>& x, const PositionVector& positions,
    const Eigen::MatrixBase<TableDerived>& table) {
  typename Derived::PlainObject out = x;
  add_position_embeddings_inplace(out, positions, table);
  return out;
}

// x: [batch, seq, d], an Eigen::Tensor<T, 3, RowMajor> or a TensorMap of one. positions: a
// PositionMatrix [batch, seq] (or [1, seq] shared by every batch row) or a scalar offset (token s
// at offset + s). Allocates nothing.
template <class X, class TableDerived, IfTensor3<X> = 0>
void add_position_embeddings_inplace(X&& x, const Positions& positions,
                                     const Eigen::MatrixBase<TableDerived>& table) {
  const Eigen::Index batch = x.dimension(0), seq = x.dimension(1), d = x.dimension(2);
  if (d != table.cols()) {
    detail::fail("x.dimension(2)", d,
                 "expected the table width d = " + std::to_string(table.cols()));
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
template <class X, class TableDerived, IfTensor3<X> = 0>
EmbeddingTensor<std::remove_const_t<typename std::remove_reference_t<X>::Scalar>>
add_position_embeddings(const X& x, const Positions& positions,
                        const Eigen::MatrixBase<TableDerived>& table) {
  EmbeddingTensor<std::remove_const_t<typename std::remove_reference_t<X>::Scalar>> out = x;
  add_position_embeddings_inplace(out, positions, table);
  return out;
}

}  // namespace posemb
