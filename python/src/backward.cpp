// The parameter gradients of the training ops (posemb/_ops.py): FoPE's coefficients
// (rotary/fope_backward.hpp), a learned position table (absolute/gradient.hpp) and T5's bias
// table (bias/relative_bias_gradient.hpp). The gradients with respect to x are the rotations'
// transpose=True calls (rotary.cpp).
#include <posemb/absolute/gradient.hpp>
#include <posemb/bias/relative_bias_gradient.hpp>
#include <posemb/rotary/fope_backward.hpp>

#include "arrays.hpp"
#include "bindings.hpp"

namespace posemb::python {
namespace {

// x and grad as TensorMaps of one storage type and shape: body(x_map, grad_map).
template <class Body>
void with_pair(const py::object& x, const py::object& grad, int rank, Body&& body) {
  const ArrayView xv = activation(x, "x", rank, false);
  const ArrayView gv = activation(grad, "grad", rank, false);
  if (gv.dtype != xv.dtype)
    fail("grad.dtype", gv.dtype_text(), "expected x.dtype = " + xv.dtype_text());
  if (gv.shape != xv.shape)
    fail("grad.shape", gv.shape_text(), "expected x.shape = " + xv.shape_text());
  with_storage_type(xv, [&](auto tag) {
    using T = decltype(tag);
    std::array<Eigen::Index, 4> dims{1, 1, 1, 1};
    std::copy(xv.shape.begin(), xv.shape.end(), dims.begin() + (4 - rank));
    body(Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>>(
             static_cast<const T*>(xv.data), dims),
         Eigen::TensorMap<const Eigen::Tensor<T, 4, Eigen::RowMajor>>(
             static_cast<const T*>(gv.data), dims));
    return 0;
  });
}

py::object fope_gradients(const py::object& x, const py::object& grad, const py::object& positions,
                          const FopeHolder& holder, const std::string& layout) {
  const TokenPositions p = token_positions(positions);
  const TensorLayout l = layout_of(layout);
  FopeCoefficientGradients result;
  with_pair(x, grad, 4, [&](const auto& xm, const auto& gm) {
    py::gil_scoped_release release;
    result = fope_coefficient_gradients(xm, gm, p.view(), holder.fope, l);
  });
  const auto& s = result.sin_coef;
  const std::vector<Eigen::Index> shape{s.dimension(0), s.dimension(1), s.dimension(2)};
  return py::make_tuple(to_numpy(result.sin_coef.data(), shape),
                        to_numpy(result.cos_coef.data(), shape));
}

py::object table_gradient(const py::object& grad, const py::object& positions,
                          std::int64_t max_len) {
  const ArrayView gv = activation(grad, "grad", 3, false);
  const TokenPositions p = token_positions(positions);
  return with_storage_type(gv, [&](auto tag) -> py::object {
    using T = decltype(tag);
    const Eigen::TensorMap<const Eigen::Tensor<T, 3, Eigen::RowMajor>> g(
        static_cast<const T*>(gv.data), gv.shape[0], gv.shape[1], gv.shape[2]);
    const EmbeddingTable<double> table =
        without_gil([&] { return position_table_gradient(g, p.view(), max_len); });
    return to_numpy(table.data(), {table.rows(), table.cols()});
  });
}

py::object t5_gradient(const py::object& grad, const T5Buckets& buckets,
                       const py::object& q_positions, const py::object& k_positions) {
  const ArrayView gv = activation(grad, "grad", 3, false);
  const PositionVector q = position_vector(q_positions, "q_positions");
  const PositionVector k = position_vector(k_positions, "k_positions");
  return with_storage_type(gv, [&](auto tag) -> py::object {
    using T = decltype(tag);
    const Eigen::TensorMap<const Eigen::Tensor<T, 3, Eigen::RowMajor>> g(
        static_cast<const T*>(gv.data), gv.shape[0], gv.shape[1], gv.shape[2]);
    const auto table = without_gil([&] { return t5_table_gradient(g, buckets, q, k); });
    return to_numpy(table.data(), {table.rows(), table.cols()});
  });
}

}  // namespace

void bind_backward(py::module_& m) {
  m.def("fope_coefficient_gradients", &fope_gradients, R"doc(FoPE's coefficient gradients.

Given the forward's input x and grad = dL/dy (same dtype and shape, [batch, seq, heads, head_dim]
for layout='bshd' or [batch, heads, seq, head_dim] for 'bhsd'; heads = n_heads or n_kv_heads),
returns (dL/dA_sin, dL/dA_cos), each float64 [n_kv_heads, D_in, D_out], accumulated in double.

Example:
    >>> d_sin, d_cos = posemb.fope_coefficient_gradients(q, grad_q, 0, fope)
)doc",
        py::arg("x"), py::arg("grad"), py::arg("positions"), py::arg("fope"),
        py::arg("layout") = "bshd");
  m.def("position_table_gradient", &table_gradient,
        R"doc(A learned position table's gradient: float64 [max_len, d], row p the sum of the
gradients grad [batch, seq, d] of the tokens at position p (positions as for
add_position_embeddings), accumulated in token order.

Example:
    >>> d_wpe = posemb.position_table_gradient(grad_h, 0, 1024)
)doc",
        py::arg("grad"), py::arg("positions"), py::arg("max_len"));
  m.def("t5_table_gradient", &t5_gradient,
        R"doc(T5's bias table gradient: float64 [num_buckets, heads], bucket n of head h the sum of
grad [heads, q_len, k_len] over the (i, j) whose bucket(k_j - q_i) is n.

Example:
    >>> d_table = posemb.t5_table_gradient(grad_bias, buckets, q, k)
)doc",
        py::arg("grad"), py::arg("buckets"), py::arg("q_positions"), py::arg("k_positions"));
}

}  // namespace posemb::python
