// The plain loop attention_scores is tested against (and bench_attention checks with): every
// score written out from its definition, one entry at a time, sharing no code with the blocked
// kernel beyond the rotation (rotary/rotate.hpp's rotated, itself tested against published
// values) and the T5 bucket function (bias/relative_bias.hpp, tested against T5's own).
//   s = t(qpos_i) · <q_i', k_j'>            product in the arithmetic type C, the rest in double
//   s = scale · (s + bias)  or  scale · s   (layer.bias_placement BeforeScale / AfterScale)
//   s = cap · tanh(s / cap)                 (layer.logit_softcap)
//   s = s + bias                            (AfterScale)
//   s = -inf where masked; softmax with the head's sink logit in the denominator.
// The options are taken as valid (attention_scores checks them); a row with no visible key
// under softmax throws std::logic_error.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <variant>
#include <vector>

#include <posemb/attention/options.hpp>
#include <posemb/bias/relative_bias.hpp>
#include <posemb/rotary/rope.hpp>

namespace attention_oracle {

// Key k visible to query q under the causal flag and the layer's window and chunk.
inline bool visible(const posemb::ScoreOptions& options, std::int64_t q, std::int64_t k) {
  const posemb::LayerAttention& layer = options.layer;
  const bool masked = options.causal || layer.sliding_window || layer.attention_chunk_size;
  if (masked && k > q) return false;
  if (layer.sliding_window && q - k >= *layer.sliding_window) return false;
  if (layer.attention_chunk_size) {
    const double c = static_cast<double>(*layer.attention_chunk_size);
    if (std::floor(static_cast<double>(q) / c) != std::floor(static_cast<double>(k) / c))
      return false;
  }
  return true;
}

// The additive bias of query head h.
inline double bias(const posemb::ScoreOptions& options, Eigen::Index h, std::int64_t q,
                   std::int64_t k) {
  if (const auto* alibi = std::get_if<posemb::AlibiSlopes>(&options.bias)) {
    return -alibi->slopes[h] * std::abs(static_cast<double>(q) - static_cast<double>(k));
  }
  if (const auto* t5 = std::get_if<posemb::T5BiasTable<float>>(&options.bias)) {
    const posemb::T5Buckets& b = t5->buckets();
    const std::int64_t bucket =
        posemb::t5_relative_position_bucket(k - q, b.num_buckets, b.max_distance, b.bidirectional);
    return static_cast<double>(t5->table()(bucket, h));
  }
  return 0.0;
}

// One entry from the temperature-scaled product `dot`, before the mask.
inline double logit(const posemb::ScoreOptions& options, double scale, double dot,
                    double bias_value) {
  const bool before = options.layer.bias_placement == posemb::BiasPlacement::BeforeScale;
  double s = before ? scale * (dot + bias_value) : scale * dot;
  if (options.layer.logit_softcap)
    s = *options.layer.logit_softcap * std::tanh(s / *options.layer.logit_softcap);
  return before ? s : s + bias_value;
}

// Row [k_len] of logits (-inf masked) replaced by its softmax, with an optional sink logit.
template <class C>
void softmax(C* row, Eigen::Index k_len, bool has_sink, double sink) {
  double top = has_sink ? sink : -std::numeric_limits<double>::infinity();
  bool any = false;
  for (Eigen::Index j = 0; j < k_len; ++j) {
    if (std::isinf(static_cast<double>(row[j]))) continue;
    any = true;
    top = std::max(top, static_cast<double>(row[j]));
  }
  if (!any) throw std::logic_error("attention_oracle: a softmax row with no visible key");
  double sum = has_sink ? std::exp(sink - top) : 0.0;
  for (Eigen::Index j = 0; j < k_len; ++j) {
    if (!std::isinf(static_cast<double>(row[j])))
      sum += std::exp(static_cast<double>(row[j]) - top);
  }
  for (Eigen::Index j = 0; j < k_len; ++j) {
    const double value = static_cast<double>(row[j]);
    row[j] = std::isinf(value) ? C(0) : static_cast<C>(std::exp(value - top) / sum);
  }
}

// x rotated by the options' rotation (in its storage type), or x itself.
template <class X>
posemb::Tensor4<posemb::scalar_of_t<X>> rotated(const X& x, const posemb::Positions& positions,
                                                const posemb::ScoreOptions& options,
                                                posemb::TensorLayout layout) {
  using T = posemb::scalar_of_t<X>;
  posemb::Tensor4<T> out = x;
  std::visit(
      [&](const auto& source) {
        using Source = std::decay_t<decltype(source)>;
        if constexpr (std::is_same_v<Source, posemb::RopeSpec>) {
          out = posemb::rotated(x, positions, source, posemb::RotateOptions().with_layouts(layout));
        } else if constexpr (std::is_pointer_v<Source>) {
          using Table = std::remove_pointer_t<Source>;
          if constexpr (std::is_same_v<typename Table::compute_type, posemb::compute_t<T>>) {
            out = posemb::rotated(x, positions, *source,
                                  posemb::RotateOptions().with_layouts(layout));
          } else {
            throw std::logic_error("attention_oracle: a RopeTable of another arithmetic type");
          }
        }
      },
      options.rotation);
  return out;
}

// q: [batch, seq_q, heads, head_dim] (BSHD) or BHSD; k: the same with kv_heads dividing heads.
// Returns [batch, heads, seq_q, seq_k] in the arithmetic type.
template <class XQ, class XK, posemb::IfTensor4<XQ> = 0, posemb::IfTensor4<XK> = 0>
posemb::Tensor4<posemb::compute_t<posemb::scalar_of_t<XQ>>> scores(
    const XQ& q_in, const posemb::Positions& q_positions, const XK& k_in,
    const posemb::Positions& k_positions, const posemb::ScoreOptions& options = {},
    posemb::TensorLayout layout = posemb::TensorLayout::BSHD) {
  using C = posemb::compute_t<posemb::scalar_of_t<XQ>>;
  const posemb::ActivationShape qs(q_in.dimensions(), layout), ks(k_in.dimensions(), layout);
  const auto q = rotated(q_in, q_positions, options, layout);
  const auto k = rotated(k_in, k_positions, options, layout);
  const double scale =
      options.layer.softmax_scale.value_or(1.0 / std::sqrt(static_cast<double>(qs.head_dim)));
  posemb::Tensor4<C> out(qs.batch, qs.heads, qs.seq, ks.seq);
  const Eigen::Index group = qs.heads / ks.heads;
  for (Eigen::Index b = 0; b < qs.batch; ++b) {
    for (Eigen::Index h = 0; h < qs.heads; ++h) {
      for (Eigen::Index i = 0; i < qs.seq; ++i) {
        const std::int64_t qpos = q_positions.integer_at(b, i);
        const auto& t = options.layer.query_temperature;
        const C temperature = static_cast<C>(t ? t->factor(static_cast<double>(qpos)) : 1.0);
        C* row = out.data() + ((b * qs.heads + h) * qs.seq + i) * ks.seq;
        for (Eigen::Index j = 0; j < ks.seq; ++j) {
          const std::int64_t kpos = k_positions.integer_at(b, j);
          C dot = 0;
          for (Eigen::Index c = 0; c < qs.head_dim; ++c) {
            dot += static_cast<C>(q.data()[qs.offset(b, i, h) + c]) * temperature *
                   static_cast<C>(k.data()[ks.offset(b, j, h / group) + c]);
          }
          row[j] = visible(options, qpos, kpos)
                       ? static_cast<C>(logit(options, scale, static_cast<double>(dot),
                                              bias(options, h, qpos, kpos)))
                       : -std::numeric_limits<C>::infinity();
        }
        if (options.softmax) {
          const bool sinks = options.layer.attention_sinks;
          softmax(row, ks.seq, sinks, sinks ? options.sink_logits[h] : 0.0);
        }
      }
    }
  }
  return out;
}

// The same for one head: q [seq_q, head_dim], k [seq_k, head_dim]; returns [seq_q, seq_k].
template <class DQ, class DK>
posemb::ScoreMatrix<posemb::compute_t<typename DQ::Scalar>> scores(
    const Eigen::MatrixBase<DQ>& q, const posemb::PositionVector& q_positions,
    const Eigen::MatrixBase<DK>& k, const posemb::PositionVector& k_positions,
    const posemb::ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  using Rows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Rows q_rows = q, k_rows = k;
  const Eigen::TensorMap<const posemb::Tensor4<T>> q4(q_rows.data(), 1, q.rows(), 1, q.cols());
  const Eigen::TensorMap<const posemb::Tensor4<T>> k4(k_rows.data(), 1, k.rows(), 1, k.cols());
  const auto s =
      scores(q4, posemb::Positions(q_positions), k4, posemb::Positions(k_positions), options);
  return Eigen::Map<const posemb::ScoreMatrix<posemb::compute_t<T>>>(s.data(), q.rows(), k.rows());
}

}  // namespace attention_oracle
