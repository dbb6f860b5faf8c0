// Tests for posemb/rotary/vision.hpp: the vision conformance cases (tests/data/multimodal), the
// merge-block patch order, the identity at patch (0, 0), frames repeating, each tower's pair
// frequencies against a direct formula, the 2-D relative property, and errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "posemb/io/npy.hpp"
#include "posemb/rotary/vision.hpp"
#include "support.hpp"

using posemb::PositionMatrix;
using posemb::Tensor4;
using posemb::VisionRope;
using test_support::throws_with;

namespace {

const std::string multimodal_data = std::string(POSEMB_TEST_DATA_DIR) + "/multimodal/";

Tensor4<double> random_patches(Eigen::Index patches, Eigen::Index heads, Eigen::Index head_dim) {
  std::mt19937 rng(17);
  std::normal_distribution<double> normal;
  Tensor4<double> x(1, patches, heads, head_dim);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
  return x;
}

// X.npy [patches, heads, head_dim] as a BSHD tensor of batch 1.
template <class T>
Tensor4<T> patches_of(const posemb::NpyArray& array) {
  REQUIRE(array.shape.size() == 3);
  Tensor4<T> x(1, array.shape[0], array.shape[1], array.shape[2]);
  const auto values = array.values<T>();
  std::copy(values.begin(), values.end(), x.data());
  return x;
}

using test_support::max_abs_diff;

}  // namespace

TEST_CASE("conformance: the vision cases, float32 within 1e-5 and float64 within 1e-12") {
  struct Case {
    const char* name;
    VisionRope rope;
    std::int64_t t, h, w;
  };
  const Case cases[] = {
      // vision_config embed_dim 64 / num_heads 4 = 16, merge 2
      {"vision_qwen2vl_1x4x6", posemb::qwen2_vl_vision_rope(16, 2), 1, 4, 6},
      // vision_config head_dim 16, rope_theta 10000
      {"vision_pixtral_1x3x5", posemb::pixtral_vision_rope(16, 10000.0), 1, 3, 5},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      const std::string dir = multimodal_data + c.name + "/";
      const auto x = patches_of<float>(posemb::read_npy(dir + "X.npy"));
      const auto expected = patches_of<double>(posemb::read_npy(dir + "Y.npy"));
      const PositionMatrix patches = posemb::vision_patch_positions(c.rope, c.t, c.h, c.w);
      CHECK(max_abs_diff(posemb::rotated(x, patches, c.rope), expected) <= 1e-5);
      const Tensor4<double> x64 = x.cast<double>();
      CHECK(max_abs_diff(posemb::rotated(x64, patches, c.rope), expected) <= 1e-12);
    }
  }
}

TEST_CASE("Qwen patches come in merge-block order, Pixtral's row-major") {
  const PositionMatrix qwen =
      posemb::vision_patch_positions(posemb::qwen2_vl_vision_rope(16, 2), 1, 4, 6);
  const std::vector<std::pair<int, int>> first = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3},
                                                  {1, 2}, {1, 3}, {0, 4}, {0, 5}, {1, 4}, {1, 5},
                                                  {2, 0}, {2, 1}, {3, 0}, {3, 1}};
  for (std::size_t n = 0; n < first.size(); ++n) {
    CAPTURE(n);
    CHECK(qwen(0, Eigen::Index(n)) == 0);
    CHECK(qwen(1, Eigen::Index(n)) == first[n].first);
    CHECK(qwen(2, Eigen::Index(n)) == first[n].second);
  }
  const PositionMatrix pixtral =
      posemb::vision_patch_positions(posemb::pixtral_vision_rope(16), 1, 3, 5);
  for (Eigen::Index n = 0; n < 15; ++n) {
    CHECK(pixtral(1, n) == n / 5);
    CHECK(pixtral(2, n) == n % 5);
  }
}

TEST_CASE("patch (0, 0) is the identity and every frame repeats the same angles") {
  const VisionRope rope = posemb::qwen2_vl_vision_rope(32, 2);
  const PositionMatrix patches = posemb::vision_patch_positions(rope, 2, 4, 4);  // 2 frames of 16
  Tensor4<double> x = random_patches(16, 3, 32);
  Tensor4<double> two_frames(1, 32, 3, 32);
  two_frames.slice(Eigen::array<Eigen::Index, 4>{0, 0, 0, 0}, x.dimensions()) = x;
  two_frames.slice(Eigen::array<Eigen::Index, 4>{0, 16, 0, 0}, x.dimensions()) = x;
  const auto y = posemb::rotated(two_frames, patches, rope);
  bool identity = true, repeated = true;
  for (int h = 0; h < 3; ++h)
    for (int d = 0; d < 32; ++d) identity = identity && y(0, 0, h, d) == x(0, 0, h, d);
  for (int s = 0; s < 16; ++s)
    for (int h = 0; h < 3; ++h)
      for (int d = 0; d < 32; ++d) repeated = repeated && y(0, s, h, d) == y(0, 16 + s, h, d);
  CHECK(identity);
  CHECK(repeated);
  const VisionRope pixtral = posemb::pixtral_vision_rope(32, 10000.0);
  const auto z = posemb::rotated(x, posemb::vision_patch_positions(pixtral, 1, 4, 4), pixtral);
  for (int d = 0; d < 32; ++d) CHECK(z(0, 0, 0, d) == x(0, 0, 0, d));
}

// Pair j of a patch at (row, col) turns by the angle the header comment gives, checked with libm.
TEST_CASE("each tower's pair frequencies: rows then columns, Pixtral even then odd") {
  const int head_dim = 24, quarter = 6;
  for (const bool pixtral : {false, true}) {
    CAPTURE(pixtral);
    const double theta = pixtral ? 1e5 : 1e4;
    const VisionRope rope = pixtral ? posemb::pixtral_vision_rope(head_dim, theta)
                                    : posemb::qwen2_vl_vision_rope(head_dim, 1);
    const PositionMatrix patches = posemb::vision_patch_positions(rope, 1, 5, 7);
    const auto x = random_patches(35, 1, head_dim);
    const auto y = posemb::rotated(x, patches, rope);
    double worst = 0.0;
    for (Eigen::Index n = 0; n < 35; ++n) {
      for (int j = 0; j < head_dim / 2; ++j) {
        const bool row_pair = j < quarter;
        const int k = row_pair ? j : j - quarter;
        // Pixtral: f_i = theta^(-2i / head_dim) at i = 2k (rows) or 2k + 1 (columns)
        const int i = row_pair ? 2 * k : 2 * k + 1;
        const double f = pixtral ? std::pow(theta, -2.0 * i / head_dim)
                                 : std::pow(theta, -2.0 * k / (head_dim / 2));
        const double angle = double(patches(row_pair ? 1 : 2, n)) * f;
        const double a = x(0, n, 0, j), b = x(0, n, 0, j + head_dim / 2);
        worst =
            std::max({worst, std::fabs(y(0, n, 0, j) - (a * std::cos(angle) - b * std::sin(angle))),
                      std::fabs(y(0, n, 0, j + head_dim / 2) -
                                (a * std::sin(angle) + b * std::cos(angle)))});
      }
    }
    CHECK(worst <= 1e-13);
  }
}

TEST_CASE("2-D relative position: the score depends on the (row, col) offset only") {
  const VisionRope rope = posemb::qwen2_vl_vision_rope(16, 1);
  const auto q = random_patches(1, 1, 16);
  const auto k = random_patches(1, 1, 16);
  const auto score = [&](std::int64_t qr, std::int64_t qc, std::int64_t kr, std::int64_t kc) {
    PositionMatrix pq = PositionMatrix::Zero(3, 1), pk = PositionMatrix::Zero(3, 1);
    pq(1, 0) = qr, pq(2, 0) = qc, pk(1, 0) = kr, pk(2, 0) = kc;
    const auto rq = posemb::rotated(q, pq, rope);
    const auto rk = posemb::rotated(k, pk, rope);
    double dot = 0.0;
    for (int d = 0; d < 16; ++d) dot += rq(0, 0, 0, d) * rk(0, 0, 0, d);
    return dot;
  };
  const double base = score(3, 5, 1, 2);
  CHECK(score(13, 25, 11, 22) == Approx(base).margin(1e-12));
  CHECK(score(2, 3, 0, 0) == Approx(base).margin(1e-12));
  CHECK(std::fabs(score(3, 5, 2, 1) - base) > 1e-6);  // (1, 4) is another offset than (2, 3)
}

TEST_CASE("vision: bad grids and head dims throw posemb::Error") {
  throws_with([] { (void)posemb::qwen2_vl_vision_rope(18); },
              "head_dim = 18: expected a multiple of 4");
  throws_with([] { (void)posemb::pixtral_vision_rope(16, 0.0); }, "base = 0");
  const VisionRope qwen = posemb::qwen2_vl_vision_rope(16, 2);
  throws_with([&] { (void)posemb::vision_patch_positions(qwen, 1, 5, 4); },
              "grid h = 5: expected a multiple of spatial_merge_size = 2");
  throws_with([&] { (void)posemb::vision_patch_positions(qwen, 0, 4, 4); }, "grid t = 0");
  // 2^60 patches cannot be indexed; 2^54 cannot be allocated: posemb::Error, not std::bad_alloc.
  throws_with([&] { (void)posemb::vision_patch_positions(qwen, 1 << 20, 1 << 20, 1 << 20); },
              "grid t * h * w = 1152921504606846976: expected a size whose a table of");
#if !defined(__SANITIZE_ADDRESS__)  // ASan reports a failed allocation instead of throwing
  throws_with([&] { (void)posemb::vision_patch_positions(qwen, 1 << 14, 1 << 20, 1 << 20); },
              "can be allocated");
#endif
  const VisionRope pixtral = posemb::pixtral_vision_rope(16);
  throws_with([&] { (void)posemb::vision_patch_positions(pixtral, 2, 3, 5); },
              "grid t = 2: expected 1 (one image per grid)");
  const PositionMatrix patches = posemb::vision_patch_positions(qwen, 1, 4, 4);
  const auto x = random_patches(15, 1, 16);
  throws_with([&] { (void)posemb::rotated(x, patches, qwen); }, "positions shape = [3, 1, 16]");
}
