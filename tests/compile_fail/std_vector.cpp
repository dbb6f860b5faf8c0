// Must not compile: a std::vector has no shape.
#include <vector>

#include <posemb/rotary/rope.hpp>

void rotate(std::vector<float>& q) { posemb::rotate_inplace(q, 0, posemb::default_rope_spec(64)); }
