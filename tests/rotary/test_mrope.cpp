// Tests for posemb/rotary/mrope.hpp: the multimodal conformance cases (tests/data/multimodal, see
// its README) through the C++ API, and the properties of M-RoPE: equal axes are 1-D RoPE bit for
// bit, the axis that drives each pair, a shift of all axes is a 1-D shift, the inverse, per-row
// positions, long and fractional positions, tables, threads, half storage and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "posemb/rotary/mrope.hpp"
#include "posemb/kv/rerotate.hpp"
#include "posemb/io/npy.hpp"
#include "posemb/rotary/rope.hpp"
#include "support.hpp"

using posemb::FractionalMropePositionTensor;
using posemb::FractionalPositionMatrix;
using posemb::MropeLayout;
using posemb::MropePositions;
using posemb::MropePositionTensor;
using posemb::MropeSpec;
using posemb::Pairing;
using posemb::PositionMatrix;
using posemb::Rotation;
using posemb::Tensor4;
using posemb::TensorLayout;
using test_support::throws_with;

namespace {

const std::string multimodal_data = std::string(POSEMB_TEST_DATA_DIR) + "/multimodal/";

template <class T>
Tensor4<T> random_tensor(Eigen::Index b, Eigen::Index s, Eigen::Index h, Eigen::Index d,
                         unsigned seed = 7) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Tensor4<T> x(b, s, h, d);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(normal(rng));
  return x;
}

template <class T>
Tensor4<T> tensor_of(const posemb::NpyArray& array) {
  REQUIRE(array.shape.size() == 4);
  Tensor4<T> x(array.shape[0], array.shape[1], array.shape[2], array.shape[3]);
  const auto values = array.values<T>();
  std::copy(values.begin(), values.end(), x.data());
  return x;
}

using test_support::max_abs_diff;

template <class A, class B>
bool bit_equal(const A& a, const B& b) {
  if (a.size() != b.size()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    if (!(a.data()[i] == b.data()[i])) return false;
  }
  return true;
}

MropeSpec spec_of(posemb::RotaryDims dims, double theta, posemb::MropeSections sections,
                  MropeLayout layout, Pairing pairing = Pairing::RotateHalf) {
  return posemb::make_mrope_spec(posemb::default_rope_spec(dims, theta, pairing), sections, layout);
}

// Sections of 8 pairs that fit either layout: interleaved w pairs are 2, 5 only.
posemb::MropeSections eight_pairs(MropeLayout layout) {
  return layout == MropeLayout::Chunked ? posemb::MropeSections{2, 3, 3}
                                        : posemb::MropeSections{3, 3, 2};
}

// [3, seq] with every axis at the same positions.
PositionMatrix equal_axes(const posemb::PositionVector& p) {
  PositionMatrix thw(3, p.size());
  for (int a = 0; a < 3; ++a) thw.row(a) = p.transpose();
  return thw;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conformance: each apply case's X, P and Y with the spec its config.json describes (text fields,
// rope_theta, mrope_section, mrope_interleaved, partial_rotary_factor; README "Reading the
// config").

struct ApplyCase {
  const char* name;
  MropeSpec spec;
  TensorLayout layout;
};

TEST_CASE("conformance: the multimodal apply cases, float32 within 1e-5 and float64 within 1e-12") {
  const ApplyCase cases[] = {
      // Qwen2-VL-style: 64 / 4 = 16, theta 1e4, [2, 3, 3]
      {"apply_chunked_text_hd16", spec_of(16, 1e4, {2, 3, 3}, MropeLayout::Chunked),
       TensorLayout::BSHD},
      {"apply_chunked_mixed_hd16", spec_of(16, 1e4, {2, 3, 3}, MropeLayout::Chunked),
       TensorLayout::BSHD},
      // Qwen3-VL-style: head_dim 32, theta 5e6, [6, 5, 5] interleaved
      {"apply_interleaved_mixed_hd32", spec_of(32, 5e6, {6, 5, 5}, MropeLayout::Interleaved),
       TensorLayout::BSHD},
      // Qwen3.5-style: head_dim 64, partial 0.25 -> rotary_dim 16, theta 1e7, [3, 3, 2]
      {"apply_partial_interleaved_hd64",
       spec_of({64, 16}, 1e7, {3, 3, 2}, MropeLayout::Interleaved), TensorLayout::BSHD},
      // Qwen2.5-VL-style: 128 / 4 = 32, theta 1e6, [4, 6, 6]
      {"apply_batch2_bhsd_hd32", spec_of(32, 1e6, {4, 6, 6}, MropeLayout::Chunked),
       TensorLayout::BHSD},
  };
  for (const ApplyCase& c : cases) {
    SECTION(c.name) {
      const std::string dir = multimodal_data + c.name + "/";
      const auto x = tensor_of<float>(posemb::read_npy(dir + "X.npy"));
      const auto expected = tensor_of<double>(posemb::read_npy(dir + "Y.npy"));
      const auto p = posemb::read_npy(dir + "P.npy");
      const auto values = p.values<std::int64_t>();
      // The three forms of P: [seq] (text), [3, seq], [3, batch, seq].
      posemb::PositionVector text;
      PositionMatrix thw;
      MropePositionTensor per_row;
      MropePositions positions = MropePositions::text(0);
      if (p.shape.size() == 1) {
        text = Eigen::Map<const posemb::PositionVector>(values.data(), p.shape[0]);
        positions = MropePositions::text(text);
      } else if (p.shape.size() == 2) {
        thw = Eigen::Map<const PositionMatrix>(values.data(), p.shape[0], p.shape[1]);
        positions = thw;
      } else {
        per_row.resize(p.shape[0], p.shape[1], p.shape[2]);
        std::copy(values.begin(), values.end(), per_row.data());
        positions = per_row;
      }
      const auto y =
          posemb::rotated(x, positions, c.spec, posemb::RotateOptions().with_layouts(c.layout));
      CHECK(max_abs_diff(y, expected) <= 1e-5);

      Tensor4<double> x64 = x.cast<double>();
      const auto y64 =
          posemb::rotated(x64, positions, c.spec, posemb::RotateOptions().with_layouts(c.layout));
      CHECK(max_abs_diff(y64, expected) <= 1e-12);

      // The table path gathers the same bits.
      const posemb::MropeTable<float> table(c.spec, 0, 4096);
      CHECK(bit_equal(
          posemb::rotated(x, positions, table, posemb::RotateOptions().with_layouts(c.layout)), y));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Properties

TEST_CASE("equal axes give 1-D RoPE bit for bit: both layouts, both pairings, partial rotary") {
  const auto x = random_tensor<float>(2, 37, 3, 24);
  const auto p = test_support::positions_of({0,  1,  2,  5,  9,  100,     2047,     2048, 70000, 3,
                                             3,  3,  4,  4,  4,  8,       8,        9,    10,    11,
                                             12, 13, 14, 15, 16, 17,      18,       19,   20,    21,
                                             22, 23, 24, 25, 26, 1000000, 123456789});
  const PositionMatrix thw = equal_axes(p);
  for (const Pairing pairing : {Pairing::RotateHalf, Pairing::Interleaved}) {
    for (const MropeLayout layout : {MropeLayout::Chunked, MropeLayout::Interleaved}) {
      for (const int rotary_dim : {24, 16}) {  // full and partial rotary
        CAPTURE(posemb::to_string(pairing), posemb::to_string(layout), rotary_dim);
        const posemb::MropeSections sections =
            rotary_dim == 24 ? posemb::MropeSections{4, 4, 4} : posemb::MropeSections{4, 2, 2};
        const MropeSpec spec = spec_of({24, rotary_dim}, 1e4, sections, layout, pairing);
        const auto rope = posemb::rotated(x, p, spec.rope);
        CHECK(bit_equal(posemb::rotated(x, thw, spec), rope));
        CHECK(bit_equal(posemb::rotated(x, MropePositions::text(p), spec), rope));
      }
    }
  }
}

TEST_CASE("equal axes through tables: MropeTable equals RopeTable bit for bit") {
  const auto x = random_tensor<float>(1, 20, 2, 16);
  const auto p = test_support::position_range(300, 20);
  const PositionMatrix thw = equal_axes(p);
  for (const MropeLayout layout : {MropeLayout::Chunked, MropeLayout::Interleaved}) {
    const MropeSpec spec = spec_of(16, 1e4, {4, 2, 2}, layout);
    const posemb::RopeTable<float> rope_table(spec.rope, 0, 400);
    const posemb::MropeTable<float> mrope_table(spec, 0, 400);
    CHECK(bit_equal(posemb::rotated(x, thw, mrope_table), posemb::rotated(x, p, rope_table)));
    CHECK(bit_equal(posemb::rotated(x, thw, mrope_table), posemb::rotated(x, thw, spec)));
  }
}

// Which axis turns each pair, observed: positions with one axis at 7 and the others at 0 turn
// exactly the pairs of that axis.
std::string observed_axes(const MropeSpec& spec) {
  const int pairs = spec.rope.pairs();
  const auto x = random_tensor<double>(1, 1, 1, spec.rope.rotary_dim);
  std::string axes(static_cast<std::size_t>(pairs), '.');
  for (int a = 0; a < 3; ++a) {
    PositionMatrix thw = PositionMatrix::Zero(3, 1);
    thw(a, 0) = 7;
    const auto y = posemb::rotated(x, thw, spec);
    for (int j = 0; j < pairs; ++j) {
      const bool turned =
          y(0, 0, 0, j) != x(0, 0, 0, j) || y(0, 0, 0, j + pairs) != x(0, 0, 0, j + pairs);
      if (turned)
        axes[static_cast<std::size_t>(j)] =
            axes[static_cast<std::size_t>(j)] == '.' ? "thw"[a] : '?';
    }
  }
  return axes;
}

TEST_CASE("the axis that drives each pair: sections (4, 2, 2) of 8 pairs") {
  const MropeSpec chunked = spec_of(16, 1e4, {4, 2, 2}, MropeLayout::Chunked);
  const MropeSpec interleaved = spec_of(16, 1e4, {4, 2, 2}, MropeLayout::Interleaved);
  CHECK(observed_axes(chunked) == "tttthhww");
  CHECK(observed_axes(interleaved) == "thwthwtt");
  std::string listed;
  for (int j = 0; j < 8; ++j) listed += "thw"[posemb::mrope_axis(interleaved, j)];
  CHECK(listed == "thwthwtt");
  // Qwen3-VL-8B [24, 20, 20]: t h w ... up to pair 59, then pairs 60..63 t.
  const MropeSpec qwen3 = spec_of(128, 5e6, {24, 20, 20}, MropeLayout::Interleaved);
  std::string expected;
  for (int j = 0; j < 60; ++j) expected += "thw"[j % 3];
  expected += "tttt";
  CHECK(observed_axes(qwen3) == expected);
  // Qwen2-VL-7B [16, 24, 24]: pairs 0..15 t, 16..39 h, 40..63 w.
  const MropeSpec qwen2 = spec_of(128, 1e6, {16, 24, 24}, MropeLayout::Chunked);
  CHECK(observed_axes(qwen2) == std::string(16, 't') + std::string(24, 'h') + std::string(24, 'w'));
}

TEST_CASE("shifting all three axes by d equals a 1-D RoPE shift by d") {
  const auto x = random_tensor<double>(1, 14, 2, 16);
  PositionMatrix thw(3, 14);
  thw << 0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 9, 10,  //
      0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 9, 10,     //
      0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10;
  for (const MropeLayout layout : {MropeLayout::Chunked, MropeLayout::Interleaved}) {
    const MropeSpec spec = spec_of(16, 1e4, eight_pairs(layout), layout);
    for (const std::int64_t d : {1, 17, 4096, 1000000}) {
      CAPTURE(posemb::to_string(layout), d);
      const PositionMatrix shifted = (thw.array() + d).matrix();
      const auto direct = posemb::rotated(x, shifted, spec);
      const auto composed =
          posemb::rotated(posemb::rotated(x, thw, spec), posemb::Positions::same(d), spec.rope);
      // The double angles round to ulp(d * inv_freq): about 1e-16 d.
      CHECK(max_abs_diff(direct, composed) <= 1e-13 + 1e-15 * double(d));
    }
  }
}

TEST_CASE("the KV-cache shift of kv/rerotate.hpp moves M-RoPE keys on every axis") {
  const auto k = random_tensor<double>(1, 14, 2, 16);
  PositionMatrix thw(3, 14);
  thw << 500, 501, 502, 503, 503, 503, 503, 503, 503, 506, 507, 508, 509, 510,  //
      500, 501, 502, 503, 503, 503, 504, 504, 504, 506, 507, 508, 509, 510,     //
      500, 501, 502, 503, 504, 505, 503, 504, 505, 506, 507, 508, 509, 510;
  const MropeSpec spec = spec_of(16, 1e4, {2, 3, 3}, MropeLayout::Chunked);
  auto cached = posemb::rotated(k, thw, spec);
  posemb::shift_keys_inplace(cached, /*delta=*/-500, spec.rope);
  const PositionMatrix moved = (thw.array() - 500).matrix();
  CHECK(max_abs_diff(cached, posemb::rotated(k, moved, spec)) <= 1e-12);
}

TEST_CASE("the inverse undoes the rotation, for the spec and the table, with an attention scale") {
  const auto x = random_tensor<double>(2, 9, 3, 20);
  MropePositionTensor thw(3, 2, 9);
  std::mt19937 rng(3);
  for (Eigen::Index i = 0; i < thw.size(); ++i) thw.data()[i] = std::int64_t(rng() % 5000);
  MropeSpec spec = spec_of({20, 16}, 1e4, {2, 3, 3}, MropeLayout::Chunked);  // partial rotary
  spec.rope.attention_scale = 1.25;
  for (const MropeLayout layout : {MropeLayout::Chunked, MropeLayout::Interleaved}) {
    spec.layout = layout;
    spec.sections = eight_pairs(layout);
    const auto y = posemb::rotated(x, thw, spec);
    CHECK(max_abs_diff(y, x) > 0.1);
    const auto back = posemb::rotated(y, thw, spec, posemb::RotateOptions().inverse());
    CHECK(max_abs_diff(back, x) <= 1e-12);
    const posemb::MropeTable<double> table(spec, 0, 5000);
    const auto back_table = posemb::rotated(posemb::rotated(x, thw, table), thw, table,
                                            posemb::RotateOptions().inverse());
    CHECK(max_abs_diff(back_table, x) <= 1e-12);
    // The table's inverse is the spec's, bit for bit, with the scale and without.
    for (const double scale : {1.25, 1.0}) {
      MropeSpec scaled = spec;
      scaled.rope.attention_scale = scale;
      const posemb::MropeTable<double> scaled_table(scaled, 0, 5000);
      CHECK(bit_equal(posemb::rotated(y, thw, scaled_table, posemb::RotateOptions().inverse()),
                      posemb::rotated(y, thw, scaled, posemb::RotateOptions().inverse())));
    }
  }
}

TEST_CASE("a batch whose rows have different layouts gives each row its own positions") {
  MropePositionTensor both(3, 2, 6);
  PositionMatrix row0(3, 6), row1(3, 6);
  row0 << 0, 1, 1, 1, 1, 3,  //
      0, 1, 1, 2, 2, 3,      //
      0, 1, 2, 1, 2, 3;
  row1 << 0, 1, 2, 3, 4, 5,  //
      0, 1, 2, 3, 4, 5,      //
      0, 1, 2, 3, 4, 5;
  for (int a = 0; a < 3; ++a) {
    for (int s = 0; s < 6; ++s) {
      both(a, 0, s) = row0(a, s);
      both(a, 1, s) = row1(a, s);
    }
  }
  const MropeSpec spec = spec_of(16, 1e4, {2, 3, 3}, MropeLayout::Chunked);
  for (const TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
    // [2, 6, 2, 16] or [2, 2, 6, 16]: batch row b is the b-th half of the buffer either way
    const auto x = layout == TensorLayout::BSHD ? random_tensor<float>(2, 6, 2, 16)
                                                : random_tensor<float>(2, 2, 6, 16);
    const auto y = posemb::rotated(x, both, spec, posemb::RotateOptions().with_layouts(layout));
    const auto y0 = posemb::rotated(x, row0, spec, posemb::RotateOptions().with_layouts(layout));
    const auto y1 = posemb::rotated(x, row1, spec, posemb::RotateOptions().with_layouts(layout));
    const Eigen::Index half = x.size() / 2;
    CHECK(std::equal(y.data(), y.data() + half, y0.data()));
    CHECK(std::equal(y.data() + half, y.data() + x.size(), y1.data() + half));
    CHECK_FALSE(std::equal(y0.data(), y0.data() + half, y1.data()));
  }
}

TEST_CASE("long positions (millions) against the rotation formed with libm in double") {
  const auto x = random_tensor<float>(1, 4, 1, 16);
  PositionMatrix thw(3, 4);
  thw << 3000000, 3000001, 3000001, 7999999,  //
      3000000, 3000000, 5123457, 7999998,     //
      3000000, 3000001, 4000000, 2;
  for (const MropeLayout layout : {MropeLayout::Chunked, MropeLayout::Interleaved}) {
    const MropeSpec spec = spec_of(16, 1e4, eight_pairs(layout), layout);
    const auto y = posemb::rotated(x, thw, spec);
    for (int s = 0; s < 4; ++s) {
      for (int j = 0; j < 8; ++j) {
        const double angle = double(thw(posemb::mrope_axis(spec, j), s)) * spec.rope.inv_freq[j];
        const double a = x(0, s, 0, j), b = x(0, s, 0, j + 8);
        CHECK(std::fabs(y(0, s, 0, j) - (a * std::cos(angle) - b * std::sin(angle))) <= 2e-6);
        CHECK(std::fabs(y(0, s, 0, j + 8) - (a * std::sin(angle) + b * std::cos(angle))) <= 2e-6);
      }
    }
    // A table over positions 3000000 .. 3000099 gathers the same bits.
    PositionMatrix near(3, 4);
    near << 3000000, 3000001, 3000001, 3000099,  //
        3000000, 3000000, 3000050, 3000098,      //
        3000000, 3000001, 3000077, 3000002;
    const posemb::MropeTable<float> table(spec, 3000000, 100);
    CHECK(bit_equal(posemb::rotated(x, near, table), posemb::rotated(x, near, spec)));
  }
}

TEST_CASE("fractional positions: whole values give the integer bits, halves the exact angle") {
  const auto x = random_tensor<double>(1, 3, 1, 16);
  PositionMatrix thw(3, 3);
  thw << 5, 6, 7, 5, 9, 7, 5, 9, 11;
  FractionalPositionMatrix fractional = thw.cast<double>();
  const MropeSpec spec = spec_of(16, 1e4, {3, 3, 2}, MropeLayout::Interleaved);
  CHECK(bit_equal(posemb::rotated(x, fractional, spec), posemb::rotated(x, thw, spec)));
  FractionalMropePositionTensor halves(3, 1, 3);
  for (int a = 0; a < 3; ++a)
    for (int s = 0; s < 3; ++s) halves(a, 0, s) = thw(a, s) + 0.5;
  const auto y = posemb::rotated(x, halves, spec);
  for (int s = 0; s < 3; ++s) {
    for (int j = 0; j < 8; ++j) {
      const double angle =
          (double(thw(posemb::mrope_axis(spec, j), s)) + 0.5) * spec.rope.inv_freq[j];
      const double a = x(0, s, 0, j), b = x(0, s, 0, j + 8);
      CHECK(std::fabs(y(0, s, 0, j) - (a * std::cos(angle) - b * std::sin(angle))) <= 1e-13);
    }
  }
  const posemb::MropeTable<double> table(spec, 0, 100);
  throws_with([&] { (void)posemb::rotated(x, halves, table); }, "expected an integer position");
}

TEST_CASE("engine features: two threads, half storage, layout change and a KV-cache slot") {
  const MropeSpec spec = spec_of({128, 64}, 1e6, {16, 8, 8}, MropeLayout::Chunked);  // partial
  const auto x = random_tensor<float>(1, 512, 8, 128, 11);
  MropePositionTensor thw(3, 1, 512);
  for (Eigen::Index i = 0; i < thw.size(); ++i) thw.data()[i] = (i * 7919) % 3000;
  const auto one = posemb::rotated(x, thw, spec);
  CHECK(bit_equal(
      posemb::rotated(x, thw, spec, posemb::RotateOptions().with_threads(posemb::Threads{2})),
      one));

  // Half storage: computed in float from the half input, rounded once.
  Tensor4<Eigen::half> x_half = x.cast<Eigen::half>();
  const Tensor4<float> from_half = posemb::rotated(Tensor4<float>(x_half.cast<float>()), thw, spec);
  CHECK(bit_equal(posemb::rotated(x_half, thw, spec),
                  Tensor4<Eigen::half>(from_half.cast<Eigen::half>())));

  // BSHD in, BHSD out at a sequence offset of a longer cache.
  const auto small = random_tensor<float>(1, 5, 2, 128);
  PositionMatrix p(3, 5);
  p << 0, 1, 1, 1, 2, 0, 1, 1, 2, 3, 0, 1, 2, 1, 3;
  Tensor4<float> cache(1, 2, 9, 128);
  cache.setZero();
  posemb::rotate(small, cache, p, spec,
                 posemb::RotateOptions().with_layouts(
                     posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 3)));
  const auto rotated = posemb::rotated(small, p, spec);
  bool same = true;
  for (int s = 0; s < 5; ++s)
    for (int h = 0; h < 2; ++h)
      for (int d = 0; d < 128; ++d) same = same && cache(0, h, 3 + s, d) == rotated(0, s, h, d);
  CHECK(same);
}

TEST_CASE("bad input throws posemb::Error naming the parameter") {
  const posemb::RopeSpec rope = posemb::default_rope_spec(16, 1e4);
  throws_with(
      [&] {
        (void)posemb::make_mrope_spec(rope, {2, 3, 2}, MropeLayout::Chunked);
      },
      "mrope_section = [2, 3, 2] (sum 7): expected a sum of rotary_dim / 2 = 8");
  throws_with(
      [&] {
        (void)posemb::make_mrope_spec(rope, {-1, 5, 4}, MropeLayout::Chunked);
      },
      "mrope_section[0] = -1: expected >= 0");
  // 8 pairs: h pairs 1, 4, 7 and w pairs 2, 5 fit; s1 = 4 needs pair 10, s2 = 3 pair 8.
  CHECK_NOTHROW(posemb::make_mrope_spec(rope, {3, 3, 2}, MropeLayout::Interleaved));
  CHECK_NOTHROW(posemb::make_mrope_spec(rope, {2, 3, 3}, MropeLayout::Chunked));
  throws_with(
      [&] {
        (void)posemb::make_mrope_spec(rope, {2, 4, 2}, MropeLayout::Interleaved);
      },
      "expected interleaved h pairs");
  throws_with(
      [&] {
        (void)posemb::make_mrope_spec(rope, {2, 3, 3}, MropeLayout::Interleaved);
      },
      "expected interleaved w pairs");

  const MropeSpec spec = spec_of(16, 1e4, {2, 3, 3}, MropeLayout::Chunked);
  auto x = random_tensor<float>(1, 4, 2, 16);
  const PositionMatrix two_axes = PositionMatrix::Zero(2, 4);
  throws_with([&] { (void)posemb::rotated(x, two_axes, spec); },
              "positions.dimension(0) = 2: expected 3 axes (t, h, w)");
  const PositionMatrix short_thw = PositionMatrix::Zero(3, 3);
  throws_with([&] { (void)posemb::rotated(x, short_thw, spec); }, "positions shape = [3, 1, 3]");
  const MropePositionTensor batch3(3, 3, 4);
  throws_with([&] { (void)posemb::rotated(x, batch3, spec); },
              "expected [3, batch, seq] = [3, 1, 4]");
  FractionalPositionMatrix nan_thw = FractionalPositionMatrix::Zero(3, 4);
  nan_thw(1, 2) = std::nan("");
  throws_with([&] { (void)posemb::rotated(x, nan_thw, spec); }, "positions[1, 0, 2]");
  PositionMatrix far = PositionMatrix::Zero(3, 4);
  far(2, 3) = 100;
  const posemb::MropeTable<float> table(spec, 0, 100);
  throws_with([&] { (void)posemb::rotated(x, far, table); },
              "position = 100: outside the RoPE table's range [0, 100)");
  const auto narrow = random_tensor<float>(1, 4, 2, 12);
  throws_with([&] { (void)posemb::rotated(narrow, far, spec); }, "head_dim = 12");
}
