// Learned absolute position embeddings: a trainable table [max_len, d] whose row p is added to
// the token embedding at position p (GPT-2's `wpe`, BERT's `position_embeddings`). Added to
// token embeddings with add_position_embeddings (sinusoidal.hpp), exactly like the sinusoidal
// table.
//
// The table either owns its weights, initialised from a seed, or maps a caller's buffer
// (zero-copy, e.g. weights loaded from a checkpoint).
//
// Initialisation: every weight ~ N(0, init_std^2), init_std = 0.02 by default (GPT-2 and BERT's
// initializer_range), drawn in row-major order by a generator that gives the same numbers with
// every standard library: std::mt19937_64 (its output sequence is fixed by the C++ standard)
// feeding the Box-Muller transform (Box & Muller 1958). std::normal_distribution is not used
// because its algorithm differs between standard libraries.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "posemb/random.hpp"
#include "posemb/error.hpp"
#include "posemb/absolute/absolute.hpp"
#include "posemb/tensor.hpp"

namespace posemb {

// A learned absolute position table [max_len, d] of storage type T, owned or mapped.
// Copying an owning table copies its weights; copying a mapping table maps the same buffer.
template <class T = float>
class LearnedPositionTable {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");

 public:
  // weights(): [max_len, d], row p is the embedding of position p.
  using Weights = Eigen::Map<EmbeddingTable<T>>;
  using ConstWeights = Eigen::Map<const EmbeddingTable<T>>;

  // Owns max_len * d weights drawn from N(0, init_std^2) by SeededNormal(seed), in
  // row-major order, each rounded once to T.
  LearnedPositionTable(std::int64_t max_len, std::int64_t d, std::uint64_t seed,
                       double init_std = 0.02)
      : max_len_(max_len), dim_(d) {
    detail::check_table_size(max_len, d);
    detail::require_positive_finite("init_std", init_std);
    detail::allocate_sized("max_len", max_len, static_cast<long double>(max_len) * d, sizeof(T),
                           [&] { owned_.resize(static_cast<std::size_t>(max_len * d)); });
    SeededNormal normal(seed);
    for (T& w : owned_) w = detail::round_to_storage<T>(init_std * normal());
  }

  // Maps the caller's row-major buffer of max_len * d values without copying. The buffer must
  // outlive the table (and its copies); writes through either side are seen by both.
  static LearnedPositionTable map(T* weights, std::int64_t max_len, std::int64_t d) {
    if (weights == nullptr)
      detail::fail("weights", "nullptr", "expected a buffer of max_len * d values");
    detail::check_table_size(max_len, d);
    return LearnedPositionTable(Mapped{}, weights, max_len, d);
  }

  std::int64_t max_len() const { return max_len_; }
  std::int64_t dim() const { return dim_; }
  bool owns_weights() const { return external_ == nullptr; }

  Weights weights() { return Weights(data(), max_len_, dim_); }
  ConstWeights weights() const { return ConstWeights(data(), max_len_, dim_); }

 private:
  struct Mapped {};
  LearnedPositionTable(Mapped, T* external, std::int64_t max_len, std::int64_t d)
      : max_len_(max_len), dim_(d), external_(external) {}

  T* data() { return external_ != nullptr ? external_ : owned_.data(); }
  const T* data() const { return external_ != nullptr ? external_ : owned_.data(); }

  std::int64_t max_len_;
  std::int64_t dim_;
  std::vector<T> owned_;   // empty when mapping
  T* external_ = nullptr;  // the caller's buffer when mapping
};

}  // namespace posemb
