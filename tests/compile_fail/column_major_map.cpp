// Must not compile: Eigen's default TensorMap is column-major.
#include <posemb/rotary/rope.hpp>

void rotate(float* data) {
  Eigen::TensorMap<Eigen::Tensor<float, 4>> q(data, 1, 8, 4, 64);
  posemb::rotate_inplace(q, 0, posemb::default_rope_spec(64));
}
