// The softmax of one row of logits, masked entries -inf, with an optional attention sink:
//   m   = max(max_j s_j, sink)
//   p_j = exp(s_j - m) / (sum_j' exp(s_j' - m) + exp(sink - m))       (no sink: no last term)
// Masked entries get exactly 0. The sink is a learned per-head logit that joins the denominator
// and gets no output column (gpt-oss, modeling_gpt_oss.py, eager_attention_forward: the sinks
// concatenated as a last column, the row maximum subtracted, softmax, the sink column dropped).
// A row whose every entry is masked has no softmax: that is a posemb::Error (it means a
// position bug), never a row of NaN or zeros, with or without a sink.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "posemb/error.hpp"

namespace posemb {
namespace detail {

// Throws for a query row with no visible key; `any_key_before`: some key lies at or before the
// query (so the window or the chunk hid it, not the causal mask).
[[noreturn]] inline void fail_empty_row(std::int64_t q_position, bool any_key_before) {
  fail("query position", q_position,
       any_key_before
           ? "the sliding window or the attention chunk leaves this row no key to attend to"
           : "every key position is greater, so the causal mask leaves this row no key to attend "
             "to");
}

// The sink logit softmax_row takes for a head without a sink: -inf leaves m = max_j s_j and
// adds exp(-inf - m) = 0 to the denominator, the formula without its last term.
template <class C>
constexpr C no_sink() {
  return -std::numeric_limits<C>::infinity();
}

// Replaces row [k_len] by its softmax (the formula above); sink: the head's sink logit, or
// no_sink<C>(); exp_row: scratch of k_len entries. Returns false, leaving the row as it is, when
// every entry is masked.
template <class C>
bool softmax_row(C* row, Eigen::Index k_len, C sink, Eigen::Array<C, Eigen::Dynamic, 1>& exp_row) {
  constexpr C neg_inf = -std::numeric_limits<C>::infinity();
  Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>> values(row, k_len);
  const C row_max = values.maxCoeff();
  if (row_max == neg_inf) return false;
  const C shift = std::max(row_max, sink);
  exp_row = (values - shift).exp();
  for (Eigen::Index j = 0; j < k_len; ++j) row[j] = row[j] == neg_inf ? C(0) : exp_row[j];
  values /= values.sum() + std::exp(sink - shift);
  return true;
}

}  // namespace detail
}  // namespace posemb
