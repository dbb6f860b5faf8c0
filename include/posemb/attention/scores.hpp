// Attention scores with a positional scheme: a reference helper that ties the schemes together.
//
//   logits[i, j] = scale * <t(qpos_i) q_i', k_j'> + bias[i, j],   masked entries -inf
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
//   RelativeBias: bias[h, i, j] = table[bucket(kpos_j - qpos_i), h], T5's bucketed bias
//          (relative_bias.hpp); T5 applies no 1/sqrt(head_dim), so set layer.softmax_scale = 1.
//
// The layer (layer_attention.hpp, one per model layer from config.hpp) sets the rest:
//   scale       layer.softmax_scale, or 1 / sqrt(head_dim) when absent.
//   t(p)        layer.query_temperature->factor(p) (Llama 4), multiplying q before the product;
//               1 when absent.
//   masks, all by POSITION, so they hold for a decode query at a KV-cache offset:
//     causal                    key j visible to query i iff kpos_j <= qpos_i
//     layer.sliding_window W    iff 0 <= qpos_i - kpos_j < W (HuggingFace's sliding window)
//     layer.attention_chunk_size C  iff kpos_j <= qpos_i and floor(qpos_i / C) == floor(kpos_j / C)
//                               (floor division, also for negative positions)
// Masked logits are -inf. Optional softmax over each row, numerically stable (the row maximum
// over unmasked entries is subtracted before exp); masked entries are exactly 0. A row whose
// every entry is masked has no softmax: that is a posemb::Error (it means a position bug),
// never a row of NaN or zeros. Without softmax such a row is returned as all -inf.
//
// Scores are returned in the arithmetic type (float for float / half / bf16 inputs, double for
// double). RoPE rotates q and k in their storage type, as a model would, before the products.
//
// How: one blocked kernel (detail::ScoreKernel below) serves attention_scores and
// fused_attention.hpp's fused_rope_scores. Each key row is rotated once per (batch row, key-value
// head) into a float scratch, each query row once, in panels; the products are Eigen GEMM calls
// on 128-row panels with the scale folded in; tiles the mask hides entirely get -inf without a
// product, and the bias and the mask are applied to each tile as it is written.
// detail::attention_scores_reference is the plain loop the kernel is tested against.
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
#include <vector>

#include "posemb/bias/alibi.hpp"
#include "posemb/detail/half_io.hpp"
#include "posemb/error.hpp"
#include "posemb/model/layer_attention.hpp"
#include "posemb/bias/relative_bias.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

enum class ScoreScheme {
  None,          // q and k as given (also for inputs that already carry sinusoidal / learned tables)
  Rope,          // RoPE on q and k at their positions
  Alibi,         // -slope_h * |qpos - kpos| added to the logits
  RelativeBias,  // T5's table[bucket(kpos - qpos), h] added to the logits
};

// The options of attention_scores and of fused_rope_scores. An absent optional or an empty
// member means "not used"; nothing is encoded as a special number.
struct ScoreOptions {
  ScoreScheme scheme = ScoreScheme::None;
  RopeSpec rope;                 // scheme == Rope: the rotation (left empty otherwise, and always
                                 // empty for fused_rope_scores, which rotates with its source)
  Eigen::VectorXd alibi_slopes;  // scheme == Alibi: one slope per query head, e.g.
                                 // alibi_slopes(heads); [1] for the one-head calls
  std::optional<T5BiasTable<float>> relative_bias;  // scheme == RelativeBias: [num_buckets,
                                 // query heads]; one head (table.head(h)) for the one-head calls
  LayerAttention layer;          // softmax scale, sliding window, chunk, query temperature
  bool causal = false;           // mask entries where kpos > qpos
  bool softmax = false;          // return softmax probabilities per row instead of logits
};

// Scores of one head: [seq_q, seq_k].
template <class C>
using ScoreMatrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {

inline const char* score_scheme_names() {
  return "expected ScoreScheme::None, ScoreScheme::Rope, ScoreScheme::Alibi or ScoreScheme::RelativeBias";
}

// floor(a / b) for b > 0, also for negative a.
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t quotient = a / b;
  return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

// Options checked once for `heads` query heads of width head_dim: the scale, and per (query, key)
// position pair the mask and the bias.
class ScorePlan {
 public:
  // `rope_inside`: fused_rope_scores, whose rotation is its source argument.
  ScorePlan(const ScoreOptions& options, Eigen::Index heads, Eigen::Index head_dim, bool rope_inside)
      : options_(options) {
    const ScoreScheme scheme = options.scheme;
    if (scheme != ScoreScheme::None && scheme != ScoreScheme::Rope && scheme != ScoreScheme::Alibi &&
        scheme != ScoreScheme::RelativeBias) {
      fail("scheme", static_cast<int>(scheme), score_scheme_names());
    }
    if (scheme == ScoreScheme::Rope && !rope_inside) {
      options.rope.validate();
      check_head_dim(options.rope, ActivationShape({1, 1, 1, head_dim}, TensorLayout::BSHD));
    } else if (options.rope.rotary_dim != 0 || options.rope.inv_freq.size() != 0) {
      fail("rope.rotary_dim", options.rope.rotary_dim,
           rope_inside ? "expected an empty RopeSpec: fused_rope_scores rotates with its source argument"
                       : "expected an empty RopeSpec unless scheme == ScoreScheme::Rope");
    }
    if (scheme == ScoreScheme::Alibi) {
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
    if (scheme == ScoreScheme::RelativeBias) {
      if (!options.relative_bias) {
        fail("relative_bias", "absent", "expected a T5BiasTable when scheme == ScoreScheme::RelativeBias");
      }
      if (options.relative_bias->heads() != heads) {
        fail("relative_bias heads", options.relative_bias->heads(),
             "expected one table column per query head = " + std::to_string(heads));
      }
    } else if (options.relative_bias) {
      fail("relative_bias heads", options.relative_bias->heads(),
           "expected no table unless scheme == ScoreScheme::RelativeBias");
    }
    const LayerAttention& layer = options.layer;
    if (layer.softmax_scale) {
      require_positive_finite("layer.softmax_scale", *layer.softmax_scale);
      scale_ = *layer.softmax_scale;
    } else {
      scale_ = 1.0 / std::sqrt(static_cast<double>(head_dim));
    }
    if (layer.sliding_window) require_positive("layer.sliding_window", *layer.sliding_window);
    if (layer.attention_chunk_size) require_positive("layer.attention_chunk_size", *layer.attention_chunk_size);
    if (layer.query_temperature) {
      require_positive_finite("layer.query_temperature.floor_scale", layer.query_temperature->floor_scale);
      if (!std::isfinite(layer.query_temperature->attn_scale)) {
        fail("layer.query_temperature.attn_scale", layer.query_temperature->attn_scale, "expected a finite number");
      }
    }
  }

  double scale() const { return scale_; }

  // The factor q at this position is multiplied by: the query temperature, or 1.
  double temperature(std::int64_t q_position) const {
    const auto& t = options_.layer.query_temperature;
    return t ? t->factor(static_cast<double>(q_position)) : 1.0;
  }

  // Whether the key at k_position is visible to the query at q_position.
  bool visible(std::int64_t q_position, std::int64_t k_position) const {
    const LayerAttention& layer = options_.layer;
    const bool after = k_position > q_position;
    if (after && (options_.causal || layer.sliding_window || layer.attention_chunk_size)) return false;
    if (layer.sliding_window) {
      // 0 <= qpos - kpos here; the difference of two int64 fits in uint64.
      const std::uint64_t distance = static_cast<std::uint64_t>(q_position) - static_cast<std::uint64_t>(k_position);
      if (distance >= static_cast<std::uint64_t>(*layer.sliding_window)) return false;
    }
    if (layer.attention_chunk_size) {
      const std::int64_t c = *layer.attention_chunk_size;
      if (floor_div(q_position, c) != floor_div(k_position, c)) return false;
    }
    return true;
  }

  // Whether visible() can be false: only then are masked entries and empty rows possible.
  bool masks() const {
    return options_.causal || options_.layer.sliding_window || options_.layer.attention_chunk_size;
  }

  // Whether bias() can be non-zero.
  bool biased() const {
    return options_.scheme == ScoreScheme::Alibi || options_.scheme == ScoreScheme::RelativeBias;
  }

  // The additive bias of query head h.
  double bias(Eigen::Index h, std::int64_t q_position, std::int64_t k_position) const {
    if (options_.scheme == ScoreScheme::Alibi) {
      return alibi_bias_value(options_.alibi_slopes[h], q_position, k_position, AlibiForm::Symmetric);
    }
    if (options_.scheme == ScoreScheme::RelativeBias) {
      const T5BiasTable<float>& table = *options_.relative_bias;
      const std::int64_t bucket =
          t5_bucket_unchecked(relative_position(q_position, k_position), table.buckets());
      return static_cast<double>(table.table()(bucket, h));
    }
    return 0.0;
  }

  // Adds head h's bias to row[j] and masks it, for keys j in [begin, end) of one query row.
  template <class C, class KeyPosition>
  void bias_and_mask(C* row, Eigen::Index begin, Eigen::Index end, Eigen::Index h,
                     std::int64_t q_position, const KeyPosition& k_position) const {
    if (!biased() && !masks()) return;
    for (Eigen::Index j = begin; j < end; ++j) {
      const std::int64_t kpos = k_position(j);
      if (!visible(q_position, kpos)) {
        row[j] = -std::numeric_limits<C>::infinity();
      } else if (biased()) {
        row[j] = static_cast<C>(static_cast<double>(row[j]) + bias(h, q_position, kpos));
      }
    }
  }

  // Replaces the biased and masked row [k_len] by its softmax (when options.softmax).
  template <class C, class KeyPosition>
  void softmax(C* row, Eigen::Index k_len, std::int64_t q_position, const KeyPosition& k_position) const {
    if (!options_.softmax) return;
    constexpr double neg_inf = -std::numeric_limits<double>::infinity();
    double row_max = neg_inf;
    bool any_visible = false, any_before = false;
    for (Eigen::Index j = 0; j < k_len; ++j) {
      const std::int64_t kpos = k_position(j);
      any_before = any_before || kpos <= q_position;
      if (!visible(q_position, kpos)) continue;
      any_visible = true;
      row_max = std::max(row_max, static_cast<double>(row[j]));
    }
    if (!any_visible) {
      fail("query position", q_position,
           any_before ? "the sliding window or the attention chunk leaves this row no key to attend to"
                      : "every key position is greater, so the causal mask leaves this row no key to attend to");
    }
    double sum = 0.0;
    for (Eigen::Index j = 0; j < k_len; ++j) {
      if (visible(q_position, k_position(j))) sum += std::exp(static_cast<double>(row[j]) - row_max);
    }
    for (Eigen::Index j = 0; j < k_len; ++j) {
      row[j] = visible(q_position, k_position(j))
                   ? static_cast<C>(std::exp(static_cast<double>(row[j]) - row_max) / sum)
                   : C(0);
    }
  }

 private:
  const ScoreOptions& options_;
  double scale_ = 1.0;
};

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

// ---------------------------------------------------------------------------------------------
// The blocked score kernel: the one body of attention_scores and fused_rope_scores.
//
// For each batch row b and key-value head g, the keys of g are copied once into a float (double
// for double storage) scratch k_rows [seq_k, head_dim], rotated on the way in storage type T (as
// a model rotates them) and widened once. For each query head h of g's group (grouped-query
// attention: h / (heads / kv_heads) = g), the queries go through the same steps in panels of
// score_tile_rows rows. A panel's scores against the keys are tiles of score_tile_rows columns:
//   hidden  every key lies after every query (or outside the window / chunk): -inf, no product
//   visible every key is seen by every query: the product, then the bias if any
//   mixed   the rest (the diagonal of a causal mask): the product, then mask and bias per entry
// Runs of consecutive non-hidden tiles are one GEMM call, scale folded into it:
//   out[i0 .., j0 ..] = scale * q_panel k_rows[j0 ..]ᵀ      (Eigen's GEMM, row-major)
// Each query row is rotated once per call, each key row once per (b, g).
inline constexpr Eigen::Index score_tile_rows = 128;

template <class T>
using RowMajorRows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

// No rotation: ScoreScheme None, Alibi and RelativeBias in attention_scores.
struct NoRotation {
  static constexpr bool rotates = false;
  void check(const Positions&, Eigen::Index, Eigen::Index, Eigen::Index) const {}
  template <class T>
  void rotate(T*, Eigen::Index, Eigen::Index, const Positions&) const {}
};

// RoPE from a RopeSpec or a RopeTable (rope.hpp's rotation of matrix rows).
template <class Source>
struct SourceRotation {
  static constexpr bool rotates = true;
  const Source& source;
  // Throws unless the source fits head_dim and (a table) covers every position.
  void check(const Positions& positions, Eigen::Index batch, Eigen::Index seq, Eigen::Index head_dim) const {
    rotary_source(source, positions)
        .check(ActivationShape({batch, seq, 1, head_dim}, TensorLayout::BSHD));
  }
  // rows: [count, head_dim], row r at panel_positions (0, r).
  template <class T>
  void rotate(T* rows, Eigen::Index count, Eigen::Index head_dim, const Positions& panel_positions) const {
    rotate_matrix_rows(Eigen::Map<RowMajorRows<T>>(rows, count, head_dim), rotary_source(source, panel_positions));
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

// The steps above for one call: its scratch (one key-value head, one query panel, one batch
// row's positions) is allocated once and reused for every (batch row, head).
template <class T, class Rotation>
class ScoreKernel {
 public:
  using C = compute_t<T>;

  ScoreKernel(const ScorePlan& plan, const ScoreOptions& options, const Rotation& rotation,
              Eigen::Index seq_q, Eigen::Index seq_k, Eigen::Index head_dim)
      : plan_(plan), options_(options), rotation_(rotation), seq_q_(seq_q), seq_k_(seq_k),
        head_dim_(head_dim),
        by_position_(plan.masks() || plan.biased() || options.layer.query_temperature || options.softmax),
        k_rows_(seq_k, head_dim), q_panel_(std::min(score_tile_rows, seq_q), head_dim),
        staged_(std::is_same_v<T, C> ? 0 : std::min(score_tile_rows, std::max(seq_q, seq_k)),
                std::is_same_v<T, C> ? 0 : head_dim),
        q_positions_(seq_q), k_positions_(seq_k), k_positions_f64_(plan.biased() ? seq_k : 0) {
    if (options.scheme == ScoreScheme::RelativeBias) build_buckets();
    if (options.softmax) exp_row_.resize(seq_k);
  }

  // The positions of batch row b (masks, bias, temperature need them whole).
  void set_batch_row(Eigen::Index b, const Positions& q_positions, const Positions& k_positions) {
    if (!by_position_) return;
    for (Eigen::Index i = 0; i < seq_q_; ++i) q_positions_[i] = whole_position(q_positions, b, i);
    for (Eigen::Index j = 0; j < seq_k_; ++j) k_positions_[j] = whole_position(k_positions, b, j);
    for (Eigen::Index j = 0; j < k_positions_f64_.size(); ++j) {
      k_positions_f64_[j] = static_cast<double>(k_positions_[j]);
    }
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
  void score_head(const Rows& q, Eigen::Index b, Eigen::Index h, const Positions& q_positions, C* out) {
    using OutTile = Eigen::Map<RowMajorRows<C>, 0, Eigen::OuterStride<>>;
    const C scale = static_cast<C>(plan_.scale());
    for (Eigen::Index i0 = 0; i0 < seq_q_; i0 += score_tile_rows) {
      const Eigen::Index rows = std::min(score_tile_rows, seq_q_ - i0);
      stage(q, b, h, i0, rows, q_positions, q_panel_.data());
      if (options_.layer.query_temperature) {
        for (Eigen::Index i = 0; i < rows; ++i) {
          q_panel_.row(i) *= static_cast<C>(plan_.temperature(q_positions_[i0 + i]));
        }
      }
      std::int64_t q_min = 0, q_max = 0;
      if (plan_.masks()) {
        q_min = q_positions_.segment(i0, rows).minCoeff();
        q_max = q_positions_.segment(i0, rows).maxCoeff();
      }
      Eigen::Index j0 = 0;
      while (j0 < seq_k_) {
        const Eigen::Index cols = std::min(score_tile_rows, seq_k_ - j0);
        if (classify(q_min, q_max, j0, cols) == Tile::Hidden) {
          for (Eigen::Index i = 0; i < rows; ++i) {
            std::fill_n(out + (i0 + i) * seq_k_ + j0, cols, -std::numeric_limits<C>::infinity());
          }
          j0 += cols;
          continue;
        }
        // The run of non-hidden tiles from j0: one product.
        Eigen::Index j1 = j0 + cols;
        while (j1 < seq_k_ &&
               classify(q_min, q_max, j1, std::min(score_tile_rows, seq_k_ - j1)) != Tile::Hidden) {
          j1 += std::min(score_tile_rows, seq_k_ - j1);
        }
        OutTile tile(out + i0 * seq_k_ + j0, rows, j1 - j0, Eigen::OuterStride<>(seq_k_));
        tile.noalias() = scale * (q_panel_.topRows(rows) * k_rows_.middleRows(j0, j1 - j0).transpose());
        for (Eigen::Index t0 = j0; t0 < j1; t0 += score_tile_rows) {
          const Eigen::Index t1 = std::min(t0 + score_tile_rows, j1);
          const bool mixed = classify(q_min, q_max, t0, t1 - t0) == Tile::Mixed;
          if (!mixed && !plan_.biased()) continue;
          for (Eigen::Index i = 0; i < rows; ++i) {
            bias_and_mask(out + (i0 + i) * seq_k_, t0, t1, h, q_positions_[i0 + i], mixed);
          }
        }
        j0 = j1;
      }
    }
    if (options_.softmax) {
      for (Eigen::Index i = 0; i < seq_q_; ++i) softmax(out + i * seq_k_, q_positions_[i]);
    }
  }

 private:
  enum class Tile { Hidden, Visible, Mixed };

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
    if constexpr (Rotation::rotates) {
      rotation_.rotate(rows, count, head_dim_, panel_positions_.of(positions, b, begin, count));
    } else {
      (void)positions;
    }
    if constexpr (!std::is_same_v<T, C>) widen(rows, dst, count * head_dim_);
  }

  // The mask class of the tile of queries [q_min, q_max] (by position) and keys j0 .. j0 + cols - 1.
  Tile classify(std::int64_t q_min, std::int64_t q_max, Eigen::Index j0, Eigen::Index cols) const {
    if (!plan_.masks()) return Tile::Visible;
    const auto keys = k_positions_.segment(j0, cols);
    const std::int64_t k_min = keys.minCoeff(), k_max = keys.maxCoeff();
    const LayerAttention& layer = options_.layer;
    if (k_min > q_max) return Tile::Hidden;  // every mask hides keys after the query
    // Distances q - k of keys at or before the query, as uint64 (they may exceed int64).
    const auto distance = [](std::int64_t q, std::int64_t k) {
      return static_cast<std::uint64_t>(q) - static_cast<std::uint64_t>(k);
    };
    if (layer.sliding_window && k_max <= q_min &&
        distance(q_min, k_max) >= static_cast<std::uint64_t>(*layer.sliding_window)) {
      return Tile::Hidden;
    }
    if (layer.attention_chunk_size) {
      const std::int64_t c = *layer.attention_chunk_size;
      if (floor_div(k_max, c) < floor_div(q_min, c)) return Tile::Hidden;
    }
    if (k_max > q_min) return Tile::Mixed;
    if (layer.sliding_window && distance(q_max, k_min) >= static_cast<std::uint64_t>(*layer.sliding_window)) {
      return Tile::Mixed;
    }
    if (layer.attention_chunk_size) {
      const std::int64_t c = *layer.attention_chunk_size;
      if (floor_div(k_min, c) != floor_div(q_max, c)) return Tile::Mixed;
    }
    return Tile::Visible;
  }

  // Adds query head h's bias to row[j] for keys j in [begin, end) and, when `mask`, masks them:
  // the values ScorePlan::bias_and_mask gives, without its per-entry dispatch.
  void bias_and_mask(C* row, Eigen::Index begin, Eigen::Index end, Eigen::Index h, std::int64_t q_position,
                     bool mask) const {
    constexpr C neg_inf = -std::numeric_limits<C>::infinity();
    if (options_.scheme == ScoreScheme::Alibi) {
      // alibi_bias_value: -slope * |double(qpos) - double(kpos)|
      const double slope = options_.alibi_slopes[h], q = static_cast<double>(q_position);
      for (Eigen::Index j = begin; j < end; ++j) {
        row[j] = static_cast<C>(static_cast<double>(row[j]) - slope * std::abs(q - k_positions_f64_[j]));
      }
    } else if (options_.scheme == ScoreScheme::RelativeBias) {
      const auto& table = options_.relative_bias->table();
      for (Eigen::Index j = begin; j < end; ++j) {
        const std::int64_t bucket = bucket_of(relative_position(q_position, k_positions_[j]));
        row[j] = static_cast<C>(static_cast<double>(row[j]) + static_cast<double>(table(bucket, h)));
      }
    }
    if (mask && !options_.layer.sliding_window && !options_.layer.attention_chunk_size) {
      for (Eigen::Index j = begin; j < end; ++j) {  // the causal mask alone
        row[j] = k_positions_[j] > q_position ? neg_inf : row[j];
      }
    } else if (mask) {
      for (Eigen::Index j = begin; j < end; ++j) {
        if (!plan_.visible(q_position, k_positions_[j])) row[j] = neg_inf;
      }
    }
  }

  // T5 buckets of relative positions -bucket_span .. bucket_span, looked up instead of a log
  // per entry; farther ones are computed.
  static constexpr std::int64_t bucket_span = 4096;
  void build_buckets() {
    const T5Buckets& buckets = options_.relative_bias->buckets();
    bucket_lookup_.resize(2 * bucket_span + 1);
    for (std::int64_t rel = -bucket_span; rel <= bucket_span; ++rel) {
      bucket_lookup_[static_cast<std::size_t>(rel + bucket_span)] = t5_bucket_unchecked(rel, buckets);
    }
  }
  std::int64_t bucket_of(std::int64_t rel) const {
    if (rel >= -bucket_span && rel <= bucket_span) {
      return bucket_lookup_[static_cast<std::size_t>(rel + bucket_span)];
    }
    return t5_bucket_unchecked(rel, options_.relative_bias->buckets());
  }

  // The masked row [seq_k] replaced by its softmax; masked entries (-inf) become exactly 0.
  void softmax(C* row, std::int64_t q_position) {
    Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>> values(row, seq_k_);
    const C row_max = values.maxCoeff();
    if (row_max == -std::numeric_limits<C>::infinity()) {
      // No visible key: the plan's softmax names the reason.
      const auto k_position = [&](Eigen::Index j) { return k_positions_[j]; };
      plan_.softmax(row, seq_k_, q_position, k_position);
      return;
    }
    exp_row_ = (values - row_max).exp();
    for (Eigen::Index j = 0; j < seq_k_; ++j) {
      row[j] = row[j] == -std::numeric_limits<C>::infinity() ? C(0) : exp_row_[j];
    }
    values /= values.sum();
  }

  const ScorePlan& plan_;
  const ScoreOptions& options_;
  const Rotation& rotation_;
  const Eigen::Index seq_q_, seq_k_, head_dim_;
  const bool by_position_;
  RowMajorRows<C> k_rows_;   // [seq_k, head_dim]: one key-value head, rotated, widened
  RowMajorRows<C> q_panel_;  // [score_tile_rows, head_dim]: one panel of queries
  RowMajorRows<T> staged_;   // [score_tile_rows, head_dim]: rows in storage type (half, bf16)
  PanelPositions panel_positions_;
  PositionVector q_positions_, k_positions_;  // batch row b's positions, for masks and bias
  Eigen::Matrix<double, Eigen::Dynamic, 1> k_positions_f64_;  // k positions in double (ALiBi)
  std::vector<std::int64_t> bucket_lookup_;
  Eigen::Array<C, Eigen::Dynamic, 1> exp_row_;
};

// All scores: out [batch, heads, seq_q, seq_k] from q (heads) and k (kv_heads, dividing heads).
template <class T, class QRows, class KRows, class Rotation>
void blocked_scores(const ScorePlan& plan, const ScoreOptions& options, const Rotation& rotation,
                    const QRows& q, const Positions& q_positions, const KRows& k,
                    const Positions& k_positions, Eigen::Index batch, Eigen::Index heads,
                    Eigen::Index kv_heads, Eigen::Index seq_q, Eigen::Index seq_k,
                    Eigen::Index head_dim, compute_t<T>* out) {
  rotation.check(q_positions, batch, seq_q, head_dim);
  rotation.check(k_positions, batch, seq_k, head_dim);
  ScoreKernel<T, Rotation> kernel(plan, options, rotation, seq_q, seq_k, head_dim);
  const Eigen::Index group = heads / kv_heads;
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
    fail("k.dimension(0)", k.dimension(0), "expected batch = q.dimension(0) = " + std::to_string(batch));
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

// Scores of 4-D q and k with `rotation` into out [batch, heads, seq_q, seq_k].
template <class T, class Rotation>
void tensor_scores(const ScorePlan& plan, const ScoreOptions& options, const Rotation& rotation,
                   const T* q, const Positions& q_positions, const T* k, const Positions& k_positions,
                   const ScoreShapes& shapes, compute_t<T>* out) {
  blocked_scores<T>(plan, options, rotation, TensorHeadRows<T>{q, shapes.q}, q_positions,
                    TensorHeadRows<T>{k, shapes.k}, k_positions, shapes.q.batch, shapes.q.heads,
                    shapes.k.heads, shapes.q.seq, shapes.k.seq, shapes.q.head_dim, out);
}

// attention_scores' scheme: RoPE from options.rope, or no rotation.
template <class Body>
void with_score_rotation(const ScoreOptions& options, const Body& body) {
  if (options.scheme == ScoreScheme::Rope) {
    body(SourceRotation<RopeSpec>{options.rope});
  } else {
    body(NoRotation{});
  }
}

// The plain loop the blocked kernel is tested against: every score a dot product in the
// arithmetic type, q and k rotated beforehand by apply_rope (in storage type), the plan's bias,
// mask and softmax (in double) per entry. q, k, layout and the result as for attention_scores.
template <class XQ, class XK, IfTensor4<XQ> = 0, IfTensor4<XK> = 0>
Tensor4<compute_t<scalar_of_t<XQ>>> attention_scores_reference(
    const XQ& q, const Positions& q_positions, const XK& k, const Positions& k_positions,
    const ScoreOptions& options = {}, TensorLayout layout = TensorLayout::BSHD) {
  using T = scalar_of_t<XQ>;
  using C = compute_t<T>;
  const ScoreShapes shapes = check_score_shapes(q, q_positions, k, k_positions, layout);
  const Eigen::Index batch = shapes.q.batch, heads = shapes.q.heads, seq_q = shapes.q.seq;
  const Eigen::Index seq_k = shapes.k.seq, head_dim = shapes.q.head_dim;
  const ScorePlan plan(options, heads, head_dim, false);
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
  const Eigen::Index group = heads / shapes.k.heads;
  const C scale = static_cast<C>(plan.scale());
  for (Eigen::Index b = 0; b < batch; ++b) {
    const auto k_position = [&](Eigen::Index j) { return k_positions.integer_at(b, j); };
    for (Eigen::Index h = 0; h < heads; ++h) {
      for (Eigen::Index i = 0; i < seq_q; ++i) {
        const std::int64_t q_position = q_positions.integer_at(b, i);
        const T* qi = q_data + shapes.q.offset(b, i, h);
        const C temperature = static_cast<C>(plan.temperature(q_position));
        C* row = scores.data() + ((b * heads + h) * seq_q + i) * seq_k;
        for (Eigen::Index j = 0; j < seq_k; ++j) {
          const T* kj = k_data + shapes.k.offset(b, j, h / group);
          C dot = 0;
          for (Eigen::Index c = 0; c < head_dim; ++c) {
            dot += static_cast<C>(qi[c]) * temperature * static_cast<C>(kj[c]);
          }
          row[j] = scale * dot;
        }
        plan.bias_and_mask(row, 0, seq_k, h, q_position, k_position);
        plan.softmax(row, seq_k, q_position, k_position);
      }
    }
  }
  return scores;
}

// The same for one head: q [seq_q, head_dim], k [seq_k, head_dim]; returns [seq_q, seq_k].
template <class DQ, class DK>
ScoreMatrix<compute_t<typename DQ::Scalar>> attention_scores_reference(
    const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
    const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions, const ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  const RowMajorRows<T> q_rows = q, k_rows = k;
  const Eigen::TensorMap<const Tensor4<T>> q4(q_rows.data(), 1, q.rows(), 1, q.cols());
  const Eigen::TensorMap<const Tensor4<T>> k4(k_rows.data(), 1, k.rows(), 1, k.cols());
  const auto scores = attention_scores_reference(q4, q_positions, k4, k_positions, options);
  return Eigen::Map<const ScoreMatrix<compute_t<T>>>(scores.data(), q.rows(), k.rows());
}

}  // namespace detail

// One head. q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions
// [seq_k] (matrices, maps or blocks of them, any strides). Returns logits (or probabilities):
// [seq_q, seq_k].
// Example (causal RoPE attention probabilities of 4 queries after 12 cached keys):
//   posemb::ScoreOptions options;
//   options.scheme = posemb::ScoreScheme::Rope;
//   options.rope = posemb::default_rope_spec(64);   // head_dim 64, theta 10000
//   options.causal = true;
//   options.softmax = true;
//   posemb::PositionVector qpos(4), kpos(16);
//   for (int i = 0; i < 4; ++i) qpos[i] = 12 + i;
//   for (int j = 0; j < 16; ++j) kpos[j] = j;
//   const auto p = posemb::attention_scores(q, qpos, k, kpos, options);  // q: [4, 64], k: [16, 64]
template <class DQ, class DK>
ScoreMatrix<compute_t<typename DQ::Scalar>> attention_scores(
    const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
    const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions,
    const ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  static_assert(std::is_same_v<T, typename DK::Scalar>, "posemb: q and k must have the same scalar type");
  detail::check_head_scores(q, q_positions, k, k_positions);
  const detail::ScorePlan plan(options, 1, q.cols(), false);
  ScoreMatrix<compute_t<T>> scores(q.rows(), k.rows());
  detail::with_score_rotation(options, [&](const auto& rotation) {
    detail::blocked_scores<T>(plan, options, rotation, detail::MatrixHeadRows<DQ>{q}, Positions(q_positions),
                              detail::MatrixHeadRows<DK>{k}, Positions(k_positions), 1, 1, 1, q.rows(),
                              k.rows(), q.cols(), scores.data());
  });
  return scores;
}

// Batched, all heads. q: [batch, seq_q, heads, head_dim] (BSHD) or [batch, heads, seq_q,
// head_dim] (BHSD); k: the same layout with kv_heads heads and seq_k tokens. Grouped-query
// attention: kv_heads may divide heads; query head h reads kv head h / (heads / kv_heads), as
// in HuggingFace's repeat_kv. q_positions / k_positions: a PositionMatrix [batch, seq] (or
// [1, seq]) or a scalar offset (token s at offset + s), as in rope.hpp; the masks, the bias and
// the query temperature need whole positions. ALiBi uses options.alibi_slopes[h] and the
// relative bias column h of its table for query head h. Half and bfloat16 q and k are rotated
// in their storage type and multiplied in float. Returns [batch, heads, seq_q, seq_k].
// Example (one Gemma 2 sliding layer: a 4096-token window, softmax scale 256^-0.5, at a
// KV-cache offset of 5000 tokens):
//   posemb::ScoreOptions options;
//   options.scheme = posemb::ScoreScheme::Rope;
//   options.rope = posemb::default_rope_spec(256);
//   options.layer.softmax_scale = 1.0 / 16.0;
//   options.layer.sliding_window = 4096;
//   options.softmax = true;
//   // q: [1, 1, 8, 256] (the new token), k: [1, 5001, 4, 256] (the cache)
//   const auto p = posemb::attention_scores(q, std::int64_t{5000}, k, std::int64_t{0}, options);
template <class XQ, class XK, IfTensor4<XQ> = 0, IfTensor4<XK> = 0>
Tensor4<compute_t<scalar_of_t<XQ>>> attention_scores(
    const XQ& q, const Positions& q_positions, const XK& k,
    const Positions& k_positions, const ScoreOptions& options = {},
    TensorLayout layout = TensorLayout::BSHD) {
  const detail::ScoreShapes shapes = detail::check_score_shapes(q, q_positions, k, k_positions, layout);
  Tensor4<compute_t<scalar_of_t<XQ>>> scores(shapes.q.batch, shapes.q.heads, shapes.q.seq, shapes.k.seq);
  attention_scores(q, q_positions, k, k_positions, scores, options, layout);
  return scores;
}

// The same into a caller's out: [batch, heads, seq_q, seq_k] of float (double for double q, k);
// allocates only scratch of one key-value head ([seq_k, head_dim]) and one query panel.
// Example (the scores of a prefill into a buffer reused across layers):
//   posemb::Tensor4<float> scores(1, 32, seq, seq);
//   posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, scores, options);
template <class XQ, class XK, class Out, IfTensor4<XQ> = 0, IfTensor4<XK> = 0, IfTensor4<Out> = 0>
void attention_scores(const XQ& q, const Positions& q_positions, const XK& k, const Positions& k_positions,
                      Out&& out, const ScoreOptions& options = {}, TensorLayout layout = TensorLayout::BSHD) {
  using T = scalar_of_t<XQ>;
  static_assert(std::is_same_v<T, scalar_of_t<XK>>, "posemb: q and k must have the same scalar type");
  static_assert(std::is_same_v<scalar_of_t<Out>, compute_t<T>>,
                "posemb: out holds float scores for float, half and bfloat16 q and k, double for double");
  const detail::ScoreShapes shapes = detail::check_score_shapes(q, q_positions, k, k_positions, layout);
  detail::check_score_output(out, shapes);
  const detail::ScorePlan plan(options, shapes.q.heads, shapes.q.head_dim, false);
  detail::with_score_rotation(options, [&](const auto& rotation) {
    detail::tensor_scores<T>(plan, options, rotation, q.data(), q_positions, k.data(), k_positions, shapes,
                             out.data());
  });
}

}  // namespace posemb
