// Helpers of the backward tests (test_backward.cpp, test_fope_backward.cpp).
#pragma once

#include <random>

#include <posemb/rotary/fope.hpp>
#include <posemb/tensor.hpp>

namespace gradient_support {

using Dims = Eigen::array<Eigen::Index, 4>;

// A tensor of standard normal draws from std::mt19937(seed).
inline posemb::Tensor4<double> random_tensor(const Dims& dims, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  posemb::Tensor4<double> t(dims);
  for (Eigen::Index i = 0; i < t.size(); ++i) t.data()[i] = normal(gen);
  return t;
}

// sum_i a_i b_i over two tensors of one size.
inline double dot(const posemb::Tensor4<double>& a, const posemb::Tensor4<double>& b) {
  double sum = 0.0;
  for (Eigen::Index i = 0; i < a.size(); ++i) sum += a.data()[i] * b.data()[i];
  return sum;
}

// FoPE of head_dim 16, 4 query heads on 2 coefficient heads, train_length 64, seed 9.
inline posemb::FopeConfig small_fope_config() {
  posemb::FopeConfig config;
  config.head_dim = 16;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.train_length = 64;
  config.seed = 9;
  return config;
}

}  // namespace gradient_support
