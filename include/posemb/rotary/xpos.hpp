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

// RoPE's cos and sin times attention_scale times the pair's xPos scale, rounded once to C (a
// Pairs source of the rotary engine). The inverse divides by the same magnitude and flips sin.
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
    check_head_dim(spec.rope, shape);
    positions.check(shape);
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

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// 4-D tensors. x: [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq, head_dim] (BHSD),
// queries or keys (`role`); positions: PositionMatrix [batch, seq] (or [1, seq]) or an offset.
// Rotates and scales the first rotary_dim features of every head. `threads`: up to this many
// threads (large tensors only; see Threads).

namespace detail {

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

}  // namespace detail

// `rotation`: Rotation::Inverse undoes the rotation and the scale (R(p)^T / scale).

// Out of place into a caller's tensor `out` (layouts as for apply_rope); allocates nothing.
//
// Example:
//   const posemb::XposSpec spec{posemb::default_rope_spec(64), posemb::XposParams{}};
//   posemb::apply_xpos(q, q_out, /*offset=*/0, spec, posemb::XposRole::Query);
//   posemb::apply_xpos(k, k_out, /*offset=*/0, spec, posemb::XposRole::Key);
template <class X, class Y, IfNotMatrix<X> = 0, IfNotMatrix<Y> = 0>
void apply_xpos(const X& x, Y&& out, const Positions& positions, const XposSpec& spec,
                XposRole role, Layouts layouts = TensorLayout::BSHD, Threads threads = {},
                Rotation rotation = Rotation::Forward) {
  static_assert(require_activation_tensor<X>() && require_activation_tensor<Y>());
  detail::check_output_tensor(x, out, layouts);
  const ActivationShape shape(x.dimensions(), layouts.in);
  detail::check_xpos_positions<scalar_of_t<X>>(spec, role, positions, shape);
  detail::rotate_tensor(detail::XposSource{spec, role, positions}, shape, x.data(),
                        ActivationShape(out.dimensions(), layouts.out), layouts.out_seq_offset,
                        out.data(), threads, rotation);
}

// In place; allocates nothing. A scale out of the storage type's range throws before any
// change.
template <class X, IfNotMatrix<X> = 0>
void apply_xpos_inplace(X&& x, const Positions& positions, const XposSpec& spec, XposRole role,
                        TensorLayout layout = TensorLayout::BSHD, Threads threads = {},
                        Rotation rotation = Rotation::Forward) {
  static_assert(require_activation_tensor<X>());
  const ActivationShape shape(x.dimensions(), layout);
  detail::check_xpos_positions<scalar_of_t<X>>(spec, role, positions, shape);
  detail::rotate_tensor_inplace(detail::XposSource{spec, role, positions}, shape, x.data(),
                                threads, rotation);
}

// Out of place, returning a new tensor.
template <class X, IfNotMatrix<X> = 0>
auto apply_xpos(const X& x, const Positions& positions, const XposSpec& spec,
                                   XposRole role, TensorLayout layout = TensorLayout::BSHD,
                                   Threads threads = {}, Rotation rotation = Rotation::Forward) {
  static_assert(require_activation_tensor<X>());
  Tensor4<scalar_of_t<X>> out(x.dimensions());
  apply_xpos(x, out, positions, spec, role, layout, threads, rotation);
  return out;
}

// Matrices. x: [rows, head_dim], row r at positions[r]; or a column vector [head_dim].
template <class Derived>
void apply_xpos_inplace(const Eigen::MatrixBase<Derived>& x, const PositionVector& positions,
                        const XposSpec& spec, XposRole role, Rotation rotation = Rotation::Forward) {
  spec.validate();
  detail::check_row_positions(x, positions);
  if (positions.size() > 0) {
    detail::check_xpos_range<typename Derived::Scalar>(spec, role, double(positions.minCoeff()),
                                                       double(positions.maxCoeff()));
  }
  const Positions rows(positions);
  detail::rotate_matrix_rows(x, detail::XposSource{spec, role, rows}, rotation);
}

template <class Derived>
typename Derived::PlainObject apply_xpos(const Eigen::MatrixBase<Derived>& x,
                                         const PositionVector& positions, const XposSpec& spec,
                                         XposRole role, Rotation rotation = Rotation::Forward) {
  typename Derived::PlainObject out = x;
  apply_xpos_inplace(out, positions, spec, role, rotation);
  return out;
}

}  // namespace posemb
