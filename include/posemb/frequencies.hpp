// The frequency ladder (Vaswani et al. 2017, "Attention Is All You Need", §3.5; Su et al. 2021,
// "RoFormer", eq. 15), and the angle every scheme forms from it. On the ground floor: the rotary
// schemes (rotary/) and the sinusoidal table (absolute/sinusoidal.hpp) both stand on it.
//
//   inv_freq[i] = base^(-2i / rotary_dim),  i = 0 .. rotary_dim/2 - 1
//   angle       = remainder(p * inv_freq[i], 2 pi)  in (-pi, pi], formed in double
//
// Always in double: a float32 or bf16 inv_freq puts errors of 1e-2 rad and more into the angle
// p * inv_freq at positions in the tens of thousands. Scaled variants (linear, NTK, YaRN, ...)
// are each a change to these values; see rotary/scaled.hpp.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>

#include "posemb/error.hpp"

namespace posemb {

// The double nearest 2 pi.
inline constexpr double two_pi = 6.283185307179586476925286766559;

// theta = p * inv_freq formed in double, reduced to [-pi, pi] (std::remainder: exact). An
// integer position is converted to double first (exact below 2^53).
inline double rope_angle(double position, double inv_freq) {
  return std::remainder(position * inv_freq, two_pi);
}

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
