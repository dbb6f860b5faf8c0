// Must not compile: the source of apply_rope is a RopeSpec or a RopeTable.
#include <posemb/rotary/fope.hpp>
#include <posemb/rotary/rope.hpp>

void rotate(posemb::Tensor4<float>& q, const posemb::Fope& fope) {
  posemb::apply_rope_inplace(q, 0, fope);
}
