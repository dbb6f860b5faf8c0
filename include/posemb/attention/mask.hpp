// The masks of attention_scores, all by POSITION, so they hold for a decode query at a KV-cache
// offset. Key j is visible to query i iff every mask in use lets it through:
//   causal                       kpos_j <= qpos_i
//   layer.sliding_window W       0 <= qpos_i - kpos_j < W (HuggingFace's sliding window)
//   layer.attention_chunk_size C kpos_j <= qpos_i and floor(qpos_i / C) == floor(kpos_j / C)
//                                (floor division, also for negative positions)
// and, for the blocked kernel, the class of a tile of queries against keys: hidden (no key
// visible to any query), visible (every key to every query) or mixed.
#pragma once

#include <cstdint>
#include <optional>

#include "posemb/model/layer_attention.hpp"

namespace posemb {
namespace detail {

// floor(a / b) for b > 0, also for negative a.
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t quotient = a / b;
  return (a % b != 0 && a < 0) ? quotient - 1 : quotient;
}

// qpos - kpos for kpos <= qpos, as uint64 (the difference of two int64 may exceed int64).
inline std::uint64_t key_distance(std::int64_t q_position, std::int64_t k_position) {
  return static_cast<std::uint64_t>(q_position) - static_cast<std::uint64_t>(k_position);
}

enum class TileMask { Hidden, Visible, Mixed };

// The masks of one call: the causal flag and the layer's window and chunk (checked > 0 before).
class ScoreMask {
 public:
  ScoreMask(const LayerAttention& layer, bool causal)
      : causal_(causal), window_(layer.sliding_window), chunk_(layer.attention_chunk_size) {}

  // Whether any mask is in use: only then are masked entries and empty rows possible.
  bool masks() const { return causal_ || window_ || chunk_; }

  // Whether the causal mask is the only one.
  bool causal_only() const { return !window_ && !chunk_; }

  // Whether the key at k_position is visible to the query at q_position.
  bool visible(std::int64_t q_position, std::int64_t k_position) const {
    if (k_position > q_position && masks()) return false;
    if (window_ && key_distance(q_position, k_position) >= static_cast<std::uint64_t>(*window_)) {
      return false;
    }
    return !chunk_ || floor_div(q_position, *chunk_) == floor_div(k_position, *chunk_);
  }

  // The class of the tile of queries at positions [q_min, q_max] against keys at [k_min, k_max].
  TileMask classify(std::int64_t q_min, std::int64_t q_max, std::int64_t k_min,
                    std::int64_t k_max) const {
    if (!masks()) return TileMask::Visible;
    if (k_min > q_max) return TileMask::Hidden;  // every mask hides keys after the query
    const auto window = [&] { return static_cast<std::uint64_t>(*window_); };
    if (window_ && k_max <= q_min && key_distance(q_min, k_max) >= window())
      return TileMask::Hidden;
    if (chunk_ && floor_div(k_max, *chunk_) < floor_div(q_min, *chunk_)) return TileMask::Hidden;
    if (k_max > q_min) return TileMask::Mixed;
    if (window_ && key_distance(q_max, k_min) >= window()) return TileMask::Mixed;
    if (chunk_ && floor_div(k_min, *chunk_) != floor_div(q_max, *chunk_)) return TileMask::Mixed;
    return TileMask::Visible;
  }

 private:
  bool causal_;
  std::optional<std::int64_t> window_, chunk_;
};

}  // namespace detail
}  // namespace posemb
