// hf-float32 angles (rotary/hf_float32.hpp) and the tolerance model (rotary/tolerance.hpp,
// model/hf_float32_scheme.hpp). Compiled with FMA (x86-64: -mavx2 -mfma) and -ffp-contract=fast
// (tests/CMakeLists.txt): the float32 steps must not be fused into FMA. The bit-for-bit
// comparison with PyTorch is tests/hf32/test_hf_float32_torch.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "posemb/random.hpp"
#include "posemb/model/hf_float32_scheme.hpp"
#include "posemb/rotary/backward.hpp"
#include "posemb/rotary/rotate.hpp"

using namespace posemb;

namespace {

std::uint32_t bits(float value) {
  std::uint32_t out;
  std::memcpy(&out, &value, sizeof out);
  return out;
}

RopeScheme scheme_of(const std::string& type, RopeParams params, double theta,
                     int rotary_dim = 128) {
  RopeScheme scheme;
  scheme.rope_type = type;
  scheme.params = std::move(params);
  scheme.theta = theta;
  scheme.head_dim = 128;
  scheme.rotary_dim = rotary_dim;
  return scheme;
}

YarnParams yarn_params() {
  YarnParams yarn;
  yarn.factor = 4.0;
  yarn.original_max_position_embeddings = 32768;
  return yarn;
}

LongRopeParams longrope_params() {
  LongRopeParams p;
  p.original_max_position_embeddings = 4096;
  p.factor = 32.0;
  for (int i = 0; i < 64; ++i) {
    p.short_factor.push_back(1.0 + 0.013 * i);
    p.long_factor.push_back(1.0 + 0.61 * i);
  }
  return p;
}

// Every rope type with HF float32 steps, and a rotary width whose exponents are inexact.
std::vector<RopeScheme> all_schemes() {
  return {scheme_of("default", DefaultRopeParams{}, 500000.0),
          scheme_of("default", DefaultRopeParams{}, 25000.0, 24),
          scheme_of("linear", LinearRopeParams{4.0}, 10000.0),
          scheme_of("dynamic", DynamicNtkParams{2.0, 4096}, 10000.0),
          scheme_of("yarn", yarn_params(), 1000000.0),
          scheme_of("llama3", Llama3Params{}, 500000.0),
          scheme_of("longrope", longrope_params(), 10000.0)};
}

// The position lists docs/test-vectors.md recommends.
std::vector<std::vector<std::int64_t>> recommended_lists() {
  std::vector<std::int64_t> short_list, long_list;
  for (std::int64_t p = 0; p < 64; ++p) short_list.push_back(p);
  long_list = short_list;
  for (std::int64_t p : {1000, 4095, 16383, 32767}) short_list.push_back(p);
  for (std::int64_t p : {1000, 4095, 32767, 131071, 1048575}) long_list.push_back(p);
  return {short_list, long_list};
}

// Seeded q [1, seq, 2, 128] in storage type T.
template <class T>
Tensor4<T> seeded_q(Eigen::Index seq) {
  SeededNormal normal(11);
  Tensor4<T> q(1, seq, 2, 128);
  for (Eigen::Index i = 0; i < q.size(); ++i) q.data()[i] = static_cast<T>(normal());
  return q;
}

// The largest |delta| / bound over every pair of every token: <= 1 means within the tolerance.
template <class T>
double worst_ratio(const Tensor4<T>& x, const Tensor4<T>& got, const Tensor4<T>& exact,
                   const std::vector<std::int64_t>& positions, const RotationTolerance& tol,
                   int rotary_dim, Pairing pairing) {
  double worst = 0.0;
  const int half = rotary_dim / 2;
  for (Eigen::Index s = 0; s < x.dimension(1); ++s) {
    for (Eigen::Index h = 0; h < x.dimension(2); ++h) {
      for (int i = 0; i < half; ++i) {
        const int a = pairing == Pairing::Interleaved ? 2 * i : i;
        const int b = pairing == Pairing::Interleaved ? 2 * i + 1 : i + half;
        const double norm = std::hypot(double(x(0, s, h, a)), double(x(0, s, h, b)));
        const double bound = tol.bound(double(positions[std::size_t(s)]), norm);
        for (int f : {a, b}) {
          worst = std::max(worst,
                           std::abs(double(got(0, s, h, f)) - double(exact(0, s, h, f))) / bound);
        }
      }
    }
  }
  return worst;
}

template <class T>
struct Comparison {
  std::vector<std::int64_t> positions;
  Tensor4<T> q;
  Positions view() const { return Positions(positions_vector); }
  PositionVector positions_vector;

  explicit Comparison(std::vector<std::int64_t> p)
      : positions(std::move(p)),
        q(seeded_q<T>(Eigen::Index(positions.size()))),
        positions_vector(
            Eigen::Map<const PositionVector>(positions.data(), Eigen::Index(positions.size()))) {}

  // The worst |delta| / bound of `rope` (a float32-angle kernel) around the exact output.
  double ratio(const RopeScheme& scheme, const HfFloat32Rope& rope,
               const std::string& dtype) const {
    const std::int64_t seq_len = positions.back() + 1;
    const Tensor4<T> exact = rotated(q, view(), scheme.spec(seq_len));
    const Tensor4<T> got = rotated(q, view(), rope);
    return worst_ratio(q, got, exact, positions, rotation_tolerance(scheme, seq_len, dtype),
                       scheme.rotary_dim, scheme.pairing);
  }
};

}  // namespace

TEST_CASE("hf-float32 inverse frequencies: PyTorch's values where FMA contraction would differ") {
  // From tests/hf32/test_hf_float32_torch.py's transcription (torch 1.13, CPU): Llama 3.1 pair 29,
  // whose smoothing sum a fused multiply-add rounds one ulp lower.
  const HfFloat32Rope llama3 = hf_float32_llama3(128, 500000.0, Llama3Params{});
  CHECK(bits(llama3.inv_freq[29]) == 990772486u);
  CHECK(llama3.inv_freq[0] == 1.0f);
  // Default frequencies with 2i/d exact (d = 128): each the float32 reciprocal of the correctly
  // rounded float32 power.
  const HfFloat32Rope plain = hf_float32_default(128, 500000.0);
  for (int i = 0; i < 64; ++i) {
    const float power = static_cast<float>(std::pow(500000.0, 2.0 * i / 128.0));
    CHECK(plain.inv_freq[i] == 1.0f / power);
  }
}

TEST_CASE("hf-float32: linear is the default divided, dynamic is the default up to L") {
  const HfFloat32Rope plain = hf_float32_default(128, 10000.0);
  const HfFloat32Rope linear = hf_float32_linear(128, 10000.0, 4.0);
  const HfFloat32Rope dynamic = hf_float32_dynamic_ntk(128, 10000.0, 2.0, 4096, 4096);
  for (int i = 0; i < 64; ++i) {
    CHECK(linear.inv_freq[i] == plain.inv_freq[i] / 4.0f);
    CHECK(dynamic.inv_freq[i] == plain.inv_freq[i]);
  }
  CHECK(hf_float32_dynamic_ntk(128, 10000.0, 2.0, 4096, 8192).inv_freq[63] < plain.inv_freq[63]);
}

TEST_CASE("hf-float32 rotation and backward: bfloat16 products and sums rounded to bfloat16") {
  const HfFloat32Rope rope = hf_float32_default(RotaryDims{4, 2}, 10000.0);
  Tensor4<Eigen::bfloat16> x(1, 1, 1, 4);
  x.setValues({{{{Eigen::bfloat16(1.0f), Eigen::bfloat16(3.0f), Eigen::bfloat16(7.0f),
                  Eigen::bfloat16(9.0f)}}}});
  const auto y = rotated(x, Positions(std::int64_t{5}), rope);
  const float c = float(Eigen::bfloat16(float(std::cos(double(5.0f)))));
  const float s = float(Eigen::bfloat16(float(std::sin(double(5.0f)))));
  const auto bf = [](float v) { return float(Eigen::bfloat16(v)); };
  CHECK(float(y(0, 0, 0, 0)) == bf(bf(1.0f * c) + bf(-3.0f * s)));
  CHECK(float(y(0, 0, 0, 1)) == bf(bf(3.0f * c) + bf(1.0f * s)));
  CHECK(float(y(0, 0, 0, 2)) == 7.0f);  // passed through
  CHECK(float(y(0, 0, 0, 3)) == 9.0f);
  CHECK_THROWS_WITH(rotated(x, Positions(std::int64_t{5}), rope, RotateOptions().inverse()),
                    Catch::Contains("options.rotation"));
  // The backward, x as the upstream gradient: autograd's sums through x * cos and rotate_half(x)
  // * sin, a's gradient from x * cos and rotate_half's second half (+x1), b's from -x2.
  const auto back = rotated_backward(x, Positions(std::int64_t{5}), rope);
  CHECK(float(back(0, 0, 0, 0)) == bf(bf(1.0f * c) + bf(3.0f * s)));
  CHECK(float(back(0, 0, 0, 1)) == bf(bf(3.0f * c) + bf(-(1.0f * s))));
  CHECK(float(back(0, 0, 0, 2)) == 7.0f);
  CHECK(float(back(0, 0, 0, 3)) == 9.0f);
}

TEST_CASE("hf-float32 backward: the forward at negated positions, near the exact backward") {
  std::vector<std::int64_t> positions;
  for (std::int64_t p = 0; p < 32; ++p) positions.push_back(p);
  for (std::int64_t p : {1000, 4095, 32767, 131071}) positions.push_back(p);
  std::vector<std::int64_t> negated(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) negated[i] = -positions[i];
  const Comparison<float> f32(positions);
  const Comparison<Eigen::bfloat16> bf16(positions);
  const PositionVector minus_vector =
      Eigen::Map<const PositionVector>(negated.data(), Eigen::Index(negated.size()));
  const Positions minus(minus_vector);
  for (const RopeScheme& scheme : all_schemes()) {
    const std::int64_t seq_len = positions.back() + 1;
    const HfFloat32Rope rope = hf_float32_rope(scheme, seq_len);
    INFO(scheme.rope_type << " rotary_dim " << scheme.rotary_dim);
    // float32(-p) * w = -(float32(p) * w), cos even, sin odd: R(p)^T = R(-p) bit for bit.
    const Tensor4<float> back = rotated_backward(f32.q, f32.view(), rope);
    const Tensor4<float> at_minus = rotated(f32.q, minus, rope);
    CHECK(std::memcmp(back.data(), at_minus.data(), sizeof(float) * std::size_t(back.size())) == 0);
    const Tensor4<Eigen::bfloat16> back16 = rotated_backward(bf16.q, bf16.view(), rope);
    const Tensor4<Eigen::bfloat16> at_minus16 = rotated(bf16.q, minus, rope);
    CHECK(std::memcmp(back16.data(), at_minus16.data(), 2 * std::size_t(back16.size())) == 0);
    // Within the float32-angle tolerance of the exact backward.
    const Tensor4<float> exact = rotated_backward(f32.q, f32.view(), scheme.spec(seq_len));
    CHECK(worst_ratio(f32.q, back, exact, positions, rotation_tolerance(scheme, seq_len, "float32"),
                      scheme.rotary_dim, scheme.pairing) <= 1.0);
  }
}

TEST_CASE("hf-float32 over a whole head: the slice at rotary_offset rotates, the rest passes") {
  // MLA's layout in small: head [nope 4 | rope 2], the rope slice last (rotary_offset 4).
  HfFloat32Rope whole = hf_float32_default(RotaryDims{2, 2}, 10000.0);
  const HfFloat32Rope slice = whole;
  whole.head_dim = 6;
  whole.rotary_offset = 4;
  whole.validate();
  Tensor4<float> x(1, 3, 1, 6), part(1, 3, 1, 2);
  SeededNormal normal(7);
  for (Eigen::Index s = 0; s < 3; ++s) {
    for (Eigen::Index d = 0; d < 6; ++d) x(0, s, 0, d) = static_cast<float>(normal());
    part(0, s, 0, 0) = x(0, s, 0, 4);
    part(0, s, 0, 1) = x(0, s, 0, 5);
  }
  PositionVector ids(3);
  ids << 0, 17, 100003;
  const auto y = rotated(x, Positions(ids), whole);
  const auto y_part = rotated(part, Positions(ids), slice);
  for (Eigen::Index s = 0; s < 3; ++s) {
    for (Eigen::Index d = 0; d < 4; ++d) CHECK(bits(y(0, s, 0, d)) == bits(x(0, s, 0, d)));
    CHECK(bits(y(0, s, 0, 4)) == bits(y_part(0, s, 0, 0)));
    CHECK(bits(y(0, s, 0, 5)) == bits(y_part(0, s, 0, 1)));
    // a rotation: the pair's norm is kept to float32 rounding
    const double before = std::hypot(double{x(0, s, 0, 4)}, double{x(0, s, 0, 5)});
    CHECK(std::hypot(double{y(0, s, 0, 4)}, double{y(0, s, 0, 5)}) == Approx(before).epsilon(1e-6));
  }
  CHECK(bits(y(0, 1, 0, 4)) != bits(x(0, 1, 0, 4)));  // position 17 turns the pair
  HfFloat32Rope past = whole;
  past.rotary_offset = 5;
  CHECK_THROWS_WITH(past.validate(), Catch::Contains("rotary_offset = 5") &&
                                         Catch::Contains("head_dim - rotary_dim = 6 - 2"));
}

TEST_CASE("tolerance: hf-float32 stays inside the bound around exact angles up to 2^20") {
  std::vector<std::int64_t> positions;
  for (std::int64_t p = 0; p < 32; ++p) positions.push_back(p);
  for (int k = 5; k <= 20; ++k) positions.push_back((std::int64_t{1} << k) - 1);
  for (std::int64_t p = 1048560; p <= 1048575; ++p) positions.push_back(p);
  const Comparison<float> f32(positions);
  const Comparison<Eigen::bfloat16> bf16(positions);
  for (const RopeScheme& scheme : all_schemes()) {
    const HfFloat32Rope rope = hf_float32_rope(scheme, positions.back() + 1);
    INFO(scheme.rope_type << " rotary_dim " << scheme.rotary_dim);
    CHECK(f32.ratio(scheme, rope, "float32") <= 1.0);
    CHECK(bf16.ratio(scheme, rope, "bfloat16") <= 1.0);
  }
}

TEST_CASE("tolerance: wrong kernels fall outside at every recommended position list") {
  for (const std::vector<std::int64_t>& positions : recommended_lists()) {
    const Comparison<float> f32(positions);
    const Comparison<Eigen::bfloat16> bf16(positions);
    const std::int64_t seq_len = positions.back() + 1;
    for (const RopeScheme& scheme : all_schemes()) {
      INFO(scheme.rope_type << " rotary_dim " << scheme.rotary_dim << ", up to "
                            << positions.back());
      RopeScheme off = scheme;
      off.theta *= 1.01;  // base off by 1%
      CHECK(f32.ratio(scheme, hf_float32_rope(off, seq_len), "float32") > 1.0);
      CHECK(bf16.ratio(scheme, hf_float32_rope(off, seq_len), "bfloat16") > 1.0);
      HfFloat32Rope other_pairing = hf_float32_rope(scheme, seq_len);
      other_pairing.pairing = Pairing::Interleaved;
      CHECK(f32.ratio(scheme, other_pairing, "float32") > 1.0);
      CHECK(bf16.ratio(scheme, other_pairing, "bfloat16") > 1.0);
    }
    const RopeScheme yarn = scheme_of("yarn", yarn_params(), 1000000.0);
    HfFloat32Rope no_factor = hf_float32_rope(yarn, seq_len);
    no_factor.attention_scale = 1.0;  // YaRN's attention factor dropped
    CHECK(f32.ratio(yarn, no_factor, "float32") > 1.0);
    CHECK(bf16.ratio(yarn, no_factor, "bfloat16") > 1.0);
  }
}

TEST_CASE("hf-float32 errors name the parameter") {
  CHECK_THROWS_WITH(parse_angle_mode("float32"), Catch::Contains("angles"));
  CHECK_THROWS_WITH(unit_roundoff("int8"), Catch::Contains("dtype"));
  RopeScheme proportional = scheme_of("proportional", ProportionalParams{}, 10000.0);
  CHECK_THROWS_WITH(hf_float32_rope(proportional), Catch::Contains("rope_type"));
  const HfFloat32Rope rope = hf_float32_default(128, 10000.0);
  Tensor4<float> wide(1, 1, 1, 64);
  wide.setZero();
  CHECK_THROWS_WITH(rotated(wide, Positions(std::int64_t{0}), rope), Catch::Contains("head_dim"));
}
