// One view of the Rotary Fields playground: the settings a reader can change, their parsing and
// checks, everything the panels show, and its JSON. The native example (rotary_fields --json)
// and the interactive page (playground/, the same code compiled to WebAssembly) both call
// parse_view_settings -> compute_view -> view_json, so they show the same numbers.
//
// Settings are name = value pairs, the same names in the page's URL query and as the native
// example's flags (--name value):
//   preset                    one of the presets; the starting point (default: baseline)
//   base pairs len scale      rotary frequencies and window; any of them makes the view "custom"
//   similarity jitter seed    content of the score matrix
//   slope noise               phase precession: model slope (degrees per field), phase noise
//   spacing orientation       grid interference: lattice spacing, orientation (degrees)
//   drift-base drift-dim      drift panel: RoPE and sinusoidal base, head dimension
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "posemb/error.hpp"
#include "posemb/rotary/rope.hpp"
#include "posemb/absolute/sinusoidal.hpp"
#include "rotary_fields.hpp"

namespace rotary_fields {

// ---------------------------------------------------------------------------------------------
// The drift panel: how a query-key score at a fixed gap moves as the pair slides along the
// sequence, for sinusoidal absolute positions and for RoPE (the story of examples/drift_table,
// here with the base and head dimension free and seeded content, in double):
//   sinusoidal(n) = ((x_q + pe[n + gap]) Wq) . ((x_k + pe[n]) Wk)   pe: interleaved, `base`
//   rope(n)       = R(n + gap)(x_q Wq) . R(n)(x_k Wk)                RoPE, interleaved, `base`
// with seeded content (drift_content). RoPE depends on the gap only, so its curve is flat.

struct DriftConfig {
  double base = 10000.0;
  int dim = 64;  // head dimension, even
  int gap = 5;
  int positions = 2048;  // n = 0 .. positions - 1
  std::uint64_t seed = 21;

  void validate() const {
    posemb::require_positive_finite("drift-base", base);
    if (dim < 2 || dim > 256 || dim % 2 != 0) {
      posemb::fail("drift-dim", dim, "expected an even number in 2 .. 256");
    }
    if (gap < 0) posemb::fail("gap", gap, "expected >= 0");
    if (positions < 2) posemb::fail("positions", positions, "expected >= 2");
  }
};

// The content of the drift panel: token embeddings x_q, x_k [dim] (row vectors) and projections
// Wq, Wk [dim, dim], used as x W.
struct DriftContent {
  Eigen::RowVectorXd x_q, x_k;
  Eigen::MatrixXd wq, wk;
};

// Seeded content: x_q, x_k ~ N(0, 1) per feature, Wq, Wk ~ N(0, 1 / dim) per entry, drawn in
// that order (row by row) from Random(config.seed).
inline DriftContent drift_content(const DriftConfig& config) {
  config.validate();
  Random random(config.seed);
  const int d = config.dim;
  DriftContent content{Eigen::RowVectorXd(d), Eigen::RowVectorXd(d), Eigen::MatrixXd(d, d),
                       Eigen::MatrixXd(d, d)};
  for (int i = 0; i < d; ++i) content.x_q[i] = random.normal();
  for (int i = 0; i < d; ++i) content.x_k[i] = random.normal();
  const double w_std = 1.0 / std::sqrt(static_cast<double>(d));
  for (Eigen::MatrixXd* w : {&content.wq, &content.wk}) {
    for (int r = 0; r < d; ++r) {
      for (int c = 0; c < d; ++c) (*w)(r, c) = w_std * random.normal();
    }
  }
  return content;
}

struct DriftCurves {
  std::vector<double> sinusoidal, rope;  // [positions]: score with the key at n = 0, 1, ..
};

// The two curves for the given content (its dim must be config.dim).
inline DriftCurves drift_curves(const DriftConfig& config, const DriftContent& content) {
  config.validate();
  const int d = config.dim;
  if (content.x_q.size() != d || content.x_k.size() != d || content.wq.rows() != d ||
      content.wq.cols() != d || content.wk.rows() != d || content.wk.cols() != d) {
    posemb::fail("content.x_q.size()", content.x_q.size(),
                 "expected x_q, x_k [" + std::to_string(d) + "] and Wq, Wk [" + std::to_string(d) +
                     ", " + std::to_string(d) + "]");
  }
  const int n = config.positions;
  const Eigen::MatrixXd pe = posemb::sinusoidal_table<double>(n + config.gap, d, config.base);

  // (x + pe[p]) W = x W + (pe W)[p]: [n + gap, d]
  const Eigen::RowVectorXd q_content = content.x_q * content.wq;
  const Eigen::RowVectorXd k_content = content.x_k * content.wk;
  const Eigen::MatrixXd q_by_position = (pe * content.wq).rowwise() + q_content;
  const Eigen::MatrixXd k_by_position = (pe * content.wk).rowwise() + k_content;

  // RoPE: the same projected q and k at every position, rotated by n + gap and n: [n, d]
  Eigen::MatrixXd q = q_content.replicate(n, 1);
  Eigen::MatrixXd k = k_content.replicate(n, 1);
  posemb::PositionVector query_positions(n), key_positions(n);
  for (int p = 0; p < n; ++p) {
    query_positions[p] = p + config.gap;
    key_positions[p] = p;
  }
  const posemb::RopeSpec spec =
      posemb::default_rope_spec(d, config.base, posemb::Pairing::Interleaved);
  posemb::rotate_inplace(q, query_positions, spec);
  posemb::rotate_inplace(k, key_positions, spec);

  DriftCurves curves{std::vector<double>(n), std::vector<double>(n)};
  for (int p = 0; p < n; ++p) {
    curves.sinusoidal[p] = q_by_position.row(p + config.gap).dot(k_by_position.row(p));
    curves.rope[p] = q.row(p).dot(k.row(p));
  }
  return curves;
}

inline DriftCurves drift_curves(const DriftConfig& config) {
  return drift_curves(config, drift_content(config));
}

// max - min of a curve.
inline double spread(const std::vector<double>& values) {
  if (values.empty()) posemb::fail("values.size()", 0, "expected >= 1");
  double low = values[0], high = values[0];
  for (double v : values) {
    low = std::min(low, v);
    high = std::max(high, v);
  }
  return high - low;
}

// ---------------------------------------------------------------------------------------------
// Settings

struct ViewSettings {
  FieldConfig field;
  PrecessionConfig precession;
  GridConfig grid;
  DriftConfig drift;
};

namespace internal {

inline double parse_number(const std::string& name, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(value)) {
    posemb::fail(name, "\"" + text + "\"", "expected a finite number");
  }
  return value;
}

inline long long parse_whole(const std::string& name, const std::string& text, long long low,
                             long long high) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const long long value = std::strtoll(begin, &end, 10);
  if (text.empty() || end != begin + text.size()) {
    posemb::fail(name, "\"" + text + "\"", "expected a whole number");
  }
  if (value < low || value > high) {
    posemb::fail(name, value, "expected " + std::to_string(low) + " .. " + std::to_string(high));
  }
  return value;
}

inline double parse_in_range(const std::string& name, const std::string& text, double low,
                             double high, const std::string& expected) {
  const double value = parse_number(name, text);
  if (!(value >= low && value <= high)) posemb::fail(name, value, expected);
  return value;
}

}  // namespace internal

// Every setting name, in the order the page and the JSON list them.
inline const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> names = {
      "preset", "base",  "pairs", "len",     "scale",       "similarity", "jitter",
      "seed",   "slope", "noise", "spacing", "orientation", "drift-base", "drift-dim"};
  return names;
}

// The settings from name = value pairs (any order; a name at most once). Starts from the preset
// (baseline when none is given) and the default panels; every value is checked before anything
// is computed. Throws posemb::Error naming the first bad setting.
inline ViewSettings parse_view_settings(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string preset_name = "baseline";
  for (std::size_t a = 0; a < pairs.size(); ++a) {
    bool known = false;
    for (const std::string& name : setting_names()) known = known || name == pairs[a].first;
    if (!known) {
      std::string names;
      for (const std::string& name : setting_names()) names += (names.empty() ? "" : ", ") + name;
      posemb::fail("setting", pairs[a].first, "expected one of " + names);
    }
    for (std::size_t b = 0; b < a; ++b) {
      if (pairs[b].first == pairs[a].first) {
        posemb::fail(pairs[a].first, pairs[a].second, "given twice");
      }
    }
    if (pairs[a].first == "preset") preset_name = pairs[a].second;
  }
  ViewSettings settings;
  settings.field = preset(preset_name).config;
  for (const auto& [name, text] : pairs) {
    FieldConfig& f = settings.field;
    if (name == "base") {
      f.base = internal::parse_in_range(name, text, 1e-300, 1e300, "expected a finite number > 0");
    } else if (name == "pairs") {
      f.pairs = static_cast<int>(internal::parse_whole(name, text, 1, 256));
    } else if (name == "len") {
      f.len = static_cast<int>(internal::parse_whole(name, text, 9, 1024));
    } else if (name == "scale") {
      f.position_scale =
          internal::parse_in_range(name, text, 1e-300, 1e300, "expected a finite number > 0");
    } else if (name == "similarity") {
      f.similarity = internal::parse_in_range(name, text, -1.0, 1.0, "expected -1 .. 1");
    } else if (name == "jitter") {
      f.jitter = internal::parse_in_range(name, text, 0.0, 10.0, "expected 0 .. 10");
    } else if (name == "seed") {
      f.seed = static_cast<std::uint64_t>(internal::parse_whole(name, text, 0, 4294967295LL));
    } else if (name == "slope") {
      settings.precession.slope_deg =
          internal::parse_in_range(name, text, -720.0, 720.0, "expected -720 .. 720 degrees");
    } else if (name == "noise") {
      settings.precession.noise_deg =
          internal::parse_in_range(name, text, 0.0, 180.0, "expected 0 .. 180 degrees");
    } else if (name == "spacing") {
      settings.grid.spacing =
          internal::parse_in_range(name, text, 0.05, 100.0, "expected 0.05 .. 100");
    } else if (name == "orientation") {
      settings.grid.orientation_deg =
          internal::parse_in_range(name, text, -360.0, 360.0, "expected -360 .. 360 degrees");
    } else if (name == "drift-base") {
      settings.drift.base =
          internal::parse_in_range(name, text, 1e-300, 1e300, "expected a finite number > 0");
    } else if (name == "drift-dim") {
      settings.drift.dim = static_cast<int>(internal::parse_whole(name, text, 2, 256));
    }
    if (name == "base" || name == "pairs" || name == "len" || name == "scale") f.name = "custom";
  }
  settings.field.validate();
  settings.precession.validate();
  settings.drift.validate();
  return settings;
}

// ---------------------------------------------------------------------------------------------
// Everything the panels show

// The panels of a view, so that a page recomputes only the panel whose control moved.
enum Part : unsigned {
  field_part = 1,       // score matrix, metrics, frequency ladder
  precession_part = 2,  // spikes, circular-linear fit, rate by phase
  grid_part = 4,        // interference field
  drift_part = 8,       // gap-5 scores against position
  all_parts = 15,
};

struct View {
  ViewSettings settings;
  unsigned parts = all_parts;  // which of the members below were computed
  Eigen::MatrixXd scores;      // [len, len]
  FieldMetrics metrics{};
  std::vector<double> periods;  // [pairs], tokens
  std::vector<Spike> spikes;    // [precession.spikes]
  CircularLinearFit fit{};
  std::vector<double> rate_phases_deg, rate_density;  // [91]: 0, 4, .., 360 degrees; per degree
  std::vector<double> phase_bin_counts;               // [18]: spikes per 20-degree bin
  int grid_cells = 90;
  double grid_extent = 1.5;  // x, y in [-grid_extent, grid_extent]
  std::vector<double> grid;  // [grid_cells * grid_cells], row 0 at the top (largest y)
  DriftCurves drift;
};

inline View compute_view(const ViewSettings& settings, unsigned parts = all_parts) {
  View view;
  view.settings = settings;
  view.parts = parts;
  if (parts & field_part) {
    view.scores = score_matrix(settings.field);
    view.metrics = field_metrics(view.scores);
    view.periods = pair_periods(settings.field);
  }
  if (parts & precession_part) {
    view.spikes = generate_spikes(settings.precession);
    view.fit = fit_circular_linear(view.spikes);
    for (int phase = 0; phase <= 360; phase += 4) view.rate_phases_deg.push_back(phase);
    view.rate_density = rate_by_phase(settings.precession, view.rate_phases_deg);
    view.phase_bin_counts.assign(18, 0.0);
    for (const Spike& spike : view.spikes) {
      view.phase_bin_counts[std::min(17, static_cast<int>(spike.phase_deg / 20.0))] += 1.0;
    }
  }
  if (parts & grid_part) {
    const int cells = view.grid_cells;
    view.grid.resize(static_cast<std::size_t>(cells) * cells);
    for (int r = 0; r < cells; ++r) {
      for (int c = 0; c < cells; ++c) {
        const double x = view.grid_extent * (2.0 * (c + 0.5) / cells - 1.0);
        const double y = view.grid_extent * (1.0 - 2.0 * (r + 0.5) / cells);
        view.grid[static_cast<std::size_t>(r) * cells + c] = grid_interference(settings.grid, x, y);
      }
    }
  }
  if (parts & drift_part) view.drift = drift_curves(settings.drift);
  return view;
}

// The calibration table of the presets and the ordering check short-context > baseline >
// long-range (concentration), at the presets' seed and at each of seeds 1 .. seed_count.
struct OrderingCheck {
  bool holds;
  int seed_count;
  int seeds_holding;
};

inline double concentration_at_seed(const std::string& name, std::uint64_t seed) {
  FieldConfig config = preset(name).config;
  config.seed = seed;
  return field_metrics(score_matrix(config)).concentration;
}

inline bool ordering_holds(double short_context, double baseline, double long_range) {
  return short_context > baseline && baseline > long_range;
}

inline OrderingCheck check_ordering(int seed_count = 40) {
  const std::uint64_t preset_seed = preset("baseline").config.seed;
  auto holds_at = [](std::uint64_t seed) {
    return ordering_holds(concentration_at_seed("short-context", seed),
                          concentration_at_seed("baseline", seed),
                          concentration_at_seed("long-range", seed));
  };
  OrderingCheck check{holds_at(preset_seed), seed_count, 0};
  for (int seed = 1; seed <= seed_count; ++seed) check.seeds_holding += holds_at(seed);
  return check;
}

// ---------------------------------------------------------------------------------------------
// JSON (numbers with 17 significant digits, so that they read back exactly)

class JsonWriter {
 public:
  JsonWriter& key(const std::string& name) {
    separate();
    string_value(name);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(double v, int significant_digits = 17) {
    separate();
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.*g", significant_digits, v);
    out_ += std::isfinite(v) ? buffer : "null";
    return *this;
  }
  JsonWriter& value(bool v) {
    separate();
    out_ += v ? "true" : "false";
    return *this;
  }
  JsonWriter& value(const std::string& v) {
    separate();
    string_value(v);
    return *this;
  }
  JsonWriter& value(const std::vector<double>& values, int significant_digits = 17) {
    begin_array();
    for (double v : values) value(v, significant_digits);
    return end_array();
  }
  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  const std::string& str() const { return out_; }

 private:
  void separate() {
    if (!after_key_ && !first_) out_ += ',';
    after_key_ = false;
    first_ = false;
  }
  JsonWriter& open(char bracket) {
    separate();
    out_ += bracket;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char bracket) {
    out_ += bracket;
    first_ = false;
    return *this;
  }
  void string_value(const std::string& text) {
    out_ += '"';
    for (char c : text) {
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += c;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
        out_ += buffer;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

// One JSON object: the settings, then the metrics under their page names (peak, mean, nearby,
// distant, concentration, width, drift), the precession fit and the drift panel's spreads, of
// the parts computed. With `with_arrays`, also everything the page draws (the score matrix row
// by row, the periods, the spikes, the rate by phase, the grid field and the drift curves).
inline std::string view_json(const View& view, bool with_arrays) {
  const ViewSettings& s = view.settings;
  const FieldConfig& f = s.field;
  JsonWriter json;
  json.begin_object();
  json.key("preset").value(f.name);
  json.key("base").value(f.base);
  json.key("pairs").value(static_cast<double>(f.pairs));
  json.key("len").value(static_cast<double>(f.len));
  json.key("scale").value(f.position_scale);
  json.key("similarity").value(f.similarity);
  json.key("jitter").value(f.jitter);
  json.key("seed").value(static_cast<double>(f.seed));
  json.key("slope").value(s.precession.slope_deg);
  json.key("noise").value(s.precession.noise_deg);
  json.key("spacing").value(s.grid.spacing);
  json.key("orientation").value(s.grid.orientation_deg);
  json.key("drift-base").value(s.drift.base);
  json.key("drift-dim").value(static_cast<double>(s.drift.dim));

  if (view.parts & field_part) {
    json.key("peak").value(view.metrics.peak);
    json.key("mean").value(view.metrics.mean);
    json.key("nearby").value(view.metrics.nearby);
    json.key("distant").value(view.metrics.distant);
    json.key("concentration").value(view.metrics.concentration);
    json.key("width").value(view.metrics.context_width);
    json.key("drift").value(view.metrics.drift);
  }
  if (view.parts & precession_part) {
    json.key("fit-slope").value(view.fit.slope_deg);
    json.key("fit-length").value(view.fit.resultant_length);
  }
  if (view.parts & drift_part) {
    json.key("sinusoidal-spread").value(spread(view.drift.sinusoidal));
    json.key("rope-spread").value(spread(view.drift.rope));
  }
  if (!with_arrays) {
    json.end_object();
    return json.str();
  }
  // Arrays for drawing, to 9 significant digits.
  constexpr int digits = 9;
  if (view.parts & field_part) {
    json.key("scores").begin_array();
    for (Eigen::Index i = 0; i < view.scores.rows(); ++i) {
      json.begin_array();
      for (Eigen::Index j = 0; j < view.scores.cols(); ++j) json.value(view.scores(i, j), digits);
      json.end_array();
    }
    json.end_array();
    json.key("periods").value(view.periods, digits);
  }
  if (view.parts & precession_part) {
    std::vector<double> positions, phases;
    for (const Spike& spike : view.spikes) {
      positions.push_back(spike.position);
      phases.push_back(spike.phase_deg);
    }
    json.key("spike-positions").value(positions, digits);
    json.key("spike-phases").value(phases, digits);
    json.key("fit-offset").value(view.fit.phase_offset_deg);
    json.key("entry-phase").value(s.precession.entry_phase_deg);
    json.key("rate-phases").value(view.rate_phases_deg, digits);
    json.key("rate-density").value(view.rate_density, digits);
    json.key("phase-bins").value(view.phase_bin_counts, digits);
  }
  if (view.parts & grid_part) {
    json.key("grid-cells").value(static_cast<double>(view.grid_cells));
    json.key("grid-extent").value(view.grid_extent);
    json.key("grid").value(view.grid, digits);
  }
  if (view.parts & drift_part) {
    json.key("drift-gap").value(static_cast<double>(s.drift.gap));
    json.key("drift-sinusoidal").value(view.drift.sinusoidal, digits);
    json.key("drift-rope").value(view.drift.rope, digits);
  }
  json.end_object();
  return json.str();
}

// The presets (with their settings and descriptions), the calibration table and the ordering
// check, as one JSON object.
inline std::string presets_json() {
  JsonWriter json;
  json.begin_object();
  json.key("presets").begin_array();
  for (const Preset& p : presets()) {
    json.begin_object();
    json.key("name").value(p.config.name);
    json.key("description").value(p.description);
    json.key("base").value(p.config.base);
    json.key("pairs").value(static_cast<double>(p.config.pairs));
    json.key("len").value(static_cast<double>(p.config.len));
    json.key("scale").value(p.config.position_scale);
    json.key("similarity").value(p.config.similarity);
    json.key("jitter").value(p.config.jitter);
    json.key("seed").value(static_cast<double>(p.config.seed));
    json.end_object();
  }
  json.end_array();
  json.key("calibration").begin_array();
  for (const Calibration& row : calibrate()) {
    json.begin_object();
    json.key("name").value(row.name);
    json.key("regime").value(row.regime.label);
    json.key("low").value(row.regime.low);
    json.key("high").value(row.regime.high);
    json.key("concentration").value(row.concentration);
    json.key("pass").value(row.pass);
    json.end_object();
  }
  json.end_array();
  const OrderingCheck ordering = check_ordering();
  json.key("ordering-holds").value(ordering.holds);
  json.key("ordering-seeds").value(static_cast<double>(ordering.seed_count));
  json.key("ordering-seeds-holding").value(static_cast<double>(ordering.seeds_holding));
  json.end_object();
  return json.str();
}

// The error object the page shows: {"error": message, "setting": name}, where name is the
// setting the message starts with (after "posemb: "), or "" when none does.
inline std::string error_json(const std::string& message) {
  std::string setting;
  const std::string prefix = "posemb: ";
  const std::string text = message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  for (const std::string& name : setting_names()) {
    if (text.rfind(name + " = ", 0) == 0 && name.size() > setting.size()) setting = name;
  }
  if (text.rfind("setting = ", 0) == 0) setting = "setting";
  JsonWriter json;
  json.begin_object().key("error").value(text).key("setting").value(setting).end_object();
  return json.str();
}

}  // namespace rotary_fields
