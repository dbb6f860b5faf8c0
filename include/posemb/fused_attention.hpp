// Fused attention scores for one head: RoPE applied inside q kᵀ, with the bias and the masks
// folded in, without rotated copies of q and k in memory.
//
//   logits[i, j] = scale * <t(qpos_i) R(qpos_i) q_i, R(kpos_j) k_j> + bias[i, j]
//                  (-inf where masked)
//
// R is rope.hpp's rotation (RoFormer, Su et al. 2021, eq. 13-15). The scale, the query
// temperature t, the bias (ALiBi or T5's relative bias) and the masks (causal, sliding window,
// chunk) are attention.hpp's, from the same ScoreOptions: the same numbers as attention_scores
// with ScoreScheme::Rope, plus the bias.
//
// How: the scores are computed in tiles of tile_rows queries x tile_rows keys. For each tile the
// query rows and key rows are rotated into two small panels that stay in cache (tile_rows x
// head_dim each), multiplied with Eigen's GEMM straight into the output tile, and the bias and
// masks are applied to the tile while it is still in cache. Tiles whose keys all lie after all
// their queries are filled with -inf without a product when the mask is causal. Key panels are
// rotated once per query tile, seq_q / tile_rows times in all: a small cost next to the product.
// With softmax, each finished row is normalised at the end.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "posemb/attention.hpp"
#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {

namespace detail {

inline constexpr Eigen::Index fused_tile_rows = 256;

// Copies rows [begin, begin + count) of x into panel and rotates each at its position.
// x: [rows, head_dim] (any Eigen matrix expression); panel: [count, head_dim] row-major.
template <class Derived, class T, class Source>
void rotate_rows_into(const Eigen::MatrixBase<Derived>& x, const PositionVector& positions,
                      Eigen::Index begin, Eigen::Index count, const Source& source, T* panel) {
  const Eigen::Index head_dim = x.cols();
  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Rows> rows(panel, count, head_dim);
  rows = x.middleRows(begin, count);
  const PositionVector panel_positions = positions.segment(begin, count);
  rotate_matrix_rows(rows, rotary_source(source, Positions(panel_positions)));
}

}  // namespace detail

// q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions [seq_k]
// (matrices, maps or blocks of them, any strides; their rows are read once per tile);
// out: [seq_q, seq_k] (resized), of q's scalar type, float or double. source: a RopeSpec or a
// RopeTable of that type. options as for attention_scores, with two differences: the rotation
// is always `source` (options.rope stays empty; ScoreScheme::None and Rope both mean "no bias"),
// and the one-head bias is options.alibi_slopes [1] or a one-head options.relative_bias.
// Example (causal RoPE + ALiBi scores of 512 prefill tokens, head 3 of 16):
//   const posemb::RopeTable<float> table(posemb::default_rope_spec(128), 0, 512);
//   posemb::ScoreOptions options;
//   options.scheme = posemb::ScoreScheme::Alibi;
//   options.alibi_slopes = posemb::alibi_slopes(16, 8.0, posemb::HeadRange{3, 4});
//   options.causal = true;
//   Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> scores;
//   posemb::fused_rope_scores(q, positions, k, positions, scores, table, options);  // [512, 512]
template <class DQ, class DK, class T, class Source>
void fused_rope_scores(const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
                       const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions,
                       Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& out,
                       const Source& source, const ScoreOptions& options = {}) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "posemb: fused_rope_scores takes float or double q and k");
  static_assert(std::is_same_v<typename DQ::Scalar, T> && std::is_same_v<typename DK::Scalar, T>,
                "posemb: q, k and out must have the same scalar type");
  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Index seq_q = q.rows(), seq_k = k.rows(), head_dim = q.cols();
  detail::require_positive("q.rows()", seq_q);
  detail::require_positive("k.rows()", seq_k);
  if (k.cols() != head_dim) {
    detail::fail("k.cols()", k.cols(), "expected head_dim = q.cols() = " + std::to_string(head_dim));
  }
  if (q_positions.size() != seq_q) {
    detail::fail("q_positions.size()", q_positions.size(),
                 "expected one position per row of q = " + std::to_string(seq_q));
  }
  if (k_positions.size() != seq_k) {
    detail::fail("k_positions.size()", k_positions.size(),
                 "expected one position per row of k = " + std::to_string(seq_k));
  }
  const detail::ScorePlan plan(options, 1, head_dim, true);
  // The spec or table must fit head_dim and (a table) cover every position before any work.
  for (const PositionVector* positions : {&q_positions, &k_positions}) {
    detail::rotary_source(source, Positions(*positions))
        .check(ActivationShape({1, positions->size(), 1, head_dim}, TensorLayout::BSHD));
  }

  const T scale = static_cast<T>(plan.scale());
  const bool temperature = options.layer.query_temperature.has_value();
  const bool causal = options.causal || options.layer.sliding_window || options.layer.attention_chunk_size;
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  const Eigen::Index tile = detail::fused_tile_rows;
  const auto k_position = [&](Eigen::Index j) { return k_positions[j]; };
  out.resize(seq_q, seq_k);
  Rows q_panel(std::min(tile, seq_q), head_dim), k_panel(std::min(tile, seq_k), head_dim);
  for (Eigen::Index i0 = 0; i0 < seq_q; i0 += tile) {
    const Eigen::Index rows = std::min(tile, seq_q - i0);
    const std::int64_t last_query = q_positions.segment(i0, rows).maxCoeff();
    bool q_rotated = false;
    for (Eigen::Index j0 = 0; j0 < seq_k; j0 += tile) {
      const Eigen::Index cols = std::min(tile, seq_k - j0);
      auto scores = out.block(i0, j0, rows, cols);
      if (causal && k_positions.segment(j0, cols).minCoeff() > last_query) {
        scores.setConstant(neg_inf);  // every key after every query
        continue;
      }
      if (!q_rotated) {
        detail::rotate_rows_into(q, q_positions, i0, rows, source, q_panel.data());
        if (temperature) {
          for (Eigen::Index i = 0; i < rows; ++i) {
            q_panel.row(i) *= static_cast<T>(plan.temperature(q_positions[i0 + i]));
          }
        }
        q_rotated = true;
      }
      detail::rotate_rows_into(k, k_positions, j0, cols, source, k_panel.data());
      scores.noalias() = scale * (q_panel.topRows(rows) * k_panel.topRows(cols).transpose());
      for (Eigen::Index i = 0; i < rows; ++i) {
        // out's row i0 + i, keys j0 .. j0 + cols - 1
        plan.bias_and_mask(&out(i0 + i, 0), j0, j0 + cols, 0, q_positions[i0 + i], k_position);
      }
    }
  }
  for (Eigen::Index i = 0; i < seq_q; ++i) plan.softmax(&out(i, 0), seq_k, q_positions[i], k_position);
}

}  // namespace posemb
