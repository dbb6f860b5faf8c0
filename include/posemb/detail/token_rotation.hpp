// Rotation with caller-supplied cos/sin per token: the loop behind xPos (a per-pair magnitude on
// top of RoPE) and the KV-cache helpers (re-rotation, shifts). Each token's cos/sin come from
// fill(position, pair_begin, pair_end, cos, sin), already scaled, and feed the one rotation
// kernel, detail::rotate_pairs of rope.hpp.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cstdint>
#include <string>

#include "posemb/detail/storage.hpp"
#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {
namespace detail {

// Pairs whose cos/sin sit in one stack buffer.
inline constexpr int token_rotation_chunk = 64;

inline void check_layout(TensorLayout layout) {
  if (layout != TensorLayout::BSHD && layout != TensorLayout::BHSD) {
    fail("layout", static_cast<int>(layout), "expected TensorLayout::BSHD or TensorLayout::BHSD");
  }
}

inline void check_rotary_head_dim(int rotary_dim, Eigen::Index head_dim) {
  if (head_dim < rotary_dim) {
    fail("head_dim", head_dim, "expected >= rotary_dim = " + std::to_string(rotary_dim));
  }
}

// Rotates pairs [0, rotary_dim / 2) of one head vector in place; features past rotary_dim are
// not touched. head: element i at head[i * stride].
template <class T, class Fill>
void rotate_head_with(T* head, Eigen::Index stride, std::int64_t position, int rotary_dim,
                      Pairing pairing, Fill& fill) {
  using C = compute_t<T>;
  C cos[token_rotation_chunk], sin[token_rotation_chunk];
  for (int begin = 0; begin < rotary_dim / 2; begin += token_rotation_chunk) {
    const int end = std::min(begin + token_rotation_chunk, rotary_dim / 2);
    fill(position, begin, end, cos, sin);
    rotate_pairs(head, head, stride, cos, sin, begin, end, rotary_dim, pairing);
  }
}

// x: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD), in place.
// Token (b, s) is at positions.at(b, s); its cos/sin are filled once for all its heads.
// Allocates nothing.
template <class T, class Fill>
void rotate_tensor_with(T* data, const Eigen::array<Eigen::Index, 4>& dims, TensorLayout layout,
                        const TokenPositions& positions, int rotary_dim, Pairing pairing,
                        Fill& fill) {
  check_layout(layout);
  const bool bshd = layout == TensorLayout::BSHD;
  const Eigen::Index batch = dims[0];
  const Eigen::Index seq = bshd ? dims[1] : dims[2];
  const Eigen::Index heads = bshd ? dims[2] : dims[1];
  const Eigen::Index head_dim = dims[3];
  check_rotary_head_dim(rotary_dim, head_dim);
  positions.check(batch, seq);
  // Element offsets between consecutive tokens and consecutive heads.
  const Eigen::Index token_stride = bshd ? heads * head_dim : head_dim;
  const Eigen::Index head_stride = bshd ? head_dim : seq * head_dim;
  using C = compute_t<T>;
  C cos[token_rotation_chunk], sin[token_rotation_chunk];
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      T* token = data + b * seq * heads * head_dim + s * token_stride;
      for (int begin = 0; begin < rotary_dim / 2; begin += token_rotation_chunk) {
        const int end = std::min(begin + token_rotation_chunk, rotary_dim / 2);
        fill(positions.at(b, s), begin, end, cos, sin);
        for (Eigen::Index h = 0; h < heads; ++h) {
          T* head = token + h * head_stride;
          rotate_pairs(head, head, 1, cos, sin, begin, end, rotary_dim, pairing);
        }
      }
    }
  }
}

}  // namespace detail
}  // namespace posemb
