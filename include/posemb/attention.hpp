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
// fused_attention.hpp computes the same scores with RoPE inside the product, from the same
// ScoreOptions.
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
#include "posemb/layer_attention.hpp"
#include "posemb/relative_bias.hpp"
#include "posemb/rope.hpp"
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

}  // namespace detail

// One head. q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions
// [seq_k]. Returns logits (or probabilities): [seq_q, seq_k].
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
  const detail::ScorePlan plan(options, 1, q.cols(), false);

  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Rows q_rot = q;
  Rows k_rot = k;
  if (options.scheme == ScoreScheme::Rope) {
    apply_rope_inplace(q_rot, q_positions, options.rope);
    apply_rope_inplace(k_rot, k_positions, options.rope);
  }
  ScoreMatrix<C> q_scaled = q_rot.template cast<C>();
  for (Eigen::Index i = 0; i < q_scaled.rows(); ++i) {
    q_scaled.row(i) *= static_cast<C>(plan.temperature(q_positions[i]));
  }
  ScoreMatrix<C> scores = q_scaled * k_rot.template cast<C>().transpose();
  scores *= static_cast<C>(plan.scale());
  const auto k_position = [&](Eigen::Index j) { return k_positions[j]; };
  for (Eigen::Index i = 0; i < scores.rows(); ++i) {
    plan.bias_and_mask(scores.row(i).data(), 0, scores.cols(), 0, q_positions[i], k_position);
    plan.softmax(scores.row(i).data(), scores.cols(), q_positions[i], k_position);
  }
  return scores;
}

// Batched, all heads. q: [batch, seq_q, heads, head_dim] (BSHD) or [batch, heads, seq_q,
// head_dim] (BHSD); k: the same layout with kv_heads heads and seq_k tokens. Grouped-query
// attention: kv_heads may divide heads; query head h reads kv head h / (heads / kv_heads), as
// in HuggingFace's repeat_kv. q_positions / k_positions: a PositionMatrix [batch, seq] (or
// [1, seq]) or a scalar offset (token s at offset + s), as in rope.hpp. ALiBi uses
// options.alibi_slopes[h] and the relative bias column h of its table for query head h.
// Returns [batch, heads, seq_q, seq_k].
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
Tensor4<compute_t<std::remove_const_t<typename XQ::Scalar>>> attention_scores(
    const XQ& q, const Positions& q_positions, const XK& k,
    const Positions& k_positions, const ScoreOptions& options = {},
    TensorLayout layout = TensorLayout::BSHD) {
  using T = std::remove_const_t<typename XQ::Scalar>;
  using C = compute_t<T>;
  static_assert(std::is_same_v<T, std::remove_const_t<typename XK::Scalar>>,
                "posemb: q and k must have the same scalar type");
  const ActivationShape q_shape(q.dimensions(), layout), k_shape(k.dimensions(), layout);
  const bool bshd = q_shape.bshd();
  const Eigen::Index batch = q_shape.batch, seq_q = q_shape.seq, heads = q_shape.heads;
  const Eigen::Index seq_k = k_shape.seq, kv_heads = k_shape.heads, head_dim = q_shape.head_dim;
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
  const detail::ScorePlan plan(options, heads, head_dim, false);

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
  const C scale = static_cast<C>(plan.scale());
  for (Eigen::Index b = 0; b < batch; ++b) {
    const auto k_position = [&](Eigen::Index j) { return k_positions.integer_at(b, j); };
    for (Eigen::Index h = 0; h < heads; ++h) {
      for (Eigen::Index i = 0; i < seq_q; ++i) {
        const std::int64_t q_position = q_positions.integer_at(b, i);
        const T* qi = q_data + q_shape.offset(b, i, h);
        const C temperature = static_cast<C>(plan.temperature(q_position));
        C* row = scores.data() + ((b * heads + h) * seq_q + i) * seq_k;
        for (Eigen::Index j = 0; j < seq_k; ++j) {
          const T* kj = k_data + k_shape.offset(b, j, h / group);
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

}  // namespace posemb
