// Query/key weight permutation between the two RoPE pairings.
//
// A projection trained for one pairing runs with the other pairing once the rotary rows of each
// head are reordered. Within one head with rotary_dim r and h = r / 2, pair i is
//   Interleaved: features (2i, 2i + 1)        RotateHalf: features (i, i + h)
// and turns at inv_freq[i] in both. Interleaved -> rotate-half therefore moves
//   row 2i -> row i,   row 2i + 1 -> row i + h,   i = 0 .. h - 1      (P)
// and rotate-half -> interleaved is its inverse (P^-1). Rows r .. head_dim - 1 of each head
// (partial rotary) do not move. This is the `permute` of HuggingFace's
// convert_llama_weights_to_hf.py, w.view(n_heads, head_dim / 2, 2, in).transpose(1, 2), which
// turns Meta LLaMA checkpoints (interleaved) into HuggingFace LLaMA order (rotate-half).
//
// With W' = P(W):  RoPE_rotate_half(W' x) = P(RoPE_interleaved(W x)), so q . k is unchanged when
// both Wq and Wk (and their biases) are permuted. Wq is permuted with the query head count and
// Wk with the key-value head count: under grouped-query attention they differ.
//
// One entry point for both directions: permute_pairing(w, n_heads, from, to, rotary_dim).
//
// Weights are in the PyTorch nn.Linear layout, rows = output features:
//   w: [n_heads * head_dim, in_features], or a bias / feature vector [n_heads * head_dim].
// Moving rows is a pure copy: P^-1(P(w)) == w bit for bit.
#pragma once

#include <Eigen/Core>
#include <optional>
#include <string>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// Checks the arguments and returns head_dim = rows / n_heads. No rotary_dim: the whole head
// rotates (rotary_dim = head_dim).
inline Eigen::Index permute_head_dim(Eigen::Index rows, int n_heads,
                                     std::optional<int> rotary_dim) {
  require_positive("n_heads", n_heads);
  if (rows % n_heads != 0) {
    fail("rows", rows,
         "expected a multiple of n_heads = " + std::to_string(n_heads) +
             " (rows = n_heads * head_dim)");
  }
  const Eigen::Index head_dim = rows / n_heads;
  if (!rotary_dim) {
    if (head_dim < 2 || head_dim % 2 != 0) {
      fail("head_dim", head_dim,
           "expected an even number >= 2 (head_dim = rows / n_heads) to permute whole heads");
    }
    return head_dim;
  }
  require_even_positive("rotary_dim", *rotary_dim);
  if (*rotary_dim > head_dim) {
    fail("rotary_dim", *rotary_dim,
         "expected <= head_dim = rows / n_heads = " + std::to_string(head_dim));
  }
  return head_dim;
}

// Reorders the first rotary_dim rows of every head of w ([n_heads * head_dim, cols]) by P
// (to_rotate_half) or P^-1.
template <class Derived>
void permute_rotary_rows(Eigen::MatrixBase<Derived>& w, int n_heads, std::optional<int> rotary_dim,
                         bool to_rotate_half) {
  const Eigen::Index head_dim = permute_head_dim(w.rows(), n_heads, rotary_dim);
  const Eigen::Index rotated = rotary_dim ? *rotary_dim : head_dim;
  const Eigen::Index half = rotated / 2;
  // head: [rotated, cols], a copy of one head's rotary rows.
  Eigen::Matrix<typename Derived::Scalar, Eigen::Dynamic, Eigen::Dynamic> head(rotated, w.cols());
  for (Eigen::Index first = 0; first < w.rows(); first += head_dim) {
    head = w.middleRows(first, rotated);
    for (Eigen::Index i = 0; i < half; ++i) {
      if (to_rotate_half) {
        w.row(first + i) = head.row(2 * i);
        w.row(first + i + half) = head.row(2 * i + 1);
      } else {
        w.row(first + 2 * i) = head.row(i);
        w.row(first + 2 * i + 1) = head.row(i + half);
      }
    }
  }
}

// A row vector's features are its columns; everything else is permuted by rows.
template <class Derived>
void permute_features(const Eigen::MatrixBase<Derived>& w, int n_heads,
                      std::optional<int> rotary_dim, bool to_rotate_half) {
  // Writable through a const reference, as Eigen recommends for Block/Map arguments.
  auto& target = const_cast<Eigen::MatrixBase<Derived>&>(w);
  if constexpr (Derived::RowsAtCompileTime == 1) {
    auto as_column = target.transpose();
    permute_rotary_rows(as_column, n_heads, rotary_dim, to_rotate_half);
  } else {
    permute_rotary_rows(target, n_heads, rotary_dim, to_rotate_half);
  }
}

}  // namespace detail

// Reorders the rotary rows of every head of w from pairing `from` to pairing `to`, in place:
// interleaved -> rotate-half moves row 2i -> i and 2i + 1 -> i + rotary_dim / 2 within each head,
// rotate-half -> interleaved the inverse; from == to leaves w as it is (after the checks). Rows
// past rotary_dim stay. rotary_dim: nullopt means whole heads (rotary_dim = rows / n_heads).
// w: [n_heads * head_dim, in_features] or a vector [n_heads * head_dim].
// n_heads: query heads for Wq / bq, key-value heads for Wk / bk.
//
// Example (Meta LLaMA checkpoint to HuggingFace order, grouped-query attention):
//   posemb::permute_pairing_inplace(wq, 32, posemb::Pairing::Interleaved,
//   posemb::Pairing::RotateHalf); posemb::permute_pairing_inplace(wk, 8,
//   posemb::Pairing::Interleaved, posemb::Pairing::RotateHalf);
template <class Derived>
void permute_pairing_inplace(const Eigen::MatrixBase<Derived>& w, int n_heads, Pairing from,
                             Pairing to, std::optional<int> rotary_dim = std::nullopt) {
  for (const Pairing pairing : {from, to}) {
    if (pairing != Pairing::Interleaved && pairing != Pairing::RotateHalf) {
      detail::fail("pairing", static_cast<int>(pairing),
                   "expected Pairing::Interleaved or Pairing::RotateHalf");
    }
  }
  if (from == to) {
    (void)detail::permute_head_dim(Derived::RowsAtCompileTime == 1 ? w.cols() : w.rows(), n_heads,
                                   rotary_dim);
    return;
  }
  detail::permute_features(w, n_heads, rotary_dim, to == Pairing::RotateHalf);
}

// Out of place: returns the permuted copy as a plain matrix/vector of w's shape.
template <class Derived>
typename Derived::PlainObject permute_pairing(const Eigen::MatrixBase<Derived>& w, int n_heads,
                                              Pairing from, Pairing to,
                                              std::optional<int> rotary_dim = std::nullopt) {
  typename Derived::PlainObject out = w;
  permute_pairing_inplace(out, n_heads, from, to, rotary_dim);
  return out;
}

}  // namespace posemb
