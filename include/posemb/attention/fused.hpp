// Fused attention scores: RoPE applied inside q kᵀ, with the bias and the masks folded in,
// without rotated copies of q and k in memory.
//
//   logits[b, h, i, j] = scale * <t(qpos_i) R(qpos_i) q_i, R(kpos_j) k_j> + bias[h, i, j]
//                        (-inf where masked)
//
// R is rope.hpp's rotation (RoFormer, Su et al. 2021, eq. 13-15) from a RopeSpec (cos/sin formed
// in the call) or a RopeTable. The scale, the query temperature t, the bias (ALiBi or T5's
// relative bias) and the masks (causal, sliding window, chunk) are attention.hpp's, from the
// same ScoreOptions: the same numbers as attention_scores with ScoreScheme::Rope, plus the bias.
//
// How: attention.hpp's blocked kernel. The keys of one key-value head are rotated once into a
// float scratch [seq_k, head_dim]; queries are rotated in 128-row panels that stay in cache and
// multiplied with Eigen's GEMM straight into the output; the bias and masks are applied to each
// tile while it is in cache; tiles whose keys all lie after all their queries are filled with
// -inf without a product when the mask is causal. With softmax, each finished row is normalised
// at the end.
#pragma once

#include <Eigen/Core>
#include <type_traits>

#include "posemb/attention/scores.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// One head. q: [seq_q, head_dim] at q_positions [seq_q]; k: [seq_k, head_dim] at k_positions
// [seq_k] (matrices, maps or blocks of them, any strides; their rows are read once);
// out: [seq_q, seq_k] (resized), float for float / half / bfloat16 q and k, double for double.
// source: a RopeSpec or a RopeTable of q's type. options as for attention_scores, with two
// differences: the rotation is always `source` (options.rope stays empty; ScoreScheme::None and
// Rope both mean "no bias"), and the one-head bias is options.alibi_slopes [1] or a one-head
// options.relative_bias.
// Example (causal RoPE + ALiBi scores of 512 prefill tokens, head 3 of 16):
//   const posemb::RopeTable<float> table(posemb::default_rope_spec(128), 0, 512);
//   posemb::ScoreOptions options;
//   options.scheme = posemb::ScoreScheme::Alibi;
//   options.alibi_slopes = posemb::alibi_slopes(16, 8.0, posemb::HeadRange{3, 4});
//   options.causal = true;
//   Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> scores;
//   posemb::fused_rope_scores(q, positions, k, positions, scores, table, options);  // [512, 512]
template <class DQ, class DK, class C, class Source>
void fused_rope_scores(const Eigen::MatrixBase<DQ>& q, const PositionVector& q_positions,
                       const Eigen::MatrixBase<DK>& k, const PositionVector& k_positions,
                       Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>& out,
                       const Source& source, const ScoreOptions& options = {}) {
  using T = typename DQ::Scalar;
  static_assert(std::is_same_v<T, typename DK::Scalar>, "posemb: q and k must have the same scalar type");
  static_assert(std::is_same_v<C, compute_t<T>>,
                "posemb: out holds float scores for float, half and bfloat16 q and k, double for double");
  static_assert(detail::require_rope_source<Source, T>());
  detail::check_head_scores(q, q_positions, k, k_positions);
  const detail::ScorePlan plan(options, 1, q.cols(), true);
  out.resize(q.rows(), k.rows());
  detail::blocked_scores<T>(plan, options, detail::SourceRotation<Source>{source},
                            detail::MatrixHeadRows<DQ>{q}, Positions(q_positions),
                            detail::MatrixHeadRows<DK>{k}, Positions(k_positions), 1, 1, 1, q.rows(),
                            k.rows(), q.cols(), out.data());
}

// Batched, all heads, grouped-query attention: q [batch, seq_q, heads, head_dim] (BSHD) or
// [batch, heads, seq_q, head_dim] (BHSD); k the same layout with kv_heads (dividing heads) and
// seq_k tokens; query head h reads kv head h / (heads / kv_heads). Positions as for
// attention_scores. out: [batch, heads, seq_q, seq_k], float for float / half / bfloat16 q and k
// (rotated in their storage type, multiplied in float), double for double. source and options
// as for the one-head form, with one slope (and one relative-bias column) per query head.
// Example (causal GQA prefill: 32 query heads, 8 key-value heads, bfloat16, into a reused buffer):
//   const posemb::RopeTable<Eigen::bfloat16> table(posemb::default_rope_spec(128, 500000.0), 0, 2048);
//   posemb::ScoreOptions options;
//   options.causal = true;
//   posemb::Tensor4<float> scores(1, 32, 2048, 2048);
//   // q: [1, 2048, 32, 128], k: [1, 2048, 8, 128], both Eigen::bfloat16
//   posemb::fused_rope_scores(q, std::int64_t{0}, k, std::int64_t{0}, scores, table, options);
template <class XQ, class XK, class Out, class Source, IfTensor4<XQ> = 0, IfTensor4<XK> = 0,
          IfTensor4<Out> = 0>
void fused_rope_scores(const XQ& q, const Positions& q_positions, const XK& k, const Positions& k_positions,
                       Out&& out, const Source& source, const ScoreOptions& options = {},
                       TensorLayout layout = TensorLayout::BSHD) {
  using T = scalar_of_t<XQ>;
  static_assert(std::is_same_v<T, scalar_of_t<XK>>, "posemb: q and k must have the same scalar type");
  static_assert(std::is_same_v<scalar_of_t<Out>, compute_t<T>>,
                "posemb: out holds float scores for float, half and bfloat16 q and k, double for double");
  static_assert(detail::require_rope_source<Source, T>());
  const detail::ScoreShapes shapes = detail::check_score_shapes(q, q_positions, k, k_positions, layout);
  detail::check_score_output(out, shapes);
  const detail::ScorePlan plan(options, shapes.q.heads, shapes.q.head_dim, true);
  detail::tensor_scores<T>(plan, options, detail::SourceRotation<Source>{source}, q.data(), q_positions,
                           k.data(), k_positions, shapes, out.data());
}

}  // namespace posemb
