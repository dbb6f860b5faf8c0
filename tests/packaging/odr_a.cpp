// ODR test, translation unit A: includes every posemb header and uses the library. Linked with
// odr_b.cpp into one program, a non-inline definition in any header is a duplicate symbol.
#include <posemb/posemb.hpp>

#include "posemb_all_headers.hpp"
#include "odr_functions.hpp"

Eigen::VectorXf odr_rotate_a(const Eigen::VectorXf& x, std::int64_t position) {
  return posemb::rotated(x, position, posemb::default_rope_spec(static_cast<int>(x.size())));
}
