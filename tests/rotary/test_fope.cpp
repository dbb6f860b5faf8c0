// Tests for posemb/rotary/fope.hpp: the authors' outputs (tests/data/fope, see its README), the
// clip floor counted by hand, identity coefficients = RoPE, the noise statistics, and properties of
// the kernel (table, layouts, KV-cache offsets, GQA, large positions, errors).
#include <algorithm>
#include <catch2/catch.hpp>

#include "support.hpp"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "posemb/rotary/fope.hpp"
#include "posemb/io/npy.hpp"
#include "posemb/rotary/rope.hpp"

using Catch::Matchers::Contains;
using posemb::Fope;
using posemb::FopeConfig;
using posemb::PositionMatrix;
using posemb::Tensor4;
using posemb::TensorLayout;
using posemb::TensorMap4;

namespace {

const std::string fope_data = std::string(POSEMB_TEST_DATA_DIR) + "/fope/";

struct ConformanceCase {
  FopeConfig config;
  nlohmann::json meta;
  std::vector<float> x, y, sin_coef, cos_coef, inv_freq;
  std::vector<std::int64_t> x_shape, coef_shape, positions;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// config.json -> FopeConfig, the mapping a config loader makes.
ConformanceCase load_case(const std::string& name) {
  const std::string dir = fope_data + name + "/";
  const auto config = read_json(dir + "config.json");
  const auto& scaling = config.at("rope_scaling");
  REQUIRE(scaling.at("rope_type") == "fope");
  REQUIRE(scaling.at("clip_floor_to_zero") == true);
  ConformanceCase c;
  c.config.head_dim = config.at("head_dim");
  c.config.n_heads = config.at("num_attention_heads");
  c.config.theta = config.at("rope_theta");
  c.config.train_length = scaling.at("train_length");
  c.config.sigma = scaling.at("sigma");
  c.config.d_out = scaling.at("d_out");
  c.config.drop_clipped = scaling.at("ignore_zero");
  c.config.padding_sin = scaling.at("padding_sin");
  c.meta = read_json(dir + "meta.json");
  const auto x = posemb::read_npy(dir + "x.npy");
  const auto y = posemb::read_npy(dir + "y.npy");
  const auto sin_coef = posemb::read_npy(dir + "sin_coef.npy");
  const auto cos_coef = posemb::read_npy(dir + "cos_coef.npy");
  c.x = x.values<float>();
  c.y = y.values<float>();
  c.x_shape = x.shape;
  REQUIRE(y.shape == x.shape);
  c.sin_coef = sin_coef.values<float>();
  c.cos_coef = cos_coef.values<float>();
  c.coef_shape = sin_coef.shape;
  REQUIRE(cos_coef.shape == sin_coef.shape);
  c.inv_freq = posemb::read_npy(dir + "inv_freq.npy").values<float>();
  c.positions = posemb::read_npy(dir + "positions.npy").values<std::int64_t>();
  return c;
}

template <class T>
Tensor4<T> random_tensor(Eigen::Index a, Eigen::Index b, Eigen::Index c, Eigen::Index d,
                         unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Tensor4<T> x(a, b, c, d);
  for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(uniform(engine));
  return x;
}

using test_support::max_abs_diff;

template <class T>
bool bit_equal(const Tensor4<T>& a, const Tensor4<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(T) * a.size()) == 0;
}

// [batch, seq, heads, dim] <-> [batch, heads, seq, dim]
template <class T>
Tensor4<T> swap_seq_heads(const Tensor4<T>& x) {
  const Eigen::array<Eigen::Index, 4> order = {0, 2, 1, 3};
  Tensor4<T> out = x.shuffle(order);
  return out;
}

FopeConfig small_config(double sigma = 0.3) {
  FopeConfig config;
  config.head_dim = 64;
  config.n_heads = 4;
  config.train_length = 512;
  config.sigma = sigma;
  config.seed = 7;
  return config;
}

}  // namespace

TEST_CASE("FoPE reproduces the authors' FourierEmbedding on every conformance case", "[fope]") {
  const auto name = GENERATE(as<std::string>{}, "a_hd64_h8_N512_S32", "b_hd16_h2_N64_S128_extrap",
                             "c_identity_hd64_h4_N512_S40", "c2_stepeye_hd64_h4_N4096_S48");
  INFO("case " << name);
  const ConformanceCase c = load_case(name);
  const Fope fope = posemb::fope_with_coefficients(c.config, c.sin_coef.data(), c.coef_shape,
                                                   c.cos_coef.data(), c.coef_shape);
  // The checkpoint arrays are used in place, not copied.
  CHECK_FALSE(fope.owns_coefficients());
  CHECK(fope.sin_coef().data() == c.sin_coef.data());
  CHECK(fope.cos_coef().data() == c.cos_coef.data());

  // The clip floor keeps what the reference kept (its float32 inv_freq, to float rounding).
  REQUIRE(fope.d_in() == c.meta.at("D_in").get<int>());
  REQUIRE(fope.d_out() == c.meta.at("D_out").get<int>());
  REQUIRE(static_cast<int>(c.inv_freq.size()) == fope.d_in());
  for (int k = 0; k < fope.d_in(); ++k) {
    CHECK(std::abs(fope.inv_freq()[k] - c.inv_freq[k]) <= 3e-7 * c.inv_freq[k]);
  }

  const Eigen::Index S = c.x_shape[1], H = c.x_shape[2], D = c.x_shape[3];
  const TensorMap4<const float> x(c.x.data(), 1, S, H, D);
  const TensorMap4<const float> y(c.y.data(), 1, S, H, D);
  PositionMatrix positions(1, S);
  for (Eigen::Index s = 0; s < S; ++s) positions(0, s) = c.positions[s];

  double max_y = 0.0;
  for (float v : c.y) max_y = std::max(max_y, std::abs(static_cast<double>(v)));
  const double tolerance = 1e-5 * std::max(1.0, max_y);

  const Tensor4<float> out = posemb::rotated(x, positions, fope);
  const double error = max_abs_diff(out, y);
  INFO("max |out - y| = " << error << ", tolerance " << tolerance);
  CHECK(error <= tolerance);

  // Double storage: the same answer to the reference's own float32 accuracy.
  const Tensor4<double> x64 = x.cast<double>();
  CHECK(max_abs_diff(posemb::rotated(x64, positions, fope), y) <= tolerance);

  // A scalar offset 0 is positions 0..S-1, which is what these cases hold.
  CHECK(bit_equal(posemb::rotated(x, 0, fope), out));

  // Table, in place and BHSD all give the same bits as the direct BSHD path.
  const posemb::FopeTable<float> table(fope, 0, S);
  CHECK(bit_equal(posemb::rotated(x, positions, table), out));
  Tensor4<float> in_place = x;
  posemb::rotate_inplace(in_place, positions, fope);
  CHECK(bit_equal(in_place, out));
  const Tensor4<float> x_bhsd = swap_seq_heads(Tensor4<float>(x));
  const Tensor4<float> out_bhsd = posemb::rotated(
      x_bhsd, positions, fope, posemb::RotateOptions().with_layouts(TensorLayout::BHSD));
  CHECK(bit_equal(swap_seq_heads(out_bhsd), out));

  // With sigma = 0 the initialiser gives the reference's identity / step-eye matrices exactly.
  if (c.config.sigma == 0.0) {
    const Fope initialised = posemb::make_fope(c.config);
    REQUIRE(initialised.sin_coef().size() == static_cast<Eigen::Index>(c.sin_coef.size()));
    CHECK(std::memcmp(initialised.sin_coef().data(), c.sin_coef.data(),
                      sizeof(float) * c.sin_coef.size()) == 0);
    CHECK(std::memcmp(initialised.cos_coef().data(), c.cos_coef.data(),
                      sizeof(float) * c.cos_coef.size()) == 0);
  }
}

TEST_CASE("the clip floor keeps exactly the frequencies w_k >= 2 pi / N", "[fope]") {
  // By hand: w_k = 10000^(-2k/d) = 10^(-8k/d) is kept iff 10^(-8k/d) >= 2 pi / N, i.e.
  //   k <= (d / 8) log10(N / (2 pi)).
  //   N = 512:  log10(512 / 2 pi)  = log10(81.487)  = 1.91109
  //     d = 64:  k <= 8 * 1.91109  = 15.29  -> k = 0..15, 16 of 32 kept
  //     d = 128: k <= 16 * 1.91109 = 30.58  -> k = 0..30, 31 of 64 kept
  //   N = 1024: log10(1024 / 2 pi) = log10(162.97) = 2.21212
  //     d = 64:  k <= 8 * 2.21212  = 17.70  -> 18 of 32 kept
  //     d = 128: k <= 16 * 2.21212 = 35.39  -> 36 of 64 kept
  //   floor_ratio 2 (floor 4 pi / 512): log10(256 / 2 pi) = 1.61006, d = 64: k <= 12.88 -> 13
  struct Expected {
    int head_dim;
    std::int64_t n;
    double ratio;
    int kept;
  };
  for (const Expected e :
       {Expected{64, 512, 1.0, 16}, Expected{128, 512, 1.0, 31}, Expected{64, 1024, 1.0, 18},
        Expected{128, 1024, 1.0, 36}, Expected{64, 512, 2.0, 13}}) {
    INFO("head_dim " << e.head_dim << ", N " << e.n << ", ratio " << e.ratio);
    const auto f = posemb::fope_clip_floor(posemb::default_inv_freq(e.head_dim), e.n, e.ratio);
    CHECK(f.pairs() == e.head_dim / 2);
    CHECK(f.d_in() == e.kept);
    CHECK(f.clipped_count() == e.head_dim / 2 - e.kept);
    CHECK(f.floor == Approx(2.0 * M_PI / static_cast<double>(e.n) * e.ratio).epsilon(1e-15));
    for (int k = 0; k < f.pairs(); ++k) CHECK(f.clipped[k] == (k >= e.kept));
    for (int k = 0; k < e.kept; ++k) CHECK(f.inv_freq[k] == f.base_inv_freq[k]);
  }
  // Through make_fope: D_in and the default D_out = min(D_in, head_dim / 4).
  FopeConfig config = small_config();
  config.head_dim = 128;
  CHECK(posemb::make_fope(config).d_in() == 31);
  CHECK(posemb::make_fope(config).d_out() == 31);
  config.train_length = 1024;
  CHECK(posemb::make_fope(config).d_in() == 36);
  CHECK(posemb::make_fope(config).d_out() == 32);

  // Strictly below the floor: a frequency equal to the floor is kept. Kept as 0 when not
  // dropped; floor_ratio 0 clips nothing.
  const double floor = posemb::two_pi / 512.0;
  Eigen::VectorXd base(4);
  base << 1.0, floor, std::nextafter(floor, 0.0), 0.5 * floor;
  const auto dropped = posemb::fope_clip_floor(base, 512);
  REQUIRE(dropped.d_in() == 2);
  CHECK(dropped.inv_freq[1] == floor);
  CHECK((dropped.clipped == Eigen::Array<bool, 4, 1>(false, false, true, true)).all());
  const auto kept = posemb::fope_clip_floor(base, 512, 1.0, false);
  REQUIRE(kept.d_in() == 4);
  CHECK(kept.inv_freq[0] == 1.0);
  CHECK(kept.inv_freq[1] == floor);
  CHECK(kept.inv_freq[2] == 0.0);
  CHECK(kept.inv_freq[3] == 0.0);
  CHECK(posemb::fope_clip_floor(base, 512, 0.0).d_in() == 4);
  // Kept zeros widen the default D_out to head_dim / 2 (the reference without ignore_zero).
  FopeConfig keep_zeros = small_config();
  keep_zeros.drop_clipped = false;
  const Fope with_zeros = posemb::make_fope(keep_zeros);
  CHECK(with_zeros.d_in() == 32);
  CHECK(with_zeros.d_out() == 32);
}

TEST_CASE("identity coefficients give rotate-half RoPE on the retained frequencies", "[fope]") {
  // head_dim 64, N 512: D_in = 16 = head_dim / 4 = D_out, so sigma 0 gives the identity.
  const double padding_sin = GENERATE(1.0, 0.0);
  INFO("padding_sin " << padding_sin);
  FopeConfig config = small_config(0.0);
  config.n_heads = 2;
  config.padding_sin = padding_sin;
  const Fope fope = posemb::make_fope(config);
  REQUIRE(fope.d_in() == 16);
  REQUIRE(fope.d_out() == 16);

  const Tensor4<double> x = random_tensor<double>(2, 5, 2, 64, 11);
  PositionMatrix positions(2, 5);
  positions << 0, 1, 2, 511, 512, 7, 1000, 4097, 123456, -3;
  const Tensor4<double> y = posemb::rotated(x, positions, fope);

  // RoPE over the 32 features (x_0..x_15, x_32..x_47): rotate-half pairs (j, j + 16) there are
  // FoPE's pairs (j, j + 32).
  posemb::RopeSpec spec;
  spec.inv_freq = fope.inv_freq();
  spec.rotary_dim = 32;
  spec.head_dim = 32;
  spec.pairing = posemb::Pairing::RotateHalf;
  double error = 0.0;
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 5; ++s) {
      for (int h = 0; h < 2; ++h) {
        Eigen::VectorXd v(32);
        for (int j = 0; j < 16; ++j) {
          v[j] = x(b, s, h, j);
          v[16 + j] = x(b, s, h, 32 + j);
        }
        posemb::rotate_inplace(v, positions(b, s), spec);
        for (int j = 0; j < 16; ++j) {
          error = std::max(error, std::abs(y(b, s, h, j) - v[j]));
          error = std::max(error, std::abs(y(b, s, h, 32 + j) - v[16 + j]));
        }
        // Padded slots: C = 1, S = padding_sin at every position.
        for (int j = 16; j < 32; ++j) {
          const double a = x(b, s, h, j), c = x(b, s, h, j + 32);
          error = std::max(error, std::abs(y(b, s, h, j) - (a - c * padding_sin)));
          error = std::max(error, std::abs(y(b, s, h, j + 32) - (c + a * padding_sin)));
        }
      }
    }
  }
  CHECK(error <= 1e-12);
}

TEST_CASE("step-eye coefficients: slot j turns at w[j * step], empty columns give C = S = 0",
          "[fope]") {
  // head_dim 64, N 4096: D_in = 23 (k <= 8 log10(4096 / 2 pi) = 22.5), D_out = 16, step 2;
  // columns 12..15 hold no 1.
  FopeConfig config = small_config(0.0);
  config.train_length = 4096;
  const Fope fope = posemb::make_fope(config);
  REQUIRE(fope.d_in() == 23);
  REQUIRE(fope.d_out() == 16);
  for (const std::int64_t t : {0, 5, 4095, 100000}) {
    const auto [cos, sin] = posemb::fope_cos_sin(fope, t);
    for (int h = 0; h < fope.n_kv_heads(); ++h) {
      for (int j = 0; j < 32; ++j) {
        const double w = std::pow(10000.0, -2.0 * (2 * j) / 64.0);
        const double expected_cos = j < 12 ? std::cos(w * t) : j < 16 ? 0.0 : 1.0;
        const double expected_sin = j < 12 ? std::sin(w * t) : j < 16 ? 0.0 : 1.0;
        CHECK(cos(h, j) == Approx(expected_cos).margin(1e-12));
        CHECK(sin(h, j) == Approx(expected_sin).margin(1e-12));
      }
    }
  }
}

TEST_CASE("the initial noise has the documented Xavier standard deviation", "[fope]") {
  // 64 coefficient heads, head_dim 128, N 65536: D_in = 64 (w_63 = 1.15e-4 >= 2 pi / 65536 =
  // 9.59e-5), D_out = 32, step 2. 2 * 64 * 64 * 32 = 262144 draws.
  FopeConfig config;
  config.head_dim = 128;
  config.n_heads = 64;
  config.train_length = 65536;
  config.sigma = 0.3;
  config.seed = 12345;
  const Fope fope = posemb::make_fope(config);
  REQUIRE(fope.d_in() == 64);
  REQUIRE(fope.d_out() == 32);
  // std = sigma sqrt(2 / (D_out (D_in + H))) = 0.3 sqrt(2 / (32 * 128)) = 0.3 / sqrt(2048).
  const double expected_std = 0.3 / std::sqrt(2048.0);
  CHECK(posemb::fope_noise_std(0.3, 64, 64, 32) == Approx(expected_std).epsilon(1e-15));

  std::vector<double> noise;
  for (const auto* coef : {&fope.sin_coef(), &fope.cos_coef()}) {
    for (int h = 0; h < 64; ++h) {
      for (int k = 0; k < 64; ++k) {
        for (int j = 0; j < 32; ++j) {
          const double eye = k == 2 * j ? 1.0 : 0.0;
          noise.push_back((*coef)(h, k, j) - eye);
        }
      }
    }
  }
  const double n = static_cast<double>(noise.size());
  REQUIRE(n >= 1e5);
  double sum = 0.0, sum_sq = 0.0, within_1 = 0.0, within_2 = 0.0;
  for (double r : noise) sum += r;
  const double mean = sum / n;
  for (double r : noise) {
    sum_sq += (r - mean) * (r - mean);
    within_1 += std::abs(r) < expected_std;
    within_2 += std::abs(r) < 2.0 * expected_std;
  }
  const double std_dev = std::sqrt(sum_sq / (n - 1.0));
  INFO("mean " << mean << ", std " << std_dev << " (expected " << expected_std << ")");
  // The sample std has relative standard error 1 / sqrt(2n) = 0.0014: 1% is 7 standard errors.
  // The 2-D Xavier value 0.3 sqrt(2 / 96) would be 6.5 times larger.
  CHECK(std::abs(std_dev / expected_std - 1.0) < 0.01);
  // The mean has standard error std / sqrt(n) = std / 512: bound 6 standard errors.
  CHECK(std::abs(mean) < 6.0 * expected_std / std::sqrt(n));
  // Normal shape: P(|z| < 1) = 0.682689, P(|z| < 2) = 0.954500 (standard errors 0.0009 and
  // 0.0004).
  CHECK(std::abs(within_1 / n - 0.682689) < 0.005);
  CHECK(std::abs(within_2 / n - 0.954500) < 0.0025);
}

TEST_CASE("the initialiser is deterministic per seed and follows its documented generator",
          "[fope]") {
  FopeConfig config = small_config();
  const Fope a = posemb::make_fope(config);
  const Fope b = posemb::make_fope(config);
  config.seed = 8;
  const Fope other = posemb::make_fope(config);
  const auto bytes = sizeof(float) * a.sin_coef().size();
  CHECK(std::memcmp(a.sin_coef().data(), b.sin_coef().data(), bytes) == 0);
  CHECK(std::memcmp(a.cos_coef().data(), b.cos_coef().data(), bytes) == 0);
  CHECK(std::memcmp(a.sin_coef().data(), other.sin_coef().data(), bytes) != 0);
  CHECK(std::memcmp(a.sin_coef().data(), a.cos_coef().data(), bytes) != 0);
  CHECK(a.owns_coefficients());

  // The contract: std::mt19937_64(seed), uniforms (top 53 bits + 0.5) / 2^53, Box-Muller pairs
  // (cos first), A_sin's entries in C order, then A_cos's.
  std::mt19937_64 engine(7);
  auto uniform = [&] { return (static_cast<double>(engine() >> 11) + 0.5) / 9007199254740992.0; };
  const double u1 = uniform(), u2 = uniform();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double std_dev = posemb::fope_noise_std(0.3, 4, 16, 16);
  CHECK(a.sin_coef()(0, 0, 0) ==
        static_cast<float>(1.0 + std_dev * radius * std::cos(2 * M_PI * u2)));
  CHECK(a.sin_coef()(0, 0, 1) == static_cast<float>(std_dev * radius * std::sin(2 * M_PI * u2)));
  for (Eigen::Index i = 2; i < a.sin_coef().size(); i += 2) {  // skip A_sin's other draws
    uniform();
    uniform();
  }
  const double v1 = uniform(), v2 = uniform();
  CHECK(a.cos_coef()(0, 0, 0) == static_cast<float>(1.0 + std_dev * std::sqrt(-2.0 * std::log(v1)) *
                                                              std::cos(2 * M_PI * v2)));
}

TEST_CASE("the table path equals the direct path and rejects positions outside the table",
          "[fope]") {
  const Fope fope = posemb::make_fope(small_config());
  const Tensor4<float> x = random_tensor<float>(2, 6, 4, 64, 3);
  PositionMatrix positions(2, 6);
  positions << 10, 11, 12, 13, 14, 15, 30, 31, 32, 33, 34, 35;
  const posemb::FopeTable<float> table(fope, 10, 26);
  CHECK(bit_equal(posemb::rotated(x, positions, table), posemb::rotated(x, positions, fope)));
  const Tensor4<double> x64 = x.cast<double>();
  const posemb::FopeTable<double> table64(fope, 10, 26);
  CHECK(bit_equal(posemb::rotated(x64, positions, table64), posemb::rotated(x64, positions, fope)));
  // Table layout: row r = position 10 + r, coefficient head g at column g * 32.
  const auto [cos, sin] = posemb::fope_cos_sin(fope, 13);
  CHECK(table64.cos()(3, 2 * 32 + 5) == cos(2, 5));
  CHECK(table64.sin()(3, 3 * 32 + 31) == sin(3, 31));
  positions(1, 5) = 36;
  CHECK_THROWS_WITH(posemb::rotated(x, positions, table),
                    Contains("position = 36") && Contains("[10, 36)"));
}

TEST_CASE("FoPE runs on threads through the rotary engine, bit-identical to one thread", "[fope]") {
  const Fope fope = posemb::make_fope(small_config());
  // [4, 512, 4, 64]: 2^19 elements, enough for two threads (2^18 per thread).
  const Tensor4<float> x = random_tensor<float>(4, 512, 4, 64, 11);
  const posemb::FopeTable<float> table(fope, 1000, 512);
  for (const TensorLayout layout : {TensorLayout::BSHD, TensorLayout::BHSD}) {
    const Tensor4<float> input = layout == TensorLayout::BSHD ? x : swap_seq_heads(x);
    const Tensor4<float> one =
        posemb::rotated(input, 1000, fope, posemb::RotateOptions().with_layouts(layout));
    CHECK(bit_equal(
        posemb::rotated(input, 1000, fope, posemb::RotateOptions{layout, posemb::Threads{2}}),
        one));
    CHECK(bit_equal(
        posemb::rotated(input, 1000, table, posemb::RotateOptions{layout, posemb::Threads{2}}),
        one));
    Tensor4<float> in_place = input;
    posemb::rotate_inplace(in_place, 1000, table,
                           posemb::RotateOptions{layout, posemb::Threads{2}});
    CHECK(bit_equal(in_place, one));
  }
  CHECK_THROWS_WITH(
      posemb::rotated(x, 0, fope, posemb::RotateOptions().with_threads(posemb::Threads{0})),
      Contains("threads.count = 0"));
}

TEST_CASE("BHSD equals BSHD, in place equals out of place", "[fope]") {
  const Fope fope = posemb::make_fope(small_config());
  const Tensor4<double> x = random_tensor<double>(3, 5, 4, 64, 5);
  PositionMatrix positions(3, 5);
  positions << 0, 1, 2, 3, 4, 9, 8, 7, 6, 5, 100, 0, 100, 70000, 1;
  const Tensor4<double> bshd = posemb::rotated(x, positions, fope);
  const Tensor4<double> bhsd = posemb::rotated(
      swap_seq_heads(x), positions, fope, posemb::RotateOptions().with_layouts(TensorLayout::BHSD));
  CHECK(bit_equal(swap_seq_heads(bhsd), bshd));
  Tensor4<double> in_place = x;
  posemb::rotate_inplace(in_place, positions, fope);
  CHECK(bit_equal(in_place, bshd));
  Tensor4<double> out(3, 5, 4, 64);
  posemb::rotate(x, out, positions, fope);
  CHECK(bit_equal(out, bshd));
  // A [1, seq] position row is shared by every batch row.
  PositionMatrix shared(1, 5);
  shared << 4, 3, 2, 1, 0;
  PositionMatrix expanded(3, 5);
  expanded.rowwise() = shared.row(0);
  CHECK(bit_equal(posemb::rotated(x, shared, fope), posemb::rotated(x, expanded, fope)));
  // FoPE changes the vectors (the comparisons above are not vacuous).
  CHECK(max_abs_diff(bshd, x) > 0.1);
}

TEST_CASE("KV-cache decode: the last S rows of a full rotation equal rows rotated alone",
          "[fope]") {
  const Fope fope = posemb::make_fope(small_config());
  const Eigen::Index total = 40, last = 7;
  const Tensor4<float> full = random_tensor<float>(1, total, 4, 64, 9);
  const Tensor4<float> full_out = posemb::rotated(full, 0, fope);
  const Eigen::array<Eigen::Index, 4> offsets = {0, total - last, 0, 0};
  const Eigen::array<Eigen::Index, 4> extents = {1, last, 4, 64};
  const Tensor4<float> tail = full.slice(offsets, extents);
  const Tensor4<float> expected = full_out.slice(offsets, extents);
  CHECK(bit_equal(posemb::rotated(tail, total - last, fope), expected));
  PositionMatrix positions(1, last);
  for (Eigen::Index s = 0; s < last; ++s) positions(0, s) = total - last + s;
  CHECK(bit_equal(posemb::rotated(tail, positions, fope), expected));
  // Rotating the tail as if it started at 0 differs.
  CHECK(max_abs_diff(posemb::rotated(tail, 0, fope), expected) > 1e-3);
}

TEST_CASE("large positions agree with a long-double evaluation of the formula", "[fope]") {
  FopeConfig config = small_config();
  config.n_heads = 2;
  const Fope fope = posemb::make_fope(config);
  const int hd = 64, slots = 32, d_in = fope.d_in(), d_out = fope.d_out();
  const Tensor4<double> x = random_tensor<double>(1, 4, 2, hd, 21);
  PositionMatrix positions(1, 4);
  positions << 1000000, 1000001, 12345678, 99999999;
  const Tensor4<double> y64 = posemb::rotated(x, positions, fope);
  const Tensor4<float> y32 = posemb::rotated(Tensor4<float>(x.cast<float>()), positions, fope);
  double error64 = 0.0, error32 = 0.0;
  for (int s = 0; s < 4; ++s) {
    const long double t = static_cast<long double>(positions(0, s));
    for (int h = 0; h < 2; ++h) {
      for (int j = 0; j < slots; ++j) {
        long double c = 1.0L, sn = 1.0L;  // padding
        if (j < d_out) {
          c = sn = 0.0L;
          for (int k = 0; k < d_in; ++k) {
            const long double w = std::pow(10000.0L, -2.0L * k / hd);
            c += static_cast<long double>(fope.cos_coef()(h, k, j)) * std::cos(w * t);
            sn += static_cast<long double>(fope.sin_coef()(h, k, j)) * std::sin(w * t);
          }
        }
        const long double a = x(0, s, h, j), b = x(0, s, h, j + slots);
        const long double ya = a * c - b * sn, yb = b * c + a * sn;
        error64 = std::max({error64, static_cast<double>(std::abs(y64(0, s, h, j) - ya)),
                            static_cast<double>(std::abs(y64(0, s, h, j + slots) - yb))});
        error32 = std::max({error32, static_cast<double>(std::abs(y32(0, s, h, j) - ya)),
                            static_cast<double>(std::abs(y32(0, s, h, j + slots) - yb))});
      }
    }
  }
  INFO("double storage error " << error64 << ", float storage error " << error32);
  // At t = 1e8 a double angle t * w carries ~1e-8 rad; float32 phases would be off by ~6 rad.
  CHECK(error64 <= 1e-7);
  CHECK(error32 <= 2e-6);
}

TEST_CASE("grouped-query attention: each query head uses its key-value group's coefficients",
          "[fope]") {
  FopeConfig config = small_config();
  config.n_heads = 6;
  config.n_kv_heads = 2;
  const Fope gqa = posemb::make_fope(config);
  REQUIRE(gqa.sin_coef().dimension(0) == 2);
  CHECK(gqa.head_group(6) == 3);
  CHECK(gqa.head_group(2) == 1);

  // The same coefficients expanded to one copy per query head: head h holds group h / 3.
  const Eigen::Index per_head = gqa.d_in() * gqa.d_out();
  std::vector<float> sin_expanded, cos_expanded;
  for (int h = 0; h < 6; ++h) {
    const float* s = gqa.sin_coef().data() + (h / 3) * per_head;
    const float* c = gqa.cos_coef().data() + (h / 3) * per_head;
    sin_expanded.insert(sin_expanded.end(), s, s + per_head);
    cos_expanded.insert(cos_expanded.end(), c, c + per_head);
  }
  FopeConfig expanded_config = config;
  expanded_config.n_kv_heads = 6;
  const std::vector<std::int64_t> shape = {6, gqa.d_in(), gqa.d_out()};
  const Fope expanded = posemb::fope_with_coefficients(expanded_config, sin_expanded.data(), shape,
                                                       cos_expanded.data(), shape);

  const Tensor4<float> q = random_tensor<float>(2, 5, 6, 64, 13);
  const Tensor4<float> q_out = posemb::rotated(q, 3, gqa);
  CHECK(bit_equal(q_out, posemb::rotated(q, 3, expanded)));
  // Keys have n_kv_heads heads: key head g is query head 3g's input and gets its output.
  Tensor4<float> k(2, 5, 2, 64);
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 5; ++s) {
      for (int g = 0; g < 2; ++g) {
        for (int i = 0; i < 64; ++i) k(b, s, g, i) = q(b, s, 3 * g, i);
      }
    }
  }
  const Tensor4<float> k_out = posemb::rotated(k, 3, gqa);
  double key_error = 0.0;
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 5; ++s) {
      for (int g = 0; g < 2; ++g) {
        for (int i = 0; i < 64; ++i) {
          key_error =
              std::max(key_error, std::abs(double(k_out(b, s, g, i)) - q_out(b, s, 3 * g, i)));
        }
      }
    }
  }
  CHECK(key_error == 0.0);
  // The two groups' coefficients differ, so the grouping matters: one vector in every head.
  Tensor4<float> same(1, 1, 6, 64);
  for (int h = 0; h < 6; ++h) {
    for (int i = 0; i < 64; ++i) same(0, 0, h, i) = q(0, 0, 0, i);
  }
  const Tensor4<float> same_out = posemb::rotated(same, 100, gqa);
  double same_group = 0.0, other_group = 0.0;
  for (int i = 0; i < 64; ++i) {
    same_group =
        std::max(same_group, std::abs(double(same_out(0, 0, 0, i)) - same_out(0, 0, 2, i)));
    other_group =
        std::max(other_group, std::abs(double(same_out(0, 0, 0, i)) - same_out(0, 0, 3, i)));
  }
  CHECK(same_group == 0.0);
  CHECK(other_group > 1e-4);
}

TEST_CASE("half-precision storage rounds the float result", "[fope]") {
  const Fope fope = posemb::make_fope(small_config());
  const Tensor4<float> x = random_tensor<float>(1, 3, 4, 64, 17);
  const Tensor4<float> reference = posemb::rotated(x, 5, fope);
  const Tensor4<Eigen::bfloat16> y16 =
      posemb::rotated(Tensor4<Eigen::bfloat16>(x.cast<Eigen::bfloat16>()), 5, fope);
  CHECK(max_abs_diff(Tensor4<float>(y16.cast<float>()), reference) < 0.05);
}

TEST_CASE("bad FoPE input is a posemb::Error naming the parameter", "[fope]") {
  using posemb::Error;
  const auto make = [](auto edit) {
    FopeConfig config = small_config();
    edit(config);
    return posemb::make_fope(config);
  };
  CHECK_THROWS_AS(make([](FopeConfig& c) { c.train_length = 0; }), Error);
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.train_length = 0; }), Contains("train_length = 0"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.train_length = -5; }),
                    Contains("train_length = -5"));
  // N = 6 < 2 pi: even w_0 = 1 lies below the floor.
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.train_length = 6; }),
                    Contains("train_length = 6") && Contains("clip floor"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.sigma = -0.1; }), Contains("sigma = -0.1"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.sigma = std::nan(""); }), Contains("sigma = nan"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.sigma = INFINITY; }), Contains("sigma = inf"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) {
                      c.n_heads = 6;
                      c.n_kv_heads = 4;
                    }),
                    Contains("n_heads = 6") && Contains("multiple of n_kv_heads = 4"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.n_kv_heads = 3; }), Contains("n_heads = 4"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.n_heads = 0; }), Contains("n_heads = 0"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.n_kv_heads = -1; }), Contains("n_kv_heads = -1"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.head_dim = 63; }), Contains("head_dim = 63"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.theta = 0.0; }), Contains("theta = 0"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.d_out = 33; }), Contains("d_out = 33"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.d_out = -1; }), Contains("d_out = -1"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.floor_ratio = -1.0; }),
                    Contains("floor_ratio = -1"));
  CHECK_THROWS_WITH(make([](FopeConfig& c) { c.padding_sin = std::nan(""); }),
                    Contains("padding_sin = nan"));

  // Coefficient arrays of the wrong shape. The expected shape is [4, 16, 16].
  const FopeConfig config = small_config();
  std::vector<float> good(4 * 16 * 16, 0.0f), big(8 * 17 * 16, 0.0f);
  const std::vector<std::int64_t> shape = {4, 16, 16};
  CHECK_NOTHROW(posemb::fope_with_coefficients(config, good.data(), shape, good.data(), shape));
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(config, big.data(), {8, 16, 16}, good.data(), shape),
      Contains("sin_coef.dimension(0) = 8") && Contains("n_kv_heads = 4"));
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(config, good.data(), shape, big.data(), {4, 17, 16}),
      Contains("cos_coef.dimension(1) = 17") && Contains("D_in"));
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(config, good.data(), shape, big.data(), {4, 16, 8}),
      Contains("cos_coef.dimension(2) = 8"));
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(config, good.data(), {4, 256}, good.data(), shape),
      Contains("sin_coef rank = 2"));
  CHECK_THROWS_WITH(posemb::fope_with_coefficients(config, nullptr, shape, good.data(), shape),
                    Contains("sin_coef.data() = null"));
  FopeConfig wrong_d_out = config;
  wrong_d_out.d_out = 8;
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(wrong_d_out, good.data(), shape, good.data(), shape),
      Contains("sin_coef.dimension(2) = 16") && Contains("d_out = 8"));
  std::vector<float> not_finite = good;
  not_finite[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(
      posemb::fope_with_coefficients(config, good.data(), shape, not_finite.data(), shape),
      Contains("cos_coef[5] = nan"));

  // Tensors that do not fit.
  const Fope fope = posemb::make_fope(config);
  CHECK_THROWS_WITH(posemb::rotated(Tensor4<float>(1, 2, 3, 64), 0, fope),
                    Contains("heads = 3") && Contains("n_heads = 4"));
  CHECK_THROWS_WITH(posemb::rotated(Tensor4<float>(1, 2, 4, 32), 0, fope),
                    Contains("head_dim = 32"));
  PositionMatrix positions(2, 3);
  positions.setZero();
  CHECK_THROWS_WITH(posemb::rotated(Tensor4<float>(1, 2, 4, 64), positions, fope),
                    Contains("positions shape = [2, 3]"));
  Tensor4<float> out(1, 3, 4, 64);
  CHECK_THROWS_WITH(posemb::rotate(Tensor4<float>(1, 2, 4, 64), out, 0, fope),
                    Contains("out.dimension(1) = 3"));
  CHECK_THROWS_WITH(
      posemb::rotated(Tensor4<float>(1, 2, 4, 64), 0, fope,
                      posemb::RotateOptions().with_layouts(static_cast<TensorLayout>(7))),
      Contains("layout = 7"));
  CHECK_THROWS_WITH(posemb::FopeTable<float>(fope, 0, 0), Contains("count = 0"));
}
