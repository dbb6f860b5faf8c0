// The functions odr_a.cpp and odr_b.cpp define for each other.
#pragma once

#include <Eigen/Core>
#include <cstdint>

// x: [head_dim]; RoPE (rotate-half, base 10000) at `position`.
Eigen::VectorXf odr_rotate_a(const Eigen::VectorXf& x, std::int64_t position);
Eigen::VectorXf odr_rotate_b(const Eigen::VectorXf& x, std::int64_t position);
