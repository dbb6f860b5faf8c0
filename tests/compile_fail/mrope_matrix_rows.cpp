// Must not compile: M-RoPE rotates 4-D tensors (three position axes), not one head's matrix rows.
#include <posemb/rotary/mrope.hpp>

void rotate(Eigen::MatrixXf& rows, const posemb::MropeSpec& spec) {
  posemb::rotate_inplace(rows, 0, spec);
}
