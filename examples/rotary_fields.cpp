// Rotary Fields: a toy RoPE attention-score matrix beside the hippocampal phase code.
//
//   rotary_fields [--preset NAME] [--base B] [--pairs P] [--len N] [--scale F]
//                 [--similarity R] [--jitter E] [--seed S] [--slope DEG] [--noise DEG]
//                 [--spacing X] [--orientation DEG] [--drift-base B] [--drift-dim D]
//                 [--json | --report out.html]
//
// Prints the metrics table (all five presets, or the one preset / custom configuration asked
// for), the calibration table of the five presets and a phase-precession fit, and writes a
// self-contained XHTML report with SVG pictures (no scripts, no network) when --report is given.
// --json prints instead one JSON object with the numbers of one view of the interactive page
// (playground/), which runs the same code (playground/rotary_fields_view.hpp) compiled to
// WebAssembly. The model and the preset numbers are documented in playground/rotary_fields.hpp.

#include "rotary_fields.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "rotary_fields_view.hpp"
#include "svg.hpp"

namespace {

using rotary_fields::FieldConfig;
using rotary_fields::FieldMetrics;

struct Options {
  std::vector<FieldConfig> configs;      // the configurations to tabulate and draw
  rotary_fields::ViewSettings settings;  // the one view --json prints; its panels for the report
  std::string report_path;               // empty: no report
  bool json = false;
};

void print_usage() {
  std::printf(
      "usage: rotary_fields [--preset NAME] [--base B] [--pairs P] [--len N] [--scale F]\n"
      "                     [--similarity R] [--jitter E] [--seed S] [--slope DEG] [--noise DEG]\n"
      "                     [--spacing X] [--orientation DEG] [--drift-base B] [--drift-dim D]\n"
      "                     [--json | --report out.html]\n"
      "presets:");
  for (const auto& p : rotary_fields::presets()) std::printf(" %s", p.config.name.c_str());
  std::printf(
      "\nWithout --preset or --base/--pairs/--len/--scale every preset is shown; --similarity,\n"
      "--jitter and --seed then apply to each of them. --base/--pairs/--len/--scale override the\n"
      "preset (baseline by default). --scale divides inv_freq (linear position interpolation).\n"
      "--json prints one JSON object for one view (the preset, or baseline): the settings and\n"
      "the metrics peak, mean, nearby, distant, concentration, width, drift, fit-slope,\n"
      "fit-length, sinusoidal-spread and rope-spread, as the interactive page shows them.\n"
      "The calibration table always covers the five presets as defined.\n");
}

Options parse_options(int argc, char** argv) {
  std::vector<std::pair<std::string, std::string>> settings;  // name, value
  Options options;
  for (int a = 1; a < argc; ++a) {
    const std::string flag = argv[a];
    if (flag == "--help" || flag == "-h") {
      print_usage();
      std::exit(0);
    }
    if (flag == "--json") {
      options.json = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      posemb::fail("option", flag, "expected --NAME VALUE (see --help)");
    }
    if (a + 1 >= argc) posemb::fail(flag, "(nothing)", "expected a value after it");
    const std::string value = argv[++a];
    if (flag == "--report") {
      options.report_path = value;
    } else {
      settings.emplace_back(flag.substr(2), value);
    }
  }
  if (options.json && !options.report_path.empty()) {
    posemb::fail("--report", options.report_path, "expected either --json or --report");
  }
  options.settings = rotary_fields::parse_view_settings(settings);
  bool one_view = false;
  for (const auto& [name, value] : settings) {
    one_view = one_view || name == "preset" || name == "base" || name == "pairs" || name == "len" ||
               name == "scale";
  }
  if (one_view) {
    options.configs.push_back(options.settings.field);
  } else {
    for (const auto& p : rotary_fields::presets()) {
      auto with_preset = settings;
      with_preset.emplace_back("preset", p.config.name);
      options.configs.push_back(rotary_fields::parse_view_settings(with_preset).field);
    }
  }
  return options;
}

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// ---------------------------------------------------------------------------------------------
// Tables (the same rows go to stdout and into the report)

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::size_t left_columns = 1;  // leading text columns, left-aligned; the rest right-aligned

  void print() const {
    std::vector<std::size_t> widths(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) {
      widths[c] = header[c].size();
      for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
    }
    auto print_row = [&](const std::vector<std::string>& row) {
      for (std::size_t c = 0; c < row.size(); ++c) {
        std::printf(c < left_columns ? "%s%-*s" : "%s%*s", c == 0 ? "" : "  ",
                    static_cast<int>(widths[c]), row[c].c_str());
      }
      std::printf("\n");
    };
    print_row(header);
    for (const auto& row : rows) print_row(row);
  }

  std::string html() const {
    std::string out = "<table>\n<tr>";
    for (const auto& h : header) out += "<th>" + svg::escape(h) + "</th>";
    out += "</tr>\n";
    for (const auto& row : rows) {
      out += "<tr>";
      for (const auto& cell : row) out += "<td>" + svg::escape(cell) + "</td>";
      out += "</tr>\n";
    }
    return out + "</table>\n";
  }
};

Table metrics_table(const std::vector<FieldConfig>& configs,
                    const std::vector<FieldMetrics>& metrics) {
  Table table{{"preset", "base", "pairs", "len", "scale", "rho", "eps", "seed", "peak", "mean",
               "nearby", "distant", "concentration", "width", "drift"},
              {}};
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const FieldConfig& c = configs[k];
    const FieldMetrics& m = metrics[k];
    table.rows.push_back({c.name, svg::num(c.base), std::to_string(c.pairs), std::to_string(c.len),
                          fmt("%.4g", c.position_scale), fmt("%.2f", c.similarity),
                          fmt("%.3f", c.jitter), std::to_string(c.seed), fmt("%.3f", m.peak),
                          fmt("%.3f", m.mean), fmt("%.3f", m.nearby), fmt("%.3f", m.distant),
                          fmt("%.3f", m.concentration), fmt("%.1f", m.context_width),
                          fmt("%.2e", m.drift)});
  }
  return table;
}

Table calibration_table(const std::vector<rotary_fields::Calibration>& calibration) {
  Table table{
      {"preset", "expected regime (reader-assigned)", "range", "concentration", "result"}, {}, 2};
  for (const auto& row : calibration) {
    table.rows.push_back({row.name, row.regime.label,
                          fmt("[%.2f, ", row.regime.low) + fmt("%.2f]", row.regime.high),
                          fmt("%.3f", row.concentration), row.pass ? "PASS" : "FAIL"});
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// Pictures

// Score-matrix heat map with a colour scale for [-1, 1]. Above 128 positions only every
// stride-th query and key is drawn.
std::string heat_map_svg(const FieldConfig& config, const Eigen::MatrixXd& scores) {
  const int n = static_cast<int>(scores.rows());
  const int stride = (n + 127) / 128;
  const int shown = (n + stride - 1) / stride;
  const double cell = std::max(3.0, std::min(20.0, 400.0 / shown));
  const double left = 56, top = 40, side = cell * shown;
  svg::Picture picture(left + side + 110, top + side + 56,
                       "RoPE score matrix, preset " + config.name, true);
  picture.text(left, 24, "S[i, j] = <R(i) q_i, R(j) k_j>  (" + config.name + ")", 14);
  for (int r = 0; r < shown; ++r) {
    for (int c = 0; c < shown; ++c) {
      picture.rect(left + c * cell, top + r * cell, cell, cell,
                   svg::diverging_colour(scores(r * stride, c * stride)));
    }
  }
  picture.rect(left, top, side, side, "none", "#444444");
  const int label_every = shown <= 16 ? 2 : shown <= 32 ? 4 : shown <= 64 ? 8 : 16;
  for (int r = 0; r < shown; r += label_every) {
    const std::string label = std::to_string(r * stride);
    picture.text(left + (r + 0.5) * cell, top + side + 14, label, 10, "middle");
    picture.text(left - 6, top + (r + 0.5) * cell + 4, label, 10, "end");
  }
  picture.text(left + side / 2, top + side + 34, "key position j", 12, "middle");
  picture.text(left - 34, top + side / 2, "query position i", 12, "middle", -90);
  // Colour scale: 40 steps from +1 (top) to -1 (bottom).
  const double bar_x = left + side + 24, bar_h = std::max(side, 160.0) * 0.8;
  const int steps = 40;
  for (int s = 0; s < steps; ++s) {
    const double value = 1.0 - 2.0 * (s + 0.5) / steps;
    picture.rect(bar_x, top + s * bar_h / steps, 16, bar_h / steps + 0.3,
                 svg::diverging_colour(value));
  }
  picture.rect(bar_x, top, 16, bar_h, "none", "#444444");
  for (double v : {1.0, 0.5, 0.0, -0.5, -1.0}) {
    const double y = top + (1.0 - v) / 2.0 * bar_h;
    picture.line(bar_x + 16, y, bar_x + 20, y, "#444444");
    picture.text(bar_x + 23, y + 4, svg::num(v), 10);
  }
  picture.text(bar_x, top + bar_h + 26, "score", 11);
  return picture.str();
}

// The frequency ladder: for each configuration one horizontal line per pair from 1 token to
// its rotation period (log axis), and a dashed marker at the sequence length.
std::string ladder_svg(const std::vector<FieldConfig>& configs) {
  double max_period = 10.0;
  int lines = 0;
  for (const auto& c : configs) {
    for (double p : rotary_fields::pair_periods(c)) max_period = std::max(max_period, p);
    max_period = std::max(max_period, static_cast<double>(c.len));
    lines += c.pairs;
  }
  const int decades = static_cast<int>(std::ceil(std::log10(max_period)));
  const double row = 9.0, gap = 26.0;
  const double used = gap + lines * row + configs.size() * (gap - row);
  svg::Picture picture(780, used + 100, "Frequency ladder: rotation period of each pair");
  picture.text(390, 22, "Frequency ladder: rotation period 2\u03c0/\u03c9 of each pair, in tokens",
               14, "middle");
  svg::Frame frame{0.0, static_cast<double>(decades), 0.0, 1.0, 150.0, 40.0, 560.0, used};
  static const char* superscripts[] = {"\u2070", "\u00b9", "\u00b2", "\u00b3", "\u2074",
                                       "\u2075", "\u2076", "\u2077", "\u2078", "\u2079"};
  picture.rect(frame.left, frame.top, frame.width, frame.height, "none", "#444444");
  for (int d = 0; d <= decades; ++d) {
    const double x = frame.x(d);
    picture.line(x, frame.top, x, frame.top + frame.height, "#e4e4e4");
    const std::string label =
        d <= 3 ? svg::num(std::pow(10.0, d))
               : std::string("10") + (d < 10 ? superscripts[d] : "^" + std::to_string(d));
    picture.text(x, frame.top + frame.height + 16, label, 11, "middle");
  }
  picture.text(frame.left + frame.width / 2, frame.top + frame.height + 34,
               "period in tokens (log scale); dashed: sequence length N", 12, "middle");
  double y = frame.top + gap;
  for (std::size_t k = 0; k < configs.size(); ++k) {
    const auto periods = rotary_fields::pair_periods(configs[k]);
    picture.text(frame.left - 8, y + 4, configs[k].name, 12, "end");
    const double band_top = y - 8;
    for (std::size_t m = 0; m < periods.size(); ++m) {
      const double x_end = frame.x(std::log10(periods[m]));
      picture.line(frame.left, y, x_end, y, svg::series_colour(k), 2.0);
      if (periods.size() <= 4 || m + 1 == periods.size()) {
        picture.text(x_end + 4, y + 3, svg::num(periods[m], periods[m] < 1e5 ? 4 : 3), 9);
      }
      y += row;
    }
    const double xn = frame.x(std::log10(static_cast<double>(configs[k].len)));
    picture.line(xn, band_top, xn, y - row + 8, "#222222", 1.5, "4 3");
    y += gap - row;
  }
  return picture.str();
}

// Phase-precession scatter: position in the field against theta phase, each spike drawn at
// phase and phase + 360 (the usual double plot), with the model's preferred phase (dashed)
// and the circular-linear fit (solid).
std::string precession_svg(const rotary_fields::PrecessionConfig& config,
                           const std::vector<rotary_fields::Spike>& spikes,
                           const rotary_fields::CircularLinearFit& fit) {
  svg::Picture picture(560, 460, "Theta phase precession: spike phase against position");
  picture.text(280, 22, "Theta phase precession (O'Keefe and Recce 1993)", 14, "middle");
  const svg::Frame frame{0.0, 1.0, 0.0, 720.0, 70.0, 40.0, 460.0, 360.0};
  frame.draw_axes(picture, "position in the place field (field units)", "theta phase (degrees)",
                  {0.0, 0.25, 0.5, 0.75, 1.0}, {0, 90, 180, 270, 360, 450, 540, 630, 720});
  for (const auto& spike : spikes) {
    for (double lift : {0.0, 360.0}) {
      picture.circle(frame.x(spike.position), frame.y(spike.phase_deg + lift), 2.2, "#1f77b4",
                     0.55);
    }
  }
  // A line phase(u) = offset + slope u drawn mod 360 in both copies, split where it wraps.
  auto draw_line = [&](double offset, double slope, const std::string& colour,
                       const std::string& dash) {
    for (double lift : {-360.0, 0.0, 360.0, 720.0}) {
      std::vector<std::pair<double, double>> points;
      for (int s = 0; s <= 200; ++s) {
        const double u = s / 200.0;
        const double phase = offset + slope * u + lift;
        if (phase >= 0.0 && phase <= 720.0) points.emplace_back(frame.x(u), frame.y(phase));
      }
      for (std::size_t p = 1; p < points.size(); ++p) {
        picture.line(points[p - 1].first, points[p - 1].second, points[p].first, points[p].second,
                     colour, 2.0, dash);
      }
    }
  };
  draw_line(config.entry_phase_deg - 360.0 * std::floor(config.entry_phase_deg / 360.0),
            config.slope_deg, "#555555", "6 4");
  draw_line(fit.phase_offset_deg, fit.slope_deg, "#d62728", "");
  picture.text(frame.left + 8, frame.top + frame.height + 52,
               "dashed: model slope " + svg::num(config.slope_deg, 4) +
                   " deg/field; red: circular-linear fit " + svg::num(fit.slope_deg, 4) +
                   " deg/field",
               11);
  return picture.str();
}

// Rate by phase: histogram of the spikes' phases (20-degree bins) with the model's expected
// count per bin.
std::string rate_by_phase_svg(const rotary_fields::PrecessionConfig& config,
                              const std::vector<rotary_fields::Spike>& spikes) {
  constexpr int bins = 18;
  constexpr double bin_width = 360.0 / bins;
  std::vector<double> counts(bins, 0.0);
  for (const auto& spike : spikes) {
    counts[std::min(bins - 1, static_cast<int>(spike.phase_deg / bin_width))] += 1.0;
  }
  std::vector<double> phases;
  for (int s = 0; s <= 360; s += 2) phases.push_back(s);
  const auto density = rotary_fields::rate_by_phase(config, phases);
  double y_max = 0.0;
  for (double c : counts) y_max = std::max(y_max, c);
  for (double d : density) y_max = std::max(y_max, d * bin_width * spikes.size());
  svg::Picture picture(560, 400, "Rate by theta phase");
  picture.text(280, 22, "Firing by theta phase: spikes per 20-degree bin", 14, "middle");
  const svg::Frame frame{0.0, 360.0, 0.0, 1.1 * y_max, 70.0, 40.0, 460.0, 290.0};
  frame.draw_axes(picture, "theta phase (degrees)", "spikes per bin",
                  {0, 45, 90, 135, 180, 225, 270, 315, 360});
  for (int b = 0; b < bins; ++b) {
    const double x0 = frame.x(b * bin_width), x1 = frame.x((b + 1) * bin_width);
    picture.rect(x0 + 1, frame.y(counts[b]), x1 - x0 - 2, frame.y(0.0) - frame.y(counts[b]),
                 "#9ecae1");
  }
  std::vector<std::pair<double, double>> curve;
  for (std::size_t k = 0; k < phases.size(); ++k) {
    curve.emplace_back(frame.x(phases[k]), frame.y(density[k] * bin_width * spikes.size()));
  }
  picture.polyline(curve, "#d62728", 2.0);
  picture.text(frame.left + 8, frame.top + frame.height + 52,
               "bars: " + std::to_string(spikes.size()) +
                   " generated spikes; red: the model's expected count per bin",
               11);
  return picture.str();
}

// Grid-like interference: g(x, y) over three grid spacings, centred on a peak.
std::string grid_svg(const rotary_fields::GridConfig& config) {
  constexpr int cells = 60;
  const double extent = 1.5 * config.spacing;  // x, y in [-extent, extent]
  const double cell = 7.0, left = 40, top = 40, side = cells * cell;
  svg::Picture picture(left + side + 120, top + side + 50, "Grid-like interference pattern", true);
  picture.text(left, 24, "Three cosine waves 60\u00b0 apart (Burgess et al. 2007)", 14);
  for (int r = 0; r < cells; ++r) {
    for (int c = 0; c < cells; ++c) {
      const double x = -extent + (c + 0.5) * 2.0 * extent / cells;
      const double y = extent - (r + 0.5) * 2.0 * extent / cells;
      const double g = rotary_fields::grid_interference(config, x, y);
      picture.rect(left + c * cell, top + r * cell, cell, cell,
                   svg::diverging_colour((g - 0.75) / 2.25));
    }
  }
  picture.rect(left, top, side, side, "none", "#444444");
  picture.text(left + side / 2, top + side + 20,
               "x, y in [-1.5, 1.5] grid spacings; peaks (g = 3) on a hexagonal lattice", 11,
               "middle");
  const double bar_x = left + side + 24, bar_h = side * 0.6;
  const int steps = 40;
  for (int s = 0; s < steps; ++s) {
    const double g = 3.0 - 4.5 * (s + 0.5) / steps;
    picture.rect(bar_x, top + s * bar_h / steps, 16, bar_h / steps + 0.3,
                 svg::diverging_colour((g - 0.75) / 2.25));
  }
  picture.rect(bar_x, top, 16, bar_h, "none", "#444444");
  for (double g : {3.0, 1.5, 0.0, -1.5}) {
    const double y = top + (3.0 - g) / 4.5 * bar_h;
    picture.line(bar_x + 16, y, bar_x + 20, y, "#444444");
    picture.text(bar_x + 23, y + 4, svg::num(g), 10);
  }
  picture.text(bar_x, top + bar_h + 26, "g(x, y)", 11);
  return picture.str();
}

// ---------------------------------------------------------------------------------------------
// The report

const char* report_style =
    "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.25em .6em;"
    "text-align:right}td:first-child,th:first-child{text-align:left}figure{margin:1.5em 0}"
    "figcaption{font-size:.9em;color:#444;max-width:50em}.fail{color:#b2182b}";

std::string report_html(const std::vector<FieldConfig>& configs,
                        const std::vector<Eigen::MatrixXd>& matrices, const Table& metrics,
                        const Table& calibration, const std::string& ordering_text,
                        const rotary_fields::PrecessionConfig& precession,
                        const std::vector<rotary_fields::Spike>& spikes,
                        const rotary_fields::CircularLinearFit& fit,
                        const rotary_fields::GridConfig& grid) {
  std::string html =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\"/>\n<title>Rotary Fields</title>\n<style>" +
      std::string(report_style) + "</style>\n</head>\n<body>\n<h1>Rotary Fields</h1>\n";
  html +=
      "<p>A toy RoPE attention-score matrix set beside the hippocampal phase code. Each head "
      "vector has d = 2 &#183; pairs features; pair m turns by &#969;<sub>m</sub> = "
      "base<sup>&#8722;2m/d</sup> radians per token. Query i and key j are rotated by their "
      "positions and the score is the raw dot product S[i, j] = &#10216;R(i) q<sub>i</sub>, "
      "R(j) k<sub>j</sub>&#10217; (no scaling, no softmax). Queries and keys have unit norm, so "
      "every score lies in [&#8722;1, 1]. The key shares cosine similarity &#961; with the query; "
      "&#949; is a per-position jitter. Pairs are interleaved, (2m, 2m + 1).</p>\n";

  html += "<h2>Metrics</h2>\n" + metrics.html();
  html +=
      "<p>peak: the largest score; nearby: mean score at offsets |j &#8722; i| = 1..3; distant: "
      "mean score at offsets &#8805; 8; concentration = clamp((peak &#8722; distant)/2, 0, 1); "
      "width: the median over query rows of the first offset at which a score on either side "
      "falls below half the row's peak (a row that never falls counts as N); drift: mean "
      "|S[i, j] &#8722; S[i+1, j+1]|, zero exactly when the matrix is Toeplitz.</p>\n";

  html += "<h2>Calibration</h2>\n" + calibration.html();
  html +=
      "<p>The expected regimes are assigned by the reader from the construction (how fast "
      "the pairs decorrelate across the window); they are not measured from a trained "
      "model. " +
      svg::escape(ordering_text) + "</p>\n";

  html += "<h2>Score matrices</h2>\n";
  for (std::size_t k = 0; k < configs.size(); ++k) {
    std::string description;
    for (const auto& p : rotary_fields::presets()) {
      if (p.config.name == configs[k].name) description = " (" + svg::escape(p.description) + ")";
    }
    html += "<figure>\n" + heat_map_svg(configs[k], matrices[k]) + "<figcaption>" +
            svg::escape(configs[k].name) + description + ": base " + svg::num(configs[k].base) +
            ", " + std::to_string(configs[k].pairs) +
            " pairs, N = " + std::to_string(configs[k].len) +
            (configs[k].position_scale != 1.0
                 ? ", positions divided by " + svg::num(configs[k].position_scale, 4)
                 : std::string()) +
            (configs[k].len > 128
                 ? ", every " + std::to_string((configs[k].len + 127) / 128) + "th position drawn"
                 : std::string()) +
            ". Constant colour along each diagonal is the relative-position property; the "
            "jitter &#949; breaks it slightly.</figcaption>\n</figure>\n";
  }

  html += "<h2>Frequency ladder</h2>\n<figure>\n" + ladder_svg(configs) +
          "<figcaption>One line per rotary pair, from 1 token to its period 2&#960;/&#969;"
          "<sub>m</sub>. A pair whose line ends left of the dashed marker turns fully within "
          "the sequence; when every line ends there, the positions wrap around.</figcaption>\n"
          "</figure>\n";

  html += "<h2>The neural cousin: theta phase precession</h2>\n<figure>\n" +
          precession_svg(precession, spikes, fit) +
          "<figcaption>A place cell fires at ever earlier phases of the theta rhythm as the "
          "animal crosses its field, about 360&#176; in all (O'Keefe and Recce 1993). " +
          std::to_string(spikes.size()) +
          " spikes from a Gaussian rate profile (&#963; = " + svg::num(precession.field_sigma) +
          " field) with phase noise " + svg::num(precession.noise_deg) +
          "&#176;; the circular-linear regression (Kempter "
          "et al. 2012) recovers " +
          svg::num(fit.slope_deg, 4) + "&#176; per field.</figcaption>\n</figure>\n<figure>\n" +
          rate_by_phase_svg(precession, spikes) +
          "<figcaption>Spikes by theta phase over one pass through the field.</figcaption>\n"
          "</figure>\n";

  html += "<h2>Grid-like interference (the contested part)</h2>\n<figure>\n" + grid_svg(grid) +
          "<figcaption>The sum of three planar cosine waves whose directions are 60&#176; apart "
          "peaks on a hexagonal lattice, like a grid cell's firing map; rotating the plane by "
          "60&#176; maps the pattern onto itself. Oscillatory-interference models of grid cells "
          "(Burgess et al. 2007) are contested: continuous-attractor network models explain "
          "the same maps without interfering oscillators, so this panel is the weakest link of "
          "the analogy.</figcaption>\n</figure>\n";

  html +=
      "<h2>What is exact, what is analogy</h2>\n<ul>\n"
      "<li>Exact: with the same content at every position the score depends on j &#8722; i "
      "only (the matrix is Toeplitz; drift is zero to rounding), because rotations compose: "
      "R(i)<sup>T</sup> R(j) = R(j &#8722; i).</li>\n"
      "<li>Exact: every metric above is a stated formula over the printed matrix, and each "
      "pair's period 2&#960;/&#969;<sub>m</sub> fixes when it wraps around.</li>\n"
      "<li>Analogy: a place cell's theta phase and a rotary pair's angle both encode position "
      "as a phase that advances with distance, and both wrap after 360&#176;. The brain reads "
      "phase against a shared theta rhythm; RoPE never reads a phase alone, only the angle "
      "difference between a query and a key inside a dot product.</li>\n"
      "<li>Analogy, contested: RoPE's many frequencies resemble grid modules of different "
      "spacings, and interference of oscillations is one model of how grid cells arise; it is "
      "not the settled account.</li>\n"
      "<li>Not claimed: the calibration regimes are reader-assigned expectations, not "
      "measurements of a trained model; the content vectors are random, not learned.</li>\n"
      "</ul>\n</body>\n</html>\n";
  return html;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_options(argc, argv);
    if (options.json) {
      const auto view = rotary_fields::compute_view(options.settings);
      std::printf("%s\n", rotary_fields::view_json(view, false).c_str());
      return 0;
    }

    std::vector<Eigen::MatrixXd> matrices;
    std::vector<FieldMetrics> metrics;
    for (const FieldConfig& config : options.configs) {
      matrices.push_back(rotary_fields::score_matrix(config));
      metrics.push_back(rotary_fields::field_metrics(matrices.back()));
    }
    const Table metrics_rows = metrics_table(options.configs, metrics);
    std::printf(
        "Metrics (scores in [-1, 1]; offsets |j - i|; width: median over rows, a row that "
        "never falls below half its peak counts as N)\n");
    metrics_rows.print();

    const auto calibration = rotary_fields::calibrate();
    const Table calibration_rows = calibration_table(calibration);
    std::printf(
        "\nCalibration: expected concentration regimes are reader-assigned, not measured\n"
        "from a trained model\n");
    calibration_rows.print();

    const rotary_fields::OrderingCheck ordering = rotary_fields::check_ordering();
    const bool ordered = ordering.holds;
    const int seed_count = ordering.seed_count;
    const int seeds_ordered = ordering.seeds_holding;
    const std::string ordering_text =
        std::string("Ordering short-context > baseline > long-range (concentration): ") +
        (ordered ? "holds" : "FAILS") + "; with seeds 1.." + std::to_string(seed_count) +
        " in place of the presets' seed it holds for " + std::to_string(seeds_ordered) + " of " +
        std::to_string(seed_count) + ".";
    std::printf("%s\n", ordering_text.c_str());

    const rotary_fields::PrecessionConfig& precession = options.settings.precession;
    const auto spikes = rotary_fields::generate_spikes(precession);
    const auto fit = rotary_fields::fit_circular_linear(spikes);
    std::printf(
        "\nPhase precession: %zu spikes, model slope %.1f deg/field, noise %.1f deg; "
        "circular-linear fit %.1f deg/field (R = %.3f)\n",
        spikes.size(), precession.slope_deg, precession.noise_deg, fit.slope_deg,
        fit.resultant_length);

    if (!options.report_path.empty()) {
      svg::write_file(options.report_path,
                      report_html(options.configs, matrices, metrics_rows, calibration_rows,
                                  ordering_text, precession, spikes, fit, options.settings.grid));
      std::printf("report: %s\n", options.report_path.c_str());
    }
    return ordered ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rotary_fields: %s\n", e.what());
    return 2;
  }
}
