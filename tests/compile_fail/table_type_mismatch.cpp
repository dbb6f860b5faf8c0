// Must not compile: a RopeTable<double> holds double cos/sin; float tensors need RopeTable<float>.
#include <posemb/rotary/rope.hpp>

void rotate(posemb::Tensor4<float>& q) {
  const posemb::RopeTable<double> table(posemb::default_rope_spec(64), 0, 16);
  posemb::rotate_inplace(q, 0, table);
}
