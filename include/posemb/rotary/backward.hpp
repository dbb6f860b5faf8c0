// The backward pass of every rotary source: the vector-Jacobian product (VJP) of a rotation.
//
// Per pair the forward is y = M x with M = [[c, -s], [s, c]] (c, s = m cos t, m sin t for RoPE
// and its scaled variants, m the attention scale; xPos's magnitude in m; FoPE's mixtures C, S).
// Its VJP is grad_x = M^T grad_y, the same matrix with the sign of s flipped: for a pure rotation
// R(p)^T = R(-p), the rotation by the negated angles. It is one more call of the same engine
// (Rotation::Transpose, detail/rotary_engine.hpp): the same exact angles, dispatch, layouts and
// positions (integer, fractional, per row), never a second body. Features outside the rotary
// width pass the gradient through unchanged (their forward is the identity).
//
//   rotate_backward_inplace(grad, positions, source, options)       grad_y -> grad_x in place
//   rotate_backward(grad_y, grad_x, positions, source, options)     into a caller's grad_x
//   rotated_backward(grad_y, positions, source, options)            returns grad_x
//
// `positions`, `source` and `options` are the forward call's: grad_y is in options.layouts.out,
// grad_x in options.layouts.in (a forward that changed the layout is mirrored). The forward
// must have been Rotation::Forward and have written no sequence offset (a KV-cache slot is not
// a differentiable output). Queries and keys are two calls (xPos: Xpos{spec, Query} and
// Xpos{spec, Key}, each with its own magnitude). FoPE's coefficient gradients:
// rotary/fope_backward.hpp. HfFloat32Rope's rotation is its own (transformers' float32
// arithmetic): its Transpose is the VJP autograd forms through that code (rotary/hf_float32.hpp).
//
// Example (the forward was rotate_inplace(q, positions, spec)):
//   posemb::rotate_backward_inplace(grad_q, positions, spec);
#pragma once

#include "posemb/error.hpp"
#include "posemb/rotary/rotate.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// The options of the backward of a forward rotated with `forward`: layouts swapped, Transpose.
inline RotateOptions backward_options(const RotateOptions& forward) {
  if (forward.rotation != Rotation::Forward) {
    fail("options.rotation", static_cast<int>(forward.rotation),
         "expected Rotation::Forward (the backward of the forward rotation)");
  }
  const Layouts& layouts = forward.layouts;
  if (layouts.out_seq_offset != 0) {
    fail("options.layouts.out_seq_offset", layouts.out_seq_offset,
         "expected 0 (a rotation into a KV-cache slot has no backward)");
  }
  const Layouts mirrored =
      layouts.in == layouts.out ? Layouts(layouts.in) : Layouts(layouts.out, layouts.in);
  return forward.with_layouts(mirrored).with_rotation(Rotation::Transpose);
}

}  // namespace detail

// grad (grad_y in options.layouts.out) becomes grad_x in place; allocates nothing (a Fope
// source: one buffer per thread and call). In place needs layouts.in == layouts.out.
template <class X, class Source>
void rotate_backward_inplace(X&& grad, const positions_for_t<X, Source>& positions,
                             const Source& source, const RotateOptions& options = {}) {
  rotate_inplace(std::forward<X>(grad), positions, source, detail::backward_options(options));
}

// grad_y (options.layouts.out) into grad_x (options.layouts.in); allocates nothing.
template <class X, class Y, class Source>
void rotate_backward(const X& grad_y, Y&& grad_x, const positions_for_t<X, Source>& positions,
                     const Source& source, const RotateOptions& options = {}) {
  rotate(grad_y, std::forward<Y>(grad_x), positions, source, detail::backward_options(options));
}

// Returns grad_x (options.layouts.in) from grad_y (options.layouts.out).
template <class X, class Source>
auto rotated_backward(const X& grad_y, const positions_for_t<X, Source>& positions,
                      const Source& source, const RotateOptions& options = {}) {
  return rotated(grad_y, positions, source, detail::backward_options(options));
}

}  // namespace posemb
