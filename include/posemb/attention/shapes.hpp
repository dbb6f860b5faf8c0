// The shape checks of attention_scores: one head's q and k as matrices, 4-D q and k (BSHD or
// BHSD, grouped-query heads) and the caller's output, and whole positions for the masks.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <string>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// Throws unless one head's q [seq_q, head_dim] and k [seq_k, head_dim] fit each other and their
// positions.
template <class DQ, class DK>
void check_head_scores(const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
                       const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions) {
  require_positive("q.rows()", q.rows());
  require_positive("k.rows()", k.rows());
  require_positive("q.cols()", q.cols());
  if (k.cols() != q.cols()) {
    fail("k.cols()", k.cols(), "expected head_dim = q.cols() = " + std::to_string(q.cols()));
  }
  if (q_positions.size() != q.rows()) {
    fail("q_positions.size()", q_positions.size(),
         "expected one position per row of q = " + std::to_string(q.rows()));
  }
  if (k_positions.size() != k.rows()) {
    fail("k_positions.size()", k_positions.size(),
         "expected one position per row of k = " + std::to_string(k.rows()));
  }
}

// Token s of batch row b as a whole position: the masks, the bias and the query temperature
// compare positions as integers, so a fractional position must be whole.
inline std::int64_t whole_position(const Positions& positions, Eigen::Index b, Eigen::Index s) {
  if (positions.is_fractional()) {
    const double p = positions.at(b, s);
    if (!(p == std::floor(p) && std::fabs(p) < 9.0e18)) {
      fail("position", p,
           "expected a whole position: the attention masks, bias and query temperature compare "
           "positions as integers");
    }
  }
  return positions.integer_at(b, s);
}

// The checked shapes of a 4-D q and k: q [batch, seq_q, heads, head_dim] and k [batch, seq_k,
// kv_heads, head_dim] (BSHD; BHSD swaps seq and heads), kv_heads dividing heads.
struct ScoreShapes {
  ActivationShape q, k;
};

template <class XQ, class XK>
ScoreShapes check_score_shapes(const XQ& q, const Positions& q_positions, const XK& k,
                               const Positions& k_positions, TensorLayout layout) {
  const ActivationShape q_shape(q.dimensions(), layout), k_shape(k.dimensions(), layout);
  const bool bshd = q_shape.bshd();
  const Eigen::Index batch = q_shape.batch, heads = q_shape.heads, kv_heads = k_shape.heads;
  const char* seq_axis = bshd ? "1" : "2";
  const char* head_axis = bshd ? "2" : "1";
  require_positive("q.dimension(0)", batch);
  require_positive(std::string("q.dimension(") + seq_axis + ")", q_shape.seq);
  require_positive(std::string("q.dimension(") + head_axis + ")", heads);
  require_positive("q.dimension(3)", q_shape.head_dim);
  require_positive(std::string("k.dimension(") + seq_axis + ")", k_shape.seq);
  if (k.dimension(0) != batch) {
    fail("k.dimension(0)", k.dimension(0),
         "expected batch = q.dimension(0) = " + std::to_string(batch));
  }
  if (k.dimension(3) != q_shape.head_dim) {
    fail("k.dimension(3)", k.dimension(3),
         "expected head_dim = q.dimension(3) = " + std::to_string(q_shape.head_dim));
  }
  if (kv_heads <= 0 || heads % kv_heads != 0) {
    fail(std::string("k.dimension(") + head_axis + ") (kv_heads)", kv_heads,
         "expected a divisor of the query head count " + std::to_string(heads));
  }
  q_positions.check(q_shape);
  k_positions.check(k_shape);
  return {q_shape, k_shape};
}

// The shapes of one head's q [seq_q, head_dim] and k [seq_k, head_dim] as 4-D BSHD shapes with
// batch 1 and one head.
inline ScoreShapes head_score_shapes(Eigen::Index seq_q, Eigen::Index seq_k,
                                     Eigen::Index head_dim) {
  return {ActivationShape({1, seq_q, 1, head_dim}, TensorLayout::BSHD),
          ActivationShape({1, seq_k, 1, head_dim}, TensorLayout::BSHD)};
}

// Throws unless out is [batch, heads, seq_q, seq_k].
template <class Out>
void check_score_output(const Out& out, const ScoreShapes& shapes) {
  const Eigen::Index expected[4] = {shapes.q.batch, shapes.q.heads, shapes.q.seq, shapes.k.seq};
  for (int i = 0; i < 4; ++i) {
    if (out.dimension(i) != expected[i]) {
      fail("out.dimension(" + std::to_string(i) + ")", out.dimension(i),
           "expected [batch, heads, seq_q, seq_k] = [" + std::to_string(expected[0]) + ", " +
               std::to_string(expected[1]) + ", " + std::to_string(expected[2]) + ", " +
               std::to_string(expected[3]) + "]");
    }
  }
}

}  // namespace detail
}  // namespace posemb
