// Attention scores with a positional scheme: a reference helper that ties the schemes together.
//
//   logits[i, j] = scale * <q_i', k_j'> + bias[i, j],   scale = 1 / sqrt(head_dim) by default
//
// (Vaswani et al. 2017, eq. 1) where, by ScoreScheme,
//   None:  q' = q, k' = k, bias = 0. This is also the scheme for the absolute tables
//          (sinusoidal.hpp, learned.hpp): those are added to the token embeddings before the
//          q/k projections, so the caller passes the already-projected q and k.
//   Rope:  q_i' = R(qpos_i) q_i, k_j' = R(kpos_j) k_j with rope.hpp's apply_rope; the scores then
//          depend on qpos_i - kpos_j only.
//   Alibi: bias[h, i, j] = -slope_h * |qpos_i - kpos_j| (alibi.hpp). With causal = true the
//          unmasked entries (kpos_j <= qpos_i) are exactly Press et al.'s causal ALiBi bias; with
//          causal = false this is the symmetric (encoder) form.
//
// Optional causal mask by positions: entry (i, j) is masked where kpos_j > qpos_i, so a decode
// query at position p against a KV cache at positions 0 .. p masks nothing. Masked logits are
// -inf. Optional softmax over each row, numerically stable (the row maximum over unmasked entries
// is subtracted before exp); masked entries are exactly 0. A row whose every entry is masked has
// no softmax: that is a posemb::Error (it means every key lies after the query, a position bug),
// never a row of NaN or zeros. Without softmax such a row is returned as all -inf.
//
// Scores are returned in the arithmetic type (float for float / half / bf16 inputs, double for
// double). RoPE rotates q and k in their storage type, as a model would, before the products.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "posemb/alibi.hpp"
#include "posemb/tensor.hpp"
#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {

enum class ScoreScheme {
  None,   // q and k as given (also for inputs that already carry sinusoidal / learned tables)
  Rope,   // RoPE on q and k at their positions
  Alibi,  // -slope_h * |qpos - kpos| added to the logits
};

struct ScoreOptions {
  ScoreScheme scheme = ScoreScheme::None;
  RopeSpec rope;                 // scheme == Rope: the rotation (left empty otherwise)
  Eigen::VectorXd alibi_slopes;  // scheme == Alibi: one slope per query head, e.g.
                                 // alibi_slopes(heads); [1] for the single-head call
  std::optional<double> scale;   // multiplies q . k; default 1 / sqrt(head_dim)
  bool causal = false;           // mask entries where kpos > qpos
  bool softmax = false;          // return softmax probabilities per row instead of logits
};

// Scores of one head: [seq_q, seq_k].
template <class C>
using ScoreMatrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {

// Validates options for `heads` query heads of width head_dim; returns the scale to use.
inline double check_score_options(const ScoreOptions& options, Eigen::Index heads,
                                  Eigen::Index head_dim) {
  if (options.scheme != ScoreScheme::None && options.scheme != ScoreScheme::Rope &&
      options.scheme != ScoreScheme::Alibi) {
    fail("scheme", static_cast<int>(options.scheme),
         "expected ScoreScheme::None, ScoreScheme::Rope or ScoreScheme::Alibi");
  }
  if (options.scheme == ScoreScheme::Rope) {
    options.rope.validate();
    check_head_dim(options.rope, ActivationShape({1, 1, 1, head_dim}, TensorLayout::BSHD));
  } else if (options.rope.rotary_dim != 0 || options.rope.inv_freq.size() != 0) {
    fail("rope.rotary_dim", options.rope.rotary_dim,
         "expected an empty RopeSpec unless scheme == ScoreScheme::Rope");
  }
  if (options.scheme == ScoreScheme::Alibi) {
    if (options.alibi_slopes.size() != heads) {
      fail("alibi_slopes.size()", options.alibi_slopes.size(),
           "expected one slope per query head = " + std::to_string(heads));
    }
    for (Eigen::Index h = 0; h < heads; ++h) {
      require_positive_finite("alibi_slopes[" + std::to_string(h) + "]", options.alibi_slopes[h]);
    }
  } else if (options.alibi_slopes.size() != 0) {
    fail("alibi_slopes.size()", options.alibi_slopes.size(),
         "expected no slopes unless scheme == ScoreScheme::Alibi");
  }
  if (options.scale) {
    require_positive_finite("scale", *options.scale);
    return *options.scale;
  }
  return 1.0 / std::sqrt(static_cast<double>(head_dim));
}

// Turns one row of scaled dot products into the final row: ALiBi bias, causal mask, softmax.
// row: [k_len]; k_position(j) is the position of key j; slope is used for ScoreScheme::Alibi.
template <class C, class KeyPosition>
void finish_score_row(C* row, Eigen::Index k_len, std::int64_t q_position,
                      const KeyPosition& k_position, double slope, const ScoreOptions& options) {
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  double row_max = neg_inf;
  for (Eigen::Index j = 0; j < k_len; ++j) {
    const std::int64_t kpos = k_position(j);
    if (options.causal && kpos > q_position) {
      row[j] = static_cast<C>(neg_inf);
      continue;
    }
    if (options.scheme == ScoreScheme::Alibi) {
      row[j] = static_cast<C>(static_cast<double>(row[j]) +
                              alibi_bias_value(slope, q_position, kpos, AlibiForm::Symmetric));
    }
    row_max = std::max(row_max, static_cast<double>(row[j]));
  }
  if (!options.softmax) return;
  if (row_max == neg_inf) {
    fail("query position", q_position,
         "every key position is greater, so the causal mask leaves this row no key to attend to");
  }
  double sum = 0.0;
  for (Eigen::Index j = 0; j < k_len; ++j) {
    if (options.causal && k_position(j) > q_position) continue;
    sum += std::exp(static_cast<double>(row[j]) - row_max);
  }
  for (Eigen::Index j = 0; j < k_len; ++j) {
    if (options.causal && k_position(j) > q_position) {
      row[j] = C(0);
    } else {
      row[j] = static_cast<C>(std::exp(static_cast<double>(row[j]) - row_max) / sum);
    }
  }
}

// Element offset of token s, head h of a 4-D activation with `seq` tokens and `heads` heads.
inline Eigen::Index head_offset(TensorLayout layout, Eigen::Index b, Eigen::Index s, Eigen::Index h,
                                Eigen::Index seq, Eigen::Index heads, Eigen::Index head_dim) {
  return layout == TensorLayout::BSHD ? ((b * seq + s) * heads + h) * head_dim
                                      : ((b * heads + h) * seq + s) * head_dim;
}

}  // namespace detail

// One head. q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions
// [seq_k]. Returns logits (or probabilities): [seq_q, seq_k].
template <class DQ, class DK>
ScoreMatrix<compute_t<typename DQ::Scalar>> attention_scores(
    const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
    const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions,
    const ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  using C = compute_t<T>;
  static_assert(std::is_same_v<T, typename DK::Scalar>, "posemb: q and k must have the same scalar type");
  detail::require_positive("q.rows()", q.rows());
  detail::require_positive("k.rows()", k.rows());
  detail::require_positive("q.cols()", q.cols());
  if (k.cols() != q.cols()) {
    detail::fail("k.cols()", k.cols(), "expected head_dim = q.cols() = " + std::to_string(q.cols()));
  }
  if (q_positions.size() != q.rows()) {
    detail::fail("q_positions.size()", q_positions.size(),
                 "expected one position per row of q = " + std::to_string(q.rows()));
  }
  if (k_positions.size() != k.rows()) {
    detail::fail("k_positions.size()", k_positions.size(),
                 "expected one position per row of k = " + std::to_string(k.rows()));
  }
  const double scale = detail::check_score_options(options, 1, q.cols());

  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Rows q_rot = q;
  Rows k_rot = k;
  if (options.scheme == ScoreScheme::Rope) {
    apply_rope_inplace(q_rot, q_positions, options.rope);
    apply_rope_inplace(k_rot, k_positions, options.rope);
  }
  ScoreMatrix<C> scores = q_rot.template cast<C>() * k_rot.template cast<C>().transpose();
  scores *= static_cast<C>(scale);
  const double slope = options.scheme == ScoreScheme::Alibi ? options.alibi_slopes[0] : 0.0;
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    detail::finish_score_row(scores.row(i).data(), scores.cols(), q_positions[i],
                             [&](Eigen::Index j) { return k_positions[j]; }, slope, options);
  }
  return scores;
}

// Batched, all heads. q: [batch, seq_q, heads, head_dim] (BSHD) or [batch, heads, seq_q,
// head_dim] (BHSD); k: the same layout with kv_heads heads and seq_k tokens. Grouped-query
// attention: kv_heads may divide heads; query head h reads kv head h / (heads / kv_heads), as
// in HuggingFace's repeat_kv. q_positions / k_positions: a PositionMatrix [batch, seq] (or
// [1, seq]) or a scalar offset (token s at offset + s), as in rope.hpp. ALiBi uses
// options.alibi_slopes[h] for query head h. Returns [batch, heads, seq_q, seq_k].
template <class XQ, class XK, IfTensor4<XQ> = 0, IfTensor4<XK> = 0>
Tensor4<compute_t<std::remove_const_t<typename XQ::Scalar>>> attention_scores(
    const XQ& q, const Positions& q_positions, const XK& k,
    const Positions& k_positions, const ScoreOptions& options = {},
    TensorLayout layout = TensorLayout::BSHD) {
  using T = std::remove_const_t<typename XQ::Scalar>;
  using C = compute_t<T>;
  static_assert(std::is_same_v<T, std::remove_const_t<typename XK::Scalar>>,
                "posemb: q and k must have the same scalar type");
  if (layout != TensorLayout::BSHD && layout != TensorLayout::BHSD) {
    detail::fail("layout", static_cast<int>(layout), "expected TensorLayout::BSHD or TensorLayout::BHSD");
  }
  const bool bshd = layout == TensorLayout::BSHD;
  const Eigen::Index batch = q.dimension(0);
  const Eigen::Index seq_q = q.dimension(bshd ? 1 : 2), heads = q.dimension(bshd ? 2 : 1);
  const Eigen::Index seq_k = k.dimension(bshd ? 1 : 2), kv_heads = k.dimension(bshd ? 2 : 1);
  const Eigen::Index head_dim = q.dimension(3);
  const char* seq_axis = bshd ? "1" : "2";
  const char* head_axis = bshd ? "2" : "1";
  detail::require_positive("q.dimension(0)", batch);
  detail::require_positive(std::string("q.dimension(") + seq_axis + ")", seq_q);
  detail::require_positive(std::string("q.dimension(") + head_axis + ")", heads);
  detail::require_positive("q.dimension(3)", head_dim);
  detail::require_positive(std::string("k.dimension(") + seq_axis + ")", seq_k);
  if (k.dimension(0) != batch) {
    detail::fail("k.dimension(0)", k.dimension(0), "expected batch = q.dimension(0) = " + std::to_string(batch));
  }
  if (k.dimension(3) != head_dim) {
    detail::fail("k.dimension(3)", k.dimension(3), "expected head_dim = q.dimension(3) = " + std::to_string(head_dim));
  }
  if (kv_heads <= 0 || heads % kv_heads != 0) {
    detail::fail(std::string("k.dimension(") + head_axis + ") (kv_heads)", kv_heads,
                 "expected a divisor of the query head count " + std::to_string(heads));
  }
  q_positions.check(batch, seq_q);
  k_positions.check(batch, seq_k);
  const double scale = detail::check_score_options(options, heads, head_dim);

  // The rotated copies exist only for RoPE; otherwise q and k are read in place.
  Tensor4<T> q_rot, k_rot;
  const T* q_data = q.data();
  const T* k_data = k.data();
  if (options.scheme == ScoreScheme::Rope) {
    q_rot = apply_rope(q, q_positions, options.rope, layout);
    k_rot = apply_rope(k, k_positions, options.rope, layout);
    q_data = q_rot.data();
    k_data = k_rot.data();
  }

  Tensor4<C> scores(batch, heads, seq_q, seq_k);
  const Eigen::Index group = heads / kv_heads;
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index h = 0; h < heads; ++h) {
      const double slope = options.scheme == ScoreScheme::Alibi ? options.alibi_slopes[h] : 0.0;
      for (Eigen::Index i = 0; i < seq_q; ++i) {
        const T* qi = q_data + detail::head_offset(layout, b, i, h, seq_q, heads, head_dim);
        C* row = scores.data() + ((b * heads + h) * seq_q + i) * seq_k;
        for (Eigen::Index j = 0; j < seq_k; ++j) {
          const T* kj = k_data + detail::head_offset(layout, b, j, h / group, seq_k, kv_heads, head_dim);
          C dot = 0;
          for (Eigen::Index c = 0; c < head_dim; ++c) dot += static_cast<C>(qi[c]) * static_cast<C>(kj[c]);
          row[j] = static_cast<C>(scale) * dot;
        }
        detail::finish_score_row(row, seq_k, q_positions.at(b, i),
                                 [&](Eigen::Index j) { return k_positions.at(b, j); }, slope, options);
      }
    }
  }
  return scores;
}

}  // namespace posemb
