// Default RoPE inverse frequencies (Su et al. 2021, "RoFormer", eq. 15).
//
//   inv_freq[i] = base^(-2i / rotary_dim),  i = 0 .. rotary_dim/2 - 1
//
// Always in double: a float32 or bf16 inv_freq puts errors of 1e-2 rad and more into the angle
// p * inv_freq at positions in the tens of thousands. Scaled variants (linear, NTK, YaRN, ...)
// are each a change to these values; see scaled.hpp.
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "posemb/error.hpp"

namespace posemb {

// Returns inv_freq: [rotary_dim / 2], decreasing from 1.
inline Eigen::VectorXd default_inv_freq(int rotary_dim, double base = 10000.0) {
  detail::require_even_positive("rotary_dim", rotary_dim);
  detail::require_positive_finite("base", base);
  const int pairs = rotary_dim / 2;
  Eigen::VectorXd inv_freq(pairs);
  for (int i = 0; i < pairs; ++i) {
    inv_freq[i] = std::pow(base, -2.0 * i / rotary_dim);
  }
  return inv_freq;
}

}  // namespace posemb
