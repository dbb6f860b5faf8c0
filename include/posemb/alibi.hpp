// ALiBi: attention with linear biases (Press et al. 2022, "Train Short, Test Long", sec. 3, and
// get_slopes in the authors' reference code, attention_with_linear_biases/fairseq).
//
// No embedding is added to the tokens. Head h adds to the attention logit of query i and key j
//
//   bias[h, i, j] = -slope_h * (qpos_i - kpos_j)
//
// built from EXPLICIT query and key positions, so a single decode token at position p against a
// KV cache of positions 0 .. p gets the full bias row (a bias built from the query length alone
// would give that token no bias at all).
//
//   Causal form (decoders, the paper):  -slope_h * (qpos_i - kpos_j) where kpos_j <= qpos_i,
//                                       -inf where kpos_j > qpos_i (the causal mask).
//   Symmetric form (encoders):          -slope_h * |qpos_i - kpos_j|, nothing masked.
//
// Slopes for n heads (get_slopes):
//   n a power of two: slope_h = 2^(-8h/n), h = 1 .. n.
//   otherwise, c = the largest power of two below n: the c slopes of the c-head recipe, then
//   every other slope of the 2c-head recipe starting with its first, 2^(-8*1/(2c)),
//   2^(-8*3/(2c)), 2^(-8*5/(2c)), ..., the first n - c of them.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstdint>
#include <limits>

#include "posemb/tensor.hpp"
#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {

enum class AlibiForm {
  Causal,     // -slope * (qpos - kpos), -inf where kpos > qpos
  Symmetric,  // -slope * |qpos - kpos|
};

inline const char* to_string(AlibiForm form) {
  return form == AlibiForm::Causal ? "causal" : "symmetric";
}

// A full bias: [heads, q_len, k_len].
template <class T>
using AlibiBias = Eigen::Tensor<T, 3, Eigen::RowMajor>;
// The bias of one query against every key: [heads, k_len].
template <class T>
using AlibiBiasRow = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Returns slopes: [n_heads], in the reference code's head order.
inline Eigen::VectorXd alibi_slopes(int n_heads) {
  detail::require_positive("n_heads", n_heads);
  std::int64_t c = 1;  // the largest power of two <= n_heads
  while (2 * c <= n_heads) c *= 2;
  Eigen::VectorXd slopes(n_heads);
  for (std::int64_t h = 1; h <= c; ++h) {
    slopes[h - 1] = std::exp2(-8.0 * static_cast<double>(h) / static_cast<double>(c));
  }
  for (std::int64_t k = 0; k < n_heads - c; ++k) {
    slopes[c + k] = std::exp2(-8.0 * static_cast<double>(2 * k + 1) / static_cast<double>(2 * c));
  }
  return slopes;
}

namespace detail {

inline void check_alibi_form(AlibiForm form) {
  if (form != AlibiForm::Causal && form != AlibiForm::Symmetric) {
    fail("form", static_cast<int>(form), "expected AlibiForm::Causal or AlibiForm::Symmetric");
  }
}

// The bias of one (query, key) position pair, in double. The distance is formed in double so
// that no position pair can overflow.
inline double alibi_bias_value(double slope, std::int64_t q_position, std::int64_t k_position,
                               AlibiForm form) {
  const double distance = static_cast<double>(q_position) - static_cast<double>(k_position);
  if (form == AlibiForm::Causal) {
    return k_position > q_position ? -std::numeric_limits<double>::infinity() : -slope * distance;
  }
  return -slope * std::abs(distance);
}

template <class T>
T alibi_to_storage(double value) {
  return static_cast<T>(static_cast<compute_t<T>>(value));
}

}  // namespace detail

// bias[h, i, j] for query positions q_positions[i] ([q_len]) and key positions k_positions[j]
// ([k_len]); returns [n_heads, q_len, k_len] stored as T.
template <class T = float>
AlibiBias<T> alibi_bias(int n_heads, const PositionVector& q_positions,
                        const PositionVector& k_positions, AlibiForm form = AlibiForm::Causal) {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_alibi_form(form);
  const Eigen::VectorXd slopes = alibi_slopes(n_heads);
  AlibiBias<T> bias(n_heads, q_positions.size(), k_positions.size());
  for (Eigen::Index h = 0; h < n_heads; ++h) {
    for (Eigen::Index i = 0; i < q_positions.size(); ++i) {
      for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
        bias(h, i, j) = detail::alibi_to_storage<T>(
            detail::alibi_bias_value(slopes[h], q_positions[i], k_positions[j], form));
      }
    }
  }
  return bias;
}

// One query row, for decode with a KV cache: the bias of the query at q_position against every
// key position, without building the full [heads, q_len, k_len] bias. Returns [n_heads, k_len],
// equal to alibi_bias(n_heads, {q_position}, k_positions, form) with the query axis dropped.
template <class T = float>
AlibiBiasRow<T> alibi_bias_row(int n_heads, std::int64_t q_position,
                               const PositionVector& k_positions,
                               AlibiForm form = AlibiForm::Causal) {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  detail::check_alibi_form(form);
  const Eigen::VectorXd slopes = alibi_slopes(n_heads);
  AlibiBiasRow<T> row(n_heads, k_positions.size());
  for (Eigen::Index h = 0; h < n_heads; ++h) {
    for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
      row(h, j) = detail::alibi_to_storage<T>(
          detail::alibi_bias_value(slopes[h], q_position, k_positions[j], form));
    }
  }
  return row;
}

}  // namespace posemb
