// The C API's table gradients: a learned absolute table's (absolute/gradient.hpp) and T5's
// relative-bias table's (bias/relative_bias_gradient.hpp), both in double.
#include <algorithm>
#include <cstdint>
#include <string>

#include "boundary.hpp"
#include "posemb/absolute/gradient.hpp"
#include "posemb/bias/relative_bias_gradient.hpp"
#include "rotate.hpp"

using posemb::c_api::as_int64;
using posemb::c_api::checked_product;
using posemb::c_api::guarded;
using posemb::c_api::require_count;
using posemb::c_api::require_pointer;

namespace {

// Throws unless capacity holds rows * cols elements.
void require_capacity(size_t capacity, std::int64_t rows, std::int64_t cols, const char* what) {
  const std::int64_t need = checked_product(rows, cols, what);
  if (capacity < static_cast<size_t>(need)) {
    posemb::detail::fail("capacity", capacity,
                         "expected >= " + std::string(what) + " = " + std::to_string(need));
  }
}

// positions [n] as a PositionVector; n >= 1.
posemb::PositionVector position_vector(const int64_t* positions, size_t n, const char* name,
                                       const char* count_name) {
  require_pointer(positions, name, "a pointer to positions");
  require_count(count_name, as_int64(count_name, n));
  return Eigen::Map<const posemb::PositionVector>(positions, as_int64(count_name, n));
}

template <class Matrix>
void copy_out(const Matrix& values, double* out) {
  std::copy(values.data(), values.data() + values.size(), out);
}

}  // namespace

extern "C" {

posemb_status posemb_position_table_gradient(posemb_dtype dtype, const void* grad, int64_t batch,
                                             int64_t seq, int64_t d,
                                             const posemb_positions* positions, int64_t max_len,
                                             double* out, size_t capacity) {
  return guarded([&] {
    require_pointer(grad, "grad", "a pointer to dL/dy [batch, seq, d]");
    require_pointer(out, "out", "a buffer of max_len * d doubles");
    require_count("batch", batch);
    require_count("seq", seq);
    require_count("d", d);
    require_count("max_len", max_len);
    checked_product(
        checked_product(checked_product(batch, seq, "batch * seq * d"), d, "batch * seq * d"), 4,
        "batch * seq * d");
    require_capacity(capacity, max_len, d, "max_len * d");
    // The grid of with_positions: its layout and heads are not read.
    const posemb::c_api::CheckedShape grid{
        posemb::TensorLayout::BSHD, {batch, seq, 1, d}, batch, seq, batch * seq * d};
    posemb::c_api::with_dtype(dtype, grad, [&](const auto* data) {
      using T = std::remove_const_t<std::remove_pointer_t<decltype(data)>>;
      const Eigen::TensorMap<const Eigen::Tensor<T, 3, Eigen::RowMajor>> g(data, batch, seq, d);
      posemb::c_api::with_positions(positions, grid, [&](const posemb::Positions& at) {
        copy_out(posemb::position_table_gradient(g, at, max_len), out);
      });
    });
  });
}

posemb_status posemb_t5_table_gradient(const posemb_t5_buckets* buckets, const float* grad,
                                       size_t heads, const int64_t* q_positions, size_t q_len,
                                       const int64_t* k_positions, size_t k_len, double* out,
                                       size_t capacity) {
  return guarded([&] {
    require_pointer(buckets, "buckets", "a posemb_t5_buckets");
    require_pointer(grad, "grad", "a pointer to dL/dbias [heads, q_len, k_len]");
    require_pointer(out, "out", "a buffer of num_buckets * heads doubles");
    const posemb::PositionVector q = position_vector(q_positions, q_len, "q_positions", "q_len");
    const posemb::PositionVector k = position_vector(k_positions, k_len, "k_positions", "k_len");
    const std::int64_t h = as_int64("heads", heads);
    require_count("heads", h);
    require_count("buckets.num_buckets", buckets->num_buckets);
    require_capacity(capacity, buckets->num_buckets, h, "num_buckets * heads");
    const posemb::T5Buckets b{buckets->num_buckets, buckets->max_distance,
                              buckets->bidirectional != 0};
    const Eigen::TensorMap<const Eigen::Tensor<float, 3, Eigen::RowMajor>> g(grad, h, q.size(),
                                                                             k.size());
    copy_out(posemb::t5_table_gradient(g, b, q, k), out);
  });
}

}  // extern "C"
