// T5 relative position bias (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with
// a Unified Text-to-Text Transformer", sec. 2.1), as T5, T5 v1.1, Flan-T5, mT5, UMT5, ByT5 and
// UL2 compute it (HuggingFace transformers, models/t5/modeling_t5.py,
// T5Attention._relative_position_bucket and compute_bias).
//
// No embedding is added to the tokens. Each (query, key) pair falls into one of num_buckets
// buckets by its relative position rel = kpos_j - qpos_i, and head h adds a learned scalar per
// bucket to the attention logit:
//
//   bias[h, i, j] = table[bucket(kpos_j - qpos_i), h],   table: [num_buckets, heads]
//
// The bucket of rel (modeling_t5.py, _relative_position_bucket):
//   bidirectional (encoders): B = num_buckets / 2; rel > 0 goes to the upper half (offset B);
//                             n = |rel|
//   causal (decoders):        B = num_buckets; n = -min(rel, 0) (keys after the query share
//                             bucket 0 with rel = 0; the causal mask hides them)
//   max_exact = B / 2
//   n < max_exact:  bucket n
//   otherwise:      max_exact + trunc(log(n / max_exact) / log(max_distance / max_exact)
//                                     * (B - max_exact)),  at most B - 1
// The logarithm is evaluated in float32 as the checkpoints were trained: float32(n) divided by
// float32(max_exact), float32 log, divided by the double log(max_distance / max_exact) rounded
// to float32, multiplied by float32(B - max_exact), truncated toward zero. At the exact edges
// (rel = +-32, +-64 at 32 buckets, max distance 128) the quotient is a whole number, so the
// bucket hangs on how that number rounds: this order of float32 operations is the one that
// lands where the checkpoints expect. (Over the configurations the tests scan, double gives the
// same buckets; a log that is 1 ulp low, as vectorized logs may be, would not.)
//
// The bias is built from explicit query and key positions, so a decode query at position p
// against a KV cache of positions 0 .. p gets the last row of the full bias (t5_bias_row).
#pragma once

#include <Eigen/Core>
#include <unsupported/Eigen/CXX11/Tensor>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "posemb/error.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// The bucket function's parameters (T5Config: relative_attention_num_buckets,
// relative_attention_max_distance; bidirectional in the encoder, causal in the decoder).
struct T5Buckets {
  int num_buckets = 32;
  int max_distance = 128;
  bool bidirectional = true;
};

// Bucket ids: [q_len, k_len].
using BucketMatrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// A bias: [heads, q_len, k_len].
template <class T>
using RelativeBias = Eigen::Tensor<T, 3, Eigen::RowMajor>;
// The bias of one query against every key: [heads, k_len].
template <class T>
using RelativeBiasRow = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {

// The exact-bucket count max_exact of the (halved, when bidirectional) bucket count.
inline std::int64_t t5_max_exact(const T5Buckets& buckets) {
  const std::int64_t half = buckets.bidirectional ? buckets.num_buckets / 2 : buckets.num_buckets;
  return half / 2;
}

inline void check_t5_buckets(const T5Buckets& buckets) {
  if (buckets.bidirectional ? buckets.num_buckets < 4 : buckets.num_buckets < 2) {
    fail("num_buckets", buckets.num_buckets,
         buckets.bidirectional ? "expected a number >= 4 for bidirectional buckets"
                               : "expected a number >= 2");
  }
  const std::int64_t max_exact = t5_max_exact(buckets);
  if (buckets.max_distance <= max_exact) {
    fail("max_distance", buckets.max_distance,
         "expected a number > max_exact = " + std::to_string(max_exact) + " (half of the " +
             (buckets.bidirectional ? "halved " : "") + "num_buckets)");
  }
}

// kpos - qpos, saturated to +-INT64_MAX: every |rel| >= max_distance lands in the last bucket of
// its side, so saturation does not change the bucket.
inline std::int64_t relative_position(std::int64_t q_position, std::int64_t k_position) {
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  if (k_position >= q_position) {
    const std::uint64_t d =
        static_cast<std::uint64_t>(k_position) - static_cast<std::uint64_t>(q_position);
    return d > static_cast<std::uint64_t>(big) ? big : static_cast<std::int64_t>(d);
  }
  const std::uint64_t d =
      static_cast<std::uint64_t>(q_position) - static_cast<std::uint64_t>(k_position);
  return d > static_cast<std::uint64_t>(big) ? -big : -static_cast<std::int64_t>(d);
}

// The bucket, for parameters already checked.
inline std::int64_t t5_bucket_unchecked(std::int64_t rel, const T5Buckets& buckets) {
  std::int64_t bucket = 0;
  std::int64_t half = buckets.num_buckets;
  std::int64_t n = 0;                                          // the distance, >= 0
  if (rel == std::numeric_limits<std::int64_t>::min()) ++rel;  // |rel| fits; same bucket
  if (buckets.bidirectional) {
    half /= 2;
    if (rel > 0) bucket += half;
    n = rel < 0 ? -rel : rel;
  } else {
    n = rel < 0 ? -rel : 0;
  }
  const std::int64_t max_exact = half / 2;
  if (n < max_exact) return bucket + n;
  // float32 throughout, as torch evaluates the float tensor expression.
  const float ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const float log_span = static_cast<float>(
      std::log(static_cast<double>(buckets.max_distance) / static_cast<double>(max_exact)));
  const float scaled = std::log(ratio) / log_span * static_cast<float>(half - max_exact);
  // Far beyond the last bucket (tiny log_span): clamp before the cast, which must stay in range.
  if (!(scaled < 0x1p62f)) return bucket + half - 1;
  return bucket + std::min<std::int64_t>(max_exact + static_cast<std::int64_t>(scaled), half - 1);
}

}  // namespace detail

// The T5 bucket of relative position rel = kpos - qpos (see the formula above).
// Example:
//   posemb::t5_relative_position_bucket(-64, 32, 128, /*bidirectional=*/true);   // 14
//   posemb::t5_relative_position_bucket(-64, 32, 128, /*bidirectional=*/false);  // 26
inline std::int64_t t5_relative_position_bucket(std::int64_t rel, int num_buckets, int max_distance,
                                                bool bidirectional) {
  const T5Buckets buckets{num_buckets, max_distance, bidirectional};
  detail::check_t5_buckets(buckets);
  return detail::t5_bucket_unchecked(rel, buckets);
}

// bucket(kpos_j - qpos_i) for query positions q_positions [q_len] and key positions
// k_positions [k_len]; returns [q_len, k_len].
inline BucketMatrix t5_bucket_matrix(const T5Buckets& buckets, const PositionVector& q_positions,
                                     const PositionVector& k_positions) {
  detail::check_t5_buckets(buckets);
  BucketMatrix ids(q_positions.size(), k_positions.size());
  for (Eigen::Index i = 0; i < q_positions.size(); ++i) {
    for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
      ids(i, j) = detail::t5_bucket_unchecked(
          detail::relative_position(q_positions[i], k_positions[j]), buckets);
    }
  }
  return ids;
}

// The same for query positions q_offset .. q_offset + q_len - 1 and key positions
// 0 .. k_len - 1 (q_offset = k_len - q_len: the last q_len keys, as in decode with a cache).
// Example (the encoder buckets of a 512-token input, T5's defaults):
//   const posemb::BucketMatrix ids = posemb::t5_bucket_matrix({32, 128, true}, 512, 512, 0);
inline BucketMatrix t5_bucket_matrix(const T5Buckets& buckets, std::int64_t q_len,
                                     std::int64_t k_len, std::int64_t q_offset) {
  if (q_len < 0) detail::fail("q_len", q_len, "expected a number >= 0");
  if (k_len < 0) detail::fail("k_len", k_len, "expected a number >= 0");
  if (q_len > 0 && q_offset > std::numeric_limits<std::int64_t>::max() - (q_len - 1)) {
    detail::fail("q_offset", q_offset, "expected q_offset + q_len - 1 to fit in int64");
  }
  PositionVector q_positions(q_len), k_positions(k_len);
  for (std::int64_t i = 0; i < q_len; ++i) q_positions[i] = q_offset + i;
  for (std::int64_t j = 0; j < k_len; ++j) k_positions[j] = j;
  return t5_bucket_matrix(buckets, q_positions, k_positions);
}

// The bucket parameters and the learned [num_buckets, heads] table (the checkpoint's
// relative_attention_bias.weight, held by layer 0 of the encoder and of the decoder and shared
// by their other layers). The table is either owned or mapped: the mapped form reads the
// caller's row-major weights in place (no copy); they must outlive the T5BiasTable.
template <class T = float>
class T5BiasTable {
 public:
  using Table = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using TableMap = Eigen::Map<const Table>;

  // Owns table: [num_buckets, heads].
  // Example:
  //   posemb::T5BiasTable<float>::Table weights(32, 8);  // from the checkpoint
  //   const posemb::T5BiasTable<float> bias({32, 128, true}, weights);
  T5BiasTable(const T5Buckets& buckets, Table table) : buckets_(buckets), owned_(std::move(table)) {
    check(owned_.rows(), owned_.cols());
  }

  // Maps data: [rows, cols] row-major, which must be [num_buckets, heads].
  // Example (weights read from an .npy file of shape [32, 12]):
  //   const posemb::NpyArray w = posemb::read_npy("relative_attention_bias.npy");
  //   const std::vector<float> values = w.values<float>();
  //   const posemb::T5BiasTable<float> bias({32, 128, true}, values.data(), w.shape[0],
  //   w.shape[1]);
  T5BiasTable(const T5Buckets& buckets, const T* data, Eigen::Index rows, Eigen::Index cols)
      : buckets_(buckets), mapped_(data) {
    if (data == nullptr)
      detail::fail("table data", "null", "expected a pointer to [num_buckets, heads] values");
    check(rows, cols);
    heads_ = cols;
  }

  const T5Buckets& buckets() const { return buckets_; }
  Eigen::Index heads() const { return mapped_ ? heads_ : owned_.cols(); }
  // [num_buckets, heads]
  TableMap table() const {
    return mapped_ ? TableMap(mapped_, buckets_.num_buckets, heads_)
                   : TableMap(owned_.data(), owned_.rows(), owned_.cols());
  }

  // An owned one-head table holding head h's column, for the one-head attention helpers.
  T5BiasTable head(Eigen::Index h) const {
    if (h < 0 || h >= heads()) {
      detail::fail("head", h,
                   "expected a head in [0, heads) = [0, " + std::to_string(heads()) + ")");
    }
    return T5BiasTable(buckets_, Table(table().col(h)));
  }

 private:
  void check(Eigen::Index rows, Eigen::Index cols) const {
    detail::check_t5_buckets(buckets_);
    if (rows != buckets_.num_buckets || cols <= 0) {
      detail::fail("table shape", "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]",
                   "expected [num_buckets, heads] with num_buckets = " +
                       std::to_string(buckets_.num_buckets) + " and heads > 0");
    }
  }

  T5Buckets buckets_;
  Table owned_;
  const T* mapped_ = nullptr;
  Eigen::Index heads_ = 0;
};

// bias[h, i, j] = table[bucket(kpos_j - qpos_i), h] for query positions q_positions [q_len] and
// key positions k_positions [k_len]; returns [heads, q_len, k_len]. No causal mask is applied
// (the attention helpers mask by position).
// Example (decoder self-attention of 16 new tokens after 100 cached ones):
//   const posemb::T5BiasTable<float> table({32, 128, false}, weights.data(), 32, 8);
//   posemb::PositionVector q(16), k(116);
//   for (int i = 0; i < 16; ++i) q[i] = 100 + i;
//   for (int j = 0; j < 116; ++j) k[j] = j;
//   const posemb::RelativeBias<float> bias = posemb::t5_bias(table, q, k);  // [8, 16, 116]
template <class T>
RelativeBias<T> t5_bias(const T5BiasTable<T>& table, const PositionVector& q_positions,
                        const PositionVector& k_positions) {
  const BucketMatrix ids = t5_bucket_matrix(table.buckets(), q_positions, k_positions);
  const auto weights = table.table();
  RelativeBias<T> bias(table.heads(), q_positions.size(), k_positions.size());
  for (Eigen::Index h = 0; h < table.heads(); ++h) {
    for (Eigen::Index i = 0; i < ids.rows(); ++i) {
      for (Eigen::Index j = 0; j < ids.cols(); ++j) bias(h, i, j) = weights(ids(i, j), h);
    }
  }
  return bias;
}

// One query row, for decode with a KV cache: the bias of the query at q_position against every
// key position; returns [heads, k_len], equal to t5_bias(table, {q_position}, k_positions) with
// the query axis dropped.
template <class T>
RelativeBiasRow<T> t5_bias_row(const T5BiasTable<T>& table, std::int64_t q_position,
                               const PositionVector& k_positions) {
  detail::check_t5_buckets(table.buckets());
  const auto weights = table.table();
  RelativeBiasRow<T> row(table.heads(), k_positions.size());
  for (Eigen::Index j = 0; j < k_positions.size(); ++j) {
    const std::int64_t id = detail::t5_bucket_unchecked(
        detail::relative_position(q_position, k_positions[j]), table.buckets());
    for (Eigen::Index h = 0; h < table.heads(); ++h) row(h, j) = weights(id, h);
  }
  return row;
}

}  // namespace posemb
