// xpos.hpp: RoPE with the xPos decay. Hand-worked values from the paper's recipe, the relative
// property (scores depend on m - n only), decay with distance, and range errors.
#include "posemb/rotary/xpos.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "posemb/rotary/scaled.hpp"

using posemb::XposRole;
using posemb::XposSpec;

namespace {

Eigen::VectorXd random_vector(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = normal(rng);
  return v;
}

XposSpec make_spec(posemb::RopeSpec rope, std::int64_t centre = 0, double scale_base = 512.0) {
  XposSpec spec;
  spec.rope = std::move(rope);
  spec.params.centre = centre;
  spec.params.scale_base = scale_base;
  return spec;
}

// <xpos_query(q, m), xpos_key(k, n)> in storage type T, accumulated in double.
template <class T>
double score(const XposSpec& spec, const Eigen::VectorXd& q, const Eigen::VectorXd& k,
             std::int64_t m, std::int64_t n, XposRole key_role = XposRole::Key) {
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  V qx = q.cast<T>(), kx = k.cast<T>();
  posemb::rotate_inplace(qx, posemb::PositionVector::Constant(1, m),
                         posemb::Xpos{spec, XposRole::Query});
  posemb::rotate_inplace(kx, posemb::PositionVector::Constant(1, n), posemb::Xpos{spec, key_role});
  return qx.template cast<double>().dot(kx.template cast<double>());
}

}  // namespace

TEST_CASE("xPos zeta and scales by hand", "[xpos]") {
  // d = 4, gamma 0.4: zeta_0 = 0.4/1.4 = 2/7, zeta_1 = (0.5 + 0.4)/1.4 = 9/14.
  CHECK(posemb::xpos_zeta(0, 4, 0.4) == Approx(2.0 / 7.0).epsilon(1e-15));
  CHECK(posemb::xpos_zeta(1, 4, 0.4) == Approx(9.0 / 14.0).epsilon(1e-15));
  posemb::XposParams p;
  CHECK(posemb::xpos_scale(0, 512, 4, p, XposRole::Query) == Approx(2.0 / 7.0).epsilon(1e-15));
  CHECK(posemb::xpos_scale(0, 512, 4, p, XposRole::Key) == Approx(7.0 / 2.0).epsilon(1e-15));
  p.centre = 1024;
  CHECK(posemb::xpos_scale(1, 0, 4, p, XposRole::Query) == Approx(196.0 / 81.0).epsilon(1e-14));

  // With zero frequencies only the decay is left: q = k = ones(4), m - n = 512:
  // score = 2 * 2/7 + 2 * 9/14 = 13/7.
  posemb::RopeSpec still;
  still.rotary_dim = 4;
  still.head_dim = 4;
  still.inv_freq = Eigen::VectorXd::Zero(2);
  const XposSpec spec = make_spec(still);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(4);
  CHECK(score<double>(spec, ones, ones, 512, 0) == Approx(13.0 / 7.0).epsilon(1e-14));
  CHECK(score<double>(spec, ones, ones, 700, 188) == Approx(13.0 / 7.0).epsilon(1e-14));
  CHECK(score<double>(spec, ones, ones, 9, 9) == Approx(4.0).epsilon(1e-15));
}

TEST_CASE("xPos scores depend only on m - n", "[xpos][relative]") {
  const int d = 64;
  const Eigen::VectorXd q = random_vector(d, 1), k = random_vector(d, 2);
  const double norm = q.norm() * k.norm();
  for (const auto pairing : {posemb::Pairing::RotateHalf, posemb::Pairing::Interleaved}) {
    const XposSpec spec = make_spec(posemb::default_rope_spec(d, 10000.0, pairing));
    for (std::int64_t distance : {0, 1, 5, 100, 511, 2000}) {
      const double want = score<double>(spec, q, k, distance, 0);
      for (std::int64_t n : {1, 17, 300, 1000}) {
        CHECK(std::fabs(score<double>(spec, q, k, n + distance, n) - want) <= 1e-12 * norm);
        CHECK(std::fabs(score<float>(spec, q, k, n + distance, n) - want) <= 1e-5 * norm);
      }
    }
  }
  // With a scaled spec and an attention factor (YaRN): scores still relative.
  posemb::YarnParams y;
  y.factor = 8.0;
  y.original_max_position_embeddings = 4096;
  const XposSpec yarn = make_spec(posemb::yarn_rope_spec(d, 1e4, y));
  const double s2 = yarn.rope.attention_scale * yarn.rope.attention_scale;
  CHECK(std::fabs(score<double>(yarn, q, k, 900, 400) - score<double>(yarn, q, k, 500, 0)) <=
        1e-12 * s2 * norm);
}

TEST_CASE("xPos at long positions with a centre", "[xpos][relative]") {
  const int d = 64;
  const Eigen::VectorXd q = random_vector(d, 3), k = random_vector(d, 4);
  const double norm = q.norm() * k.norm();
  const XposSpec near = make_spec(posemb::default_rope_spec(d));
  for (std::int64_t n : {std::int64_t{1000000}, std::int64_t{5000000}}) {
    const XposSpec spec = make_spec(posemb::default_rope_spec(d), n);
    for (std::int64_t distance : {0, 3, 250, 3000}) {
      const double want = score<double>(near, q, k, distance, 0);
      // p * inv_freq at p ~ 5e6 is rounded by up to 5e-10 rad in double (4e-12 seen here), so
      // the 1e-12 of short positions is out of reach; the scales themselves stay exact.
      CHECK(std::fabs(score<double>(spec, q, k, n + distance, n) - want) <= 1e-10 * norm);
      CHECK(std::fabs(score<float>(spec, q, k, n + distance, n) - want) <= 1e-5 * norm);
    }
  }
}

TEST_CASE("xPos scores decay with distance", "[xpos]") {
  posemb::RopeSpec still;  // zero frequencies: the decay alone
  still.rotary_dim = 32;
  still.head_dim = 32;
  still.inv_freq = Eigen::VectorXd::Zero(16);
  const XposSpec spec = make_spec(still);
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(32);
  double previous = score<double>(spec, ones, ones, 0, 0);
  CHECK(previous == Approx(32.0));
  for (std::int64_t distance = 16; distance <= 4096; distance *= 2) {
    const double s = score<double>(spec, ones, ones, distance, 0);
    CHECK(s < previous);
    CHECK(s > 0.0);
    previous = s;
  }
  // The envelope bounds a rotating spec too: |score| <= sum_i zeta_i^((m-n)/512) |q_i| |k_i|.
  const XposSpec rotating = make_spec(posemb::default_rope_spec(32));
  const Eigen::VectorXd q = random_vector(32, 5), k = random_vector(32, 6);
  for (std::int64_t distance : {100, 1000, 3000}) {
    double bound = 0.0;
    for (int i = 0; i < 16; ++i) {
      const double z = std::pow(posemb::xpos_zeta(i, 32, 0.4), distance / 512.0);
      bound += z * std::hypot(q[i], q[i + 16]) * std::hypot(k[i], k[i + 16]);
    }
    CHECK(std::fabs(score<double>(rotating, q, k, distance, 0)) <= bound * (1 + 1e-12));
  }
}

TEST_CASE("xPos with the same scale on q and k is not relative", "[xpos]") {
  const Eigen::VectorXd q = random_vector(16, 7), k = random_vector(16, 8);
  const XposSpec spec = make_spec(posemb::default_rope_spec(16));
  const double want = score<double>(spec, q, k, 40, 0, XposRole::Query);
  CHECK(std::fabs(score<double>(spec, q, k, 540, 500, XposRole::Query) - want) > 1e-3);
}

TEST_CASE("xPos tensors match the matrix path, partial rotary tail untouched", "[xpos]") {
  const int batch = 2, seq = 5, heads = 3, head_dim = 12;
  posemb::Tensor4<double> x(batch, seq, heads, head_dim);
  x.setRandom();
  const posemb::Tensor4<double> original = x;
  const XposSpec spec = make_spec(
      posemb::default_rope_spec({head_dim, 8}, 100.0, posemb::Pairing::Interleaved), 3, 16.0);
  posemb::PositionMatrix positions(batch, seq);
  positions << 0, 1, 2, 3, 4, 7, 8, 9, 10, 11;
  posemb::rotate_inplace(x, positions, posemb::Xpos{spec, XposRole::Key});
  for (int b = 0; b < batch; ++b) {
    for (int s = 0; s < seq; ++s) {
      for (int h = 0; h < heads; ++h) {
        Eigen::VectorXd v(head_dim);
        for (int i = 0; i < head_dim; ++i) v[i] = original(b, s, h, i);
        const Eigen::VectorXd want =
            posemb::rotated(v, posemb::PositionVector::Constant(1, positions(b, s)),
                            posemb::Xpos{spec, XposRole::Key});
        for (int i = 0; i < head_dim; ++i) CHECK(x(b, s, h, i) == want[i]);
        for (int i = 8; i < head_dim; ++i) CHECK(x(b, s, h, i) == original(b, s, h, i));
      }
    }
  }
  // BHSD with an offset, out of place.
  posemb::Tensor4<float> y(1, 2, 3, head_dim);
  y.setConstant(1.0f);
  const posemb::Tensor4<float> out =
      posemb::rotated(y, std::int64_t{10}, posemb::Xpos{spec, XposRole::Query},
                      posemb::RotateOptions().with_layouts(posemb::TensorLayout::BHSD));
  Eigen::VectorXf v = Eigen::VectorXf::Ones(head_dim);
  posemb::rotate_inplace(v, posemb::PositionVector::Constant(1, 12),
                         posemb::Xpos{spec, XposRole::Query});
  for (int i = 0; i < head_dim; ++i) CHECK(out(0, 1, 2, i) == v[i]);
}

TEST_CASE("xPos scales outside the storage type's range throw", "[xpos][errors]") {
  const XposSpec spec = make_spec(posemb::default_rope_spec(64));
  // zeta_0 = 2/7: float's normal range ends near |p - c| = 512 * 87.3 / 1.2528 ~ 35.7k.
  Eigen::VectorXf q = Eigen::VectorXf::Ones(64);
  CHECK_NOTHROW(posemb::rotate_inplace(q, posemb::PositionVector::Constant(1, 35000),
                                       posemb::Xpos{spec, XposRole::Query}));
  q.setOnes();
  CHECK_THROWS_WITH(posemb::rotate_inplace(q, posemb::PositionVector::Constant(1, 40000),
                                           posemb::Xpos{spec, XposRole::Query}),
                    Catch::Contains("position = 40000") && Catch::Contains("centre"));
  CHECK(q == Eigen::VectorXf::Ones(64));  // nothing modified
  CHECK_THROWS_AS(posemb::rotate_inplace(q, posemb::PositionVector::Constant(1, 40000),
                                         posemb::Xpos{spec, XposRole::Key}),
                  posemb::Error);  // overflow
  CHECK_THROWS_AS(posemb::rotate_inplace(q, posemb::PositionVector::Constant(1, -40000),
                                         posemb::Xpos{spec, XposRole::Query}),
                  posemb::Error);
  // A centre near the positions keeps them in range.
  CHECK_NOTHROW(posemb::rotate_inplace(
      q, posemb::PositionVector::Constant(1, 40000),
      posemb::Xpos{make_spec(posemb::default_rope_spec(64), 39000), XposRole::Query}));
  // Double reaches ~290k, half ~4k.
  Eigen::VectorXd qd = Eigen::VectorXd::Ones(64);
  CHECK_NOTHROW(posemb::rotate_inplace(qd, posemb::PositionVector::Constant(1, 250000),
                                       posemb::Xpos{spec, XposRole::Key}));
  CHECK_THROWS_AS(posemb::rotate_inplace(qd, posemb::PositionVector::Constant(1, 300000),
                                         posemb::Xpos{spec, XposRole::Key}),
                  posemb::Error);
  posemb::Tensor4<Eigen::half> h(1, 2, 1, 64);
  h.setConstant(Eigen::half(1.0f));
  CHECK_THROWS_AS(
      posemb::rotate_inplace(h, std::int64_t{5000}, posemb::Xpos{spec, XposRole::Query}),
      posemb::Error);
  CHECK(static_cast<float>(h(0, 1, 0, 0)) == 1.0f);
  CHECK_NOTHROW(posemb::rotate_inplace(h, std::int64_t{3000}, posemb::Xpos{spec, XposRole::Query}));
  posemb::Tensor4<Eigen::bfloat16> bf(1, 1, 1, 64);  // float's exponent range
  bf.setConstant(Eigen::bfloat16(1.0f));
  CHECK_NOTHROW(posemb::rotate_inplace(bf, std::int64_t{35000}, posemb::Xpos{spec, XposRole::Key}));
  CHECK_THROWS_AS(
      posemb::rotate_inplace(bf, std::int64_t{40000}, posemb::Xpos{spec, XposRole::Key}),
      posemb::Error);
  // Bad parameters.
  XposSpec bad = spec;
  bad.params.scale_base = 0.0;
  CHECK_THROWS_WITH(posemb::rotated(q, posemb::PositionVector::Constant(1, 1),
                                    posemb::Xpos{bad, XposRole::Query}),
                    Catch::Contains("scale_base = 0"));
  bad = spec;
  bad.params.gamma = -0.4;
  CHECK_THROWS_WITH(posemb::rotated(q, posemb::PositionVector::Constant(1, 1),
                                    posemb::Xpos{bad, XposRole::Query}),
                    Catch::Contains("gamma"));
  CHECK_THROWS_WITH(posemb::rotated(q, posemb::PositionVector::Constant(2, 1),
                                    posemb::Xpos{spec, XposRole::Query}),
                    Catch::Contains("positions.size() = 2"));
}
