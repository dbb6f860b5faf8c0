// rotary/backward.hpp: the VJP of every rotary source is the transpose rotation of the engine.
// Checked against (1) the adjoint identity <w, J v> = <J^T w, v> (J linear, so this is the
// finite-difference gradient exactly, for every element at once), (2) central finite
// differences of L(x) = <w, y(x)>, (3) a scalar reference written from the formulas with libm.
#include <catch2/catch.hpp>

#include <cmath>

#include <posemb/rotary/backward.hpp>
#include <posemb/rotary/fope.hpp>
#include <posemb/rotary/mrope.hpp>
#include <posemb/rotary/rope.hpp>
#include <posemb/rotary/scaled.hpp>
#include <posemb/rotary/vision.hpp>
#include <posemb/rotary/xpos.hpp>

#include "rotary/gradient_support.hpp"
#include "support.hpp"

namespace {

using posemb::Pairing;

posemb::RopeSpec yarn_spec(int head_dim, Pairing pairing) {
  posemb::YarnParams params;
  params.factor = 4.0;
  params.original_max_position_embeddings = 64;
  return posemb::yarn_rope_spec(head_dim, 10000.0, params, pairing);
}

using gradient_support::Dims;
using gradient_support::dot;
using gradient_support::random_tensor;
using posemb::RotateOptions;
using posemb::Tensor4;
using posemb::TensorLayout;

// <w, J v> = <J^T w, v> for random v, w, and J^T w equal to the gradient of <w, y(x)> by
// central differences on a few elements; x has `dims` in options.layouts.in.
template <class Source, class P>
void check_vjp(const Source& source, const P& positions, const Dims& dims,
               const RotateOptions& options = {}) {
  const Tensor4<double> v = random_tensor(dims, 1);
  const Tensor4<double> jv = posemb::rotated(v, positions, source, options);
  const Tensor4<double> w = random_tensor(jv.dimensions(), 2);
  const Tensor4<double> jtw = posemb::rotated_backward(w, positions, source, options);
  REQUIRE(jtw.dimensions() == v.dimensions());
  CHECK(dot(w, jv) == Approx(dot(jtw, v)).epsilon(1e-12));
  const double h = 1e-3;
  for (Eigen::Index i = 0; i < v.size(); i += v.size() / 7 + 1) {
    Tensor4<double> plus = v, minus = v;
    plus.data()[i] += h;
    minus.data()[i] -= h;
    const double numeric = (dot(w, posemb::rotated(plus, positions, source, options)) -
                            dot(w, posemb::rotated(minus, positions, source, options))) /
                           (2 * h);
    CHECK(jtw.data()[i] == Approx(numeric).epsilon(1e-9).margin(1e-10));
  }
}

// grad_x of one head by the formulas: pair (a, b) turned forward by m (cos t, sin t) has
// grad_a = m (cos t g_a + sin t g_b), grad_b = m (-sin t g_a + cos t g_b); m = scale_of(i).
template <class Scale>
void reference_backward_head(const double* g, double* out, double position,
                             const posemb::RopeSpec& spec, Scale&& scale_of) {
  const bool interleaved = spec.pairing == Pairing::Interleaved;
  const int half = spec.rotary_dim / 2;
  for (int d = 0; d < spec.head_dim; ++d) out[d] = g[d];
  for (int i = 0; i < half; ++i) {
    const int ia = spec.rotary_offset + (interleaved ? 2 * i : i);
    const int ib = spec.rotary_offset + (interleaved ? 2 * i + 1 : i + half);
    const double t = position * spec.inv_freq[i], m = scale_of(i);
    out[ia] = m * (std::cos(t) * g[ia] + std::sin(t) * g[ib]);
    out[ib] = m * (-std::sin(t) * g[ia] + std::cos(t) * g[ib]);
  }
}

}  // namespace

TEST_CASE("RoPE's backward is the adjoint in both pairings, partial, offset and scaled",
          "[backward]") {
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    CAPTURE(static_cast<int>(pairing));
    const posemb::RopeSpec full = posemb::default_rope_spec(16, 10000.0, pairing);
    check_vjp(full, 3, {2, 5, 3, 16});
    posemb::RopeSpec partial = posemb::default_rope_spec(posemb::RotaryDims{20, 8}, 500.0, pairing);
    check_vjp(partial, 0, {1, 6, 2, 20});
    partial.rotary_offset = 12;  // the trailing 8 of 20 (DeepSeek's MLA)
    check_vjp(partial, 7, {1, 6, 2, 20});
    const posemb::RopeSpec yarn = yarn_spec(16, pairing);
    REQUIRE(yarn.attention_scale != 1.0);
    check_vjp(yarn, 100, {1, 4, 2, 16});
  }
}

TEST_CASE("the backward takes per-token, fractional positions, tables and layout changes",
          "[backward]") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(8, 10000.0);
  posemb::PositionMatrix per_token(2, 3);
  per_token << 5, 0, 9, 1, 2, 40;
  check_vjp(spec, posemb::Positions(per_token), {2, 3, 2, 8});
  posemb::FractionalPositionMatrix fractional(1, 3);
  fractional << 0.5, 2.25, 7.75;
  check_vjp(spec, posemb::Positions(fractional), {1, 3, 2, 8});
  const posemb::RopeTable<double> table(spec, 0, 64);
  check_vjp(table, 10, {1, 4, 3, 8});
  check_vjp(spec, 2, {1, 4, 3, 8},
            RotateOptions().with_layouts(posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD)));
  check_vjp(spec, 2, {1, 3, 4, 8}, RotateOptions().with_layouts(TensorLayout::BHSD));
}

TEST_CASE("xPos's backward carries its magnitude, for queries and keys", "[backward]") {
  posemb::XposSpec spec{posemb::default_rope_spec(16, 10000.0), {}};
  spec.params.scale_base = 64.0;
  for (const auto role : {posemb::XposRole::Query, posemb::XposRole::Key}) {
    check_vjp(posemb::Xpos{spec, role}, 3, {1, 5, 2, 16});
  }
}

TEST_CASE("FoPE, M-RoPE and vision RoPE backward are their adjoints", "[backward]") {
  const posemb::Fope fope = posemb::make_fope(gradient_support::small_fope_config());
  check_vjp(fope, 5, {2, 3, 4, 16});  // queries: two heads per coefficient head
  check_vjp(fope, 5, {1, 3, 2, 16});  // keys
  check_vjp(posemb::FopeTable<double>(fope, 0, 16), 2, {1, 3, 4, 16});

  const posemb::MropeSpec mrope = posemb::make_mrope_spec(posemb::default_rope_spec(16, 1e4),
                                                          {4, 2, 2}, posemb::MropeLayout::Chunked);
  posemb::PositionMatrix thw(3, 4);
  thw << 0, 1, 2, 3, 0, 0, 1, 1, 0, 1, 0, 1;
  check_vjp(mrope, posemb::MropePositions(thw), {1, 4, 2, 16});

  const posemb::VisionRope vision = posemb::qwen2_vl_vision_rope(16, 2);
  const posemb::PositionMatrix patches = posemb::vision_patch_positions(vision, 1, 2, 4);
  check_vjp(vision, patches, {1, 8, 2, 16});
}

TEST_CASE("the backward equals the scalar reference: RoPE scaled, xPos query and key",
          "[backward]") {
  const posemb::RopeSpec spec = yarn_spec(12, Pairing::Interleaved);
  const Tensor4<double> g = random_tensor({1, 5, 2, 12}, 4);
  const Tensor4<double> got = posemb::rotated_backward(g, 30, spec);
  for (int s = 0; s < 5; ++s) {
    for (int h = 0; h < 2; ++h) {
      double expected[12];
      reference_backward_head(&g(0, s, h, 0), expected, 30 + s, spec,
                              [&](int) { return spec.attention_scale; });
      for (int d = 0; d < 12; ++d) CHECK(got(0, s, h, d) == Approx(expected[d]).epsilon(1e-13));
    }
  }
  posemb::XposSpec xpos{posemb::default_rope_spec(8, 10000.0), {}};
  xpos.params.scale_base = 32.0;
  xpos.params.centre = 2;
  for (const double sign : {1.0, -1.0}) {
    const auto role = sign > 0 ? posemb::XposRole::Query : posemb::XposRole::Key;
    const Tensor4<double> gx = random_tensor({1, 4, 1, 8}, 5);
    const Tensor4<double> xgot = posemb::rotated_backward(gx, 10, posemb::Xpos{xpos, role});
    for (int s = 0; s < 4; ++s) {
      double expected[8];
      // zeta_i = (2i/d + gamma) / (1 + gamma), scale zeta_i^(+-(p - c)/scale_base)
      reference_backward_head(&gx(0, s, 0, 0), expected, 10 + s, xpos.rope, [&](int i) {
        const double zeta = (2.0 * i / 8 + 0.4) / 1.4;
        return std::pow(zeta, sign * (10 + s - 2) / 32.0);
      });
      for (int d = 0; d < 8; ++d) CHECK(xgot(0, s, 0, d) == Approx(expected[d]).epsilon(1e-12));
    }
  }
}

TEST_CASE("for a pure rotation the transpose is the inverse; with a scale it is not",
          "[backward]") {
  const Tensor4<double> g = random_tensor({1, 6, 2, 16}, 6);
  const posemb::RopeSpec plain = posemb::default_rope_spec(16, 10000.0);
  const Tensor4<double> t = posemb::rotated_backward(g, 11, plain);
  const Tensor4<double> inv = posemb::rotated(g, 11, plain, RotateOptions().inverse());
  for (Eigen::Index i = 0; i < g.size(); ++i)
    CHECK(t.data()[i] == Approx(inv.data()[i]).epsilon(1e-14));
  posemb::RopeSpec scaled = plain;
  scaled.attention_scale = 2.0;  // transpose = 2 R^T, inverse = R^T / 2
  const Tensor4<double> ts = posemb::rotated_backward(g, 11, scaled);
  for (Eigen::Index i = 0; i < g.size(); ++i)
    CHECK(ts.data()[i] == Approx(2.0 * t.data()[i]).epsilon(1e-14));
}

TEST_CASE("float storage: the transpose rotation in place matches the double one", "[backward]") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(32, 10000.0);
  const Tensor4<double> g = random_tensor({1, 40, 4, 32}, 7);
  Tensor4<float> gf = g.cast<float>();
  posemb::rotate_backward_inplace(gf, 1000, spec);
  const Tensor4<double> expected = posemb::rotated_backward(g, 1000, spec);
  for (Eigen::Index i = 0; i < g.size(); ++i) {
    CHECK(gf.data()[i] == Approx(expected.data()[i]).margin(2e-6));
  }
}

TEST_CASE("the backward refuses what has none", "[backward]") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(8, 10000.0);
  Tensor4<double> g = random_tensor({1, 2, 1, 8}, 8);
  test_support::throws_with(
      [&] { posemb::rotate_backward_inplace(g, 0, spec, RotateOptions().inverse()); },
      "options.rotation");
  Tensor4<double> cache(1, 1, 8, 8);
  test_support::throws_with(
      [&] {
        posemb::rotate_backward(cache, g, 0, spec,
                                RotateOptions().with_layouts(
                                    posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 4)));
      },
      "options.layouts.out_seq_offset");
}
