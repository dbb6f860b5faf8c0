// Must not compile: the source of apply_rope is a RopeSpec or a RopeTable.
#include <posemb/fope.hpp>
#include <posemb/rope.hpp>

void rotate(posemb::Tensor4<float>& q, const posemb::Fope& fope) {
  posemb::apply_rope_inplace(q, 0, fope);
}
