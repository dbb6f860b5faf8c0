// Fused attention scores for one head: RoPE applied inside q kᵀ, with the ALiBi bias and the
// causal mask folded in, without rotated copies of q and k in memory.
//
//   logits[i, j] = scale * <R(qpos_i) q_i, R(kpos_j) k_j> - slope * |qpos_i - kpos_j|
//                  (-inf where causal and kpos_j > qpos_i)
//
// R is rope.hpp's rotation (RoFormer, Su et al. 2021, eq. 13-15), the bias is ALiBi's (Press et
// al. 2022, sec. 3; slope 0: none), scale defaults to 1 / sqrt(head_dim) (Vaswani et al. 2017,
// eq. 1). The same numbers as attention.hpp's attention_scores with RoPE, plus the bias.
//
// How: the scores are computed in tiles of tile_rows queries x tile_rows keys. For each tile the
// query rows and key rows are rotated into two small panels that stay in cache (tile_rows x
// head_dim each), multiplied with Eigen's GEMM straight into the output tile, and the bias and
// mask are applied to the tile while it is still in cache. Tiles whose keys all lie after all
// their queries are filled with -inf without a product when causal. Key panels are rotated once
// per query tile, seq_q / tile_rows times in all: a small cost next to the product.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {

struct FusedScoreOptions {
  double scale = 0.0;        // multiplies <q, k>; 0 means 1 / sqrt(head_dim)
  double alibi_slope = 0.0;  // ALiBi slope of this head; 0 means no bias
  bool causal = false;       // -inf where kpos > qpos
};

namespace detail {

inline constexpr Eigen::Index fused_tile_rows = 256;

// Copies rows [begin, begin + count) of x into panel and rotates each at its position.
// x: [rows, head_dim] row-major; panel: [count, head_dim].
template <class T, class Source>
void rotate_rows_into(const T* x, Eigen::Index head_dim, const PositionVector& positions,
                      Eigen::Index begin, Eigen::Index count, const Source& source, T* panel) {
  std::copy(x + begin * head_dim, x + (begin + count) * head_dim, panel);
  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<Rows> rows(panel, count, head_dim);
  const PositionVector panel_positions = positions.segment(begin, count);
  rotate_matrix_rows(rows, rotary_source(source, Positions(panel_positions)));
}

}  // namespace detail

// q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions [seq_k];
// out: [seq_q, seq_k] (resized). T is float or double; source a RopeSpec or a RopeTable<T>.
template <class T, class Source>
void fused_rope_scores(
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>& q,
    const PositionVector& q_positions,
    const Eigen::Ref<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>& k,
    const PositionVector& k_positions, const Source& source, const FusedScoreOptions& options,
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& out) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "posemb: fused_rope_scores takes float or double q and k");
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
  if (!(std::isfinite(options.scale) && options.scale >= 0.0)) {
    detail::fail("options.scale", options.scale, "expected a finite number >= 0 (0: 1/sqrt(head_dim))");
  }
  if (!(std::isfinite(options.alibi_slope) && options.alibi_slope >= 0.0)) {
    detail::fail("options.alibi_slope", options.alibi_slope, "expected a finite number >= 0 (0: no bias)");
  }
  // The spec or table must fit head_dim and (a table) cover every position before any work.
  for (const PositionVector* positions : {&q_positions, &k_positions}) {
    detail::rotary_source(source, Positions(*positions))
        .check(ActivationShape({1, positions->size(), 1, head_dim}, TensorLayout::BSHD));
  }

  const T scale = static_cast<T>(options.scale > 0.0 ? options.scale
                                                     : 1.0 / std::sqrt(static_cast<double>(head_dim)));
  constexpr T neg_inf = -std::numeric_limits<T>::infinity();
  const Eigen::Index tile = detail::fused_tile_rows;
  out.resize(seq_q, seq_k);
  Rows q_panel(std::min(tile, seq_q), head_dim), k_panel(std::min(tile, seq_k), head_dim);
  for (Eigen::Index i0 = 0; i0 < seq_q; i0 += tile) {
    const Eigen::Index rows = std::min(tile, seq_q - i0);
    const std::int64_t last_query = q_positions.segment(i0, rows).maxCoeff();
    bool q_rotated = false;
    for (Eigen::Index j0 = 0; j0 < seq_k; j0 += tile) {
      const Eigen::Index cols = std::min(tile, seq_k - j0);
      auto scores = out.block(i0, j0, rows, cols);
      if (options.causal && k_positions.segment(j0, cols).minCoeff() > last_query) {
        scores.setConstant(neg_inf);  // every key after every query
        continue;
      }
      if (!q_rotated) {
        detail::rotate_rows_into(q.data(), head_dim, q_positions, i0, rows, source, q_panel.data());
        q_rotated = true;
      }
      detail::rotate_rows_into(k.data(), head_dim, k_positions, j0, cols, source, k_panel.data());
      scores.noalias() = scale * (q_panel.topRows(rows) * k_panel.topRows(cols).transpose());
      if (!options.causal && options.alibi_slope == 0.0) continue;
      for (Eigen::Index i = 0; i < rows; ++i) {
        const std::int64_t qpos = q_positions[i0 + i];
        T* row = &scores(i, 0);
        for (Eigen::Index j = 0; j < cols; ++j) {
          const std::int64_t kpos = k_positions[j0 + j];
          const double distance = std::abs(static_cast<double>(qpos) - static_cast<double>(kpos));
          const T biased = row[j] - static_cast<T>(options.alibi_slope * distance);
          row[j] = options.causal && kpos > qpos ? neg_inf : biased;
        }
      }
    }
  }
}

}  // namespace posemb
