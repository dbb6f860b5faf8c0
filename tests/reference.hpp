// The reference rotations the tests hold the library to, written out from the RoFormer paper
// (Su et al. 2021, "RoFormer", eq. 13-15) and sharing no code with the library's engine, and the
// distances they are compared in. One place for every test program.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <posemb/rotary/rope.hpp>

namespace test_reference {

// RoPE in double, pair by pair: theta_i = p * base^(-2i / rotary_dim) (eq. 15), pair (a, b) of
// pair i turned to (a cos theta_i - b sin theta_i, a sin theta_i + b cos theta_i) (eq. 13), with
// a = 2i, b = 2i + 1 (Interleaved) or a = i, b = i + rotary_dim / 2 (RotateHalf); features past
// rotary_dim unchanged. x: one head [head_dim].
inline Eigen::VectorXd reference_rope(const Eigen::VectorXd& x, std::int64_t p, int rotary_dim,
                                      double base, posemb::Pairing pairing) {
  Eigen::VectorXd y = x;
  for (int i = 0; i < rotary_dim / 2; ++i) {
    const double theta = static_cast<double>(p) * std::pow(base, -2.0 * i / rotary_dim);
    const int a = pairing == posemb::Pairing::Interleaved ? 2 * i : i;
    const int b = pairing == posemb::Pairing::Interleaved ? 2 * i + 1 : i + rotary_dim / 2;
    y[a] = x[a] * std::cos(theta) - x[b] * std::sin(theta);
    y[b] = x[a] * std::sin(theta) + x[b] * std::cos(theta);
  }
  return y;
}

// The same rotation as rope.hpp rounds it: theta = remainder(p * inv_freq_i, 2 pi) in double,
// c = s * cos theta and s * sin theta (libm) rounded to the arithmetic type C, then
// a' = a c - b s, b' = a s + b c in C. x: one head [head_dim], rotated in place.
template <class T>
void reference_rotate_head(T* x, std::int64_t position, const posemb::RopeSpec& spec) {
  using C = posemb::compute_t<T>;
  constexpr double two_pi = 6.283185307179586476925286766559;
  const bool interleaved = spec.pairing == posemb::Pairing::Interleaved;
  const int half = spec.rotary_dim / 2;
  for (int i = 0; i < half; ++i) {
    const int ia = interleaved ? 2 * i : i;
    const int ib = interleaved ? 2 * i + 1 : i + half;
    const double angle = std::remainder(static_cast<double>(position) * spec.inv_freq[i], two_pi);
    const C c = static_cast<C>(spec.attention_scale * std::cos(angle));
    const C s = static_cast<C>(spec.attention_scale * std::sin(angle));
    const C a = static_cast<C>(x[ia]), b = static_cast<C>(x[ib]);
    x[ia] = static_cast<T>(a * c - b * s);
    x[ib] = static_cast<T>(a * s + b * c);
  }
}

// Relative tolerance of one rotated value against reference_rotate_head, in units of
// (|a| + |b|) of its pair: the fast cos/sin may differ from the reference's by 1 ulp of C and the
// products may be fused; half-precision storage may then round to the neighbouring value of T.
template <class T>
double tolerance_of_pair() {
  const double eps_c = std::numeric_limits<posemb::compute_t<T>>::epsilon();
  if constexpr (std::is_same_v<T, Eigen::half>) return 8 * eps_c + 1.0 / 1024;
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) return 8 * eps_c + 1.0 / 128;
  return 8 * eps_c;
}

// Distance in units in the last place between two finite floats (0 when equal).
inline std::int64_t ulp_distance(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  const std::int64_t la = ia < 0 ? std::int64_t(INT32_MIN) - ia : ia;
  const std::int64_t lb = ib < 0 ? std::int64_t(INT32_MIN) - ib : ib;
  return la > lb ? la - lb : lb - la;
}

}  // namespace test_reference
