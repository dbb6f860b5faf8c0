// The C API's attention biases: ALiBi slopes and bias, T5 buckets and bias (float32 out).
#include <algorithm>
#include <cstdint>
#include <string>

#include "boundary.hpp"
#include "posemb/bias/alibi.hpp"
#include "posemb/bias/relative_bias.hpp"

using posemb::c_api::as_int64;
using posemb::c_api::guarded;
using posemb::c_api::require_pointer;

namespace {

// positions [n] as a PositionVector; n >= 1.
posemb::PositionVector position_vector(const int64_t* positions, size_t n, const char* name,
                                       const char* count_name) {
  require_pointer(positions, name, "a pointer to positions");
  posemb::c_api::require_count(count_name, as_int64(count_name, n));
  return Eigen::Map<const posemb::PositionVector>(positions, as_int64(count_name, n));
}

// Throws unless capacity holds heads * q_len * k_len elements.
void require_capacity(size_t capacity, size_t heads, size_t q_len, size_t k_len) {
  const char* what = "heads * q_len * k_len";
  const std::int64_t need = posemb::c_api::checked_product(
      posemb::c_api::checked_product(as_int64("heads", heads), as_int64("q_len", q_len), what),
      as_int64("k_len", k_len), what);
  if (capacity < static_cast<size_t>(need)) {
    posemb::detail::fail("capacity", capacity,
                         "expected >= " + std::string(what) + " = " + std::to_string(need));
  }
}

// The query and key positions of a bias, checked with the output's capacity for heads rows.
struct QueryKeys {
  posemb::PositionVector q, k;

  QueryKeys(size_t heads, const int64_t* q_positions, size_t q_len, const int64_t* k_positions,
            size_t k_len, size_t capacity)
      : q(position_vector(q_positions, q_len, "q_positions", "q_len")),
        k(position_vector(k_positions, k_len, "k_positions", "k_len")) {
    posemb::c_api::require_count("heads", as_int64("heads", heads));
    require_capacity(capacity, heads, q_len, k_len);
  }
};

posemb::T5Buckets buckets_of(const posemb_t5_buckets* buckets) {
  require_pointer(buckets, "buckets", "a posemb_t5_buckets");
  return {buckets->num_buckets, buckets->max_distance, buckets->bidirectional != 0};
}

template <class Tensor>
void copy_out(const Tensor& values, float* out) {
  std::copy(values.data(), values.data() + values.size(), out);
}

}  // namespace

extern "C" {

posemb_status posemb_alibi_slopes(int32_t n_heads, double max_bias, double* out, size_t capacity) {
  return guarded([&] {
    require_pointer(out, "out", "a buffer of n_heads doubles");
    const Eigen::VectorXd slopes = posemb::alibi_slopes(n_heads, max_bias);
    if (capacity < static_cast<size_t>(slopes.size())) {
      posemb::detail::fail("capacity", capacity,
                           "expected >= n_heads = " + std::to_string(n_heads));
    }
    std::copy(slopes.data(), slopes.data() + slopes.size(), out);
  });
}

posemb_status posemb_alibi_bias(const double* slopes, size_t heads, const int64_t* q_positions,
                                size_t q_len, const int64_t* k_positions, size_t k_len,
                                posemb_alibi_form form, float* out, size_t capacity) {
  return guarded([&] {
    require_pointer(slopes, "slopes", "a pointer to heads slopes");
    require_pointer(out, "out", "a buffer of heads * q_len * k_len floats");
    const QueryKeys qk(heads, q_positions, q_len, k_positions, k_len, capacity);
    if (form != POSEMB_ALIBI_CAUSAL && form != POSEMB_ALIBI_SYMMETRIC) {
      posemb::detail::fail("form", static_cast<int>(form),
                           "expected POSEMB_ALIBI_CAUSAL (0) or POSEMB_ALIBI_SYMMETRIC (1)");
    }
    const Eigen::VectorXd s = Eigen::Map<const Eigen::VectorXd>(slopes, as_int64("heads", heads));
    copy_out(posemb::alibi_bias<float>(s, qk.q, qk.k,
                                       form == POSEMB_ALIBI_CAUSAL ? posemb::AlibiForm::Causal
                                                                   : posemb::AlibiForm::Symmetric),
             out);
  });
}

posemb_status posemb_t5_buckets_of(const posemb_t5_buckets* buckets, const int64_t* q_positions,
                                   size_t q_len, const int64_t* k_positions, size_t k_len,
                                   int64_t* out, size_t capacity) {
  return guarded([&] {
    const posemb::T5Buckets b = buckets_of(buckets);
    require_pointer(out, "out", "a buffer of q_len * k_len int64 values");
    const QueryKeys qk(1, q_positions, q_len, k_positions, k_len, capacity);
    const posemb::BucketMatrix ids = posemb::t5_bucket_matrix(b, qk.q, qk.k);
    std::copy(ids.data(), ids.data() + ids.size(), out);
  });
}

posemb_status posemb_t5_bias(const posemb_t5_buckets* buckets, const float* table, size_t heads,
                             const int64_t* q_positions, size_t q_len, const int64_t* k_positions,
                             size_t k_len, float* out, size_t capacity) {
  return guarded([&] {
    const posemb::T5Buckets b = buckets_of(buckets);
    require_pointer(table, "table", "a pointer to the [num_buckets, heads] table");
    require_pointer(out, "out", "a buffer of heads * q_len * k_len floats");
    const QueryKeys qk(heads, q_positions, q_len, k_positions, k_len, capacity);
    const posemb::T5BiasTable<float> t(b, table, b.num_buckets, as_int64("heads", heads));
    copy_out(posemb::t5_bias(t, qk.q, qk.k), out);
  });
}

}  // extern "C"
