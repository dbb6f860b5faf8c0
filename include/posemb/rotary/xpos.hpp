// xPos: RoPE with an exponential decay that keeps scores relative (Sun et al. 2022, "A
// Length-Extrapolatable Transformer", §3.1; reference: microsoft/torchscale `XPOS`).
//
// On top of the rotation, pair i of a query at position p is scaled by zeta_i^((p - c)/scale_base)
// and pair i of a key at position p by zeta_i^(-(p - c)/scale_base), with
//
//   zeta_i = (2i/d + gamma) / (1 + gamma),  gamma = 0.4,  d = rotary_dim,
//
// both features of the pair getting the same scale. Then
//   <q_m, k_n> = sum_i zeta_i^((m - n)/scale_base) * <R(m) q, R(n) k>_i
// depends on m - n only and decays with distance for m > n (zeta_i < 1). The centre c cancels in
// every score; it only keeps the scales representable: zeta_0^(|p - c|/512) leaves float's range
// past |p - c| ~ 36k (double's past ~ 290k), so long contexts set c near the positions in use.
// A scale that would overflow or underflow the storage type throws; nothing is modified then.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "posemb/detail/cos_sin.hpp"
#include "posemb/detail/rotary_engine.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

struct XposParams {
  double gamma = 0.4;         // zeta_i = (2i/d + gamma) / (1 + gamma)
  double scale_base = 512.0;  // exponent (p - c) / scale_base
  std::int64_t centre = 0;    // c: position with scale 1

  void validate() const {
    detail::require_positive_finite("gamma", gamma);
    detail::require_positive_finite("scale_base", scale_base);
  }
};

// The rotation (frequencies, attention factor, pairing, rotary_dim) plus the xPos decay.
struct XposSpec {
  RopeSpec rope;
  XposParams params;

  void validate() const {
    rope.validate();
    params.validate();
  }
};

// Whether a head vector is a query (scaled by zeta^(+(p-c)/scale_base)) or a key (zeta^(-...)).
enum class XposRole { Query, Key };

// zeta_i = (2i/d + gamma) / (1 + gamma) for pair i of rotary_dim d.
inline double xpos_zeta(int pair, int rotary_dim, double gamma) {
  return (2.0 * pair / rotary_dim + gamma) / (1.0 + gamma);
}

// The magnitude applied to pair i at `position`: zeta_i^(+-(position - centre) / scale_base).
inline double xpos_scale(int pair, double position, int rotary_dim, const XposParams& params,
                         XposRole role) {
  const double exponent = (position - static_cast<double>(params.centre)) / params.scale_base;
  return std::pow(xpos_zeta(pair, rotary_dim, params.gamma),
                  role == XposRole::Query ? exponent : -exponent);
}

namespace detail {

// Throws unless every xPos scale for positions in [min_position, max_position] lies within the
// normal range of storage type T. Pair 0 has the smallest zeta, so it bounds every other pair.
template <class T>
void check_xpos_range(const XposSpec& spec, XposRole role, double min_position,
                      double max_position) {
  spec.validate();
  using Limits = std::numeric_limits<T>;
  double largest = 0.0, smallest = 0.0;  // T's largest finite and smallest normal value
  if constexpr (std::is_same_v<T, double>) {
    largest = (Limits::max)();
    smallest = (Limits::min)();
  } else {
    largest = static_cast<float>((Limits::max)());
    smallest = static_cast<float>((Limits::min)());
  }
  for (const double position : {min_position, max_position}) {
    const double scale = xpos_scale(0, position, spec.rope.rotary_dim, spec.params, role);
    if (!(scale <= largest && scale >= smallest)) {
      std::ostringstream expected;
      expected.precision(6);
      expected << "xPos scale zeta_0^(" << (role == XposRole::Query ? "+" : "-")
               << "(position - centre) / scale_base) = " << scale << " with centre "
               << spec.params.centre << " is outside the storage type's normal range [" << smallest
               << ", " << largest << "]; move XposParams::centre nearer the positions";
      fail("position", position, expected.str());
    }
  }
}

// The smallest and largest position of a [batch, seq] grid, checked against the storage type T.
template <class T>
void check_xpos_positions(const XposSpec& spec, XposRole role, const Positions& positions,
                          const ActivationShape& shape) {
  spec.validate();
  positions.check(shape);
  const Eigen::Index batch = shape.batch, seq = shape.seq;
  if (batch == 0 || seq == 0) return;
  double lo = positions.at(0, 0), hi = lo;
  for (Eigen::Index b = 0; b < batch; ++b) {
    for (Eigen::Index s = 0; s < seq; ++s) {
      lo = std::min(lo, positions.at(b, s));
      hi = std::max(hi, positions.at(b, s));
    }
  }
  check_xpos_range<T>(spec, role, lo, hi);
}

// RoPE's cos and sin times attention_scale times the pair's xPos scale, rounded once to C (a
// Pairs source of the rotary engine). The inverse divides by the same magnitude and flips sin.
// Its check also refuses a scale outside the normal range of storage type T.
template <class T>
struct XposSource {
  static constexpr SourceKind kind = SourceKind::Pairs;
  const XposSpec& spec;
  XposRole role;
  const Positions& positions;

  int rotary_dim() const { return spec.rope.rotary_dim; }
  int rotary_offset() const { return spec.rope.rotary_offset; }
  Pairing pairing() const { return spec.rope.pairing; }
  Eigen::Index head_group(Eigen::Index heads) const { return heads; }
  void check(const ActivationShape& shape) const {
    check_xpos_positions<T>(spec, role, positions, shape);
    check_head_dim(spec.rope, shape);
  }
  template <class C>
  void fill(Eigen::Index b, Eigen::Index s, int begin, int end, C* cos, C* sin,
            Rotation rotation) const {
    const RopeSpec& rope = spec.rope;
    const double position = positions.at(b, s);
    const bool inverse = rotation == Rotation::Inverse;
    if (end <= begin) return;  // also tells GCC the arrays below are written before use
    double angle[cos_sin_chunk], magnitude[cos_sin_chunk];
    for (int i = begin; i < end; ++i) {
      angle[i - begin] = position * rope.inv_freq[i];
      const double m =
          rope.attention_scale * xpos_scale(i, position, rope.rotary_dim, spec.params, role);
      magnitude[i - begin] = inverse ? 1.0 / m : m;
    }
    cos_sin_of(angle, magnitude, end - begin, cos, sin);
    if (inverse) {
      for (int i = 0; i < end - begin; ++i) sin[i] = -sin[i];
    }
  }
};

}  // namespace detail

// xPos applied to queries or to keys: the rotate family's source (rotate.hpp). A view of `spec`.
// Tensors [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD), and
// matrix rows. A scale out of the storage type's range throws before anything changes;
// Rotation::Inverse undoes the rotation and the scale (R(p)^T / scale).
//
// Example:
//   const posemb::XposSpec spec{posemb::default_rope_spec(64), posemb::XposParams{}};
//   posemb::rotate(q, q_out, /*offset=*/0, posemb::Xpos{spec, posemb::XposRole::Query});
//   posemb::rotate(k, k_out, /*offset=*/0, posemb::Xpos{spec, posemb::XposRole::Key});
struct Xpos {
  const XposSpec& spec;
  XposRole role;
};

template <>
struct rotary_source_traits<Xpos> : rotary_source_base<Xpos> {
  template <class T>
  static detail::XposSource<T> engine(const Xpos& xpos, const Positions& positions) {
    xpos.spec.validate();
    return detail::XposSource<T>{xpos.spec, xpos.role, positions};
  }
};

}  // namespace posemb
