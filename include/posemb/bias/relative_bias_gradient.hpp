// The gradient of T5's relative-bias table (relative_bias.hpp; transformers' T5Attention
// compute_bias, relative_attention_bias: an nn.Embedding [num_buckets, heads]). The forward
// bias[h, i, j] = table[bucket(kpos_j - qpos_i), h] gathers table entries, so its backward
// scatter-adds (as nn.Embedding's backward does):
//
//   dL/dtable[n, h] = sum_{(i, j): bucket(kpos_j - qpos_i) = n} dL/dbias[h, i, j]
//
// accumulated in double in the order (h, i, j), so the result is the same on every run. ALiBi's
// bias has no parameter; its gradient with respect to the logits passes through unchanged.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <string>

#include "posemb/bias/relative_bias.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// grad: dL/dbias [heads, q_len, k_len] (RelativeBias<T>, or a TensorMap of one);
// q_positions [q_len], k_positions [k_len]: the forward's. Returns dL/dtable
// [num_buckets, heads] in double.
//
// Example (decoder self-attention, T5's 32 buckets over 128 positions, 8 heads):
//   const auto d_table = posemb::t5_table_gradient(grad, {32, 128, false}, q, k);
template <class G>
Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> t5_table_gradient(
    const G& grad, const T5Buckets& buckets, const PositionVector& q_positions,
    const PositionVector& k_positions) {
  static_assert(is_row_major_tensor_v<G, 3>,
                "posemb: grad must be a row-major 3-D tensor [heads, q_len, k_len]");
  const BucketMatrix ids = t5_bucket_matrix(buckets, q_positions, k_positions);
  if (grad.dimension(1) != ids.rows() || grad.dimension(2) != ids.cols()) {
    detail::fail("grad shape",
                 "[" + std::to_string(grad.dimension(0)) + ", " +
                     std::to_string(grad.dimension(1)) + ", " + std::to_string(grad.dimension(2)) +
                     "]",
                 "expected [heads, q_len, k_len] with q_len = " + std::to_string(ids.rows()) +
                     " and k_len = " + std::to_string(ids.cols()));
  }
  using C = compute_t<scalar_of_t<G>>;
  const Eigen::Index heads = grad.dimension(0);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> table =
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>::Zero(
          buckets.num_buckets, heads);
  const auto* data = grad.data();
  for (Eigen::Index h = 0; h < heads; ++h) {
    for (Eigen::Index i = 0; i < ids.rows(); ++i) {
      for (Eigen::Index j = 0; j < ids.cols(); ++j) {
        table(ids(i, j), h) +=
            static_cast<double>(static_cast<C>(data[(h * ids.rows() + i) * ids.cols() + j]));
      }
    }
  }
  return table;
}

}  // namespace posemb
