// Must not compile: the source of apply_mrope is an MropeSpec or an MropeTable, not a RopeSpec.
#include <posemb/rotary/mrope.hpp>

void rotate(posemb::Tensor4<float>& q, const posemb::PositionMatrix& thw,
            const posemb::RopeSpec& spec) {
  posemb::apply_mrope_inplace(q, thw, spec);
}
