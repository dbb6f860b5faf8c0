// rotate.hpp: the rotate family (rotate_inplace, rotate, rotated) over every source, and
// RotateOptions. The tests of each scheme run through the same family; here each form is
// checked against the others bit for bit, against plain-math references, and each option.
#include "posemb/rotary/rotate.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "posemb/rotary/fope.hpp"
#include "posemb/kv/rerotate.hpp"
#include "posemb/rotary/mrope.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/rotary/vision.hpp"
#include "posemb/rotary/xpos.hpp"
#include "reference.hpp"
#include "support.hpp"

using posemb::Layouts;
using posemb::Positions;
using posemb::RotateOptions;
using posemb::Rotation;
using posemb::Tensor4;
using posemb::TensorLayout;
using posemb::Threads;

namespace {

Tensor4<float> random_tensor(Eigen::Index batch, Eigen::Index seq, Eigen::Index heads,
                             Eigen::Index head_dim) {
  Tensor4<float> x(batch, seq, heads, head_dim);
  x.setRandom();
  return x;
}

template <class T>
bool same_bits(const Tensor4<T>& a, const Tensor4<T>& b) {
  if (a.dimensions() != b.dimensions()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    if (!(a.data()[i] == b.data()[i])) return false;
  }
  return true;
}

using test_support::max_abs_diff;

// The three forms of the family on x with one source and positions: in place, into out, and
// returned must agree bit for bit. Returns the rotated tensor.
template <class P, class Source>
Tensor4<float> all_forms_agree(const Tensor4<float>& x, const P& positions, const Source& source,
                               const RotateOptions& options = {}) {
  Tensor4<float> in_place = x;
  posemb::rotate_inplace(in_place, positions, source, options);
  Tensor4<float> into(x.dimensions());
  posemb::rotate(x, into, positions, source, options);
  const Tensor4<float> returned = posemb::rotated(x, positions, source, options);
  CHECK(same_bits(in_place, into));
  CHECK(same_bits(in_place, returned));
  CHECK_FALSE(same_bits(in_place, x));
  return in_place;
}

// Plain RoPE of a BSHD tensor in double (reference.hpp), rotate-half pairing, token s of row b at
// offset + s.
Tensor4<float> rope_reference(const Tensor4<float>& x, std::int64_t offset, double base) {
  Tensor4<float> out = x;
  const Eigen::Index d = x.dimension(3);
  Eigen::VectorXd head(d);
  for (Eigen::Index b = 0; b < x.dimension(0); ++b)
    for (Eigen::Index s = 0; s < x.dimension(1); ++s)
      for (Eigen::Index h = 0; h < x.dimension(2); ++h) {
        for (Eigen::Index i = 0; i < d; ++i) head[i] = x(b, s, h, i);
        const Eigen::VectorXd y = test_reference::reference_rope(
            head, offset + s, static_cast<int>(d), base, posemb::Pairing::RotateHalf);
        for (Eigen::Index i = 0; i < d; ++i) out(b, s, h, i) = float(y[i]);
      }
  return out;
}

// x [b, s, h, d] BSHD as [b, h, s, d].
Tensor4<float> to_bhsd(const Tensor4<float>& x) {
  return x.shuffle(Eigen::array<int, 4>{0, 2, 1, 3});
}

}  // namespace

TEST_CASE("rotate: the three forms agree bit for bit for every source") {
  const Tensor4<float> x = random_tensor(2, 24, 4, 32);
  const posemb::RopeSpec spec = posemb::default_rope_spec(32, 10000.0);
  posemb::PositionMatrix positions(2, 24);  // packed: row 1 restarts at token 10
  for (Eigen::Index s = 0; s < 24; ++s) positions.col(s) << 3 * s, s < 10 ? s : s - 10;

  SECTION("RoPE from a spec and from a table: the same bits, within 2e-6 of plain math") {
    const Tensor4<float> from_spec = all_forms_agree(x, 5, spec);
    const posemb::RopeTable<float> table(spec, 0, 64);
    CHECK(same_bits(from_spec, all_forms_agree(x, 5, table)));
    CHECK(max_abs_diff(from_spec, rope_reference(x, 5, 10000.0)) < 2e-6);
    all_forms_agree(x, positions, spec);
  }
  SECTION("xPos for queries and for keys") {
    const posemb::XposSpec xpos{spec, posemb::XposParams{}};
    const Tensor4<float> q = all_forms_agree(x, 3, posemb::Xpos{xpos, posemb::XposRole::Query});
    const Tensor4<float> k = all_forms_agree(x, 3, posemb::Xpos{xpos, posemb::XposRole::Key});
    CHECK_FALSE(same_bits(q, k));  // the roles scale the other way
  }
  SECTION("FoPE from its coefficients and from a table") {
    posemb::FopeConfig config;
    config.head_dim = 32;
    config.n_heads = 4;
    config.n_kv_heads = 2;
    config.train_length = 512;
    const posemb::Fope fope = posemb::make_fope(config);
    const Tensor4<float> computed = all_forms_agree(x, 2, fope);
    const posemb::FopeTable<float> table(fope, 0, 64);
    CHECK(max_abs_diff(computed, all_forms_agree(x, 2, table)) < 1e-6);
  }
  SECTION("M-RoPE from a spec and a table, and a vision tower") {
    const posemb::MropeSpec mrope =
        posemb::make_mrope_spec(spec, {8, 4, 4}, posemb::MropeLayout::Chunked);
    posemb::PositionMatrix thw(3, 24);
    for (Eigen::Index s = 0; s < 24; ++s) thw.col(s) << s, s / 4, s % 4;
    const Tensor4<float> computed = all_forms_agree(x, thw, mrope);
    const posemb::MropeTable<float> table(mrope, 0, 64);
    CHECK(same_bits(computed, all_forms_agree(x, thw, table)));

    const posemb::VisionRope tower = posemb::qwen2_vl_vision_rope(32, 2);
    const posemb::PositionMatrix patches = posemb::vision_patch_positions(tower, 1, 4, 6);
    CHECK(same_bits(all_forms_agree(x, patches, tower), all_forms_agree(x, patches, tower.spec)));
  }
  SECTION("KeyShift: R(delta) R(p) = R(p + delta), one delta or one per token") {
    const Tensor4<float> keys = posemb::rotated(x, 100, spec);
    const Tensor4<float> shifted =
        all_forms_agree(keys, Positions::same(-40), posemb::KeyShift{spec});
    CHECK(max_abs_diff(shifted, posemb::rotated(x, 60, spec)) < 2e-6);
    // Per token: token s moves by -s, so every token lands at 100.
    posemb::PositionMatrix deltas(1, 24);
    for (Eigen::Index s = 0; s < 24; ++s) deltas(0, s) = -s;
    const Tensor4<float> gathered = all_forms_agree(keys, deltas, posemb::KeyShift{spec});
    CHECK(max_abs_diff(gathered, posemb::rotated(x, Positions::same(100), spec)) < 2e-6);
  }
  SECTION("KeyRerotation: keys of one spec become the other's") {
    posemb::RopeSpec to = spec;
    to.inv_freq *= 0.5;
    const Tensor4<float> keys = posemb::rotated(x, positions, spec);
    const Tensor4<float> moved = all_forms_agree(keys, positions, posemb::KeyRerotation{spec, to});
    CHECK(max_abs_diff(moved, posemb::rotated(x, positions, to)) < 2e-6);
  }
}

TEST_CASE("rotate: Rotation::Inverse through RotateOptions undoes every source") {
  const Tensor4<float> x = random_tensor(1, 16, 2, 16);
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  const RotateOptions inverse = RotateOptions().inverse();
  CHECK(max_abs_diff(posemb::rotated(posemb::rotated(x, 9, spec), 9, spec, inverse), x) < 1e-6);

  const posemb::XposSpec xpos{spec, posemb::XposParams{}};
  const posemb::Xpos key{xpos, posemb::XposRole::Key};
  CHECK(max_abs_diff(posemb::rotated(posemb::rotated(x, 9, key), 9, key, inverse), x) < 1e-5);

  posemb::RopeSpec to = spec;
  to.inv_freq *= 0.25;
  to.attention_scale = 1.5;
  const posemb::KeyRerotation rerotation{spec, to};
  CHECK(max_abs_diff(posemb::rotated(posemb::rotated(x, 40, rerotation), 40, rerotation, inverse),
                     x) < 1e-5);

  // A shift's inverse is the shift by -delta, bit for bit.
  const posemb::KeyShift shift{spec};
  CHECK(same_bits(posemb::rotated(x, Positions::same(77), shift, inverse),
                  posemb::rotated(x, Positions::same(-77), shift)));
}

TEST_CASE("rotate: layouts, threads and the KV-cache slot through RotateOptions") {
  const posemb::RopeSpec spec =
      posemb::default_rope_spec(64, 500000.0, posemb::Pairing::Interleaved);
  const posemb::RopeTable<float> table(spec, 0, 2048);

  SECTION("BSHD in, BHSD out: the rotation transposed, by rotate and rotated") {
    const Tensor4<float> x = random_tensor(2, 40, 3, 64);
    const Tensor4<float> bshd = posemb::rotated(x, 11, table);
    const RotateOptions transpose =
        RotateOptions().with_layouts(Layouts(TensorLayout::BSHD, TensorLayout::BHSD));
    const Tensor4<float> bhsd = posemb::rotated(x, 11, table, transpose);
    CHECK(bhsd.dimension(1) == 3);
    CHECK(same_bits(bhsd, to_bhsd(bshd)));
    Tensor4<float> out(2, 3, 40, 64);
    posemb::rotate(x, out, 11, table, transpose);
    CHECK(same_bits(out, bhsd));
    // A BHSD tensor rotated in place with the layout named in the options.
    Tensor4<float> in_place = to_bhsd(x);
    posemb::rotate_inplace(in_place, 11, table, RotateOptions{TensorLayout::BHSD});
    CHECK(same_bits(in_place, bhsd));
  }
  SECTION("into a KV-cache slot: tokens at the offset, the rest untouched") {
    const Tensor4<float> x = random_tensor(1, 8, 2, 64);
    Tensor4<float> cache(1, 2, 32, 64);
    cache.setConstant(3.0f);
    posemb::rotate(
        x, cache, 20, spec,
        RotateOptions().with_layouts(Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 20)));
    const Tensor4<float> expected = to_bhsd(posemb::rotated(x, 20, spec));
    for (Eigen::Index h = 0; h < 2; ++h)
      for (Eigen::Index s = 0; s < 32; ++s)
        for (Eigen::Index i = 0; i < 64; ++i) {
          const bool slot = s >= 20 && s < 28;
          CHECK(cache(0, h, s, i) == (slot ? expected(0, h, s - 20, i) : 3.0f));
        }
    test_support::throws_with(
        [&] {
          (void)posemb::rotated(
              x, 20, spec,
              RotateOptions().with_layouts(Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 4)));
        },
        "options.layouts.out_seq_offset = 4: expected 0 for a returned tensor");
  }
  SECTION("in place cannot change the layout") {
    Tensor4<float> x = random_tensor(1, 4, 4, 64);
    test_support::throws_with(
        [&] {
          posemb::rotate_inplace(
              x, 0, spec,
              RotateOptions().with_layouts(Layouts(TensorLayout::BSHD, TensorLayout::BHSD)));
        },
        "expected separate buffers");
  }
  SECTION("threads and a caller's pool give the bits of one thread") {
    const Tensor4<float> x = random_tensor(1, 1024, 8, 64);  // 2^19 elements: two parts
    const Tensor4<float> one = posemb::rotated(x, 0, spec);
    CHECK(same_bits(posemb::rotated(x, 0, spec, RotateOptions().with_threads(Threads{2})), one));
    int tasks = 0;
    const posemb::ParallelFor serial = [&](std::size_t count,
                                           const std::function<void(std::size_t)>& task) {
      for (std::size_t i = 0; i < count; ++i, ++tasks) task(i);
    };
    Tensor4<float> pooled = x;
    posemb::rotate_inplace(pooled, 0, table, RotateOptions().with_threads(Threads{4, serial}));
    CHECK(same_bits(pooled, one));
    CHECK(tasks > 1);
    test_support::throws_with(
        [&] { (void)posemb::rotated(x, 0, spec, RotateOptions().with_threads(Threads{0})); },
        "threads.count = 0");
  }
}

TEST_CASE("rotate: RotateOptions as an aggregate and through its setters") {
  const RotateOptions defaults;
  CHECK(defaults.layouts.in == TensorLayout::BSHD);
  CHECK(defaults.layouts.out == TensorLayout::BSHD);
  CHECK_FALSE(defaults.layouts.into_slot);
  CHECK(defaults.threads.count == 1);
  CHECK(defaults.rotation == Rotation::Forward);

  const RotateOptions listed{TensorLayout::BHSD, Threads{3}, Rotation::Inverse};
  CHECK(listed.layouts.in == TensorLayout::BHSD);
  CHECK(listed.threads.count == 3);
  CHECK(listed.rotation == Rotation::Inverse);

  const RotateOptions chained =
      RotateOptions()
          .with_layouts(Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 5))
          .with_threads(Threads{2})
          .inverse();
  CHECK(chained.layouts.out == TensorLayout::BHSD);
  CHECK(chained.layouts.out_seq_offset == 5);
  CHECK(chained.threads.count == 2);
  CHECK(chained.rotation == Rotation::Inverse);
  CHECK(chained.with_rotation(Rotation::Forward).rotation == Rotation::Forward);
}

TEST_CASE("rotate: matrix rows, one head per row, as a tensor of one head") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  const posemb::XposSpec xpos{spec, posemb::XposParams{}};
  const Tensor4<float> x = random_tensor(1, 6, 1, 16);
  const Eigen::Map<const Eigen::Matrix<float, 6, 16, Eigen::RowMajor>> rows(x.data());
  const posemb::PositionVector positions = test_support::positions_of({0, 3, 9, 12, 40, 41});

  const auto check_source = [&](const auto& source) {
    Eigen::MatrixXf in_place = rows;
    posemb::rotate_inplace(in_place, positions, source);
    Eigen::MatrixXf into;
    posemb::rotate(rows, into, positions, source);
    const Eigen::MatrixXf returned = posemb::rotated(Eigen::MatrixXf(rows), positions, source);
    CHECK(in_place == into);
    CHECK(in_place == returned);
    const Tensor4<float> tensor =
        posemb::rotated(x, posemb::PositionMatrix(positions.transpose()), source);
    // The same cos/sin; the row kernel and the batched tensor kernel may round the products
    // differently (fused multiply-add), so within a few float ulps.
    for (Eigen::Index r = 0; r < 6; ++r)
      for (Eigen::Index i = 0; i < 16; ++i)
        CHECK(std::fabs(in_place(r, i) - tensor(0, r, 0, i)) <= 4e-7f);
    // Inverse through the options restores the rows.
    posemb::rotate_inplace(in_place, positions, source, RotateOptions().inverse());
    CHECK((in_place - Eigen::MatrixXf(rows)).cwiseAbs().maxCoeff() < 1e-5f);
  };
  check_source(spec);
  check_source(posemb::RopeTable<float>(spec, 0, 64));
  check_source(posemb::Xpos{xpos, posemb::XposRole::Query});
  check_source(posemb::KeyShift{spec});

  SECTION("one position for every row, and an expression of positions") {
    Eigen::MatrixXf heads = rows;
    posemb::rotate_inplace(heads, 12, spec);
    const posemb::PositionVector twelve = posemb::PositionVector::Constant(6, 12);
    CHECK(heads == posemb::rotated(Eigen::MatrixXf(rows), twelve, spec));
    CHECK(heads ==
          posemb::rotated(Eigen::MatrixXf(rows), posemb::PositionVector::Constant(6, 12), spec));
  }
  SECTION("a position per row, or an error naming the count") {
    Eigen::MatrixXf m = rows;
    test_support::throws_with(
        [&] {
          posemb::rotate_inplace(m, test_support::positions_of({1, 2}), spec);
        },
        "positions.size() = 2: expected one position per row = 6");
  }
}
