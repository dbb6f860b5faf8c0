// fused_rope_scores: the earlier name of attention_scores with RoPE from a source argument.
// attention_scores (attention/scores.hpp) takes the rotation in ScoreOptions::rotation; these
// forms set it from `source` (a RopeSpec or a RopeTable of q's arithmetic type) and call it, so
// there is one kernel and one set of rules. options.rotation must be left as NoRotation.
#pragma once

#include <Eigen/Core>
#include <type_traits>
#include <utility>

#include "posemb/attention/scores.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// options with the rotation taken from `source`.
template <class Source>
ScoreOptions with_rotation(const ScoreOptions& options, const Source& source) {
  if (!std::holds_alternative<NoRotation>(options.rotation)) {
    fail("options.rotation", "set",
         "expected NoRotation: fused_rope_scores rotates with its source argument");
  }
  ScoreOptions rotated = options;
  if constexpr (std::is_same_v<Source, RopeSpec>) {
    rotated.rotation = source;
  } else {
    rotated.rotation = &source;
  }
  return rotated;
}

}  // namespace detail

// One head: out = attention_scores(q, q_positions, k, k_positions, options with source).
template <class DQ, class DK, class C, class Source>
void fused_rope_scores(const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
                       const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions,
                       Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& out,
                       const Source& source, const ScoreOptions& options = {}) {
  static_assert(
      std::is_same_v<C, compute_t<typename DQ::Scalar>>,
      "posemb: out holds float scores for float, half and bfloat16 q and k, double for double");
  static_assert(detail::require_rope_source<Source, typename DQ::Scalar>());
  out = attention_scores(q, q_positions, k, k_positions, detail::with_rotation(options, source));
}

// 4-D: attention_scores(q, q_positions, k, k_positions, out, options with source, layout).
template <class XQ, class XK, class Out, class Source, IfTensor4<XQ> = 0, IfTensor4<XK> = 0,
          IfTensor4<Out> = 0>
void fused_rope_scores(const XQ& q, const Positions& q_positions, const XK& k,
                       const Positions& k_positions, Out&& out, const Source& source,
                       const ScoreOptions& options = {}, TensorLayout layout = TensorLayout::BSHD) {
  static_assert(detail::require_rope_source<Source, scalar_of_t<XQ>>());
  attention_scores(q, q_positions, k, k_positions, std::forward<Out>(out),
                   detail::with_rotation(options, source), layout);
}

}  // namespace posemb
