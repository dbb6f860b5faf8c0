// Attention scores with positional schemes: the helper that ties rotation, bias and the layer's
// attention parameters together.
//
//   logits[b, h, i, j] = cap(scale · t(qpos_i) <R(qpos_i) q_i, R(kpos_j) k_j>) + bias[h, i, j]
//                        (-inf where masked; Vaswani et al. 2017, eq. 1)
//
// R: the rotation (ScoreOptions::rotation: none, RoPE from a RopeSpec or a RopeTable; RoFormer,
//    Su et al. 2021, eq. 13-15); the scores then depend on qpos_i - kpos_j only.
// bias: ScoreOptions::bias, none, ALiBi or T5's relative bias, independent of the rotation;
//    with layer.bias_placement == BeforeScale it enters inside the scale (Falcon).
// scale, t, cap, masks, sinks: the layer (model/layer_attention.hpp): softmax_scale or
//    1 / sqrt(head_dim); the query temperature (Llama 4, Ministral 3); the logit softcap
//    (Gemma 2); causal, sliding window and chunk masks by position (attention/mask.hpp); the
//    attention sinks in the softmax denominator (gpt-oss). The exact order: attention/plan.hpp.
// Optional softmax over each row, numerically stable; masked entries are exactly 0; a row with
// every entry masked is a posemb::Error (attention/softmax.hpp). Without softmax such a row is
// returned as all -inf.
//
// Scores are in the arithmetic type (float for float / half / bf16 inputs, double for double).
// One blocked kernel computes every form (attention/kernel.hpp): q and k rotated once into
// float panels, Eigen GEMM products with the scale folded in, bias, softcap and masks applied to
// each tile while it is in cache, tiles the mask hides entirely filled without a product.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <type_traits>

#include "posemb/attention/kernel.hpp"
#include "posemb/attention/options.hpp"
#include "posemb/attention/plan.hpp"
#include "posemb/attention/shapes.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// One head. q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions
// [seq_k] (matrices, maps or blocks of them, any strides; their rows are read once). The bias
// has one head: AlibiBias{slopes [1]} or a one-head T5BiasTable (table.head(h)); sink_logits [1].
// Returns logits (or probabilities): [seq_q, seq_k].
// Example (causal RoPE attention probabilities of 4 queries after 12 cached keys):
//   posemb::ScoreOptions options;
//   options.rotation = posemb::default_rope_spec(64);   // head_dim 64, theta 10000
//   options.causal = true;
//   options.softmax = true;
//   posemb::PositionVector qpos(4), kpos(16);
//   for (int i = 0; i < 4; ++i) qpos[i] = 12 + i;
//   for (int j = 0; j < 16; ++j) kpos[j] = j;
//   const auto p = posemb::attention_scores(q, qpos, k, kpos, options);  // q: [4, 64], k: [16, 64]
template <class DQ, class DK>
ScoreMatrix<compute_t<typename DQ::Scalar>> attention_scores(const Eigen::MatrixBase<DQ>& q,
                                                             const PositionVector& q_positions,
                                                             const Eigen::MatrixBase<DK>& k,
                                                             const PositionVector& k_positions,
                                                             const ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  static_assert(std::is_same_v<T, typename DK::Scalar>,
                "posemb: q and k must have the same scalar type");
  detail::check_head_scores(q, q_positions, k, k_positions);
  const detail::ScorePlan plan(options, 1, q.cols());
  ScoreMatrix<compute_t<T>> scores(q.rows(), k.rows());
  detail::blocked_scores<T>(plan, detail::MatrixHeadRows<DQ>{q}, Positions(q_positions),
                            detail::MatrixHeadRows<DK>{k}, Positions(k_positions),
                            detail::head_score_shapes(q.rows(), k.rows(), q.cols()), scores.data());
  return scores;
}

// Batched, all heads, into a caller's out: [batch, heads, seq_q, seq_k] of float (double for
// double q, k); allocates only scratch of one key-value head ([seq_k, head_dim]) and one query
// panel. q: [batch, seq_q, heads, head_dim] (BSHD) or [batch, heads, seq_q, head_dim] (BHSD);
// k: the same layout with kv_heads heads and seq_k tokens. Grouped-query attention: kv_heads may
// divide heads; query head h reads kv head h / (heads / kv_heads), as in HuggingFace's repeat_kv.
// q_positions / k_positions: a PositionMatrix [batch, seq] (or [1, seq]) or a scalar offset
// (token s at offset + s), as in rotary/rope.hpp; the masks, the bias and the query temperature
// need whole positions. Query head h uses ALiBi slope h, T5 table column h and sink logit h.
// Half and bfloat16 q and k are rotated in their storage type and multiplied in float.
// Example (causal GQA prefill: 32 query heads, 8 key-value heads, bfloat16, RoPE from a table,
// into a buffer reused across layers):
//   const posemb::RopeTable<Eigen::bfloat16> table(posemb::default_rope_spec(128, 500000.0), 0,
//   2048); posemb::ScoreOptions options; options.rotation = &table; options.causal = true;
//   posemb::Tensor4<float> scores(1, 32, 2048, 2048);
//   // q: [1, 2048, 32, 128], k: [1, 2048, 8, 128], both Eigen::bfloat16
//   posemb::attention_scores(q, std::int64_t{0}, k, std::int64_t{0}, scores, options);
template <class XQ, class XK, class Out, IfTensor4<XQ> = 0, IfTensor4<XK> = 0, IfTensor4<Out> = 0>
void attention_scores(const XQ& q, const Positions& q_positions, const XK& k,
                      const Positions& k_positions, Out&& out, const ScoreOptions& options = {},
                      TensorLayout layout = TensorLayout::BSHD) {
  using T = scalar_of_t<XQ>;
  static_assert(std::is_same_v<T, scalar_of_t<XK>>,
                "posemb: q and k must have the same scalar type");
  static_assert(
      std::is_same_v<scalar_of_t<Out>, compute_t<T>>,
      "posemb: out holds float scores for float, half and bfloat16 q and k, double for double");
  const detail::ScoreShapes shapes =
      detail::check_score_shapes(q, q_positions, k, k_positions, layout);
  detail::check_score_output(out, shapes);
  const detail::ScorePlan plan(options, shapes.q.heads, shapes.q.head_dim);
  detail::blocked_scores<T>(plan, detail::TensorHeadRows<T>{q.data(), shapes.q}, q_positions,
                            detail::TensorHeadRows<T>{k.data(), shapes.k}, k_positions, shapes,
                            out.data());
}

// The same, returning a new [batch, heads, seq_q, seq_k] tensor.
// Example (one Gemma 2 sliding layer: a 4096-token window, softmax scale 256^-0.5, logits capped
// at 50, at a KV-cache offset of 5000 tokens):
//   posemb::ScoreOptions options;
//   options.rotation = posemb::default_rope_spec(256);
//   options.layer.softmax_scale = 1.0 / 16.0;
//   options.layer.sliding_window = 4096;
//   options.layer.logit_softcap = 50.0;
//   options.softmax = true;
//   // q: [1, 1, 8, 256] (the new token), k: [1, 5001, 4, 256] (the cache)
//   const auto p = posemb::attention_scores(q, std::int64_t{5000}, k, std::int64_t{0}, options);
template <class XQ, class XK, IfTensor4<XQ> = 0, IfTensor4<XK> = 0>
Tensor4<compute_t<scalar_of_t<XQ>>> attention_scores(const XQ& q, const Positions& q_positions,
                                                     const XK& k, const Positions& k_positions,
                                                     const ScoreOptions& options = {},
                                                     TensorLayout layout = TensorLayout::BSHD) {
  const detail::ScoreShapes shapes =
      detail::check_score_shapes(q, q_positions, k, k_positions, layout);
  Tensor4<compute_t<scalar_of_t<XQ>>> scores(shapes.q.batch, shapes.q.heads, shapes.q.seq,
                                             shapes.k.seq);
  attention_scores(q, q_positions, k, k_positions, scores, options, layout);
  return scores;
}

}  // namespace posemb
