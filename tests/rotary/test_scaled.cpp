// scaled.hpp: linear, NTK, dynamic NTK, YaRN, Llama 3.1 and LongRoPE frequencies. Golden values
// from HuggingFace are checked through the config loader in test_config.cpp; here: values worked
// out by hand from the papers' recipes, and the properties each variant must have.
#include "posemb/rotary/scaled.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using posemb::Pairing;
using posemb::RopeSpec;

namespace {

constexpr double pi = 3.14159265358979323846;
const double not_a_number = std::numeric_limits<double>::quiet_NaN();
const double infinity = std::numeric_limits<double>::infinity();

posemb::YarnParams yarn_params(double factor, std::int64_t L0) {
  posemb::YarnParams p;
  p.factor = factor;
  p.original_max_position_embeddings = L0;
  return p;
}

posemb::LongRopeParams longrope_params(int pairs, double factor, std::int64_t L0) {
  posemb::LongRopeParams p;
  for (int i = 0; i < pairs; ++i) {
    p.short_factor.push_back(1.0 + 0.1 * i);
    p.long_factor.push_back(1.0 + 0.5 * i * i);
  }
  p.factor = factor;
  p.original_max_position_embeddings = L0;
  return p;
}

// <R(m) q, R(n) k> for one head vector pair, in storage type T.
template <class T>
double score(const RopeSpec& spec, const Eigen::VectorXd& q, const Eigen::VectorXd& k,
             std::int64_t m, std::int64_t n) {
  using V = Eigen::Matrix<T, Eigen::Dynamic, 1>;
  V qr = q.cast<T>(), kr = k.cast<T>();
  posemb::rotate_inplace(qr, m, spec);
  posemb::rotate_inplace(kr, n, spec);
  return qr.template cast<double>().dot(kr.template cast<double>());
}

}  // namespace

TEST_CASE("linear: inv_freq = default / s, attention factor 1", "[scaled][linear]") {
  const Eigen::VectorXd inv = posemb::default_inv_freq(64, 10000.0);
  const RopeSpec spec = posemb::linear_rope_spec(64, 10000.0, 4.0);
  CHECK(spec.rotary_dim == 64);
  CHECK(spec.attention_scale == 1.0);
  for (int i = 0; i < 32; ++i) CHECK(spec.inv_freq[i] == Approx(inv[i] / 4.0).epsilon(1e-15));
  // By hand: d = 4, base 1e4 -> inv = [1, 0.01]; / 4 = [0.25, 0.0025].
  const RopeSpec small = posemb::linear_rope_spec(4, 10000.0, 4.0, Pairing::Interleaved);
  CHECK(small.inv_freq[0] == Approx(0.25).epsilon(1e-15));
  CHECK(small.inv_freq[1] == Approx(0.0025).epsilon(1e-15));
  CHECK(small.pairing == Pairing::Interleaved);
}

TEST_CASE("NTK: base' = base * s^(d/(d-2))", "[scaled][ntk]") {
  // By hand: d = 4, base 1e4, s = 4 -> base' = 1e4 * 4^2 = 160000, inv_1 = 160000^(-1/2) = 1/400.
  const RopeSpec spec = posemb::ntk_rope_spec(4, 10000.0, 4.0);
  CHECK(spec.inv_freq[0] == 1.0);
  CHECK(spec.inv_freq[1] == Approx(1.0 / 400.0).epsilon(1e-14));
  // The slowest pair is interpolated by exactly s: base'^(-(d-2)/d) = base^(-(d-2)/d) / s.
  const RopeSpec wide = posemb::ntk_rope_spec(64, 10000.0, 8.0);
  const Eigen::VectorXd inv = posemb::default_inv_freq(64, 10000.0);
  CHECK(wide.inv_freq[31] == Approx(inv[31] / 8.0).epsilon(1e-13));
  for (int i = 1; i < 32; ++i) {
    CHECK(wide.inv_freq[i] < inv[i]);
    CHECK(wide.inv_freq[i] > inv[i] / 8.0 * (1 - 1e-13));
  }
}

TEST_CASE("dynamic NTK: a no-op up to L, lower frequencies above", "[scaled][dynamic]") {
  const Eigen::VectorXd inv = posemb::default_inv_freq(32, 10000.0);
  for (std::int64_t seq : {0, 1, 1000, 2047, 2048}) {
    CHECK(posemb::dynamic_ntk_rope_spec(32, 10000.0, 2.0, 2048, seq).inv_freq == inv);
  }
  Eigen::VectorXd previous = inv;
  for (std::int64_t seq : {2049, 4096, 8192, 1 << 20}) {
    const RopeSpec spec = posemb::dynamic_ntk_rope_spec(32, 10000.0, 2.0, 2048, seq);
    CHECK(spec.inv_freq[0] == 1.0);
    CHECK(spec.attention_scale == 1.0);
    for (int i = 1; i < 16; ++i) CHECK(spec.inv_freq[i] < previous[i]);
    previous = spec.inv_freq;
  }
  // By hand: d = 4, base 1e4, s = 2, L = 100, seq 200 -> growth 2*2 - 1 = 3,
  // base' = 1e4 * 3^2 = 90000, inv_1 = 1/300.
  CHECK(posemb::dynamic_ntk_rope_spec(4, 10000.0, 2.0, 100, 200).inv_freq[1] ==
        Approx(1.0 / 300.0).epsilon(1e-14));
}

TEST_CASE("YaRN: ramp, frequencies between default/s and default", "[scaled][yarn]") {
  // By hand: d = 16, base 1e4, L0 = 2048: dim(32) = 16 ln(2048/(64 pi)) / (2 ln 1e4) = 2.016 -> 2,
  // dim(1) = 16 ln(2048/(2 pi)) / (2 ln 1e4) = 5.026 -> 6; ramp_i = clamp((i - 2)/4, 0, 1).
  const posemb::YarnParams p = yarn_params(4.0, 2048);
  CHECK(posemb::yarn_correction_dim(32, 16, 1e4, 2048) ==
        Approx(2.0160002112515443).epsilon(1e-13));
  CHECK(posemb::yarn_correction_dim(1, 16, 1e4, 2048) == Approx(5.026300167891356).epsilon(1e-13));
  const Eigen::VectorXd ramp = posemb::yarn_ramp(16, 1e4, p);
  const std::vector<double> want = {0, 0, 0, 0.25, 0.5, 0.75, 1, 1};
  for (int i = 0; i < 8; ++i) CHECK(ramp[i] == Approx(want[i]).margin(1e-15));

  const RopeSpec spec = posemb::yarn_rope_spec(16, 1e4, p);
  const Eigen::VectorXd inv = posemb::default_inv_freq(16, 1e4);
  for (int i = 0; i < 3; ++i) CHECK(spec.inv_freq[i] == inv[i]);  // fastest pairs unchanged
  for (int i = 6; i < 8; ++i) CHECK(spec.inv_freq[i] == Approx(inv[i] / 4).epsilon(1e-15));
  CHECK(spec.inv_freq[4] == Approx(inv[4] * (0.5 + 0.5 / 4)).epsilon(1e-15));
  // Attention factor 0.1 ln 4 + 1.
  CHECK(spec.attention_scale == Approx(1.138629436111989).epsilon(1e-15));

  // Across sizes and factors: default/s <= inv' <= default, first pair kept, last divided by s.
  for (int d : {32, 64, 128}) {
    for (double s : {2.0, 8.0, 32.0}) {
      const RopeSpec y = posemb::yarn_rope_spec(d, 5e5, yarn_params(s, 8192));
      const Eigen::VectorXd base = posemb::default_inv_freq(d, 5e5);
      CHECK(y.inv_freq[0] == base[0]);
      CHECK(y.inv_freq[d / 2 - 1] == Approx(base[d / 2 - 1] / s).epsilon(1e-15));
      for (int i = 0; i < d / 2; ++i) {
        CHECK(y.inv_freq[i] <= base[i]);
        CHECK(y.inv_freq[i] >= base[i] / s * (1 - 1e-15));
      }
    }
  }
}

TEST_CASE("YaRN attention factor: explicit, mscale ratio, default", "[scaled][yarn]") {
  posemb::YarnParams p = yarn_params(40.0, 4096);
  CHECK(posemb::yarn_attention_factor(p) == Approx(0.1 * std::log(40.0) + 1).epsilon(1e-15));
  p.mscale = 1.0;
  p.mscale_all_dim = 0.707;
  CHECK(posemb::yarn_attention_factor(p) == Approx(1.0857263992561355).epsilon(1e-14));
  p.mscale_all_dim = 1.0;  // DeepSeek-V3: equal -> 1
  CHECK(posemb::yarn_attention_factor(p) == 1.0);
  p.mscale = 0.0;  // a zero mscale falls back to the default
  CHECK(posemb::yarn_attention_factor(p) == Approx(0.1 * std::log(40.0) + 1).epsilon(1e-15));
  p.attention_factor = 0.8;
  CHECK(posemb::yarn_attention_factor(p) == 0.8);
  CHECK(posemb::yarn_mscale(0.5) == 1.0);
}

TEST_CASE("Llama 3.1: kept, ramp and interpolated bands", "[scaled][llama3]") {
  posemb::Llama3Params p;  // factor 8, low 1, high 4, L0 8192
  const RopeSpec spec = posemb::llama3_rope_spec(128, 500000.0, p);
  const Eigen::VectorXd inv = posemb::default_inv_freq(128, 500000.0);
  int kept = 0, ramp = 0, interpolated = 0;
  for (int i = 0; i < 64; ++i) {
    const double wavelength = 2 * pi / inv[i];
    if (wavelength < 8192.0 / 4) {
      CHECK(spec.inv_freq[i] == inv[i]);
      CHECK(posemb::llama3_band(inv[i], p) == posemb::Llama3Band::Kept);
      ++kept;
    } else if (wavelength > 8192.0) {
      CHECK(spec.inv_freq[i] == Approx(inv[i] / 8).epsilon(1e-15));
      CHECK(posemb::llama3_band(inv[i], p) == posemb::Llama3Band::Interpolated);
      ++interpolated;
    } else {
      CHECK(spec.inv_freq[i] < inv[i]);
      CHECK(spec.inv_freq[i] > inv[i] / 8);
      ++ramp;
    }
  }
  // By hand for Llama 3.1 (d 128, theta 5e5): wl_i < 2048 iff i < 64 ln(2048/2pi)/ln(5e5) = 28.2,
  // wl_i > 8192 iff i > 64 ln(8192/2pi)/ln(5e5) = 34.98: 29 kept, 6 ramp, 29 interpolated.
  CHECK(kept == 29);
  CHECK(ramp == 6);
  CHECK(interpolated == 29);
  // The ramp is monotone: the divisor inv/inv' grows from 1 to s as the wavelength grows.
  for (int i = 1; i < 64; ++i) {
    CHECK(inv[i] / spec.inv_freq[i] >= inv[i - 1] / spec.inv_freq[i - 1] * (1 - 1e-15));
  }
  CHECK(spec.attention_scale == 1.0);
}

// Llama-4-Scout-17B-16E-Instruct's block: low_freq_factor == high_freq_factor == 1, factor 16.
// HF (_compute_llama3_parameters) warns and runs it: no ramp band, kept below L0, / 16 above.
TEST_CASE("Llama 3.1 with equal frequency factors has no ramp band", "[scaled][llama3]") {
  posemb::Llama3Params p;
  p.factor = 16.0;
  p.low_freq_factor = 1.0;
  p.high_freq_factor = 1.0;
  const RopeSpec spec = posemb::llama3_rope_spec(128, 500000.0, p);
  const Eigen::VectorXd inv = posemb::default_inv_freq(128, 500000.0);
  int kept = 0;
  for (int i = 0; i < 64; ++i) {
    const bool short_wave = 2 * pi / inv[i] < 8192.0;
    CHECK(spec.inv_freq[i] == (short_wave ? inv[i] : inv[i] / 16.0));
    CHECK(posemb::llama3_band(inv[i], p) != posemb::Llama3Band::Ramp);
    kept += short_wave ? 1 : 0;
  }
  // wl_i < 8192 iff i < 64 ln(8192/2pi)/ln(5e5) = 34.98: 35 kept.
  CHECK(kept == 35);
  // A wavelength of exactly L0 (where HF's ramp would divide 0 by 0) is kept.
  CHECK(posemb::llama3_band(2 * pi / 8192.0, p) == posemb::Llama3Band::Kept);
}

TEST_CASE("LongRoPE: switches to long_factor at seq_len > L0 exactly", "[scaled][longrope]") {
  const posemb::LongRopeParams p = longrope_params(8, 8.0, 4096);
  const Eigen::VectorXd inv = posemb::default_inv_freq(16, 1e4);
  const RopeSpec none = posemb::longrope_rope_spec(16, 1e4, p, std::nullopt);
  const RopeSpec at = posemb::longrope_rope_spec(16, 1e4, p, 4096);
  const RopeSpec above = posemb::longrope_rope_spec(16, 1e4, p, 4097);
  for (int i = 0; i < 8; ++i) {
    CHECK(none.inv_freq[i] == Approx(inv[i] / p.short_factor[i]).epsilon(1e-15));
    CHECK(at.inv_freq[i] == none.inv_freq[i]);
    CHECK(above.inv_freq[i] == Approx(inv[i] / p.long_factor[i]).epsilon(1e-15));
  }
  // By hand: sqrt(1 + ln 8 / ln 4096) = sqrt(1 + 3/12) = sqrt(1.25).
  CHECK(at.attention_scale == Approx(std::sqrt(1.25)).epsilon(1e-15));
  CHECK(above.attention_scale == at.attention_scale);
  posemb::LongRopeParams explicit_factor = p;
  explicit_factor.attention_factor = 1.5;
  CHECK(posemb::longrope_rope_spec(16, 1e4, explicit_factor, 1).attention_scale == 1.5);
}

TEST_CASE("every variant at factor 1 equals the default", "[scaled]") {
  for (int d : {4, 16, 64, 128}) {
    const RopeSpec want = posemb::default_rope_spec(d, 5e5);
    const auto same = [&](const RopeSpec& got) {
      CHECK(got.inv_freq == want.inv_freq);
      CHECK(got.attention_scale == 1.0);
      CHECK(got.rotary_dim == d);
      CHECK(got.pairing == want.pairing);
    };
    same(posemb::linear_rope_spec(d, 5e5, 1.0));
    same(posemb::ntk_rope_spec(d, 5e5, 1.0));
    same(posemb::dynamic_ntk_rope_spec(d, 5e5, 1.0, 4096, 4096));
    same(posemb::yarn_rope_spec(d, 5e5, yarn_params(1.0, 4096)));
    posemb::Llama3Params l;
    l.factor = 1.0;
    same(posemb::llama3_rope_spec(d, 5e5, l));
    posemb::LongRopeParams lr;
    lr.short_factor.assign(d / 2, 1.0);
    lr.long_factor.assign(d / 2, 1.0);
    lr.original_max_position_embeddings = 4096;
    same(posemb::longrope_rope_spec(d, 5e5, lr, 1 << 20));
  }
}

TEST_CASE("the RoPE relative property holds with scaled specs at positions in the millions",
          "[scaled][relative]") {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  const int d = 64;
  Eigen::VectorXd q(d), k(d);
  for (int i = 0; i < d; ++i) {
    q[i] = normal(rng);
    k[i] = normal(rng);
  }
  posemb::Llama3Params l;
  const std::vector<RopeSpec> specs = {
      posemb::linear_rope_spec(d, 5e5, 8.0),
      posemb::dynamic_ntk_rope_spec(d, 1e4, 4.0, 4096, 1 << 20),
      posemb::yarn_rope_spec(d, 1e6, yarn_params(32.0, 4096)),
      posemb::llama3_rope_spec(d, 5e5, l, Pairing::Interleaved),
      posemb::longrope_rope_spec(d, 1e4, longrope_params(d / 2, 32.0, 4096), 1 << 20),
  };
  const double norm = q.norm() * k.norm();
  for (const RopeSpec& spec : specs) {
    const double s2 = spec.attention_scale * spec.attention_scale;
    for (std::int64_t distance : {0, 1, 37, 4095, 100000}) {
      const double want = score<double>(spec, q, k, distance, 0);
      for (std::int64_t n : {std::int64_t{1000}, std::int64_t{123456}, std::int64_t{3000000},
                             std::int64_t{7654321}}) {
        // Double angles carry ulp(p * inv) ~ 1e-9 rad at p ~ 1e7; float cos/sin carry 6e-8.
        CHECK(std::fabs(score<double>(spec, q, k, n + distance, n) - want) <= 1e-8 * s2 * norm);
        CHECK(std::fabs(score<float>(spec, q, k, n + distance, n) - want) <= 1e-5 * s2 * norm);
      }
    }
  }
}

TEST_CASE("bad input throws posemb::Error with a clear message", "[scaled][errors]") {
  using Catch::Contains;
  for (double bad : {0.0, -2.0, not_a_number, infinity}) {
    CHECK_THROWS_WITH(posemb::linear_rope_spec(32, 1e4, bad), Contains("factor"));
    CHECK_THROWS_WITH(posemb::ntk_rope_spec(32, 1e4, bad), Contains("factor"));
    CHECK_THROWS_WITH(posemb::dynamic_ntk_rope_spec(32, 1e4, bad, 2048, 4096), Contains("factor"));
    CHECK_THROWS_WITH(posemb::yarn_rope_spec(32, 1e4, yarn_params(bad, 2048)), Contains("factor"));
    posemb::Llama3Params l;
    l.factor = bad;
    CHECK_THROWS_WITH(posemb::llama3_rope_spec(32, 1e4, l), Contains("factor"));
    CHECK_THROWS_WITH(posemb::longrope_rope_spec(32, 1e4, longrope_params(16, bad, 4096), 1),
                      Contains("factor"));
  }
  posemb::YarnParams y = yarn_params(4.0, 2048);
  y.beta_fast = 0.75;
  y.beta_slow = 1.0;
  CHECK_THROWS_WITH(posemb::yarn_rope_spec(32, 1e4, y),
                    Contains("beta_fast = 0.75") && Contains("beta_slow"));
  y.beta_fast = 0.5;
  CHECK_THROWS_WITH(posemb::yarn_rope_spec(32, 1e4, y), Contains("beta_fast"));
  posemb::Llama3Params l;
  l.low_freq_factor = 5.0;
  l.high_freq_factor = 4.0;
  CHECK_THROWS_WITH(posemb::llama3_rope_spec(32, 1e4, l),
                    Contains("low_freq_factor = 5") && Contains("high_freq_factor"));
  posemb::LongRopeParams lr = longrope_params(16, 4.0, 4096);
  lr.long_factor.pop_back();
  CHECK_THROWS_WITH(posemb::longrope_rope_spec(32, 1e4, lr, 1),
                    Contains("long_factor.size() = 15") && Contains("16"));
  lr = longrope_params(16, 4.0, 4096);
  lr.short_factor[3] = -1.0;
  CHECK_THROWS_WITH(posemb::longrope_rope_spec(32, 1e4, lr, 1), Contains("short_factor[3] = -1"));
  for (std::int64_t L0 : {0, -5}) {
    CHECK_THROWS_WITH(posemb::yarn_rope_spec(32, 1e4, yarn_params(4.0, L0)),
                      Contains("original_max_position_embeddings"));
    CHECK_THROWS_WITH(posemb::longrope_rope_spec(32, 1e4, longrope_params(16, 4.0, L0), 1),
                      Contains("original_max_position_embeddings"));
    posemb::Llama3Params bad_l;
    bad_l.original_max_position_embeddings = L0;
    CHECK_THROWS_WITH(posemb::llama3_rope_spec(32, 1e4, bad_l),
                      Contains("original_max_position_embeddings"));
    CHECK_THROWS_WITH(posemb::dynamic_ntk_rope_spec(32, 1e4, 2.0, L0, 10),
                      Contains("max_position_embeddings"));
  }
  CHECK_THROWS_WITH(posemb::ntk_rope_spec(2, 1e4, 2.0), Contains("rotary_dim = 2"));
  CHECK_THROWS_WITH(posemb::linear_rope_spec(7, 1e4, 2.0), Contains("rotary_dim = 7"));
  CHECK_THROWS_WITH(posemb::dynamic_ntk_rope_spec(32, 1e4, 2.0, 2048, -1),
                    Contains("seq_len = -1"));
  CHECK_THROWS_WITH(posemb::longrope_rope_spec(32, 1e4, longrope_params(16, 4.0, 4096), -1),
                    Contains("seq_len = -1"));
  posemb::YarnParams explicit_bad = yarn_params(4.0, 2048);
  explicit_bad.attention_factor = -1.0;
  CHECK_THROWS_WITH(posemb::yarn_rope_spec(32, 1e4, explicit_bad), Contains("attention_factor"));
}

TEST_CASE("YaRN with beta_fast == beta_slow loads: a one-pair ramp (Kimi K2's 1 and 1)",
          "[scaled][yarn]") {
  // _compute_yarn_parameters (modeling_rope_utils.py): low = floor(c(1)), high = ceil(c(1)),
  // c(r) = d ln(L0 / (2 pi r)) / (2 ln base); d 32, base 1e4, L0 2048: c(1) = 10.05..., so pairs
  // 0..10 are kept and 11..15 divided by the factor. _validate_yarn_rope_parameters only warns
  // when beta_fast < beta_slow.
  posemb::YarnParams y = yarn_params(4.0, 2048);
  y.beta_fast = 1.0;
  y.beta_slow = 1.0;
  const double c = 32.0 * std::log(2048.0 / (2.0 * pi)) / (2.0 * std::log(1e4));
  REQUIRE(std::floor(c) == 10.0);
  const posemb::RopeSpec spec = posemb::yarn_rope_spec(32, 1e4, y);
  for (int i = 0; i < 16; ++i) {
    CAPTURE(i);
    const double plain = std::pow(1e4, -2.0 * i / 32.0);
    CHECK(spec.inv_freq[i] == Approx(i <= 10 ? plain : plain / 4.0).epsilon(1e-14));
  }
}
