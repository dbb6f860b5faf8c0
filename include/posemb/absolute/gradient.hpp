// The gradient of a learned absolute position table (learned.hpp, GPT-2's `wpe`): the forward
// x[b, s] += table[position of (b, s)] (absolute.hpp, add_position_embeddings) is the identity
// in x, so dL/dx = dL/dy, and each table row receives the sum of the gradients of the tokens at
// its position (a scatter-add, as torch.nn.Embedding's backward):
//
//   dL/dtable[p] = sum_{(b, s) at position p} dL/dy[b, s]
//
// accumulated in double in token order (b, then s), so the result is the same on every run.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <cstdint>

#include "posemb/absolute/absolute.hpp"
#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// grad: dL/dy [batch, seq, d] (an Eigen::Tensor<T, 3, RowMajor> or a TensorMap of one);
// positions: the forward's (a PositionMatrix [batch, seq] or [1, seq], or an offset). Returns
// dL/dtable [max_len, d] in double; every position is checked against max_len first.
//
// Example (GPT-2: wpe [1024, 768]):
//   const posemb::EmbeddingTable<double> d_wpe = posemb::position_table_gradient(grad, 0, 1024);
template <class G, IfTensor3<G> = 0>
EmbeddingTable<double> position_table_gradient(const G& grad, const Positions& positions,
                                               std::int64_t max_len) {
  const Eigen::Index batch = grad.dimension(0), seq = grad.dimension(1), d = grad.dimension(2);
  detail::check_table_size(max_len, d);
  positions.check(batch, seq);
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s)
      detail::table_row_of(positions.integer_at(b, s), max_len);
  }
  using C = compute_t<scalar_of_t<G>>;
  EmbeddingTable<double> table = EmbeddingTable<double>::Zero(max_len, d);
  const auto* data = grad.data();
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      const auto row = static_cast<Eigen::Index>(positions.integer_at(b, s));
      const auto* token = data + (b * seq + s) * d;
      for (Eigen::Index c = 0; c < d; ++c) {
        table(row, c) += static_cast<double>(static_cast<C>(token[c]));
      }
    }
  }
  return table;
}

}  // namespace posemb
