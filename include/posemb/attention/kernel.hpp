// The blocked score kernel: the one body of attention_scores, for every rotation and bias.
//
// For each batch row b and key-value head g, the keys of g are copied once into a float (double
// for double storage) scratch k_rows [seq_k, head_dim], rotated on the way in storage type T (as
// a model rotates them) and widened once. For each query head h of g's group (grouped-query
// attention: h / (heads / kv_heads) = g), the queries go through the same steps in panels of
// score_tile_rows rows, then the query temperature. A panel's scores against the keys are tiles
// of score_tile_rows columns:
//   hidden  every key lies after every query (or outside the window / chunk): -inf, no product
//   visible every key is seen by every query: the product, then bias and softcap if any
//   mixed   the rest (the diagonal of a causal mask): the product, bias, softcap, mask per entry
// Runs of consecutive non-hidden tiles are one GEMM call, scale folded into it:
//   out[i0 .., j0 ..] = scale * q_panel k_rows[j0 ..]ᵀ      (Eigen's GEMM, row-major)
// and each tile is finished (attention/plan.hpp's order) while it is in cache. With softmax,
// each finished row is normalised at the end (attention/softmax.hpp). Each query row is rotated
// once per call, each key row once per (b, g).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "posemb/attention/plan.hpp"
#include "posemb/attention/rotation.hpp"
#include "posemb/attention/shapes.hpp"
#include "posemb/attention/softmax.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/detail/half_io.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

inline constexpr Eigen::Index score_tile_rows = 128;

// Rows of one head of a 4-D activation (BSHD or BHSD), each head_dim contiguous values.
template <class T>
struct TensorHeadRows {
  const T* data;
  ActivationShape shape;
  // out: [count, head_dim] <- tokens begin .. begin + count - 1 of batch row b, head h.
  void copy(Eigen::Index b, Eigen::Index h, Eigen::Index begin, Eigen::Index count, T* out) const {
    const Eigen::Index d = shape.head_dim;
    for (Eigen::Index r = 0; r < count; ++r) {
      const T* row = data + shape.offset(b, begin + r, h);
      std::copy(row, row + d, out + r * d);
    }
  }
};

// The rows of one head held as a matrix expression [rows, head_dim] (any strides).
template <class Derived>
struct MatrixHeadRows {
  const Eigen::MatrixBase<Derived>& x;
  template <class T>
  void copy(Eigen::Index, Eigen::Index, Eigen::Index begin, Eigen::Index count, T* out) const {
    Eigen::Map<RowMajorRows<T>>(out, count, x.cols()) = x.middleRows(begin, count);
  }
};

// The positions of tokens begin .. begin + count - 1 of batch row b, as a [1, count] grid.
class PanelPositions {
 public:
  Positions of(const Positions& positions, Eigen::Index b, Eigen::Index begin, Eigen::Index count) {
    if (positions.is_fractional()) {
      fractions_.resize(1, count);
      for (Eigen::Index r = 0; r < count; ++r) fractions_(0, r) = positions.at(b, begin + r);
      return Positions(fractions_);
    }
    integers_.resize(count);
    for (Eigen::Index r = 0; r < count; ++r) integers_[r] = positions.integer_at(b, begin + r);
    return Positions(integers_);
  }

 private:
  PositionVector integers_;
  FractionalPositionMatrix fractions_;
};

// The additive bias of one call, per entry: ALiBi's -slope_h |qpos - kpos| or T5's
// table[bucket(kpos - qpos), h], times a factor (the scale when the bias enters before it).
class EntryBias {
 public:
  explicit EntryBias(const ScorePlan& plan) : plan_(plan) {
    if (plan.t5()) build_buckets();
  }

  // row[j] += factor · bias(h, q_position, k_positions[j]) for j in [begin, end).
  template <class C>
  void add(C* row, Eigen::Index begin, Eigen::Index end, Eigen::Index h, std::int64_t q_position,
           const PositionVector& k_positions, double factor) const {
    if (const AlibiSlopes* alibi = plan_.alibi()) {
      // alibi_bias_value: -slope * |double(qpos) - double(kpos)|
      const double slope = factor * alibi->slopes[h], q = static_cast<double>(q_position);
      for (Eigen::Index j = begin; j < end; ++j) {
        const double distance = std::abs(q - static_cast<double>(k_positions[j]));
        row[j] = static_cast<C>(static_cast<double>(row[j]) - slope * distance);
      }
    } else if (const T5BiasTable<float>* t5 = plan_.t5()) {
      const auto table = t5->table();
      for (Eigen::Index j = begin; j < end; ++j) {
        const std::int64_t bucket = bucket_of(relative_position(q_position, k_positions[j]));
        row[j] = static_cast<C>(static_cast<double>(row[j]) +
                                factor * static_cast<double>(table(bucket, h)));
      }
    }
  }

 private:
  // T5 buckets of relative positions -bucket_span .. bucket_span, looked up instead of a log
  // per entry; farther ones are computed.
  static constexpr std::int64_t bucket_span = 4096;
  void build_buckets() {
    const T5Buckets& buckets = plan_.t5()->buckets();
    bucket_lookup_.resize(2 * bucket_span + 1);
    for (std::int64_t rel = -bucket_span; rel <= bucket_span; ++rel) {
      bucket_lookup_[static_cast<std::size_t>(rel + bucket_span)] =
          t5_bucket_unchecked(rel, buckets);
    }
  }
  std::int64_t bucket_of(std::int64_t rel) const {
    if (rel >= -bucket_span && rel <= bucket_span) {
      return bucket_lookup_[static_cast<std::size_t>(rel + bucket_span)];
    }
    return t5_bucket_unchecked(rel, plan_.t5()->buckets());
  }

  const ScorePlan& plan_;
  std::vector<std::int64_t> bucket_lookup_;
};

// The steps above for one call: its scratch (one key-value head, one query panel, one batch
// row's positions) is allocated once and reused for every (batch row, head).
template <class T>
class ScoreKernel {
 public:
  using C = compute_t<T>;

  ScoreKernel(const ScorePlan& plan, const RowRotation<T>& rotation, const ScoreShapes& shapes)
      : plan_(plan),
        rotation_(rotation),
        bias_(plan),
        seq_q_(shapes.q.seq),
        seq_k_(shapes.k.seq),
        head_dim_(shapes.q.head_dim),
        k_rows_(seq_k_, head_dim_),
        q_panel_(std::min(score_tile_rows, seq_q_), head_dim_),
        staged_(std::is_same_v<T, C> ? 0 : std::min(score_tile_rows, std::max(seq_q_, seq_k_)),
                std::is_same_v<T, C> ? 0 : head_dim_),
        q_positions_(seq_q_),
        k_positions_(seq_k_) {
    if (plan.softmax()) exp_row_.resize(seq_k_);
  }

  // The positions of batch row b (masks, bias, temperature need them whole).
  void set_batch_row(Eigen::Index b, const Positions& q_positions, const Positions& k_positions) {
    if (!plan_.by_position()) return;
    for (Eigen::Index i = 0; i < seq_q_; ++i) q_positions_[i] = whole_position(q_positions, b, i);
    for (Eigen::Index j = 0; j < seq_k_; ++j) k_positions_[j] = whole_position(k_positions, b, j);
  }

  // Key-value head g of batch row b into k_rows_, rotated and widened.
  template <class Rows>
  void load_keys(const Rows& k, Eigen::Index b, Eigen::Index g, const Positions& k_positions) {
    for (Eigen::Index j0 = 0; j0 < seq_k_; j0 += score_tile_rows) {
      const Eigen::Index count = std::min(score_tile_rows, seq_k_ - j0);
      stage(k, b, g, j0, count, k_positions, k_rows_.data() + j0 * head_dim_);
    }
  }

  // Query head h of batch row b against the loaded keys. out: [seq_q, seq_k], row-major.
  template <class Rows>
  void score_head(const Rows& q, Eigen::Index b, Eigen::Index h, const Positions& q_positions,
                  C* out) {
    for (Eigen::Index i0 = 0; i0 < seq_q_; i0 += score_tile_rows) {
      const Eigen::Index rows = std::min(score_tile_rows, seq_q_ - i0);
      stage(q, b, h, i0, rows, q_positions, q_panel_.data());
      if (plan_.options().layer.query_temperature) {
        for (Eigen::Index i = 0; i < rows; ++i) {
          q_panel_.row(i) *= static_cast<C>(plan_.temperature(q_positions_[i0 + i]));
        }
      }
      score_panel(i0, rows, h, out);
    }
    if (plan_.softmax()) {
      for (Eigen::Index i = 0; i < seq_q_; ++i) softmax(out + i * seq_k_, h, q_positions_[i]);
    }
  }

 private:
  // The loaded query panel (rows i0 .. i0 + rows - 1) against every key, tile run by tile run.
  void score_panel(Eigen::Index i0, Eigen::Index rows, Eigen::Index h, C* out) {
    using OutTile = Eigen::Map<RowMajorRows<C>, 0, Eigen::OuterStride<>>;
    const C scale = static_cast<C>(plan_.scale());
    std::int64_t q_min = 0, q_max = 0;
    if (plan_.mask().masks()) {
      q_min = q_positions_.segment(i0, rows).minCoeff();
      q_max = q_positions_.segment(i0, rows).maxCoeff();
    }
    const auto tile_at = [&](Eigen::Index j) {
      return classify(q_min, q_max, j, std::min(score_tile_rows, seq_k_ - j));
    };
    Eigen::Index j0 = 0;
    while (j0 < seq_k_) {
      if (tile_at(j0) == TileMask::Hidden) {
        const Eigen::Index cols = std::min(score_tile_rows, seq_k_ - j0);
        for (Eigen::Index i = 0; i < rows; ++i) {
          std::fill_n(out + (i0 + i) * seq_k_ + j0, cols, -std::numeric_limits<C>::infinity());
        }
        j0 += cols;
        continue;
      }
      // The run of non-hidden tiles from j0: one product, then each tile finished.
      Eigen::Index j1 = std::min(j0 + score_tile_rows, seq_k_);
      while (j1 < seq_k_ && tile_at(j1) != TileMask::Hidden)
        j1 = std::min(j1 + score_tile_rows, seq_k_);
      OutTile tile(out + i0 * seq_k_ + j0, rows, j1 - j0, Eigen::OuterStride<>(seq_k_));
      tile.noalias() =
          scale * (q_panel_.topRows(rows) * k_rows_.middleRows(j0, j1 - j0).transpose());
      for (Eigen::Index t0 = j0; t0 < j1; t0 += score_tile_rows) {
        const Eigen::Index t1 = std::min(t0 + score_tile_rows, j1);
        const bool mixed = tile_at(t0) == TileMask::Mixed;
        if (!mixed && !plan_.finishes_entries()) continue;
        for (Eigen::Index i = 0; i < rows; ++i) {
          finish_entries(out + (i0 + i) * seq_k_, t0, t1, h, q_positions_[i0 + i], mixed);
        }
      }
      j0 = j1;
    }
  }

  // Rows begin .. begin + count - 1 of head h into dst [count, head_dim] of C, rotated in T.
  template <class Rows>
  void stage(const Rows& x, Eigen::Index b, Eigen::Index h, Eigen::Index begin, Eigen::Index count,
             const Positions& positions, C* dst) {
    T* rows = nullptr;
    if constexpr (std::is_same_v<T, C>) {
      rows = dst;
    } else {
      rows = staged_.data();
    }
    x.copy(b, h, begin, count, rows);
    if (rotation_.rotates()) {
      rotation_.rotate(rows, count, head_dim_, panel_positions_.of(positions, b, begin, count));
    }
    if constexpr (!std::is_same_v<T, C>) widen(rows, dst, count * head_dim_);
  }

  // The mask class of the tile of queries [q_min, q_max] (by position) and keys j0 .. j0 + cols
  // - 1.
  TileMask classify(std::int64_t q_min, std::int64_t q_max, Eigen::Index j0,
                    Eigen::Index cols) const {
    if (!plan_.mask().masks()) return TileMask::Visible;
    const auto keys = k_positions_.segment(j0, cols);
    return plan_.mask().classify(q_min, q_max, keys.minCoeff(), keys.maxCoeff());
  }

  // The scaled products row[j], keys j in [begin, end) of one query row of head h, finished in
  // plan.hpp's order: bias before the cap, softcap, bias after it, and (when `mask`) the mask.
  void finish_entries(C* row, Eigen::Index begin, Eigen::Index end, Eigen::Index h,
                      std::int64_t q_position, bool mask) const {
    constexpr C neg_inf = -std::numeric_limits<C>::infinity();
    const bool before = plan_.bias_before_cap();
    if (before) bias_.add(row, begin, end, h, q_position, k_positions_, plan_.bias_factor());
    if (const auto& cap = plan_.softcap()) {
      const C c = static_cast<C>(*cap);
      for (Eigen::Index j = begin; j < end; ++j) row[j] = c * std::tanh(row[j] / c);
    }
    if (!before) bias_.add(row, begin, end, h, q_position, k_positions_, 1.0);
    if (!mask) return;
    if (plan_.mask().causal_only()) {
      for (Eigen::Index j = begin; j < end; ++j)
        row[j] = k_positions_[j] > q_position ? neg_inf : row[j];
      return;
    }
    for (Eigen::Index j = begin; j < end; ++j) {
      if (!plan_.mask().visible(q_position, k_positions_[j])) row[j] = neg_inf;
    }
  }

  // The masked row [seq_k] of head h replaced by its softmax, with the head's sink if any.
  void softmax(C* row, Eigen::Index h, std::int64_t q_position) {
    const C sink = plan_.sinks() ? static_cast<C>(plan_.sink_logit(h)) : no_sink<C>();
    if (softmax_row(row, seq_k_, sink, exp_row_)) return;
    fail_empty_row(q_position, (k_positions_.array() <= q_position).any());
  }

  const ScorePlan& plan_;
  const RowRotation<T>& rotation_;
  const EntryBias bias_;
  const Eigen::Index seq_q_, seq_k_, head_dim_;
  RowMajorRows<C> k_rows_;   // [seq_k, head_dim]: one key-value head, rotated, widened
  RowMajorRows<C> q_panel_;  // [score_tile_rows, head_dim]: one panel of queries
  RowMajorRows<T> staged_;   // [score_tile_rows, head_dim]: rows in storage type (half, bf16)
  PanelPositions panel_positions_;
  PositionVector q_positions_, k_positions_;  // batch row b's positions, for masks and bias
  Eigen::Array<C, Eigen::Dynamic, 1> exp_row_;
};

// All scores: out [batch, heads, seq_q, seq_k] from q (heads) and k (kv_heads, dividing heads),
// their rows read through QRows / KRows (TensorHeadRows or MatrixHeadRows).
template <class T, class QRows, class KRows>
void blocked_scores(const ScorePlan& plan, const QRows& q, const Positions& q_positions,
                    const KRows& k, const Positions& k_positions, const ScoreShapes& shapes,
                    compute_t<T>* out) {
  const RowRotation<T> rotation(plan.options().rotation);
  const Eigen::Index batch = shapes.q.batch, heads = shapes.q.heads, kv_heads = shapes.k.heads;
  rotation.check(q_positions, batch, shapes.q.seq, shapes.q.head_dim);
  rotation.check(k_positions, batch, shapes.k.seq, shapes.q.head_dim);
  ScoreKernel<T> kernel(plan, rotation, shapes);
  const Eigen::Index group = heads / kv_heads, seq_q = shapes.q.seq, seq_k = shapes.k.seq;
  for (Eigen::Index b = 0; b < batch; ++b) {
    kernel.set_batch_row(b, q_positions, k_positions);
    for (Eigen::Index g = 0; g < kv_heads; ++g) {
      kernel.load_keys(k, b, g, k_positions);
      for (Eigen::Index h = g * group; h < (g + 1) * group; ++h) {
        kernel.score_head(q, b, h, q_positions, out + (b * heads + h) * seq_q * seq_k);
      }
    }
  }
}

}  // namespace detail
}  // namespace posemb
