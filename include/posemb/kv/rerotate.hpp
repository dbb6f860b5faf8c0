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
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// Pairs sources of the rotary engine.

// Pair i turns by p * (to_i - from_i), scaled by to.attention_scale / from.attention_scale. The
// inverse is the re-rotation back, from `to` to `from`.
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
            Rotation rotation) const {
    const bool inverse = rotation == Rotation::Inverse;
    const RopeSpec& old_spec = inverse ? to : from;
    const RopeSpec& new_spec = inverse ? from : to;
    const double position = positions.at(b, s);
    if (end <= begin) return;  // also tells GCC the arrays below are written before use
    double angle[cos_sin_chunk], magnitude[cos_sin_chunk];
    const double ratio = new_spec.attention_scale / old_spec.attention_scale;
    for (int i = begin; i < end; ++i) {
      angle[i - begin] =
          rope_angle(position, new_spec.inv_freq[i]) - rope_angle(position, old_spec.inv_freq[i]);
      magnitude[i - begin] = ratio;
    }
    cos_sin_of(angle, magnitude, end - begin, cos, sin);
  }
};

// Pair i turns by delta * inv_i, delta the token's `positions` value; no attention scale (the
// cached keys carry it already). The inverse turns by -delta.
struct ShiftSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const RopeSpec& spec;
  const Positions& deltas;

  int rotary_dim() const { return spec.rotary_dim; }
  int rotary_offset() const { return spec.rotary_offset; }
  Pairing pairing() const { return spec.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const {
    check_head_dim(spec, shape);
    deltas.check(shape);
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    const double delta = deltas.at(b, s);
    cos_sin_at(spec.inv_freq.data() + begin, rotation == Rotation::Inverse ? -delta : delta, 1.0,
               end - begin, cos, sin);
  }
};

// Throws unless keys rotated with `from` can be re-rotated to `to`.
inline void check_rerotation(const RopeSpec& from, const RopeSpec& to) {
  from.validate();
  to.validate();
  if (from.rotary_dim != to.rotary_dim) {
    fail("to.rotary_dim", to.rotary_dim,
         "expected from.rotary_dim = " + std::to_string(from.rotary_dim));
  }
  if (from.pairing != to.pairing) {
    fail("to.pairing", to_string(to.pairing),
         std::string("expected from.pairing = ") + to_string(from.pairing));
  }
  if (from.rotary_offset != to.rotary_offset) {
    fail("to.rotary_offset", to.rotary_offset,
         "expected from.rotary_offset = " + std::to_string(from.rotary_offset));
  }
  if (from.head_dim != to.head_dim) {
    fail("to.head_dim", to.head_dim, "expected from.head_dim = " + std::to_string(from.head_dim));
  }
}

}  // namespace detail

// Moves cached keys: a source of the rotate family (rotate.hpp) whose `positions` say how far
// each key moves (Positions::same(delta): every key by delta, which may be negative; a
// PositionMatrix: each token its own delta). Afterwards each key is what `spec` gives at its old
// position + delta. A view of `spec`.
//
// Example (context shift: drop the oldest 512 tokens, move the rest back):
//   posemb::rotate_inplace(k_cache_rest, posemb::Positions::same(-512), posemb::KeyShift{spec});
struct KeyShift {
  const RopeSpec& spec;
};

// Re-rotates cached keys from what `from` gives to what `to` gives at the same positions (the
// keys' `positions`): a source of the rotate family. `from` and `to` must share head_dim,
// rotary_dim, rotary_offset and pairing. Views of both specs.
//
// Example (dynamic NTK once the sequence outgrows max_position_embeddings):
//   posemb::rotate_inplace(k_cache, /*offset=*/0, posemb::KeyRerotation{old_spec, new_spec});
struct KeyRerotation {
  const RopeSpec& from;
  const RopeSpec& to;
};

template <>
struct rotary_source_traits<KeyShift> : rotary_source_base<KeyShift> {
  template <class T>
  static detail::ShiftSource engine(const KeyShift& shift, const Positions& deltas) {
    shift.spec.validate();
    return detail::ShiftSource{shift.spec, deltas};
  }
};
template <>
struct rotary_source_traits<KeyRerotation> : rotary_source_base<KeyRerotation> {
  template <class T>
  static detail::RerotateSource engine(const KeyRerotation& rerotation,
                                       const Positions& positions) {
    detail::check_rerotation(rerotation.from, rerotation.to);
    return detail::RerotateSource{rerotation.from, rerotation.to, positions};
  }
};

// keys: [batch, seq, kv_heads, head_dim] (BSHD) or [batch, kv_heads, seq, head_dim] (BHSD),
// rotated with `from` at `positions` (PositionMatrix [batch, seq] or [1, seq], or an offset).
// Re-rotates them in place to what `to` gives at the same positions: rotate_inplace with
// KeyRerotation{from, to}. Allocates nothing.
template <class X>
void rerotate_keys_inplace(X&& keys, const Positions& positions, const RopeSpec& from,
                           const RopeSpec& to, TensorLayout layout = TensorLayout::BSHD,
                           Threads threads = {}) {
  rotate_inplace(keys, positions, KeyRerotation{from, to}, {layout, threads, Rotation::Forward});
}

// keys: as above, rotated with `spec`. Moves every key by delta positions (delta may be
// negative): rotate_inplace with KeyShift{spec} at Positions::same(delta). Allocates nothing.
template <class X>
void shift_keys_inplace(X&& keys, std::int64_t delta, const RopeSpec& spec,
                        TensorLayout layout = TensorLayout::BSHD, Threads threads = {}) {
  rotate_inplace(keys, Positions::same(delta), KeyShift{spec},
                 {layout, threads, Rotation::Forward});
}

}  // namespace posemb
