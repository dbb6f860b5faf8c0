// Tests of playground/rotary_fields.hpp (score matrix, metrics, presets, phase precession, grid
// interference) and examples/svg.hpp. Expected values are written out by hand from the
// formulas in the comments; the HTML report itself is checked by the ctest
// `rotary_fields_report` (xmllint and the <svg> count).

#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "rotary_fields.hpp"
#include "svg.hpp"

using Catch::Matchers::Contains;
using rotary_fields::FieldConfig;

namespace {

FieldConfig config_with(double base, int pairs, int len, double similarity, double jitter,
                        std::uint64_t seed) {
  FieldConfig c;
  c.base = base;
  c.pairs = pairs;
  c.len = len;
  c.similarity = similarity;
  c.jitter = jitter;
  c.seed = seed;
  return c;
}

// S[i, j] = f(|i - j|): [n, n]
Eigen::MatrixXd toeplitz(int n, double (*f)(int)) {
  Eigen::MatrixXd s(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) s(i, j) = f(std::abs(i - j));
  }
  return s;
}

double angle_gap_deg(double a, double b) { return std::abs(std::remainder(a - b, 360.0)); }

}  // namespace

TEST_CASE("score matrix: one pair by hand", "[rotary_fields]") {
  // d = 2, inv_freq = 1: S[i, j] = (q_a k_a + q_b k_b) cos(j - i) + (q_b k_a - q_a k_b) sin(j - i)
  const posemb::RopeSpec spec = posemb::default_rope_spec(2, 10000.0, posemb::Pairing::Interleaved);
  rotary_fields::FieldContent content{Eigen::MatrixXd(3, 2), Eigen::MatrixXd(3, 2)};
  content.queries << 1, 0, 1, 0, 1, 0;
  content.keys << 1, 0, 1, 0, 1, 0;
  Eigen::MatrixXd s = rotary_fields::score_matrix(content, spec);
  CHECK(s(0, 0) == Approx(1.0).margin(1e-15));
  CHECK(s(0, 1) == Approx(0.5403023058681398).margin(1e-15));  // cos 1
  CHECK(s(1, 0) == Approx(0.5403023058681398).margin(1e-15));
  CHECK(s(0, 2) == Approx(-0.4161468365471424).margin(1e-15));  // cos 2
  content.keys << 0, 1, 0, 1, 0, 1;
  s = rotary_fields::score_matrix(content, spec);
  CHECK(s(0, 1) == Approx(-0.8414709848078965).margin(1e-15));  // -sin 1
  CHECK(s(1, 0) == Approx(0.8414709848078965).margin(1e-15));   // -sin(-1)
  CHECK(s(2, 2) == Approx(0.0).margin(1e-15));
}

TEST_CASE("score matrix: Toeplitz to 1e-12 with shared content", "[rotary_fields]") {
  for (const FieldConfig& c :
       {config_with(10000.0, 4, 16, 0.9, 0.0, 21), config_with(1.0e6, 16, 64, 0.3, 0.0, 5),
        config_with(16.0, 4, 200, -0.5, 0.0, 99), config_with(500.0, 32, 300, 1.0, 0.0, 3)}) {
    const rotary_fields::FieldContent content = rotary_fields::make_content(c);
    const Eigen::MatrixXd s = rotary_fields::score_matrix(c);
    CHECK(rotary_fields::translation_drift(s) <= 1e-12);
    // Against the closed form of <q, R(j - i) k> written pair by pair (RoFormer eq. 16):
    // sum_m (q_a k_a + q_b k_b) cos(w_m D) + (q_b k_a - q_a k_b) sin(w_m D), D = j - i.
    const Eigen::VectorXd q = content.queries.row(0).transpose();
    const Eigen::VectorXd k = content.keys.row(0).transpose();
    double worst = 0.0;
    for (int i = 0; i < c.len; ++i) {
      for (int j = 0; j < c.len; ++j) {
        double expected = 0.0;
        for (int m = 0; m < c.pairs; ++m) {
          const double w = std::pow(c.base, -2.0 * m / (2.0 * c.pairs));
          const double qa = q[2 * m], qb = q[2 * m + 1], ka = k[2 * m], kb = k[2 * m + 1];
          expected += (qa * ka + qb * kb) * std::cos(w * (j - i)) +
                      (qb * ka - qa * kb) * std::sin(w * (j - i));
        }
        worst = std::max(worst, std::abs(s(i, j) - expected));
      }
    }
    CHECK(worst <= 1e-12);
  }
}

TEST_CASE("score matrix: per-position content drifts", "[rotary_fields]") {
  const Eigen::MatrixXd s = rotary_fields::score_matrix(config_with(10000.0, 4, 16, 0.9, 0.1, 21));
  CHECK(rotary_fields::translation_drift(s) > 1e-3);
  // Jitter only breaks the property: a smaller jitter drifts less.
  const double small = rotary_fields::translation_drift(
      rotary_fields::score_matrix(config_with(10000.0, 4, 16, 0.9, 0.01, 21)));
  CHECK(small > 0.0);
  CHECK(small < rotary_fields::translation_drift(s));
}

TEST_CASE("content: unit norm, similarity rho, equal pair energy", "[rotary_fields]") {
  for (double rho : {-1.0, -0.3, 0.0, 0.9, 1.0}) {
    const FieldConfig c = config_with(10000.0, 4, 12, rho, 0.0, 11);
    const rotary_fields::FieldContent content = rotary_fields::make_content(c);
    for (int i = 0; i < c.len; ++i) {
      CHECK(content.queries.row(i).norm() == Approx(1.0).margin(1e-14));
      CHECK(content.keys.row(i).norm() == Approx(1.0).margin(1e-14));
      CHECK(content.queries.row(i).dot(content.keys.row(i)) == Approx(rho).margin(1e-14));
      for (int m = 0; m < c.pairs; ++m) {
        CHECK(content.queries.row(i).segment(2 * m, 2).squaredNorm() == Approx(0.25).margin(1e-14));
      }
    }
  }
  // Same seed, same content; another seed, other content.
  const FieldConfig a = config_with(10000.0, 4, 12, 0.9, 0.05, 11);
  FieldConfig b = a;
  CHECK(rotary_fields::make_content(a).keys == rotary_fields::make_content(b).keys);
  b.seed = 12;
  CHECK(rotary_fields::make_content(a).keys != rotary_fields::make_content(b).keys);
  // Every score of unit vectors lies in [-1, 1].
  const Eigen::MatrixXd s = rotary_fields::score_matrix(config_with(16.0, 4, 40, 0.2, 0.5, 3));
  CHECK(s.maxCoeff() <= 1.0 + 1e-14);
  CHECK(s.minCoeff() >= -1.0 - 1e-14);
}

TEST_CASE("metrics: hand-built Toeplitz matrix", "[rotary_fields]") {
  // N = 10, S[i, j] = 1 - 0.1 |i - j|. Offset d occurs 2 (10 - d) times for d >= 1.
  const Eigen::MatrixXd s = toeplitz(10, [](int d) { return 1.0 - 0.1 * d; });
  const rotary_fields::FieldMetrics m = rotary_fields::field_metrics(s);
  CHECK(m.peak == Approx(1.0));
  // sum = 10 + 2 sum_{d=1..9} (10 - d)^2 / 10 = 10 + 2 * 285 / 10 = 67 over 100 entries.
  CHECK(m.mean == Approx(0.67).margin(1e-14));
  // (9 * 0.9 + 8 * 0.8 + 7 * 0.7) / (9 + 8 + 7) = 19.4 / 24
  CHECK(m.nearby == Approx(19.4 / 24.0).margin(1e-14));
  // (2 * 0.2 + 1 * 0.1) / (2 + 1)
  CHECK(m.distant == Approx(0.5 / 3.0).margin(1e-14));
  CHECK(m.concentration == Approx((1.0 - 0.5 / 3.0) / 2.0).margin(1e-14));
  // First offset below 0.5: 1 - 0.1 d < 0.5 first at d = 6 (d = 5 gives exactly 0.5).
  CHECK(m.context_width == 6.0);
  CHECK(m.drift == 0.0);
}

TEST_CASE("metrics: drift by hand", "[rotary_fields]") {
  Eigen::MatrixXd s(4, 4);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) s(i, j) = i + 2.0 * j;  // S[i, j] - S[i+1, j+1] = -3
  }
  CHECK(rotary_fields::translation_drift(s) == Approx(3.0));
  Eigen::MatrixXd two(2, 2);
  two << 0.25, 7.0, -3.0, -0.5;
  CHECK(rotary_fields::translation_drift(two) == Approx(0.75));  // only |S00 - S11|
}

TEST_CASE("metrics: context width with rows that never fall", "[rotary_fields]") {
  Eigen::MatrixXd s(4, 4);
  s << 1.0, 0.2, 1.0, 1.0,  // row 0: offset 1 falls (0.2 < 0.5)          -> 1
      0.9, 1.0, 0.9, 0.1,   // row 1: offsets 1 stay, offset 2 (0.1) falls  -> 2
      1.0, 1.0, 1.0, 1.0,   // row 2: never falls                           -> N = 4
      1.0, 1.0, 0.4, 1.0;   // row 3: offset 1 (0.4) falls                  -> 1
  // Sorted widths 1, 1, 2, 4: median (1 + 2) / 2.
  CHECK(rotary_fields::context_width(s) == 1.5);
  CHECK(rotary_fields::context_width(Eigen::MatrixXd::Ones(5, 5)) == 5.0);
  // The half-peak is the row's own maximum, wherever it lies: row 0's peak 2.0 is at j = 2.
  Eigen::MatrixXd t(3, 3);
  t << 0.9, 0.95, 2.0,  // half peak 1.0: offset 1 (0.95) falls -> 1
      0.0, 1.0, 0.0,    // -> 1
      0.0, 0.6, 1.0;    // offset 1 (0.6) stays, offset 2 (0.0) falls -> 2
  // Median of 1, 1, 2.
  CHECK(rotary_fields::context_width(t) == 1.0);
}

TEST_CASE("metrics: concentration is clamped to [0, 1]", "[rotary_fields]") {
  CHECK(rotary_fields::concentration(0.9, 0.1) == Approx(0.4));
  CHECK(rotary_fields::concentration(0.2, 0.9) == 0.0);
  CHECK(rotary_fields::concentration(5.0, -5.0) == 1.0);
  Eigen::MatrixXd s = Eigen::MatrixXd::Constant(9, 9, -5.0);
  s.diagonal().setConstant(5.0);
  CHECK(rotary_fields::field_metrics(s).concentration == 1.0);
  // Over many playground matrices it stays inside [0, 1] and, scores lying in [-1, 1], equals
  // the unclamped (peak - distant) / 2.
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const FieldConfig c =
        config_with(10.0 + 1000.0 * seed, 1 + static_cast<int>(seed % 6),
                    9 + static_cast<int>(seed), -1.0 + seed / 15.0, 0.05 * (seed % 4), seed);
    const rotary_fields::FieldMetrics m =
        rotary_fields::field_metrics(rotary_fields::score_matrix(c));
    CHECK(m.concentration >= 0.0);
    CHECK(m.concentration <= 1.0);
    CHECK(m.concentration == Approx((m.peak - m.distant) / 2.0).margin(1e-15));
  }
}

TEST_CASE("metrics: bad matrices throw naming the problem", "[rotary_fields]") {
  CHECK_THROWS_WITH(rotary_fields::peak_score(Eigen::MatrixXd::Zero(3, 4)),
                    Contains("scores.cols() = 4"));
  CHECK_THROWS_WITH(rotary_fields::distant_mass(Eigen::MatrixXd::Zero(8, 8)),
                    Contains("scores.rows() = 8") && Contains(">= 9"));
  CHECK_THROWS_WITH(rotary_fields::nearby_mass(Eigen::MatrixXd::Zero(1, 1)), Contains(">= 2"));
  CHECK_THROWS_WITH(rotary_fields::translation_drift(Eigen::MatrixXd::Zero(1, 1)),
                    Contains(">= 2"));
  CHECK_THROWS_WITH(rotary_fields::context_width(Eigen::MatrixXd::Zero(1, 1)), Contains(">= 2"));
  Eigen::MatrixXd nan = Eigen::MatrixXd::Zero(9, 9);
  nan(3, 4) = std::nan("");
  CHECK_THROWS_WITH(rotary_fields::field_metrics(nan), Contains("finite"));
  CHECK_THROWS_WITH(rotary_fields::concentration(std::nan(""), 0.0), Contains("peak"));
  CHECK_THROWS_WITH(rotary_fields::concentration(0.0, INFINITY), Contains("distant"));
  rotary_fields::FieldContent mismatched{Eigen::MatrixXd::Zero(4, 2), Eigen::MatrixXd::Zero(3, 2)};
  CHECK_THROWS_WITH(rotary_fields::score_matrix(mismatched, posemb::default_rope_spec(2)),
                    Contains("keys.rows() = 3"));
}

TEST_CASE("config: bad fields throw naming the field", "[rotary_fields]") {
  auto check = [](void (*edit)(FieldConfig&), const char* name) {
    FieldConfig c;
    edit(c);
    CHECK_THROWS_AS(c.validate(), posemb::Error);
    CHECK_THROWS_WITH(rotary_fields::score_matrix(c), Contains(name));
  };
  check([](FieldConfig& c) { c.base = 0.0; }, "base = 0");
  check([](FieldConfig& c) { c.pairs = 0; }, "pairs = 0");
  check([](FieldConfig& c) { c.len = 1; }, "len = 1");
  check([](FieldConfig& c) { c.len = 1025; }, "len = 1025");
  check([](FieldConfig& c) { c.pairs = 257; }, "pairs = 257");
  check([](FieldConfig& c) { c.position_scale = -2.0; }, "position_scale = -2");
  check([](FieldConfig& c) { c.similarity = 1.5; }, "similarity = 1.5");
  check([](FieldConfig& c) { c.jitter = -0.1; }, "jitter = -0.1");
  CHECK_THROWS_WITH(rotary_fields::preset("llama"),
                    Contains("preset = llama") && Contains("baseline"));
}

TEST_CASE("presets: documented numbers, calibration and ordering", "[rotary_fields]") {
  // Periods 2 pi / inv_freq by hand: baseline inv_freq = 10000^(-m/4) = 10^-m.
  const std::vector<double> baseline =
      rotary_fields::pair_periods(rotary_fields::preset("baseline").config);
  REQUIRE(baseline.size() == 4);
  for (int m = 0; m < 4; ++m)
    CHECK(baseline[m] == Approx(2.0 * rotary_fields::pi * std::pow(10.0, m)));
  // extrapolation: inv_freq = 16^(-m/4) = 2^-m; the longest period 16 pi < N = 64.
  const FieldConfig extrapolation = rotary_fields::preset("extrapolation").config;
  const std::vector<double> wrap = rotary_fields::pair_periods(extrapolation);
  CHECK(wrap.back() == Approx(16.0 * rotary_fields::pi));
  CHECK(wrap.back() < extrapolation.len);
  // neural-phase: exactly 360 degrees across a 16-token field.
  const std::vector<double> phase =
      rotary_fields::pair_periods(rotary_fields::preset("neural-phase").config);
  REQUIRE(phase.size() == 1);
  CHECK(phase[0] == Approx(16.0).epsilon(1e-14));
  // long-range: higher base and more pairs than the baseline; short-context: lower and fewer.
  const FieldConfig long_range = rotary_fields::preset("long-range").config;
  const FieldConfig short_context = rotary_fields::preset("short-context").config;
  CHECK(long_range.base > 10000.0);
  CHECK(long_range.pairs > 4);
  CHECK(short_context.base < 10000.0);
  CHECK(short_context.pairs < 4);

  const auto calibration = rotary_fields::calibrate();
  REQUIRE(calibration.size() == 5);
  for (const auto& row : calibration) {
    INFO(row.name << ": " << row.concentration);
    CHECK(row.pass);
  }
  auto metrics = [](const char* name) {
    return rotary_fields::field_metrics(
        rotary_fields::score_matrix(rotary_fields::preset(name).config));
  };
  const auto sharp = metrics("short-context"), base = metrics("baseline"),
             wide = metrics("long-range");
  CHECK(sharp.concentration > base.concentration);
  CHECK(base.concentration > wide.concentration);
  CHECK(sharp.context_width <= base.context_width);
  CHECK(base.context_width < wide.context_width);
  CHECK(sharp.distant < base.distant);
  CHECK(base.distant < wide.distant);
  // The wrap-around: in the extrapolation preset the keys one longest period away (offset 50)
  // score close to offset 0, while every offset from 3 to 46 stays below half of it.
  const Eigen::MatrixXd s = rotary_fields::score_matrix(extrapolation);
  const double self = s.diagonal(0).mean();
  CHECK(s.diagonal(50).mean() > 0.8 * self);
  for (int offset = 3; offset <= 46; ++offset) CHECK(s.diagonal(offset).mean() < 0.5 * self);
}

TEST_CASE("phase precession: circular-linear regression recovers the slope", "[rotary_fields]") {
  // Four spikes by hand on the line phase = 360 u: slope +360 deg/field, offset 0.
  const std::vector<rotary_fields::Spike> line = {
      {0.0, 0.0}, {0.25, 90.0}, {0.5, 180.0}, {0.75, 270.0}};
  const auto exact = rotary_fields::fit_circular_linear(line);
  CHECK(exact.slope_deg == Approx(360.0).margin(1e-3));
  CHECK(angle_gap_deg(exact.phase_offset_deg, 0.0) < 1e-3);
  CHECK(exact.resultant_length == Approx(1.0).margin(1e-9));

  // Noiseless generated spikes: the fit is exact.
  rotary_fields::PrecessionConfig config;
  config.noise_deg = 0.0;
  auto fit = rotary_fields::fit_circular_linear(rotary_fields::generate_spikes(config));
  CHECK(fit.slope_deg == Approx(-360.0).margin(1e-3));
  CHECK(angle_gap_deg(fit.phase_offset_deg, 0.0) < 1e-3);

  // Noisy spikes: within 20 degrees per field for several slopes and seeds.
  struct Case {
    double slope, noise;
    std::uint64_t seed;
  };
  for (const Case c : {Case{-360.0, 25.0, 1993}, Case{-360.0, 40.0, 7}, Case{-180.0, 25.0, 8},
                       Case{270.0, 25.0, 9}, Case{-500.0, 20.0, 10}}) {
    config.slope_deg = c.slope;
    config.noise_deg = c.noise;
    config.seed = c.seed;
    const auto spikes = rotary_fields::generate_spikes(config);
    REQUIRE(spikes.size() == 300);
    for (const auto& spike : spikes) {
      REQUIRE(spike.position >= 0.0);
      REQUIRE(spike.position <= 1.0);
      REQUIRE(spike.phase_deg >= 0.0);
      REQUIRE(spike.phase_deg < 360.0);
    }
    fit = rotary_fields::fit_circular_linear(spikes);
    INFO("slope " << c.slope << " noise " << c.noise << " fit " << fit.slope_deg);
    CHECK(std::abs(fit.slope_deg - c.slope) < 20.0);
    CHECK(angle_gap_deg(fit.phase_offset_deg, config.entry_phase_deg) < 20.0);
  }
  CHECK_THROWS_WITH(rotary_fields::fit_circular_linear({{0.5, 10.0}}),
                    Contains("spikes.size() = 1"));
  config.spikes = 0;
  CHECK_THROWS_WITH(rotary_fields::generate_spikes(config), Contains("spikes = 0"));
  config.spikes = 10;
  config.noise_deg = -1.0;
  CHECK_THROWS_WITH(rotary_fields::generate_spikes(config), Contains("noise_deg = -1"));
}

TEST_CASE("phase precession: rate by phase is a density peaking mid-field", "[rotary_fields]") {
  const rotary_fields::PrecessionConfig config;  // slope -360 from 360: mid-field phase 180
  std::vector<double> phases;
  for (int p = 0; p < 360; ++p) phases.push_back(p + 0.5);
  const std::vector<double> density = rotary_fields::rate_by_phase(config, phases);
  double total = 0.0;
  for (double d : density) total += d;  // 1-degree steps
  CHECK(total == Approx(1.0).margin(1e-3));
  const auto peak = std::max_element(density.begin(), density.end()) - density.begin();
  CHECK(std::abs(phases[peak] - 180.0) <= 1.0);
  // Symmetric about 180 (the rate profile is symmetric about mid-field).
  CHECK(density[90] == Approx(density[269]).epsilon(1e-9));
}

TEST_CASE("grid interference: hexagonal peaks and six-fold symmetry", "[rotary_fields]") {
  for (const rotary_fields::GridConfig config :
       {rotary_fields::GridConfig{}, rotary_fields::GridConfig{0.7, 17.0, 0.3, -1.2}}) {
    auto g = [&](double x, double y) { return rotary_fields::grid_interference(config, x, y); };
    const double deg = rotary_fields::pi / 180.0;
    // Peaks: g = 3 at the origin and one spacing away along orientation + 30 + 60 k degrees.
    CHECK(g(config.origin_x, config.origin_y) == Approx(3.0));
    for (int k = 0; k < 6; ++k) {
      const double a = (config.orientation_deg + 30.0 + 60.0 * k) * deg;
      CHECK(g(config.origin_x + config.spacing * std::cos(a),
              config.origin_y + config.spacing * std::sin(a)) == Approx(3.0).margin(1e-12));
    }
    // Half a spacing along the same directions lies between peaks.
    CHECK(
        g(config.origin_x + 0.5 * config.spacing * std::cos((config.orientation_deg + 30.0) * deg),
          config.origin_y +
              0.5 * config.spacing * std::sin((config.orientation_deg + 30.0) * deg)) < 0.0);
    // Rotation about the origin by 60 degrees maps the pattern onto itself; by 30 or 90 it
    // does not.
    auto max_change = [&](double rotation_deg) {
      rotary_fields::Random random(5);
      const double c = std::cos(rotation_deg * deg), s = std::sin(rotation_deg * deg);
      double worst = 0.0, lo = 10.0, hi = -10.0;
      for (int n = 0; n < 2000; ++n) {
        const double dx = (random.uniform() - 0.5) * 6.0 * config.spacing;
        const double dy = (random.uniform() - 0.5) * 6.0 * config.spacing;
        const double v = g(config.origin_x + dx, config.origin_y + dy);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        worst = std::max(worst, std::abs(v - g(config.origin_x + c * dx - s * dy,
                                               config.origin_y + s * dx + c * dy)));
      }
      CHECK(lo >= -1.5 - 1e-12);
      CHECK(hi <= 3.0 + 1e-12);
      return worst;
    };
    CHECK(max_change(60.0) < 1e-12);
    CHECK(max_change(-120.0) < 1e-12);
    CHECK(max_change(30.0) > 1.0);
    CHECK(max_change(90.0) > 1.0);
  }
  CHECK_THROWS_WITH(rotary_fields::grid_interference(rotary_fields::GridConfig{0.0}, 0.0, 0.0),
                    Contains("spacing = 0"));
}

TEST_CASE("svg: escaping, colours, ticks and the line chart", "[svg]") {
  CHECK(svg::escape("a<b & \"c\" > 'd'") == "a&lt;b &amp; &quot;c&quot; &gt; &#39;d&#39;");
  CHECK(svg::diverging_colour(-1.0) == "#2166ac");
  CHECK(svg::diverging_colour(0.0) == "#ffffff");
  CHECK(svg::diverging_colour(1.0) == "#b2182b");
  CHECK(svg::diverging_colour(7.0) == "#b2182b");
  CHECK(svg::nice_ticks(0.0, 1.0) == std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0});
  CHECK(svg::nice_ticks(-33.9, 21.6) == std::vector<double>{-30.0, -20.0, -10.0, 0.0, 10.0, 20.0});

  const std::string chart = svg::line_chart("gap <5>", "n", "score", {0.0, 1.0, 2.0},
                                            {{"sin", {1.0, -2.0, 3.0}}, {"rope", {0.5, 0.5, 0.5}}});
  CHECK_THAT(chart, Contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK_THAT(chart, Contains("<title>gap &lt;5&gt;</title>"));
  std::size_t polylines = 0;
  for (std::size_t at = chart.find("<polyline"); at != std::string::npos;
       at = chart.find("<polyline", at + 1)) {
    ++polylines;
  }
  CHECK(polylines == 2);
  CHECK_THROWS_WITH(svg::line_chart("t", "x", "y", {0.0, 1.0}, {{"short", {1.0}}}),
                    Contains("series \"short\" size = 1"));
  CHECK_THROWS_WITH(svg::line_chart("t", "x", "y", {0.0}, {{"s", {1.0}}}),
                    Contains("x.size() = 1"));
  CHECK_THROWS_WITH(svg::write_file("/nonexistent-dir/x.svg", "<svg/>"),
                    Contains("path = /nonexistent-dir/x.svg"));
}
