// Storage types and the arithmetic type used for each.
#pragma once

#include <Eigen/Core>
#include <type_traits>

namespace posemb {
namespace detail {

// float, double, Eigen::half and Eigen::bfloat16 are storage types. Half-precision values are
// loaded into float, computed on in float, and rounded once on store.
template <class T>
inline constexpr bool is_storage_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Eigen::half> ||
    std::is_same_v<T, Eigen::bfloat16>;

template <class T>
struct compute_type {
  static_assert(is_storage_type_v<T>,
                "posemb storage type must be float, double, Eigen::half or Eigen::bfloat16");
  using type = float;
};
template <>
struct compute_type<double> {
  using type = double;
};

// The arithmetic type for storage type T: double for double, float otherwise.
template <class T>
using compute_t = typename compute_type<T>::type;

}  // namespace detail
}  // namespace posemb
