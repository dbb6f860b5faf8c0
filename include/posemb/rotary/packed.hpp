// Positions for packed sequences and context-parallel shards.
//
// Packed (THD) layout: several documents packed into one row of T tokens, x: [T, heads,
// head_dim], with cumulative sequence lengths cu_seqlens = [0, n_0, n_0 + n_1, ..., T] as
// flash-attention's varlen kernels take them. Each document restarts at position 0 (or at its
// own offset, e.g. its KV-cache length), so two identical documents rotate identically. View
// the buffer as [1, T, heads, head_dim] (BSHD) and pass the positions below:
//
//   Eigen::TensorMap<Eigen::Tensor<float, 4, Eigen::RowMajor>> x4(x, 1, T, heads, head_dim);
//   posemb::rotate_inplace(x4, posemb::packed_positions(cu_seqlens), spec);
//
// Context parallelism with load balancing (TransformerEngine's get_batch_on_this_cp_rank): a
// sequence of L tokens is cut into 2c chunks of L / (2c); rank r of c holds chunks r and
// 2c - 1 - r, in that order, so that causal attention costs every rank the same.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// Positions [1, T] of T = cu_seqlens.back() packed tokens: token t of document d (cu_seqlens[d]
// <= t < cu_seqlens[d + 1]) is at offsets[d] + t - cu_seqlens[d]. offsets: one per document, or
// empty (every document starts at 0). cu_seqlens starts at 0 and does not decrease.
//
// Example:
//   // documents of 3, 2 and 4 tokens: positions 0 1 2 0 1 0 1 2 3
//   const posemb::PositionMatrix pos = posemb::packed_positions({0, 3, 5, 9});
inline PositionMatrix packed_positions(const std::vector<std::int64_t>& cu_seqlens,
                                       const std::vector<std::int64_t>& offsets = {}) {
  if (cu_seqlens.empty()) detail::fail("cu_seqlens.size()", 0, "expected at least [0]");
  if (cu_seqlens.front() != 0) {
    detail::fail("cu_seqlens[0]", cu_seqlens.front(), "expected 0");
  }
  const std::size_t documents = cu_seqlens.size() - 1;
  for (std::size_t d = 0; d < documents; ++d) {
    if (cu_seqlens[d + 1] < cu_seqlens[d]) {
      detail::fail("cu_seqlens[" + std::to_string(d + 1) + "]", cu_seqlens[d + 1],
                   "expected >= cu_seqlens[" + std::to_string(d) +
                       "] = " + std::to_string(cu_seqlens[d]) + " (non-decreasing)");
    }
  }
  if (!offsets.empty() && offsets.size() != documents) {
    detail::fail("offsets.size()", offsets.size(),
                 "expected one offset per document = " + std::to_string(documents));
  }
  PositionMatrix positions(1, cu_seqlens.back());
  for (std::size_t d = 0; d < documents; ++d) {
    const std::int64_t start = offsets.empty() ? 0 : offsets[d];
    for (std::int64_t t = cu_seqlens[d]; t < cu_seqlens[d + 1]; ++t) {
      positions(0, t) = start + (t - cu_seqlens[d]);
    }
  }
  return positions;
}

// The same, checking that the documents cover exactly `tokens` tokens (the packed tensor's T).
inline PositionMatrix packed_positions(const std::vector<std::int64_t>& cu_seqlens,
                                       std::int64_t tokens,
                                       const std::vector<std::int64_t>& offsets = {}) {
  if (!cu_seqlens.empty() && cu_seqlens.back() != tokens) {
    detail::fail("cu_seqlens.back()", cu_seqlens.back(),
                 "expected the token count T = " + std::to_string(tokens));
  }
  return packed_positions(cu_seqlens, offsets);
}

// Positions [1, L / c] of the tokens that context-parallel rank `rank` of `ranks` holds of a
// sequence of L = seq_len tokens starting at `first_position`: chunk `rank`, then chunk
// 2 * ranks - 1 - rank, of 2 * ranks chunks of L / (2 * ranks) tokens.
//
// Example:
//   // L = 8, 2 ranks: rank 0 holds 0 1 6 7, rank 1 holds 2 3 4 5
//   const posemb::PositionMatrix pos = posemb::context_parallel_positions(8, 0, 2);
inline PositionMatrix context_parallel_positions(std::int64_t seq_len, int rank, int ranks,
                                                 std::int64_t first_position = 0) {
  detail::require_positive("ranks", ranks);
  if (rank < 0 || rank >= ranks) {
    detail::fail("rank", rank,
                 "expected a rank in [0, ranks) = [0, " + std::to_string(ranks) + ")");
  }
  const std::int64_t chunks = 2 * static_cast<std::int64_t>(ranks);
  if (seq_len < 0 || seq_len % chunks != 0) {
    detail::fail("seq_len", seq_len,
                 "expected a multiple of 2 * ranks = " + std::to_string(chunks) +
                     " (the sequence is cut into 2 * ranks equal chunks)");
  }
  const std::int64_t chunk = seq_len / chunks;
  PositionMatrix positions(1, 2 * chunk);
  const std::int64_t first_chunk = rank, second_chunk = chunks - 1 - rank;
  for (std::int64_t i = 0; i < chunk; ++i) {
    positions(0, i) = first_position + first_chunk * chunk + i;
    positions(0, chunk + i) = first_position + second_chunk * chunk + i;
  }
  return positions;
}

}  // namespace posemb
