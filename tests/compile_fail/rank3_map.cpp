// Must not compile: RoPE takes rank-4 activations (or matrices), not a rank-3 map.
#include <posemb/rotary/rope.hpp>

void rotate(float* data) {
  Eigen::TensorMap<Eigen::Tensor<float, 3, Eigen::RowMajor>> q(data, 8, 4, 64);
  posemb::rotate_inplace(q, 0, posemb::default_rope_spec(64));
}
