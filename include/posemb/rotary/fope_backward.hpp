// FoPE's parameter gradients: the vector-Jacobian product with respect to the coefficients
// A_cos and A_sin (rotary/fope.hpp). The gradient with respect to x is the rotation's transpose,
// rotate_backward (rotary/backward.hpp) with the same Fope source.
//
// The forward (fope.hpp; reference: FourierEmbedding in olmo/model.py of
// github.com/TsinghuaC3I/Fourier-Position-Embedding, commit bd94b20), for query head q of
// coefficient head h = q / group, slot j < D_out, half = head_dim / 2, token at position t:
//
//   C_hj(t) = sum_k A_cos[h, k, j] cos(w_k t)      S_hj(t) = sum_k A_sin[h, k, j] sin(w_k t)
//   y_j = x_j C - x_{j+half} S                    y_{j+half} = x_{j+half} C + x_j S
//
// so with g = dL/dy, summed over the tokens and over the query heads q of group h:
//
//   dL/dC_hj(t) = sum_q  g_j x_j + g_{j+half} x_{j+half}
//   dL/dS_hj(t) = sum_q  g_{j+half} x_j - g_j x_{j+half}
//   dL/dA_cos[h, k, j] = sum_t cos(w_k t) dL/dC_hj(t)      (a GEMM: [D_in, tokens] x [tokens,
//   D_out]) dL/dA_sin[h, k, j] = sum_t sin(w_k t) dL/dS_hj(t)
//
// Everything is accumulated in double, in a fixed order (the result does not depend on
// threads). The padded slots j >= D_out have no coefficients.
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <string>
#include <utility>

#include "posemb/detail/cos_sin.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/fope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// dL/dA_sin and dL/dA_cos: each [n_kv_heads, D_in, D_out], in double.
struct FopeCoefficientGradients {
  Eigen::Tensor<double, 3, Eigen::RowMajor> sin_coef;
  Eigen::Tensor<double, 3, Eigen::RowMajor> cos_coef;
};

namespace detail {

using DoubleRows = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// cos(w_k t) and sin(w_k t) of every token, in double: each [batch * seq, D_in].
inline std::pair<DoubleRows, DoubleRows> fope_token_waves(const Fope& fope,
                                                          const Positions& positions,
                                                          const ActivationShape& shape) {
  DoubleRows cos_w(shape.batch * shape.seq, fope.d_in()),
      sin_w(shape.batch * shape.seq, fope.d_in());
  for (Eigen::Index b = 0; b < shape.batch; ++b) {
    for (Eigen::Index s = 0; s < shape.seq; ++s) {
      const Eigen::Index row = b * shape.seq + s;
      cos_sin_at(fope.inv_freq().data(), positions.at(b, s), 1.0, fope.d_in(),
                 cos_w.row(row).data(), sin_w.row(row).data());
    }
  }
  return {cos_w, sin_w};
}

// dL/dC and dL/dS of every token and coefficient head: each [batch * seq, n_kv_heads * D_out].
template <class T>
std::pair<DoubleRows, DoubleRows> fope_slot_gradients(const Fope& fope, const T* x, const T* grad,
                                                      const ActivationShape& shape) {
  const Eigen::Index half = fope.slots(), d_out = fope.d_out();
  const Eigen::Index group = fope.head_group(shape.heads);
  DoubleRows d_cos = DoubleRows::Zero(shape.batch * shape.seq, fope.n_kv_heads() * d_out);
  DoubleRows d_sin = DoubleRows::Zero(d_cos.rows(), d_cos.cols());
  const auto value = [](T v) { return static_cast<double>(static_cast<compute_t<T>>(v)); };
  for (Eigen::Index b = 0; b < shape.batch; ++b) {
    for (Eigen::Index s = 0; s < shape.seq; ++s) {
      const Eigen::Index row = b * shape.seq + s;
      for (Eigen::Index q = 0; q < shape.heads; ++q) {
        const T* xh = x + shape.offset(b, s, q);
        const T* gh = grad + shape.offset(b, s, q);
        double* dc = d_cos.row(row).data() + (q / group) * d_out;
        double* ds = d_sin.row(row).data() + (q / group) * d_out;
        for (Eigen::Index j = 0; j < d_out; ++j) {
          const double x1 = value(xh[j]), x2 = value(xh[j + half]);
          const double g1 = value(gh[j]), g2 = value(gh[j + half]);
          dc[j] += g1 * x1 + g2 * x2;
          ds[j] += g2 * x1 - g1 * x2;
        }
      }
    }
  }
  return {d_cos, d_sin};
}

// waves^T slots, [D_in, n_kv_heads * D_out], as [n_kv_heads, D_in, D_out].
inline Eigen::Tensor<double, 3, Eigen::RowMajor> fope_coefficient_product(const DoubleRows& waves,
                                                                          const DoubleRows& slots,
                                                                          const Fope& fope) {
  const DoubleRows product = waves.transpose() * slots;  // [D_in, n_kv_heads * D_out]
  Eigen::Tensor<double, 3, Eigen::RowMajor> out(fope.n_kv_heads(), fope.d_in(), fope.d_out());
  for (Eigen::Index h = 0; h < fope.n_kv_heads(); ++h) {
    for (Eigen::Index k = 0; k < fope.d_in(); ++k) {
      for (Eigen::Index j = 0; j < fope.d_out(); ++j)
        out(h, k, j) = product(k, h * fope.d_out() + j);
    }
  }
  return out;
}

}  // namespace detail

// dL/dA_sin and dL/dA_cos of FoPE's forward y = fope(x) at `positions`, given the forward's
// input x and grad = dL/dy, both [batch, seq, heads, head_dim] (BSHD) or [batch, heads, seq,
// head_dim] (BHSD) as `layout` says, heads = n_heads (queries) or n_kv_heads (keys). For a layer
// whose queries and keys share the coefficients, add the two calls' results.
//
// Example:
//   const posemb::FopeCoefficientGradients dq = posemb::fope_coefficient_gradients(q, grad_q, 0,
//   fope); const posemb::FopeCoefficientGradients dk = posemb::fope_coefficient_gradients(k,
//   grad_k, 0, fope);
template <class X, class G>
FopeCoefficientGradients fope_coefficient_gradients(const X& x, const G& grad,
                                                    const Positions& positions, const Fope& fope,
                                                    TensorLayout layout = TensorLayout::BSHD) {
  static_assert(require_activation_tensor<X>() && require_activation_tensor<G>());
  static_assert(std::is_same_v<scalar_of_t<X>, scalar_of_t<G>>,
                "posemb: x and grad must have the same scalar type");
  for (int i = 0; i < 4; ++i) {
    if (grad.dimension(i) != x.dimension(i)) {
      detail::fail("grad.dimension(" + std::to_string(i) + ")", grad.dimension(i),
                   "expected x.dimension(" + std::to_string(i) +
                       ") = " + std::to_string(x.dimension(i)));
    }
  }
  const ActivationShape shape(x.dimensions(), layout);
  detail::check_fope_shape(fope, shape);
  positions.check(shape);
  const auto [cos_w, sin_w] = detail::fope_token_waves(fope, positions, shape);
  const auto [d_cos, d_sin] = detail::fope_slot_gradients(fope, x.data(), grad.data(), shape);
  return {detail::fope_coefficient_product(sin_w, d_sin, fope),
          detail::fope_coefficient_product(cos_w, d_cos, fope)};
}

}  // namespace posemb
