// 2-D rotary position embedding of vision towers: each patch at (row, col) of its image turns
// half of its rotary pairs by row and half by col, in the tower's own frequency layout and
// patch order. Rotate-half pairing over the whole head_dim, attention scale 1, angles in double.
//
// Qwen2-VL / Qwen2.5-VL / Qwen3-VL (VisionRotaryEmbedding(head_dim / 2) and rot_pos_emb,
// models/qwen2_vl/modeling_qwen2_vl.py): f_k = 10000^(-2k / (head_dim/2)), k < head_dim/4;
//   pair j < head_dim/4 turns by row * f_j, pair j >= head_dim/4 by col * f_(j - head_dim/4).
//   Patches in merge-block order: per frame, per m x m block (block row, block column), per row
//   and column inside the block. Grid 1x4x6, m = 2:
//     (0,0) (0,1) (1,0) (1,1) (0,2) (0,3) (1,2) (1,3) (0,4) (0,5) (1,4) (1,5) (2,0) ...
//   Every frame repeats the same angles.
// Pixtral (PixtralRotaryEmbedding, position_ids_in_meshgrid, models/pixtral/modeling_pixtral.py):
//   f_k = theta^(-2k / head_dim), k < head_dim/2; pair j < head_dim/4 turns by row * f_(2j)
//   (HF's freqs[::2]), pair j >= head_dim/4 by col * f_(2(j - head_dim/4) + 1) (freqs[1::2]).
//   Patches row-major (row * W + col); one frame.
//
// Both are M-RoPE (mrope.hpp) with the pair frequencies above, chunked sections
// (0, head_dim/4, head_dim/4) and positions (t, h, w) = (0, row, col): they run through the same
// rotary engine source. The patch at (0, 0) is left unchanged.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <utility>

#include "posemb/error.hpp"
#include "posemb/frequencies.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// How a tower orders its patches (see the header comment).
enum class VisionPatchOrder { MergeBlocks, RowMajor };

// A vision tower's 2-D RoPE: the rotation (an M-RoPE spec over h and w) and its patch order.
struct VisionRope {
  MropeSpec spec;
  VisionPatchOrder order = VisionPatchOrder::MergeBlocks;
  int spatial_merge_size = 1;  // MergeBlocks: the side of a block
  bool single_frame = false;   // Pixtral: the grid's T must be 1

  int head_dim() const { return spec.rope.rotary_dim; }
};

namespace detail {

inline void require_head_dim_multiple_of_4(int head_dim) {
  if (head_dim < 4 || head_dim % 4 != 0) {
    fail("head_dim", head_dim, "expected a multiple of 4 (two axes of rotate-half pairs)");
  }
}

// A VisionRope from the frequencies of its row pairs and of its column pairs ([head_dim / 4]).
inline VisionRope vision_rope_of(int head_dim, const Eigen::VectorXd& row_freq,
                                 const Eigen::VectorXd& col_freq, VisionPatchOrder order,
                                 int spatial_merge_size, bool single_frame) {
  RopeSpec rope;
  rope.rotary_dim = head_dim;
  rope.head_dim = head_dim;
  rope.pairing = Pairing::RotateHalf;
  rope.inv_freq.resize(head_dim / 2);
  rope.inv_freq << row_freq, col_freq;
  const int quarter = head_dim / 4;
  return {make_mrope_spec(std::move(rope), {0, quarter, quarter}, MropeLayout::Chunked), order,
          spatial_merge_size, single_frame};
}

}  // namespace detail

// Qwen2-VL / Qwen2.5-VL / Qwen3-VL vision towers: head_dim = embed_dim / num_heads (Qwen2-VL)
// or hidden_size / num_heads, patches in merge blocks of spatial_merge_size.
//
// Example (Qwen2-VL-7B's tower: 1280 / 16 = 80, merge 2):
//   const posemb::VisionRope rope = posemb::qwen2_vl_vision_rope(80, 2);
//   const posemb::PositionMatrix patches = posemb::vision_patch_positions(rope, 1, 28, 42);
//   posemb::rotate_inplace(q, patches, rope);   // q: [1, 1176, 16, 80]
inline VisionRope qwen2_vl_vision_rope(int head_dim, int spatial_merge_size = 2,
                                       double theta = 10000.0) {
  detail::require_head_dim_multiple_of_4(head_dim);
  if (spatial_merge_size < 1)
    detail::fail("spatial_merge_size", spatial_merge_size, "expected >= 1");
  const Eigen::VectorXd freq = default_inv_freq(head_dim / 2, theta);  // [head_dim / 4]
  return detail::vision_rope_of(head_dim, freq, freq, VisionPatchOrder::MergeBlocks,
                                spatial_merge_size, false);
}

// Pixtral (Pixtral-12B, Mistral-Small-3.1): head_dim and rope_theta of the vision config.
//
// Example:
//   const posemb::VisionRope rope = posemb::pixtral_vision_rope(64, 10000.0);
//   posemb::rotate_inplace(q, posemb::vision_patch_positions(rope, 1, 32, 24), rope);
inline VisionRope pixtral_vision_rope(int head_dim, double theta = 10000.0) {
  detail::require_head_dim_multiple_of_4(head_dim);
  const Eigen::VectorXd freq = default_inv_freq(head_dim, theta);  // [head_dim / 2]
  const int quarter = head_dim / 4;
  Eigen::VectorXd even(quarter), odd(quarter);
  for (int k = 0; k < quarter; ++k) {
    even[k] = freq[2 * k];
    odd[k] = freq[2 * k + 1];
  }
  return detail::vision_rope_of(head_dim, even, odd, VisionPatchOrder::RowMajor, 1, true);
}

// The (t, h, w) = (0, row, col) positions of the patches of a grid of t frames of h x w
// patches, in the tower's order: [3, t * h * w]. Throws posemb::Error for a grid the merge
// blocks do not tile or (Pixtral) more than one frame.
inline PositionMatrix vision_patch_positions(const VisionRope& rope, std::int64_t t, std::int64_t h,
                                             std::int64_t w) {
  constexpr std::int64_t max_side = std::int64_t(1) << 20;
  const auto side = [&](const char* name, std::int64_t value, std::int64_t multiple) {
    if (value < 1 || value > max_side || value % multiple != 0) {
      detail::fail(std::string("grid ") + name, value,
                   multiple == 1 ? std::string("expected 1 .. 2^20")
                                 : "expected a multiple of spatial_merge_size = " +
                                       std::to_string(multiple) + " in 1 .. 2^20");
    }
  };
  side("t", t, 1);
  if (rope.single_frame && t != 1) detail::fail("grid t", t, "expected 1 (one image per grid)");
  const std::int64_t m = rope.order == VisionPatchOrder::MergeBlocks ? rope.spatial_merge_size : 1;
  side("h", h, m);
  side("w", w, m);
  PositionMatrix positions;
  detail::allocate_sized("grid t * h * w", t * h * w, 3.0L * t * h * w, sizeof(std::int64_t),
                         [&] { positions.setZero(3, t * h * w); });
  Eigen::Index n = 0;
  for (std::int64_t frame = 0; frame < t; ++frame) {
    for (std::int64_t block_row = 0; block_row < h / m; ++block_row) {
      for (std::int64_t block_col = 0; block_col < w / m; ++block_col) {
        for (std::int64_t r = 0; r < m; ++r) {
          for (std::int64_t c = 0; c < m; ++c, ++n) {
            positions(kAxisH, n) = block_row * m + r;
            positions(kAxisW, n) = block_col * m + c;
          }
        }
      }
    }
  }
  return positions;
}

// A vision tower is a source of the rotate family (rotate.hpp): its M-RoPE spec at the patches'
// (t, h, w) positions. Tensors only.
template <>
struct rotary_source_traits<VisionRope>
    : rotary_source_base<VisionRope, MropePositions, void, false> {
  template <class T>
  static detail::MropeSpecSource engine(const VisionRope& rope, const MropePositions& positions) {
    return detail::rotary_source(rope.spec, positions);
  }
};

}  // namespace posemb
