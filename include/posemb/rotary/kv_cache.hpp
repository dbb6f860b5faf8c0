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

#include "posemb/detail/cos_sin.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// Pairs sources of the rotary engine.

// Pair i turns by p * (to_i - from_i), scaled by to.attention_scale / from.attention_scale.
struct RerotateSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const RopeSpec& from;
  const RopeSpec& to;
  const Positions& positions;

  int rotary_dim() const { return to.rotary_dim; }
  int rotary_offset() const { return to.rotary_offset; }
  Pairing pairing() const { return to.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const {
    check_head_dim(to, shape);
    positions.check(shape);
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation /*Forward*/) const {
    const double position = positions.at(b, s);
    double angle[cos_sin_chunk], magnitude[cos_sin_chunk];
    const double ratio = to.attention_scale / from.attention_scale;
    for (int i = begin; i < end; ++i) {
      angle[i - begin] = rope_angle(position, to.inv_freq[i]) - rope_angle(position, from.inv_freq[i]);
      magnitude[i - begin] = ratio;
    }
    cos_sin_of(angle, magnitude, end - begin, cos, sin);
  }
};

// Pair i turns by delta * inv_i whatever the token's position; no attention scale (the cached
// keys carry it already).
struct ShiftSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const RopeSpec& spec;
  std::int64_t delta;

  int rotary_dim() const { return spec.rotary_dim; }
  int rotary_offset() const { return spec.rotary_offset; }
  Pairing pairing() const { return spec.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const { check_head_dim(spec, shape); }
  template <class C>
  void fill(Eigen::Index, Eigen::Index, int begin, int end, C* cos, C* sin,
            Rotation /*Forward*/) const {
    cos_sin_at(spec.inv_freq.data() + begin, static_cast<double>(delta), 1.0, end - begin, cos,
               sin);
  }
};

}  // namespace detail

// keys: [batch, seq, kv_heads, head_dim] (BSHD) or [batch, kv_heads, seq, head_dim] (BHSD),
// rotated with `from` at `positions` (PositionMatrix [batch, seq] or [1, seq], or an offset).
// Re-rotates them in place to what `to` gives at the same positions. `from` and `to` must share
// head_dim, rotary_dim, rotary_offset and pairing. Allocates nothing.
//
// Example (dynamic NTK once the sequence outgrows max_position_embeddings):
//   posemb::rerotate_keys_inplace(k_cache, /*offset=*/0, old_spec, new_spec);
template <class X, IfNotMatrix<X> = 0>
void rerotate_keys_inplace(X&& keys, const Positions& positions, const RopeSpec& from,
                           const RopeSpec& to, TensorLayout layout = TensorLayout::BSHD,
                           Threads threads = {}) {
  static_assert(require_activation_tensor<X>());
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
  if (from.rotary_offset != to.rotary_offset) {
    detail::fail("to.rotary_offset", to.rotary_offset,
                 "expected from.rotary_offset = " + std::to_string(from.rotary_offset));
  }
  if (from.head_dim != to.head_dim) {
    detail::fail("to.head_dim", to.head_dim,
                 "expected from.head_dim = " + std::to_string(from.head_dim));
  }
  detail::rotate_tensor_inplace(detail::RerotateSource{from, to, positions},
                                ActivationShape(keys.dimensions(), layout), keys.data(), threads);
}

// keys: as above, rotated with `spec`. Moves every key by delta positions (delta may be
// negative): afterwards each key is what `spec` gives at its old position + delta. Allocates
// nothing.
//
// Example (context shift: drop the oldest 512 tokens, move the rest back):
//   posemb::shift_keys_inplace(k_cache_rest, /*delta=*/-512, spec);
template <class X, IfNotMatrix<X> = 0>
void shift_keys_inplace(X&& keys, std::int64_t delta, const RopeSpec& spec,
                        TensorLayout layout = TensorLayout::BSHD, Threads threads = {}) {
  static_assert(require_activation_tensor<X>());
  spec.validate();
  detail::rotate_tensor_inplace(detail::ShiftSource{spec, delta},
                                ActivationShape(keys.dimensions(), layout), keys.data(), threads);
}

}  // namespace posemb
