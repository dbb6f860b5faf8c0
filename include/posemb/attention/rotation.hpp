// The rotation the score kernel applies to panels of q and k rows: the options' ScoreRotation
// (none, RoPE from a RopeSpec or from a RopeTable), resolved once per call for the storage type
// T and applied by rotary/rope.hpp's rotation of matrix rows (RoFormer, Su et al. 2021,
// eq. 13-15), in T, as a model rotates q and k.
#pragma once

#include <Eigen/Core>
#include <type_traits>
#include <variant>

#include "posemb/attention/options.hpp"
#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

template <class T>
using RowMajorRows = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Whether `source` can rotate rows of storage type T: a RopeSpec always; a RopeTable when it
// holds T's arithmetic type.
template <class Source, class T>
constexpr bool rotates_storage() {
  if constexpr (std::is_pointer_v<Source>) {
    return std::is_same_v<typename std::remove_pointer_t<Source>::compute_type, compute_t<T>>;
  } else {
    return std::is_same_v<Source, RopeSpec>;
  }
}

template <class T>
class RowRotation {
 public:
  explicit RowRotation(const ScoreRotation& rotation) : rotation_(rotation) {}

  bool rotates() const { return !std::holds_alternative<NoRotation>(rotation_); }

  // Throws unless the source fits head_dim and (a table) covers every position of the
  // [batch, seq] grid, before any work starts.
  void check(const Positions& positions, Eigen::Index batch, Eigen::Index seq,
             Eigen::Index head_dim) const {
    const ActivationShape shape({batch, seq, 1, head_dim}, TensorLayout::BSHD);
    with_source([&](const auto& source) { rotary_source(source, positions).check(shape); });
  }

  // rows: [count, head_dim] in T, row r at panel_positions (0, r), rotated in place.
  void rotate(T* rows, Eigen::Index count, Eigen::Index head_dim,
              const Positions& panel_positions) const {
    with_source([&](const auto& source) {
      rotate_matrix_rows(Eigen::Map<RowMajorRows<T>>(rows, count, head_dim),
                         rotary_source(source, panel_positions));
    });
  }

 private:
  // Calls body(spec or table) for a rotating source; a table of another arithmetic type throws.
  template <class Body>
  void with_source(const Body& body) const {
    std::visit(
        [&](const auto& source) {
          using Source = std::decay_t<decltype(source)>;
          if constexpr (std::is_same_v<Source, NoRotation>) {
            return;
          } else if constexpr (!rotates_storage<Source, T>()) {
            fail("rotation", "a RopeTable of another arithmetic type",
                 "expected RopeTable<T> with T the storage type of q and k (double for double, "
                 "float for float, half and bfloat16)");
          } else if constexpr (std::is_pointer_v<Source>) {
            if (source == nullptr) fail("rotation", "a null RopeTable pointer", "expected a table");
            body(*source);
          } else {
            body(source);
          }
        },
        rotation_);
  }

  const ScoreRotation& rotation_;
};

}  // namespace detail
}  // namespace posemb
