// KV-cache helpers for rotary keys, in place on the 4-D tensors of rope.hpp.
//
// Re-rotation: a key cached as s_old R_old(p) k (RoPE with spec `from` at position p) becomes
// s_new R_new(p) k (spec `to`) by
//   k' = (s_new / s_old) R_new(p) R_old(-p) k_cached,
// a rotation of pair i by p * (to.inv_freq[i] - from.inv_freq[i]). Use it when the frequencies
// change under a live cache, e.g. dynamic NTK (scaled.hpp) once seq_len passes
// max_position_embeddings, or LongRoPE switching from short_factor to long_factor.
//
// Shift: R(delta) R(p) = R(p + delta), so rotating cached keys by delta moves them to position
// p + delta without recomputing them: context shifting (drop the oldest tokens, shift the rest
// by delta = -dropped) and attention sinks (Xiao et al. 2023, "Efficient Streaming Language
// Models with Attention Sinks", which re-positions the cache the same way).
//
// Both angles are formed in double exactly as the rotation kernel forms them.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "posemb/error.hpp"
#include "posemb/rope.hpp"

namespace posemb {
namespace detail {

// cos/sin fills (CosSinFunction sources for rope.hpp's kernels).

// Pair i turns by p * (to_i - from_i), scaled by to.attention_scale / from.attention_scale.
struct RerotateFill {
  const RopeSpec& from;
  const RopeSpec& to;

  template <class C>
  void operator()(std::int64_t position, int begin, int end, C* cos, C* sin) const {
    const double ratio = to.attention_scale / from.attention_scale;
    for (int i = begin; i < end; ++i) {
      const double angle =
          rope_angle(position, to.inv_freq[i]) - rope_angle(position, from.inv_freq[i]);
      cos[i - begin] = static_cast<C>(ratio * std::cos(angle));
      sin[i - begin] = static_cast<C>(ratio * std::sin(angle));
    }
  }
};

// Pair i turns by delta * inv_i whatever the token's position; no attention scale (the cached
// keys carry it already).
struct ShiftFill {
  const RopeSpec& spec;
  std::int64_t delta;

  template <class C>
  void operator()(std::int64_t /*position*/, int begin, int end, C* cos, C* sin) const {
    for (int i = begin; i < end; ++i) {
      const double angle = rope_angle(delta, spec.inv_freq[i]);
      cos[i - begin] = static_cast<C>(std::cos(angle));
      sin[i - begin] = static_cast<C>(std::sin(angle));
    }
  }
};

}  // namespace detail

// keys: [batch, seq, kv_heads, head_dim] (BSHD) or [batch, kv_heads, seq, head_dim] (BHSD),
// rotated with `from` at `positions` (PositionMatrix [batch, seq] or [1, seq], or an offset).
// Re-rotates them in place to what `to` gives at the same positions. `from` and `to` must share
// rotary_dim and pairing. Allocates nothing.
template <class X, detail::if_tensor4<X> = 0>
void rerotate_keys_inplace(X&& keys, const detail::TokenPositions& positions, const RopeSpec& from,
                           const RopeSpec& to, TensorLayout layout = TensorLayout::BSHD) {
  from.validate();
  to.validate();
  if (from.rotary_dim != to.rotary_dim) {
    detail::fail("to.rotary_dim", to.rotary_dim,
                 "expected from.rotary_dim = " + std::to_string(from.rotary_dim));
  }
  if (from.pairing != to.pairing) {
    detail::fail("to.pairing", to_string(to.pairing),
                 std::string("expected from.pairing = ") + to_string(from.pairing));
  }
  const detail::RerotateFill fill{from, to};
  detail::rotate_tensor(detail::CosSinFunction<detail::RerotateFill>{to, fill}, positions, layout,
                        keys.data(), keys.data(), keys.dimensions());
}

// keys: as above, rotated with `spec`. Moves every key by delta positions (delta may be
// negative): afterwards each key is what `spec` gives at its old position + delta. Allocates
// nothing.
template <class X, detail::if_tensor4<X> = 0>
void shift_keys_inplace(X&& keys, std::int64_t delta, const RopeSpec& spec,
                        TensorLayout layout = TensorLayout::BSHD) {
  spec.validate();
  const detail::ShiftFill fill{spec, delta};
  detail::rotate_tensor(detail::CosSinFunction<detail::ShiftFill>{spec, fill}, std::int64_t{0},
                        layout, keys.data(), keys.data(), keys.dimensions());
}

}  // namespace posemb
