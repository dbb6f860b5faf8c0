// Tests of playground/rotary_fields_view.hpp: the settings of the interactive page and of
// `rotary_fields --json`, the drift panel (against the published gap-5 sweep and the closed
// forms of RoPE and sinusoidal scores), the panels of a view and the JSON.

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "drift_table.hpp"
#include "rotary_fields_view.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using rotary_fields::parse_view_settings;
using Settings = std::vector<std::pair<std::string, std::string>>;

namespace {

rotary_fields::DriftContent published_drift_content() {
  const drift::Inputs in = drift::load_inputs(std::string(POSEMB_DATA_DIR) + "/drift_table");
  return {in.x_q.cast<double>().transpose(), in.x_k.cast<double>().transpose(),
          in.Wq.cast<double>(), in.Wk.cast<double>()};
}

}  // namespace

TEST_CASE("view settings: defaults, presets and overrides", "[rotary_fields_view]") {
  const auto defaults = parse_view_settings({});
  CHECK(defaults.field.name == "baseline");
  CHECK(defaults.field.base == 10000.0);
  CHECK(defaults.field.pairs == 4);
  CHECK(defaults.field.len == 16);
  CHECK(defaults.precession.slope_deg == -360.0);
  CHECK(defaults.grid.spacing == 1.0);
  CHECK(defaults.drift.dim == 64);

  const auto long_range = parse_view_settings({{"preset", "long-range"}, {"seed", "7"}});
  CHECK(long_range.field.name == "long-range");  // the content changed, not the frequencies
  CHECK(long_range.field.base == 1.0e6);
  CHECK(long_range.field.pairs == 16);
  CHECK(long_range.field.seed == 7u);

  // Any frequency or window setting makes the view custom; the order of the pairs is free.
  const auto custom = parse_view_settings({{"pairs", "8"},
                                           {"preset", "short-context"},
                                           {"scale", "2.5"},
                                           {"similarity", "-0.25"},
                                           {"jitter", "0"},
                                           {"slope", "-180"},
                                           {"noise", "0"},
                                           {"spacing", "0.5"},
                                           {"orientation", "15"},
                                           {"drift-base", "500"},
                                           {"drift-dim", "32"}});
  CHECK(custom.field.name == "custom");
  CHECK(custom.field.base == 10.0);  // from the preset
  CHECK(custom.field.pairs == 8);
  CHECK(custom.field.position_scale == 2.5);
  CHECK(custom.field.similarity == -0.25);
  CHECK(custom.field.jitter == 0.0);
  CHECK(custom.precession.slope_deg == -180.0);
  CHECK(custom.precession.noise_deg == 0.0);
  CHECK(custom.grid.spacing == 0.5);
  CHECK(custom.grid.orientation_deg == 15.0);
  CHECK(custom.drift.base == 500.0);
  CHECK(custom.drift.dim == 32);

  // Numbers are read exactly (the page writes the shortest round-trip form).
  CHECK(parse_view_settings({{"scale", "2.5464790894703255"}}).field.position_scale ==
        16.0 / (2.0 * rotary_fields::pi));
}

TEST_CASE("view settings: every bad value throws naming the setting", "[rotary_fields_view]") {
  const std::vector<std::pair<Settings, std::string>> cases = {
      {{{"seed", "abc"}}, "seed = \"abc\": expected a whole number"},
      {{{"seed", "1.5"}}, "seed = \"1.5\": expected a whole number"},
      {{{"seed", "-1"}}, "seed = -1: expected 0 .. 4294967295"},
      {{{"pairs", "0"}}, "pairs = 0: expected 1 .. 256"},
      {{{"pairs", "257"}}, "pairs = 257: expected 1 .. 256"},
      {{{"len", "8"}}, "len = 8: expected 9 .. 1024"},
      {{{"len", ""}}, "len = \"\": expected a whole number"},
      {{{"base", "0"}}, "base = 0: expected a finite number > 0"},
      {{{"base", "nan"}}, "base = \"nan\": expected a finite number"},
      {{{"base", "1e400"}}, "base = \"1e400\": expected a finite number"},
      {{{"base", "12x"}}, "base = \"12x\": expected a finite number"},
      {{{"scale", "-1"}}, "scale = -1: expected a finite number > 0"},
      {{{"similarity", "1.5"}}, "similarity = 1.5: expected -1 .. 1"},
      {{{"jitter", "-0.1"}}, "jitter = -0.10000000000000001: expected 0 .. 10"},
      {{{"slope", "800"}}, "slope = 800: expected -720 .. 720 degrees"},
      {{{"noise", "-1"}}, "noise = -1: expected 0 .. 180 degrees"},
      {{{"spacing", "0"}}, "spacing = 0: expected 0.05 .. 100"},
      {{{"orientation", "400"}}, "orientation = 400: expected -360 .. 360 degrees"},
      {{{"drift-base", "-2"}}, "drift-base = -2: expected a finite number > 0"},
      {{{"drift-dim", "3"}}, "drift-dim = 3: expected an even number in 2 .. 256"},
      {{{"drift-dim", "512"}}, "drift-dim = 512: expected 2 .. 256"},
      {{{"preset", "huge"}}, "preset = huge: expected one of baseline, long-range"},
      {{{"seed", "1"}, {"seed", "2"}}, "seed = 2: given twice"},
      {{{"bogus", "1"}}, "setting = bogus: expected one of preset, base"},
  };
  for (const auto& [settings, message] : cases) {
    INFO(settings.front().first << " = " << settings.back().second);
    CHECK_THROWS_AS(parse_view_settings(settings), posemb::Error);
    CHECK_THROWS_WITH(parse_view_settings(settings), StartsWith("posemb: " + message));
  }
}

TEST_CASE("drift panel: the published gap-5 sweep and the closed forms", "[rotary_fields_view]") {
  // The published inputs (data/drift_table: d = 64, base 10000) in double. The published
  // sweep over n = 0..2047 (float32 arithmetic) has sinusoidal min -33.9097, max 21.6053 and
  // RoPE mean -0.6102; double arithmetic moves these by less than 2e-3.
  const rotary_fields::DriftConfig config;
  const rotary_fields::DriftContent content = published_drift_content();
  const rotary_fields::DriftCurves curves = rotary_fields::drift_curves(config, content);
  REQUIRE(curves.sinusoidal.size() == 2048);
  const auto [low, high] = std::minmax_element(curves.sinusoidal.begin(), curves.sinusoidal.end());
  CHECK(*low == Approx(-33.9097).margin(2e-3));
  CHECK(*high == Approx(21.6053).margin(2e-3));
  CHECK(rotary_fields::spread(curves.sinusoidal) == Approx(55.5150).margin(4e-3));
  CHECK(curves.rope[0] == Approx(-0.6102).margin(5e-5));
  // RoPE depends on the gap only: flat to the rounding of angles up to 2052 rad.
  CHECK(rotary_fields::spread(curves.rope) < 1e-10);

  // Closed forms at a few positions, written out from the formulas with the seeded content
  // of another base and dimension:
  //   RoPE:       sum_m (qa ka + qb kb) cos(w_m gap) + (qa kb - qb ka) sin(w_m gap), w_m =
  //   base^(-2m/d) sinusoidal: ((x_q + pe(n + gap)) Wq) . ((x_k + pe(n)) Wk), pe(p)[2i] = sin(p
  //   w_i),
  //               pe(p)[2i + 1] = cos(p w_i)
  rotary_fields::DriftConfig other;
  other.base = 500.0;
  other.dim = 12;
  other.positions = 300;
  const rotary_fields::DriftContent seeded = rotary_fields::drift_content(other);
  const rotary_fields::DriftCurves other_curves = rotary_fields::drift_curves(other);
  const Eigen::RowVectorXd q = seeded.x_q * seeded.wq, k = seeded.x_k * seeded.wk;
  double rope = 0.0;
  for (int m = 0; m < other.dim / 2; ++m) {
    const double w = std::pow(other.base, -2.0 * m / other.dim);
    const double qa = q[2 * m], qb = q[2 * m + 1], ka = k[2 * m], kb = k[2 * m + 1];
    rope += (qa * ka + qb * kb) * std::cos(w * other.gap) +
            (qa * kb - qb * ka) * std::sin(w * other.gap);
  }
  auto pe = [&](int p) {
    Eigen::RowVectorXd row(other.dim);
    for (int i = 0; i < other.dim / 2; ++i) {
      const double w = std::pow(other.base, -2.0 * i / other.dim);
      row[2 * i] = std::sin(p * w);
      row[2 * i + 1] = std::cos(p * w);
    }
    return row;
  };
  for (int n : {0, 1, 150, 299}) {
    CHECK(other_curves.rope[n] == Approx(rope).epsilon(1e-12));
    const double sinusoidal =
        ((seeded.x_q + pe(n + other.gap)) * seeded.wq).dot((seeded.x_k + pe(n)) * seeded.wk);
    CHECK(other_curves.sinusoidal[n] == Approx(sinusoidal).epsilon(1e-12));
  }
  // Content of the wrong size is refused.
  CHECK_THROWS_WITH(rotary_fields::drift_curves(other, content),
                    Contains("content.x_q.size() = 64"));
}

TEST_CASE("view: panels, parts and the JSON both front ends print", "[rotary_fields_view]") {
  const auto settings = parse_view_settings({{"preset", "extrapolation"}, {"seed", "3"}});
  const rotary_fields::View view = rotary_fields::compute_view(settings);
  // The metrics are the ones of the score matrix of the same configuration.
  const Eigen::MatrixXd scores = rotary_fields::score_matrix(settings.field);
  CHECK(view.scores == scores);
  CHECK(view.metrics.concentration == rotary_fields::field_metrics(scores).concentration);
  CHECK(view.periods.size() == 4);
  CHECK(view.spikes.size() == 300);
  CHECK(view.rate_density.size() == 91);
  // The rate by phase is a density over [0, 360]: trapezoid rule with 4-degree steps.
  double integral = 0.0;
  for (std::size_t k = 1; k < view.rate_density.size(); ++k) {
    integral += 2.0 * (view.rate_density[k - 1] + view.rate_density[k]);
  }
  CHECK(integral == Approx(1.0).margin(1e-6));
  double spikes_binned = 0.0;
  for (double count : view.phase_bin_counts) spikes_binned += count;
  CHECK(spikes_binned == 300.0);
  // The grid field is centred on a peak (g = 3) of the lattice: the centre cells are near 3.
  const int c = view.grid_cells / 2;
  CHECK(view.grid[static_cast<std::size_t>(c) * view.grid_cells + c] > 2.9);
  CHECK(view.grid.size() == static_cast<std::size_t>(view.grid_cells * view.grid_cells));

  const std::string summary = rotary_fields::view_json(view, false);
  CHECK_THAT(summary,
             StartsWith("{\"preset\":\"extrapolation\",\"base\":16,\"pairs\":4,\"len\":64,"));
  for (const char* key :
       {"\"peak\":", "\"mean\":", "\"nearby\":", "\"distant\":", "\"concentration\":", "\"width\":",
        "\"drift\":", "\"fit-slope\":", "\"sinusoidal-spread\":", "\"seed\":3,"}) {
    CHECK_THAT(summary, Contains(key));
  }
  CHECK_THAT(summary, !Contains("\"scores\""));
  // 17 significant digits: the concentration reads back exactly.
  const std::size_t at = summary.find("\"concentration\":") + 16;
  CHECK(std::strtod(summary.c_str() + at, nullptr) == view.metrics.concentration);
  CHECK_THAT(rotary_fields::view_json(view, true), Contains("\"scores\":[["));

  // Only the parts asked for are computed and printed.
  const rotary_fields::View grid_only =
      rotary_fields::compute_view(settings, rotary_fields::grid_part);
  CHECK(grid_only.scores.size() == 0);
  CHECK(grid_only.spikes.empty());
  const std::string grid_json = rotary_fields::view_json(grid_only, true);
  CHECK_THAT(grid_json, Contains("\"grid\":["));
  CHECK_THAT(grid_json, !Contains("\"peak\""));
  CHECK_THAT(grid_json, !Contains("\"drift-rope\""));
}

TEST_CASE("view JSON: escaping, errors and the presets", "[rotary_fields_view]") {
  rotary_fields::JsonWriter json;
  json.begin_object().key("a\"b\\c\n").value(std::string("x")).key("list");
  json.value(std::vector<double>{1.5, -0.25}).key("ok").value(true).end_object();
  CHECK(json.str() == "{\"a\\\"b\\\\c\\u000a\":\"x\",\"list\":[1.5,-0.25],\"ok\":true}");

  CHECK(rotary_fields::error_json("posemb: seed = \"abc\": expected a whole number") ==
        "{\"error\":\"seed = \\\"abc\\\": expected a whole number\",\"setting\":\"seed\"}");
  CHECK(rotary_fields::error_json("posemb: drift-base = 0: expected a finite number > 0") ==
        "{\"error\":\"drift-base = 0: expected a finite number > 0\",\"setting\":\"drift-base\"}");
  CHECK_THAT(rotary_fields::error_json("posemb: setting = x: expected one of preset"),
             Contains("\"setting\":\"setting\""));

  const std::string presets = rotary_fields::presets_json();
  for (const char* name :
       {"baseline", "long-range", "short-context", "extrapolation", "neural-phase"}) {
    CHECK_THAT(presets, Contains(std::string("\"name\":\"") + name + "\""));
  }
  CHECK_THAT(presets, Contains("\"ordering-holds\":true"));
  CHECK_THAT(presets, Contains("\"ordering-seeds-holding\":40"));
  CHECK_THAT(presets, !Contains("\"pass\":false"));
}
