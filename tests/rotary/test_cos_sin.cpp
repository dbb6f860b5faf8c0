// The one cos/sin generator (detail/cos_sin.hpp): the public rope_cos_sin, a RopeTable's rows
// and the cos/sin the rotation kernel forms in the call must be the same bits, and the schemes
// built on the engine (KV-cache shift, sinusoidal tables) must take theirs from it too.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <posemb/kv/rerotate.hpp>
#include <posemb/rotary/rope.hpp>
#include <posemb/rotary/scaled.hpp>
#include <posemb/absolute/sinusoidal.hpp>

namespace {

using posemb::Pairing;

// Positions from 0 to a few million, negative ones, and both sides of 2^24.
const std::vector<std::int64_t> probe_positions = {
    0,      1,       2,  7,     100,      2047,     4096,     65535,
    131071, 1000003, -1, -4097, 16777215, 16777216, 16777217, 3000000};

// The cos/sin the kernel uses at `position`: rotating the unit vectors e_a (a the first feature
// of each pair) gives a' = cos * 1 - sin * 0 = cos and b' = sin * 1 + cos * 0 = sin exactly.
template <class T>
std::pair<std::vector<T>, std::vector<T>> kernel_cos_sin(const posemb::RopeSpec& spec,
                                                         std::int64_t position) {
  const int pairs = spec.pairs();
  posemb::Tensor4<T> x(1, 1, 1, spec.rotary_dim);
  x.setZero();
  for (int i = 0; i < pairs; ++i) {
    x(0, 0, 0, spec.pairing == Pairing::Interleaved ? 2 * i : i) = T(1);
  }
  posemb::rotate_inplace(x, position, spec);
  std::vector<T> cos(pairs), sin(pairs);
  for (int i = 0; i < pairs; ++i) {
    const int a = spec.pairing == Pairing::Interleaved ? 2 * i : i;
    const int b = spec.pairing == Pairing::Interleaved ? 2 * i + 1 : i + pairs;
    cos[i] = x(0, 0, 0, a);
    sin[i] = x(0, 0, 0, b);
  }
  return {cos, sin};
}

template <class T>
void check_one_generator(const posemb::RopeSpec& spec) {
  for (const std::int64_t position : probe_positions) {
    CAPTURE(position);
    const posemb::RopeTable<T> table(spec, position - 2, 5);  // the position is row 2
    const auto [cos, sin] = posemb::rope_cos_sin<T>(spec, position);
    const auto [kernel_cos, kernel_sin] = kernel_cos_sin<T>(spec, position);
    for (int i = 0; i < spec.pairs(); ++i) {
      CAPTURE(i);
      REQUIRE(cos[i] == kernel_cos[i]);
      REQUIRE(sin[i] == kernel_sin[i]);
      REQUIRE(cos[i] == table.cos_row(position)[i]);
      REQUIRE(sin[i] == table.sin_row(position)[i]);
    }
  }
}

}  // namespace

TEST_CASE("rope_cos_sin, RopeTable rows and the kernel's own cos/sin are the same bits") {
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    CAPTURE(posemb::to_string(pairing));
    const posemb::RopeSpec plain = posemb::default_rope_spec(128, 500000.0, pairing);
    posemb::YarnParams yarn;
    yarn.factor = 4.0;
    yarn.original_max_position_embeddings = 4096;
    const posemb::RopeSpec scaled = posemb::yarn_rope_spec(64, 10000.0, yarn, pairing);
    REQUIRE(scaled.attention_scale != 1.0);
    check_one_generator<float>(plain);
    check_one_generator<double>(plain);
    check_one_generator<float>(scaled);
    check_one_generator<double>(scaled);
  }
}

TEST_CASE("the generator agrees with libm to its stated accuracy, up to millions of positions") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(128, 10000.0);
  for (const std::int64_t position : probe_positions) {
    CAPTURE(position);
    const auto [cos_d, sin_d] = posemb::rope_cos_sin<double>(spec, position);
    const auto [cos_f, sin_f] = posemb::rope_cos_sin<float>(spec, position);
    for (int i = 0; i < spec.pairs(); ++i) {
      const double angle = posemb::rope_angle(position, spec.inv_freq[i]);
      CHECK(std::abs(cos_d[i] - std::cos(angle)) <= 4e-16);
      CHECK(std::abs(sin_d[i] - std::sin(angle)) <= 4e-16);
      // Within one float ulp of the correctly rounded value.
      CHECK(std::abs(double(cos_f[i]) - std::cos(angle)) <= 1.2e-7);
      CHECK(std::abs(double(sin_f[i]) - std::sin(angle)) <= 1.2e-7);
    }
  }
}

TEST_CASE("a KV-cache shift by delta is the rotation at position delta, bit for bit") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(64, 10000.0, Pairing::RotateHalf);
  posemb::Tensor4<float> x(1, 3, 2, 64);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = std::sin(0.37f * float(i) + 0.1f);
  for (const std::int64_t delta : {std::int64_t{1}, std::int64_t{-512}, std::int64_t{1000003}}) {
    CAPTURE(delta);
    posemb::Tensor4<float> shifted = x;
    posemb::shift_keys_inplace(shifted, delta, spec);
    posemb::PositionMatrix same(1, 3);
    same << delta, delta, delta;
    const posemb::Tensor4<float> rotated = posemb::rotated(x, same, spec);
    for (Eigen::Index i = 0; i < x.size(); ++i) REQUIRE(shifted.data()[i] == rotated.data()[i]);
  }
}

TEST_CASE("a sinusoidal row is the generator's sin and cos of p w_i, rounded once") {
  const int d = 64;
  const posemb::RopeSpec spec = posemb::default_rope_spec(d, 10000.0);
  for (const std::int64_t position : {std::int64_t{0}, std::int64_t{5}, std::int64_t{2047}}) {
    const Eigen::VectorXd row = posemb::sinusoidal_embedding(position, d);
    const auto [cos, sin] = posemb::rope_cos_sin<double>(spec, position);
    for (int i = 0; i < d / 2; ++i) {
      REQUIRE(row[2 * i] == sin[i]);
      REQUIRE(row[2 * i + 1] == cos[i]);
    }
  }
}
