// RoPE (rope.hpp): golden values from ggml, the relative-position property, rotation
// identities, pairings, partial rotary, layouts, tables, storage types and bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <posemb/posemb.hpp>

#include "reference.hpp"

using posemb::Pairing;
using posemb::PositionMatrix;
using posemb::PositionVector;
using posemb::TensorLayout;

namespace {

// Gaussian content from a seeded generator (Box-Muller; the test only needs reproducibility).
Eigen::MatrixXd gaussian(std::mt19937_64& rng, Eigen::Index rows, Eigen::Index cols,
                         double stddev) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  Eigen::MatrixXd out(rows, cols);
  for (Eigen::Index i = 0; i < out.size(); ++i) {
    const double u1 = 1.0 - uniform(rng), u2 = uniform(rng);
    out(i) = stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(posemb::two_pi * u2);
  }
  return out;
}

using test_reference::reference_rope;

struct GgmlVector {
  Pairing pairing;
  std::int64_t position;
  std::vector<double> values;
};

// The `fp64:` lines of tests/data/ggml/vectors.md, with the pairing of their section.
std::vector<GgmlVector> read_ggml_vectors() {
  std::ifstream in(std::string(POSEMB_TEST_DATA_DIR) + "/ggml/vectors.md");
  REQUIRE(in);
  std::vector<GgmlVector> vectors;
  Pairing pairing = Pairing::Interleaved;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      pairing =
          line.find("mode=NEOX") != std::string::npos ? Pairing::RotateHalf : Pairing::Interleaved;
    } else if (line.rfind("pos=", 0) == 0 && line.find("fp64:") != std::string::npos) {
      GgmlVector v{pairing, std::stoll(line.substr(4)), {}};
      std::istringstream values(line.substr(line.find("fp64:") + 5));
      double value;
      while (values >> value) v.values.push_back(value);
      vectors.push_back(v);
    }
  }
  return vectors;
}

}  // namespace

TEST_CASE("golden values from ggml rope_ext (fp64 lines), both pairings, positions 0..4095") {
  const auto vectors = read_ggml_vectors();
  REQUIRE(vectors.size() == 16);
  for (const auto& golden : vectors) {
    INFO("pairing " << posemb::to_string(golden.pairing) << ", position " << golden.position);
    REQUIRE(golden.values.size() == 8);
    const auto spec = posemb::default_rope_spec(8, 10000.0, golden.pairing);
    Eigen::VectorXd x(8);
    Eigen::VectorXf xf(8);
    for (int d = 0; d < 8; ++d) x[d] = xf[d] = static_cast<float>(d + 1);
    posemb::rotate_inplace(x, golden.position, spec);
    posemb::rotate_inplace(xf, golden.position, spec);
    for (int d = 0; d < 8; ++d) {
      CHECK(std::abs(x[d] - golden.values[d]) <= 1e-6 * std::abs(golden.values[d]));
      // float32 storage: within float32 rounding of the vector's scale (|x| = 14.3).
      CHECK(std::abs(xf[d] - golden.values[d]) <= 1e-6 * 14.3);
    }
  }
}

TEST_CASE("the kernel equals the pair-by-pair formula for every pairing, rotary_dim, position") {
  std::mt19937_64 rng(1);
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    for (int rotary_dim : {2, 6, 32, 64}) {
      const int head_dim = 64;
      const auto spec =
          posemb::default_rope_spec(posemb::RotaryDims{head_dim, rotary_dim}, 500000.0, pairing);
      for (std::int64_t p : {0LL, 1LL, -3LL, 4095LL, 131071LL, 1000003LL, -2000000LL}) {
        const Eigen::VectorXd x = gaussian(rng, head_dim, 1, 1.0);
        Eigen::VectorXd y = x;
        posemb::rotate_inplace(y, p, spec);
        const Eigen::VectorXd expected = reference_rope(x, p, rotary_dim, 500000.0, pairing);
        CHECK((y - expected).cwiseAbs().maxCoeff() <=
              1e-12 * std::max<double>(1.0, std::abs(p) * 1e-3));
      }
    }
  }
}

TEST_CASE("relative position: same-gap scores agree in float32 storage") {
  // 200 random (content, projection) draws, as in the drift table: x ~ N(0, 1), W ~ N(0, 1/64).
  std::mt19937_64 rng(774);
  const int d = 64;
  const auto spec = posemb::default_rope_spec(d, 10000.0, Pairing::Interleaved);
  const std::int64_t gaps[] = {1, 2, 8, 64, 255};
  const std::int64_t bases[] = {0, 5, 100, 333, 1000, 1792, 2047 - 255};
  double worst_spread = 0.0;
  for (int draw = 0; draw < 200; ++draw) {
    const Eigen::MatrixXd Wq = gaussian(rng, d, d, 1.0 / 8), Wk = gaussian(rng, d, d, 1.0 / 8);
    const Eigen::VectorXf q0 = (Wq.transpose() * gaussian(rng, d, 1, 1.0)).cast<float>();
    const Eigen::VectorXf k0 = (Wk.transpose() * gaussian(rng, d, 1, 1.0)).cast<float>();
    for (std::int64_t gap : gaps) {
      double lo = INFINITY, hi = -INFINITY;
      for (std::int64_t n : bases) {
        Eigen::VectorXf q = q0, k = k0;
        posemb::rotate_inplace(q, n + gap, spec);
        posemb::rotate_inplace(k, n, spec);
        const double score = q.cast<double>().dot(k.cast<double>());
        lo = std::min(lo, score);
        hi = std::max(hi, score);
      }
      worst_spread = std::max(worst_spread, hi - lo);
    }
  }
  INFO("worst same-gap spread " << worst_spread);
  CHECK(worst_spread <= 2e-5);  // float32 angles (the published arithmetic) give 9.9e-4
}

TEST_CASE("relative position holds at positions up to 2^24") {
  std::mt19937_64 rng(2);
  const int d = 128;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const auto spec = posemb::default_rope_spec(d, 10000.0, pairing);
    const Eigen::VectorXf q0 = gaussian(rng, d, 1, 1.0).cast<float>();
    const Eigen::VectorXf k0 = gaussian(rng, d, 1, 1.0).cast<float>();
    auto score = [&](std::int64_t m, std::int64_t n) {
      Eigen::VectorXf q = q0, k = k0;
      posemb::rotate_inplace(q, m, spec);
      posemb::rotate_inplace(k, n, spec);
      return q.cast<double>().dot(k.cast<double>());
    };
    const double reference = score(7, 0);
    for (std::int64_t n : {1LL << 10, 1LL << 16, 1000000LL, 1LL << 20, (1LL << 24) - 7}) {
      INFO("n = " << n);
      CHECK(std::abs(score(n + 7, n) - reference) <= 1e-5);
    }
  }
}

TEST_CASE("rotation identities: m = n, norms, inverse, composition") {
  std::mt19937_64 rng(3);
  const int d = 96;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const auto spec = posemb::default_rope_spec(d, 10000.0, pairing);
    const Eigen::VectorXd q = gaussian(rng, d, 1, 1.0), k = gaussian(rng, d, 1, 1.0);
    for (std::int64_t p : {0LL, 1LL, 17LL, 4096LL, 1LL << 22, -12345LL}) {
      Eigen::VectorXd qp = q, kp = k;
      posemb::rotate_inplace(qp, p, spec);
      posemb::rotate_inplace(kp, p, spec);
      CHECK(qp.dot(kp) == Approx(q.dot(k)).epsilon(1e-12));  // m = n: no positional effect
      CHECK(qp.norm() == Approx(q.norm()).epsilon(1e-13));   // rotations keep norms
      posemb::rotate_inplace(qp, -p, spec);                  // R(-p) R(p) = I
      CHECK((qp - q).cwiseAbs().maxCoeff() <= 1e-12);
      Eigen::VectorXd two_steps = q, one_step = q;  // R(a) R(b) = R(a + b)
      posemb::rotate_inplace(two_steps, p, spec);
      posemb::rotate_inplace(two_steps, 5, spec);
      posemb::rotate_inplace(one_step, p + 5, spec);
      // The double angle p * inv_freq carries |p| * 1e-16 rad of rounding.
      CHECK((two_steps - one_step).cwiseAbs().maxCoeff() <= 1e-12 * (1.0 + std::abs(p) / 1000.0));
    }
  }
}

TEST_CASE("pairings rotate the documented feature pairs") {
  // head_dim 4, base 1 (every inv_freq 1), position 1: pairs rotate by 1 rad.
  const double c = std::cos(1.0), s = std::sin(1.0);
  Eigen::Vector4d x(1.0, 2.0, 3.0, 4.0);
  Eigen::Vector4d interleaved = x, rotate_half = x;
  posemb::rotate_inplace(interleaved, 1, posemb::default_rope_spec(4, 1.0, Pairing::Interleaved));
  posemb::rotate_inplace(rotate_half, 1, posemb::default_rope_spec(4, 1.0, Pairing::RotateHalf));
  // Interleaved: (x0, x1) and (x2, x3).
  CHECK(interleaved[0] == Approx(1 * c - 2 * s));
  CHECK(interleaved[1] == Approx(1 * s + 2 * c));
  CHECK(interleaved[2] == Approx(3 * c - 4 * s));
  CHECK(interleaved[3] == Approx(3 * s + 4 * c));
  // Rotate-half: (x0, x2) and (x1, x3).
  CHECK(rotate_half[0] == Approx(1 * c - 3 * s));
  CHECK(rotate_half[2] == Approx(1 * s + 3 * c));
  CHECK(rotate_half[1] == Approx(2 * c - 4 * s));
  CHECK(rotate_half[3] == Approx(2 * s + 4 * c));
}

TEST_CASE("partial rotary leaves the tail bit-identical, in place and out of place") {
  std::mt19937_64 rng(4);
  const int head_dim = 80, rotary_dim = 20;
  for (Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const auto spec =
        posemb::default_rope_spec(posemb::RotaryDims{head_dim, rotary_dim}, 10000.0, pairing);
    posemb::Tensor4<float> x(2, 5, 3, head_dim);
    x.setRandom();
    const posemb::Tensor4<float> out = posemb::rotated(x, 100, spec);
    posemb::Tensor4<float> in_place = x;
    posemb::rotate_inplace(in_place, 100, spec);
    bool tail_identical = true, head_rotated = false;
    for (int b = 0; b < 2; ++b)
      for (int s = 0; s < 5; ++s)
        for (int h = 0; h < 3; ++h)
          for (int i = 0; i < head_dim; ++i) {
            if (i >= rotary_dim) {
              tail_identical &=
                  out(b, s, h, i) == x(b, s, h, i) && in_place(b, s, h, i) == x(b, s, h, i);
            } else {
              head_rotated |= out(b, s, h, i) != x(b, s, h, i);
            }
            CHECK(out(b, s, h, i) == in_place(b, s, h, i));
          }
    CHECK(tail_identical);
    CHECK(head_rotated);
    // The rotated part equals full RoPE of rotary_dim features.
    Eigen::VectorXd head(head_dim);
    for (int i = 0; i < head_dim; ++i) head[i] = x(1, 2, 0, i);
    const Eigen::VectorXd expected = reference_rope(head, 102, rotary_dim, 10000.0, pairing);
    for (int i = 0; i < rotary_dim; ++i) CHECK(out(1, 2, 0, i) == Approx(expected[i]).margin(1e-6));
  }
}

TEST_CASE("4-D tensors: layouts, positions, offsets, TensorMap and tables agree") {
  const int batch = 2, seq = 7, heads = 3, head_dim = 16;
  const auto spec = posemb::default_rope_spec(head_dim, 10000.0, Pairing::RotateHalf);
  posemb::Tensor4<double> bshd(batch, seq, heads, head_dim);
  bshd.setRandom();
  PositionMatrix positions(batch, seq);
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s)
      positions(b, s) = (b == 0) ? 40 + s : 3 * s - 5;  // packed/left-padded

  const auto rotated = posemb::rotated(bshd, positions, spec);
  // Every head vector equals the single-vector call at its token's position.
  for (int b = 0; b < batch; ++b)
    for (int s = 0; s < seq; ++s)
      for (int h = 0; h < heads; ++h) {
        Eigen::VectorXd v(head_dim);
        for (int i = 0; i < head_dim; ++i) v[i] = bshd(b, s, h, i);
        posemb::rotate_inplace(v, positions(b, s), spec);
        for (int i = 0; i < head_dim; ++i) CHECK(rotated(b, s, h, i) == v[i]);
      }

  SECTION("BHSD layout gives the same values transposed") {
    const Eigen::array<int, 4> to_bhsd{0, 2, 1, 3};
    posemb::Tensor4<double> bhsd = bshd.shuffle(to_bhsd);
    posemb::rotate_inplace(bhsd, positions, spec,
                           posemb::RotateOptions().with_layouts(TensorLayout::BHSD));
    const posemb::Tensor4<double> back = bhsd.shuffle(to_bhsd);
    for (Eigen::Index i = 0; i < back.size(); ++i) CHECK(back.data()[i] == rotated.data()[i]);
  }
  SECTION("a TensorMap over a caller's buffer, in place") {
    std::vector<double> buffer(bshd.data(), bshd.data() + bshd.size());
    posemb::TensorMap4<double> map(buffer.data(), batch, seq, heads, head_dim);
    posemb::rotate_inplace(map, positions, spec);
    for (Eigen::Index i = 0; i < rotated.size(); ++i) CHECK(buffer[i] == rotated.data()[i]);
  }
  SECTION("out of place into a preallocated tensor, from a const TensorMap") {
    Eigen::TensorMap<const Eigen::Tensor<const double, 4, Eigen::RowMajor>> input(
        bshd.data(), batch, seq, heads, head_dim);
    posemb::Tensor4<double> out(batch, seq, heads, head_dim);
    posemb::rotate(input, out, positions, spec);
    for (Eigen::Index i = 0; i < out.size(); ++i) CHECK(out.data()[i] == rotated.data()[i]);
  }
  SECTION("a table gives the same values as computing cos/sin in the call") {
    const posemb::RopeTable<double> table(spec, -5, 60);
    const auto from_table = posemb::rotated(bshd, positions, table);
    for (Eigen::Index i = 0; i < from_table.size(); ++i)
      CHECK(from_table.data()[i] == rotated.data()[i]);
  }
  SECTION("a scalar offset is positions offset + s, shared by the batch") {
    const auto with_offset = posemb::rotated(bshd, 1000, spec);
    PositionMatrix shared(1, seq);
    for (int s = 0; s < seq; ++s) shared(0, s) = 1000 + s;
    const auto with_matrix = posemb::rotated(bshd, shared, spec);
    for (Eigen::Index i = 0; i < with_offset.size(); ++i)
      CHECK(with_offset.data()[i] == with_matrix.data()[i]);
  }
}

TEST_CASE("KV-cache decode: one token at offset equals that row of the full sequence") {
  const int seq = 33, heads = 4, head_dim = 32;
  const auto spec = posemb::default_rope_spec(head_dim, 10000.0, Pairing::Interleaved);
  posemb::Tensor4<float> full(1, seq, heads, head_dim);
  full.setRandom();
  posemb::Tensor4<float> last(1, 1, heads, head_dim);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < head_dim; ++i) last(0, 0, h, i) = full(0, seq - 1, h, i);
  posemb::rotate_inplace(full, 0, spec);
  posemb::rotate_inplace(last, seq - 1, spec);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < head_dim; ++i) CHECK(last(0, 0, h, i) == full(0, seq - 1, h, i));
}

TEST_CASE("matrices: one position per row, or one position for all rows") {
  std::mt19937_64 rng(5);
  const auto spec = posemb::default_rope_spec(8, 10000.0, Pairing::Interleaved);
  const Eigen::MatrixXd x = gaussian(rng, 4, 8, 1.0);
  PositionVector positions(4);
  positions << 0, 7, -7, 1 << 20;
  const Eigen::MatrixXd per_row = posemb::rotated(x, positions, spec);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> same_position = x;
  posemb::rotate_inplace(same_position, std::int64_t{7}, spec);
  for (int r = 0; r < 4; ++r) {
    const Eigen::VectorXd expected =
        reference_rope(x.row(r).transpose(), positions[r], 8, 10000.0, Pairing::Interleaved);
    CHECK((per_row.row(r).transpose() - expected).cwiseAbs().maxCoeff() <= 1e-9);
    const Eigen::VectorXd at7 =
        reference_rope(x.row(r).transpose(), 7, 8, 10000.0, Pairing::Interleaved);
    CHECK((same_position.row(r).transpose() - at7).cwiseAbs().maxCoeff() <= 1e-12);
  }
  // A block of a larger matrix (non-unit strides) is rotated in place.
  Eigen::MatrixXd big = gaussian(rng, 6, 12, 1.0);
  const Eigen::MatrixXd before = big;
  posemb::rotate_inplace(big.block(1, 2, 3, 8), PositionVector::Constant(3, 9), spec);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 12; ++c)
      if (r < 1 || r > 3 || c < 2 || c > 9) CHECK(big(r, c) == before(r, c));
  const Eigen::VectorXd expected =
      reference_rope(before.block(2, 2, 1, 8).transpose(), 9, 8, 10000.0, Pairing::Interleaved);
  CHECK((big.block(2, 2, 1, 8).transpose() - expected).cwiseAbs().maxCoeff() <= 1e-12);
}

TEST_CASE("attention_scale multiplies cos and sin") {
  auto spec = posemb::default_rope_spec(8, 10000.0, Pairing::RotateHalf);
  Eigen::VectorXd plain = Eigen::VectorXd::LinSpaced(8, 1.0, 8.0), scaled = plain;
  posemb::rotate_inplace(plain, 123, spec);
  spec.attention_scale = 1.25;
  posemb::rotate_inplace(scaled, 123, spec);
  CHECK((scaled - 1.25 * plain).cwiseAbs().maxCoeff() <= 1e-12);
  const auto [cos, sin] = posemb::rope_cos_sin(spec, 123);
  CHECK(cos[0] == Approx(1.25 * std::cos(123.0)));
  CHECK(sin[0] == Approx(1.25 * std::sin(123.0)));
}

TEST_CASE("half-precision storage computes in float and rounds once") {
  const auto spec = posemb::default_rope_spec(64, 10000.0, Pairing::RotateHalf);
  posemb::Tensor4<float> x(1, 4, 2, 64);
  x.setRandom();
  posemb::Tensor4<Eigen::half> xh = x.cast<Eigen::half>();
  posemb::Tensor4<Eigen::bfloat16> xb = x.cast<Eigen::bfloat16>();
  posemb::rotate_inplace(x, 50000, spec);
  posemb::rotate_inplace(xh, 50000, spec);
  posemb::rotate_inplace(xb, 50000, spec);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    CHECK(std::abs(static_cast<float>(xh.data()[i]) - x.data()[i]) <=
          2e-3f);  // fp16: 11-bit mantissa
    CHECK(std::abs(static_cast<float>(xb.data()[i]) - x.data()[i]) <=
          1.6e-2f);  // bf16: 8-bit mantissa
  }
}

TEST_CASE("a table is shared read-only across threads") {
  const posemb::RopeTable<float> table(posemb::default_rope_spec(32, 10000.0, Pairing::Interleaved),
                                       0, 4096);
  posemb::Tensor4<float> a(1, 4096, 2, 32), b(1, 4096, 2, 32);
  a.setRandom();
  b = a;
  std::thread worker([&] { posemb::rotate_inplace(a, 0, table); });
  posemb::rotate_inplace(b, 0, table);
  worker.join();
  for (Eigen::Index i = 0; i < a.size(); ++i) CHECK(a.data()[i] == b.data()[i]);
}

TEST_CASE("bad input throws posemb::Error naming the parameter") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_AS(posemb::default_rope_spec(7), posemb::Error);
  CHECK_THROWS_WITH(posemb::default_rope_spec(7), Contains("rotary_dim = 7"));
  CHECK_THROWS_WITH(posemb::default_rope_spec(0), Contains("rotary_dim = 0"));
  CHECK_THROWS_WITH(posemb::default_rope_spec(8, 0.0), Contains("base = 0"));
  CHECK_THROWS_WITH(posemb::default_rope_spec(8, -2.0), Contains("base = -2"));
  CHECK_THROWS_WITH(posemb::default_rope_spec(8, NAN), Contains("base = nan"));
  CHECK_THROWS_WITH(posemb::default_rope_spec(8, INFINITY), Contains("base = inf"));

  const auto spec = posemb::default_rope_spec(16);
  Eigen::VectorXf short_head(8);
  CHECK_THROWS_WITH(posemb::rotate_inplace(short_head, 0, spec), Contains("head_dim = 8"));
  posemb::Tensor4<float> x(2, 3, 1, 16);
  x.setZero();
  PositionMatrix wrong(2, 4);
  wrong.setZero();
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, wrong, spec), Contains("positions shape = [2, 4]"));
  CHECK_THROWS_WITH(
      posemb::rotate_inplace(x, 0, spec,
                             posemb::RotateOptions().with_layouts(static_cast<TensorLayout>(7))),
      Contains("layout = 7"));
  Eigen::MatrixXf rows(3, 16);
  CHECK_THROWS_WITH(posemb::rotate_inplace(rows, PositionVector::Zero(2), spec),
                    Contains("positions.size() = 2"));
  posemb::Tensor4<float> wrong_out(2, 3, 1, 8);
  CHECK_THROWS_WITH(posemb::rotate(x, wrong_out, 0, spec), Contains("out.dimension(3) = 8"));

  const posemb::RopeTable<float> table(spec, 10, 5);  // positions 10..14
  CHECK_NOTHROW(posemb::rotate_inplace(x, 10, table));
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, 13, table), Contains("position = 15"));
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, 9, table), Contains("position = 9"));
  CHECK_THROWS_WITH(posemb::RopeTable<float>(spec, 0, 0), Contains("count = 0"));

  posemb::RopeSpec broken = spec;
  broken.inv_freq.resize(3);
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, 0, broken), Contains("inv_freq.size() = 3"));
  broken = spec;
  broken.attention_scale = 0.0;
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, 0, broken), Contains("attention_scale = 0"));
  broken = spec;
  broken.inv_freq[2] = NAN;
  CHECK_THROWS_WITH(posemb::rotate_inplace(x, 0, broken), Contains("inv_freq[2] = nan"));
  // Errors are std::invalid_argument too.
  CHECK_THROWS_AS(posemb::default_rope_spec(3), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// What inference engines ask of the kernel: fractional positions, the inverse rotation, a
// rotary slice anywhere in the head, layout change on write.

namespace {

template <class T>
posemb::Tensor4<T> random_tensor4(Eigen::Index a, Eigen::Index b, Eigen::Index c, Eigen::Index d,
                                  std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Eigen::MatrixXd values = gaussian(rng, a * b * c * d, 1, 1.0);
  posemb::Tensor4<T> x(a, b, c, d);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(values(i));
  return x;
}

template <class T>
bool same_bits(const posemb::Tensor4<T>& a, const posemb::Tensor4<T>& b) {
  if (a.dimensions() != b.dimensions()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    if (!(a.data()[i] == b.data()[i])) return false;
  }
  return true;
}

template <class T>
double largest_difference(const posemb::Tensor4<T>& a, const posemb::Tensor4<T>& b) {
  double worst = 0;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double(a.data()[i]) - double(b.data()[i])));
  }
  return worst;
}

// [b, s, h, d] <-> [b, h, s, d]
template <class T>
posemb::Tensor4<T> transposed(const posemb::Tensor4<T>& x) {
  return x.shuffle(Eigen::array<int, 4>{0, 2, 1, 3});
}

posemb::RopeSpec yarn_spec(posemb::RotaryDims dims, Pairing pairing) {
  posemb::YarnParams yarn;
  yarn.factor = 8.0;
  yarn.original_max_position_embeddings = 4096;
  return posemb::yarn_rope_spec(dims, 500000.0, yarn, pairing);
}

}  // namespace

TEST_CASE("integer-valued fractional positions give the integer path bit for bit") {
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    const posemb::RopeSpec spec = yarn_spec(64, pairing);
    const posemb::Tensor4<float> x = random_tensor4<float>(2, 5, 3, 64, 1);
    PositionMatrix integers(2, 5);
    integers << 0, 1, 2, 3, 1000000, 7, -3, 131071, 2000000, 5;
    const posemb::FractionalPositionMatrix fractions = integers.cast<double>();
    CHECK(same_bits(posemb::rotated(x, fractions, spec), posemb::rotated(x, integers, spec)));
    const posemb::RopeTable<float> table(spec, -3, 2000004);
    CHECK(same_bits(posemb::rotated(x, fractions, table), posemb::rotated(x, integers, spec)));
    const posemb::Tensor4<Eigen::bfloat16> x16 = x.cast<Eigen::bfloat16>();
    CHECK(same_bits(posemb::rotated(x16, fractions, spec), posemb::rotated(x16, integers, spec)));
  }
}

TEST_CASE("a fractional position turns by p * inv_freq: p = 0.5 turns half as far as p = 1") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(16, 10000.0, Pairing::RotateHalf);
  posemb::Tensor4<double> unit(1, 3, 1, 16);
  unit.setZero();
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < 8; ++i) unit(0, s, 0, i) = 1.0;  // (a, b) = (1, 0) in every pair
  posemb::FractionalPositionMatrix p(1, 3);
  p << 0.5, 1.0, 1234567.25;
  const posemb::Tensor4<double> y = posemb::rotated(unit, p, spec);
  for (int i = 0; i < 8; ++i) {
    const double half = std::atan2(y(0, 0, 0, i + 8), y(0, 0, 0, i));
    const double whole = std::atan2(y(0, 1, 0, i + 8), y(0, 1, 0, i));
    CHECK(half == Approx(whole / 2).margin(1e-15));
    // A large fractional position: the angle is p * inv_freq reduced mod 2 pi, in double.
    const double expected = std::remainder(1234567.25 * spec.inv_freq[i], posemb::two_pi);
    CHECK(std::atan2(y(0, 2, 0, i + 8), y(0, 2, 0, i)) == Approx(expected).margin(1e-12));
  }
  p(0, 1) = INFINITY;
  CHECK_THROWS_WITH(posemb::rotated(unit, p, spec), Catch::Contains("positions[0, 1] = inf"));
  p(0, 1) = 1.5;
  const posemb::RopeTable<double> table(spec, 0, 4);
  CHECK_THROWS_WITH(posemb::rotated(unit, p, table), Catch::Contains("position = 0.5"));
}

TEST_CASE("the inverse rotation undoes the forward one and is the rotation at -p") {
  const posemb::Tensor4<float> x = random_tensor4<float>(2, 40, 4, 64, 2);
  PositionMatrix p(2, 40), minus_p(2, 40);
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 40; ++s) {
      p(b, s) = b == 0 ? s : 1000000 + 37 * s;
      minus_p(b, s) = -p(b, s);
    }
  }
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    CAPTURE(posemb::to_string(pairing));
    for (const posemb::RopeSpec& spec :
         {posemb::default_rope_spec(64, 10000.0, pairing), yarn_spec({64, 48}, pairing)}) {
      CAPTURE(spec.attention_scale);
      const posemb::Tensor4<float> y = posemb::rotated(x, p, spec);
      const posemb::Tensor4<float> back =
          posemb::rotated(y, p, spec, posemb::RotateOptions().inverse());
      CHECK(largest_difference(back, x) < 2e-6 * 4);
      // In place and through a table, the same bits as out of place.
      posemb::Tensor4<float> in_place = y;
      posemb::rotate_inplace(in_place, p, spec, posemb::RotateOptions().inverse());
      CHECK(same_bits(in_place, back));
      const posemb::RopeTable<float> table(spec, 0, 1000000 + 37 * 40);
      CHECK(same_bits(posemb::rotated(y, p, table, posemb::RotateOptions().inverse()), back));
      if (spec.attention_scale == 1.0) {
        // R(p)^T = R(-p), bit for bit.
        CHECK(same_bits(posemb::rotated(x, p, spec, posemb::RotateOptions().inverse()),
                        posemb::rotated(x, minus_p, spec)));
      }
    }
  }
  // Matrices too.
  const posemb::RopeSpec spec = posemb::default_rope_spec(8);
  const Eigen::MatrixXd rows = Eigen::MatrixXd::Random(3, 8);
  PositionVector positions(3);
  positions << 4, 5, 100000;
  const Eigen::MatrixXd rotated = posemb::rotated(rows, positions, spec);
  CHECK((posemb::rotated(rotated, positions, spec, posemb::RotateOptions().inverse()) - rows)
            .cwiseAbs()
            .maxCoeff() < 1e-12);
}

TEST_CASE("the inverse for xPos and FoPE undoes their scale and mixing too") {
  const posemb::Tensor4<double> x = random_tensor4<double>(1, 30, 4, 32, 3);
  const posemb::XposSpec xpos{posemb::default_rope_spec(32, 10000.0), posemb::XposParams{}};
  for (const posemb::XposRole role : {posemb::XposRole::Query, posemb::XposRole::Key}) {
    const posemb::Tensor4<double> y = posemb::rotated(x, 100, posemb::Xpos{xpos, role});
    CHECK(largest_difference(y, x) > 0.1);
    const posemb::Tensor4<double> back =
        posemb::rotated(y, 100, posemb::Xpos{xpos, role}, posemb::RotateOptions().inverse());
    CHECK(largest_difference(back, x) < 1e-12);
  }
  posemb::FopeConfig config;
  config.head_dim = 32;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.train_length = 64;
  const posemb::Fope fope = posemb::make_fope(config);
  const posemb::FopeTable<double> table(fope, 0, 200);
  const posemb::Tensor4<double> y = posemb::rotated(x, 150, fope);
  CHECK(largest_difference(y, x) > 0.1);
  const posemb::Tensor4<double> back =
      posemb::rotated(y, 150, fope, posemb::RotateOptions().inverse());
  CHECK(largest_difference(back, x) < 1e-10);
  CHECK(largest_difference(posemb::rotated(y, 150, table, posemb::RotateOptions().inverse()), x) <
        1e-10);
}

TEST_CASE("rotary_offset rotates features offset .. offset + rotary_dim - 1, passes the rest") {
  const posemb::Tensor4<double> x = random_tensor4<double>(1, 6, 2, 24, 4);
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    posemb::RopeSpec spec = posemb::default_rope_spec(posemb::RotaryDims{24, 8}, 10000.0, pairing);
    spec.rotary_offset = 16;  // the last 8 of 24 features, as DeepSeek-V4 rotates them
    const posemb::Tensor4<double> y = posemb::rotated(x, 3, spec);
    posemb::Tensor4<double> in_place = x;
    posemb::rotate_inplace(in_place, 3, spec);
    CHECK(same_bits(in_place, y));
    for (int s = 0; s < 6; ++s) {
      for (int h = 0; h < 2; ++h) {
        Eigen::VectorXd slice(8);
        for (int i = 0; i < 8; ++i) slice[i] = x(0, s, h, 16 + i);
        const Eigen::VectorXd expected = reference_rope(slice, 3 + s, 8, 10000.0, pairing);
        for (int i = 0; i < 16; ++i) REQUIRE(y(0, s, h, i) == x(0, s, h, i));
        for (int i = 0; i < 8; ++i) CHECK(y(0, s, h, 16 + i) == Approx(expected[i]).margin(1e-12));
      }
    }
    spec.rotary_offset = 17;
    CHECK_THROWS_WITH(
        posemb::rotated(x, 0, spec),
        Catch::Contains("head_dim = 24: expected >= rotary_offset + rotary_dim = 17 + 8"));
    spec.rotary_offset = -2;
    CHECK_THROWS_WITH(posemb::rotated(x, 0, spec), Catch::Contains("rotary_offset = -2"));
  }
}

TEST_CASE("rotating while changing layout equals rotate-then-transpose, bit for bit") {
  const posemb::Tensor4<float> x = random_tensor4<float>(2, 37, 3, 40, 5);  // BSHD
  for (const Pairing pairing : {Pairing::Interleaved, Pairing::RotateHalf}) {
    // Partial rotary: 32 of 40 features rotate, 8 pass.
    posemb::RopeSpec spec = posemb::default_rope_spec(posemb::RotaryDims{40, 32}, 10000.0, pairing);
    const posemb::Tensor4<float> rotated = posemb::rotated(x, 11, spec);
    // BSHD -> BHSD
    posemb::Tensor4<float> out(2, 3, 37, 40);
    posemb::rotate(x, out, 11, spec,
                   posemb::RotateOptions().with_layouts(
                       posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD)));
    CHECK(same_bits(out, transposed(rotated)));
    // BHSD -> BSHD, on two threads
    posemb::Tensor4<float> back(2, 37, 3, 40);
    const posemb::Tensor4<float> x_bhsd = transposed(x);
    posemb::rotate(x_bhsd, back, 11, spec,
                   posemb::RotateOptions{posemb::Layouts(TensorLayout::BHSD, TensorLayout::BSHD),
                                         posemb::Threads{2}});
    CHECK(same_bits(back, rotated));
    // Into a KV-cache slot: [2, 3, 100, 40] at tokens 50 .. 86; the rest untouched.
    posemb::Tensor4<float> cache(2, 3, 100, 40);
    cache.setConstant(-7.0f);
    posemb::rotate(x, cache, 11, spec,
                   posemb::RotateOptions().with_layouts(
                       posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD, 50)));
    for (int b = 0; b < 2; ++b) {
      for (int h = 0; h < 3; ++h) {
        for (int s = 0; s < 100; ++s) {
          for (int d = 0; d < 40; ++d) {
            const float expected = s >= 50 && s < 87 ? rotated(b, s - 50, h, d) : -7.0f;
            REQUIRE(cache(b, h, s, d) == expected);
          }
        }
      }
    }
    // Shapes that do not fit.
    CHECK_THROWS_WITH(posemb::rotate(x, cache, 11, spec,
                                     posemb::RotateOptions().with_layouts(posemb::Layouts(
                                         TensorLayout::BSHD, TensorLayout::BHSD, 64))),
                      Catch::Contains("out_seq_offset = 64"));
    posemb::Tensor4<float> wrong_heads(2, 4, 37, 40);
    CHECK_THROWS_WITH(posemb::rotate(x, wrong_heads, 11, spec,
                                     posemb::RotateOptions().with_layouts(
                                         posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD))),
                      Catch::Contains("out heads = 4: expected the input's heads = 3"));
    posemb::Tensor4<float> alias = x;
    posemb::TensorMap4<float> alias_out(alias.data(), 2, 3, 37, 40);
    CHECK_THROWS_WITH(posemb::rotate(alias, alias_out, 11, spec,
                                     posemb::RotateOptions().with_layouts(
                                         posemb::Layouts(TensorLayout::BSHD, TensorLayout::BHSD))),
                      Catch::Contains("separate buffers"));
  }
}

TEST_CASE("YaRN: shifting cached keys n times applies the attention factor once") {
  const posemb::RopeSpec spec = yarn_spec(64, Pairing::RotateHalf);
  REQUIRE(spec.attention_scale > 1.05);
  const posemb::Tensor4<float> k = random_tensor4<float>(1, 16, 2, 64, 6);
  posemb::Tensor4<float> cache = posemb::rotated(k, 100, spec);
  const auto norms = [](const posemb::Tensor4<float>& t) {
    std::vector<double> out;
    for (Eigen::Index r = 0; r < t.size() / 64; ++r) {
      double sum = 0;
      for (int i = 0; i < 64; ++i) sum += double(t.data()[r * 64 + i]) * t.data()[r * 64 + i];
      out.push_back(std::sqrt(sum));
    }
    return out;
  };
  const std::vector<double> before = norms(cache);
  for (int n = 1; n <= 4; ++n) {
    posemb::shift_keys_inplace(cache, -7, spec);
    const std::vector<double> after = norms(cache);
    for (std::size_t r = 0; r < before.size(); ++r)
      CHECK(after[r] == Approx(before[r]).epsilon(1e-6));
  }
  // And the keys are now what the spec gives at 100 - 28.
  const posemb::Tensor4<float> direct = posemb::rotated(k, 72, spec);
  CHECK(largest_difference(cache, direct) < 2e-5);
}

TEST_CASE("an oversized table is a posemb::Error naming its count, never std::bad_alloc") {
  const posemb::RopeSpec spec = posemb::default_rope_spec(128);
  // Past what an index can hold: refused before any allocation.
  CHECK_THROWS_WITH(posemb::RopeTable<float>(spec, 0, std::int64_t(1) << 62),
                    Catch::Contains("count = 4611686018427387904") &&
                        Catch::Contains("can be indexed"));
#if !defined(__SANITIZE_ADDRESS__)  // ASan reports a failed allocation instead of throwing
  // 2^40 positions x 64 pairs x 2 x 4 bytes = 563 TB: the allocation fails, and says so.
  CHECK_THROWS_AS(posemb::RopeTable<float>(spec, 0, std::int64_t(1) << 40), posemb::Error);
  CHECK_THROWS_WITH(posemb::RopeTable<float>(spec, 0, std::int64_t(1) << 40),
                    Catch::Contains("count = 1099511627776") &&
                        Catch::Contains("can be allocated"));
#endif
}

// ---------------------------------------------------------------------------------------------
// No silent reinterpretation: a spec knows the head it was made for, and positions are checked
// against the sequence axis of the layout given.

TEST_CASE("a spec knows its head_dim: partial rotary is stated, a head of another width throws") {
  using Catch::Matchers::Contains;
  const posemb::RopeSpec llama = posemb::default_rope_spec(128, 500000.0);
  CHECK(llama.head_dim == 128);
  CHECK(llama.rotary_dim == 128);
  CHECK_FALSE(llama.partial());

  // q [1, 7, 16, 256] with Llama's 128-dim spec: refused, naming both widths, with the way to
  // ask for partial rotary.
  posemb::Tensor4<float> q = random_tensor4<float>(1, 7, 16, 256, 7);
  const posemb::Tensor4<float> q_before = q;
  const std::string wider =
      "posemb: head_dim = 256: expected 128, the head_dim this RopeSpec was made for (rotary_dim "
      "128); to rotate only the first 128 of 256 features (partial rotary), make the spec with "
      "RotaryDims{256, 128}";
  CHECK_THROWS_WITH(posemb::rotate_inplace(q, 0, llama), wider);
  CHECK(same_bits(q, q_before));  // nothing rotated
  CHECK_THROWS_WITH(posemb::rotated(q, 0, llama), wider);
  const posemb::RopeTable<float> table(llama, 0, 16);
  CHECK_THROWS_WITH(posemb::rotate_inplace(q, 0, table), wider);
  Eigen::MatrixXf rows = Eigen::MatrixXf::Zero(3, 256);
  CHECK_THROWS_WITH(posemb::rotate_inplace(rows, 5, llama), wider);
  // A narrower head is not a slice of the spec either.
  posemb::Tensor4<float> narrow(1, 7, 16, 64);
  CHECK_THROWS_WITH(posemb::rotate_inplace(narrow, 0, llama),
                    "posemb: head_dim = 64: expected 128, the head_dim this RopeSpec was made for "
                    "(rotary_dim 128)");

  // Stated partial rotary: the first 128 of 256 features rotate as the 128-dim spec rotates a
  // 128-wide head, the other 128 pass through bit-identical.
  const posemb::RopeSpec partial =
      posemb::default_rope_spec(posemb::RotaryDims{256, 128}, 500000.0);
  CHECK(partial.head_dim == 256);
  CHECK(partial.rotary_dim == 128);
  CHECK(partial.partial());
  CHECK(partial.inv_freq == llama.inv_freq);
  const posemb::Tensor4<float> y = posemb::rotated(q, 3, partial);
  posemb::Tensor4<float> first_half(1, 7, 16, 128);
  for (Eigen::Index i = 0; i < first_half.size(); ++i) {
    first_half.data()[i] = q.data()[(i / 128) * 256 + i % 128];
  }
  const posemb::Tensor4<float> first_half_rotated = posemb::rotated(first_half, 3, llama);
  for (Eigen::Index i = 0; i < q.size(); ++i) {
    const Eigen::Index row = i / 256, feature = i % 256;
    REQUIRE(y.data()[i] ==
            (feature < 128 ? first_half_rotated.data()[row * 128 + feature] : q.data()[i]));
  }
  // A partial spec refuses other widths too, without suggesting partial rotary again.
  CHECK_THROWS_WITH(posemb::rotate_inplace(first_half, 0, partial),
                    "posemb: head_dim = 128: expected 256, the head_dim this RopeSpec was made for "
                    "(rotary_dim 128)");

  // Every builder records the head: the scaled variants too.
  posemb::YarnParams yarn;
  yarn.factor = 4.0;
  yarn.original_max_position_embeddings = 2048;
  CHECK(posemb::yarn_rope_spec(posemb::RotaryDims{96, 24}, 1e4, yarn).head_dim == 96);
  CHECK(posemb::linear_rope_spec(64, 1e4, 2.0).head_dim == 64);
  CHECK(posemb::proportional_rope_spec(256, 1e6, {0.25, 1.0}).head_dim == 256);

  // Bad dims, and a hand-built spec without its head.
  CHECK_THROWS_WITH(posemb::default_rope_spec(posemb::RotaryDims{16, 32}),
                    "posemb: head_dim = 16: expected >= rotary_dim = 32 (the features that rotate "
                    "are part of the head)");
  CHECK_THROWS_WITH(posemb::llama3_rope_spec(posemb::RotaryDims{16, 32}, 5e5, {}),
                    Contains("head_dim = 16: expected >= rotary_dim = 32"));
  posemb::RopeSpec hand_built;
  hand_built.inv_freq = posemb::default_inv_freq(8);
  hand_built.rotary_dim = 8;
  posemb::Tensor4<float> x8(1, 2, 1, 8);
  x8.setZero();
  CHECK_THROWS_WITH(posemb::rotate_inplace(x8, 0, hand_built),
                    "posemb: head_dim = 0: expected >= rotary_dim = 8 (set head_dim to the width "
                    "of the heads the spec rotates)");
  hand_built.head_dim = 8;
  CHECK_NOTHROW(posemb::rotate_inplace(x8, 0, hand_built));
}

TEST_CASE("positions must match the seq axis of the layout given, the other layout is named") {
  using Catch::Matchers::Contains;
  const posemb::RopeSpec spec = posemb::default_rope_spec(16);
  // A BSHD buffer [batch 1, seq 7, heads 12, 16] passed as BHSD: seq would be 12.
  posemb::Tensor4<float> k = random_tensor4<float>(1, 7, 12, 16, 8);
  PositionVector seven(7);
  for (int s = 0; s < 7; ++s) seven[s] = 100 + s;
  const std::string as_bhsd =
      "posemb: positions shape = [1, 7]: expected [batch, seq] = [1, 12], seq being "
      "x.dimension(2) under TensorLayout::BHSD [batch, heads, seq, head_dim]; 7 is x.dimension(1), "
      "the seq axis under TensorLayout::BSHD [batch, seq, heads, head_dim]: if x is [batch, seq, "
      "heads, head_dim], pass TensorLayout::BSHD";
  CHECK_THROWS_WITH(posemb::rotate_inplace(
                        k, seven, spec, posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
                    as_bhsd);
  CHECK_THROWS_WITH(
      posemb::rotated(k, seven, spec, posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
      as_bhsd);
  const posemb::RopeTable<float> table(spec, 0, 200);
  CHECK_THROWS_WITH(posemb::rotate_inplace(
                        k, seven, table, posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
                    as_bhsd);
  CHECK_NOTHROW(posemb::rotate_inplace(k, seven, spec));

  // The reverse: a BHSD buffer [1, 12 heads, 7 tokens, 16] passed as BSHD, with a matrix.
  posemb::Tensor4<float> k_bhsd = transposed(k);
  PositionMatrix seven_rows = seven.transpose();
  CHECK_THROWS_WITH(posemb::rotate_inplace(k_bhsd, seven_rows, spec),
                    "posemb: positions shape = [1, 7]: expected [batch, seq] = [1, 12], seq being "
                    "x.dimension(1) under TensorLayout::BSHD [batch, seq, heads, head_dim]; 7 is "
                    "x.dimension(2), the seq axis under TensorLayout::BHSD [batch, heads, seq, "
                    "head_dim]: if x is [batch, heads, seq, head_dim], pass TensorLayout::BHSD");
  posemb::FractionalPositionMatrix fractions = seven_rows.cast<double>();
  CHECK_THROWS_WITH(posemb::rotate_inplace(k_bhsd, fractions, spec),
                    Contains("pass TensorLayout::BHSD"));

  // Positions that fit neither axis: no layout hint; a batch mismatch: none either.
  PositionVector five = PositionVector::Zero(5);
  CHECK_THROWS_WITH(posemb::rotate_inplace(k, five, spec),
                    "posemb: positions shape = [1, 5]: expected [batch, seq] = [1, 7], seq being "
                    "x.dimension(1) under TensorLayout::BSHD [batch, seq, heads, head_dim]");
  PositionMatrix three_rows = PositionMatrix::Zero(3, 7);
  CHECK_THROWS_WITH(posemb::rotate_inplace(k, three_rows, spec),
                    "posemb: positions shape = [3, 7]: expected [batch, seq] = [1, 7]");

  // The other rotary schemes check their positions the same way.
  const posemb::XposSpec xpos{spec, posemb::XposParams{}};
  CHECK_THROWS_WITH(
      posemb::rotate_inplace(k, seven, posemb::Xpos{xpos, posemb::XposRole::Key},
                             posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
      as_bhsd);
  CHECK_THROWS_WITH(posemb::rerotate_keys_inplace(
                        k, seven, spec, posemb::linear_rope_spec(16, 1e4, 2.0), TensorLayout::BHSD),
                    as_bhsd);
  const posemb::MropeSpec mrope =
      posemb::make_mrope_spec(spec, {4, 2, 2}, posemb::MropeLayout::Chunked);
  CHECK_THROWS_WITH(
      posemb::rotate_inplace(k, posemb::MropePositions::text(seven), mrope,
                             posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
      as_bhsd);
  posemb::FopeConfig config;  // 7 heads: what k has along dimension 1 when read as BHSD
  config.head_dim = 16;
  config.n_heads = 7;
  config.n_kv_heads = 7;
  config.train_length = 64;
  const posemb::Fope fope = posemb::make_fope(config);
  posemb::Tensor4<float> k_out(1, 7, 12, 16);
  CHECK_THROWS_WITH(posemb::rotate(k, k_out, seven, fope,
                                   posemb::RotateOptions().with_layouts(TensorLayout::BHSD)),
                    as_bhsd);
}
