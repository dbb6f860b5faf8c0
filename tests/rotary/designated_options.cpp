// Must compile warning-free as C++20 (-Wpedantic -Werror): RotateOptions is an aggregate, so a
// caller names only the fields it sets.
#include <posemb/rotary/rope.hpp>

void rotate_back(posemb::Tensor4<float>& k, const posemb::RopeSpec& spec) {
  posemb::rotate_inplace(k, 0, spec, {.rotation = posemb::Rotation::Inverse});
  posemb::rotate_inplace(k, 0, spec,
                         {.threads = posemb::Threads{2}, .rotation = posemb::Rotation::Forward});
  const posemb::Tensor4<float> bhsd = posemb::rotated(
      k, 0, spec,
      {.layouts = posemb::Layouts(posemb::TensorLayout::BSHD, posemb::TensorLayout::BHSD)});
  (void)bhsd;
}
