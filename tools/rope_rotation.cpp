#include "rope_rotation.hpp"

#include <cmath>
#include <cstring>

#include "posemb/rotary/rotate.hpp"

namespace posemb::tool {
namespace {

// x's values as storage type T; throws unless each is exact in T.
template <class T>
Tensor4<T> to_storage(const std::vector<float>& x, const std::vector<std::int64_t>& dims,
                      const std::string& dtype, const std::string& input) {
  Tensor4<T> out(dims[0], dims[1], dims[2], dims[3]);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const T value = static_cast<T>(x[i]);
    const float back = static_cast<float>(value);
    if (std::memcmp(&back, &x[i], sizeof back) != 0 && !(std::isnan(back) && std::isnan(x[i]))) {
      throw Error(input + ": value " + std::to_string(x[i]) + " at index " + std::to_string(i) +
                  ": expected values exactly representable in --dtype " + dtype);
    }
    out.data()[i] = value;
  }
  return out;
}

// A RopeSpec or HfFloat32Rope of the scheme placed in the rotation's plan: the pairing
// override, the whole head and the rotated slice's offset.
template <class Rope>
Rope in_plan(const RopeRotation& r, Rope rope) {
  if (r.pairing) rope.pairing = *r.pairing;
  if (r.plan_head_dim > 0) {
    rope.head_dim = r.plan_head_dim;
    rope.rotary_offset = r.rotary_offset;
    rope.validate();
  }
  return rope;
}

template <class T>
std::vector<float> rotate_as(const RopeRotation& r, const std::vector<float>& x,
                             const std::vector<std::int64_t>& dims, const Positions& positions,
                             const Layouts& layouts, const std::string& input) {
  const Tensor4<T> in = to_storage<T>(x, dims, r.dtype, input);
  const RotateOptions options = RotateOptions().with_layouts(layouts);
  Tensor4<T> out;
  if (r.angles == AngleMode::HfFloat32) {
    out = rotated(in, positions, in_plan(r, hf_float32_rope(r.scheme, r.seq_len)), options);
  } else {
    out = rotated(in, positions, in_plan(r, r.scheme.spec(r.seq_len)), options);
  }
  std::vector<float> y(static_cast<std::size_t>(out.size()));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(out.data()[i]);
  return y;
}

}  // namespace

std::vector<double> RopeRotation::inv_freq() const {
  if (angles == AngleMode::HfFloat32) {
    const Eigen::VectorXf inv = hf_float32_rope(scheme, seq_len).inv_freq;
    return std::vector<double>(inv.data(), inv.data() + inv.size());
  }
  const Eigen::VectorXd inv = scheme.spec(seq_len).inv_freq;
  return std::vector<double>(inv.data(), inv.data() + inv.size());
}

double RopeRotation::attention_scale() const {
  return angles == AngleMode::HfFloat32 ? hf_float32_rope(scheme, seq_len).attention_scale
                                        : scheme.spec(seq_len).attention_scale;
}

std::vector<float> RopeRotation::rotate(const std::vector<float>& x,
                                        const std::vector<std::int64_t>& dims,
                                        const Positions& positions, const Layouts& layouts,
                                        const std::string& input) const {
  if (dtype == "bfloat16")
    return rotate_as<Eigen::bfloat16>(*this, x, dims, positions, layouts, input);
  if (dtype == "float16") return rotate_as<Eigen::half>(*this, x, dims, positions, layouts, input);
  return rotate_as<float>(*this, x, dims, positions, layouts, input);
}

}  // namespace posemb::tool
