// A tiny SVG writer shared by the examples: a Picture of shapes and text, a Frame that maps
// data to pixels and draws axes, a line chart, and a diverging colour scale. The output is
// well-formed XML, so it can stand alone in a .svg file or sit inline in an XHTML page.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "posemb/error.hpp"

namespace svg {

// Text with the five XML special characters escaped.
inline std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A number as printf("%.*g").
inline std::string num(double value, int digits = 6) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
  return buffer;
}

// A pixel coordinate, two decimals.
inline std::string px(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

// Blue (-1) through white (0) to red (+1); values outside [-1, 1] are clamped.
inline std::string diverging_colour(double value) {
  const double v = std::clamp(value, -1.0, 1.0);
  const double t = std::abs(v);
  // Interpolate from white to #2166ac (negative) or #b2182b (positive).
  const int r = v < 0 ? 255 - static_cast<int>(std::lround(t * (255 - 33)))
                      : 255 - static_cast<int>(std::lround(t * (255 - 178)));
  const int g = v < 0 ? 255 - static_cast<int>(std::lround(t * (255 - 102)))
                      : 255 - static_cast<int>(std::lround(t * (255 - 24)));
  const int b = v < 0 ? 255 - static_cast<int>(std::lround(t * (255 - 172)))
                      : 255 - static_cast<int>(std::lround(t * (255 - 43)));
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "#%02x%02x%02x", r, g, b);
  return buffer;
}

// Series colours, cycled.
inline const char* series_colour(std::size_t index) {
  static const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};
  return colours[index % 5];
}

// One <svg> element, built shape by shape. Coordinates are pixels, y pointing down.
class Picture {
 public:
  // crisp_edges: draw shapes without anti-aliasing (for heat maps made of abutting cells).
  Picture(double width, double height, const std::string& title, bool crisp_edges = false)
      : width_(width), height_(height), title_(title), crisp_edges_(crisp_edges) {}

  double width() const { return width_; }
  double height() const { return height_; }

  void rect(double x, double y, double w, double h, const std::string& fill,
            const std::string& stroke = "none") {
    body_ += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" +
             px(h) + "\" fill=\"" + fill + "\" stroke=\"" + stroke + "\"/>\n";
  }

  void line(double x1, double y1, double x2, double y2, const std::string& stroke,
            double stroke_width = 1.0, const std::string& dash = "") {
    body_ += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" +
             px(y2) + "\" stroke=\"" + stroke + "\" stroke-width=\"" + num(stroke_width) + "\"" +
             (dash.empty() ? "" : " stroke-dasharray=\"" + dash + "\"") + "/>\n";
  }

  // points: pixel (x, y) pairs.
  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke,
                double stroke_width = 1.5) {
    body_ += "<polyline fill=\"none\" stroke=\"" + stroke + "\" stroke-width=\"" +
             num(stroke_width) + "\" points=\"";
    for (const auto& [x, y] : points) body_ += px(x) + "," + px(y) + " ";
    body_ += "\"/>\n";
  }

  void circle(double cx, double cy, double r, const std::string& fill, double opacity = 1.0) {
    body_ += "<circle cx=\"" + px(cx) + "\" cy=\"" + px(cy) + "\" r=\"" + px(r) + "\" fill=\"" +
             fill + "\" fill-opacity=\"" + num(opacity) + "\"/>\n";
  }

  // anchor: "start", "middle" or "end"; rotate: degrees about (x, y).
  void text(double x, double y, const std::string& content, double size = 12.0,
            const std::string& anchor = "start", double rotate = 0.0) {
    body_ +=
        "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" font-size=\"" + num(size) +
        "\" text-anchor=\"" + anchor + "\"" +
        (rotate != 0.0 ? " transform=\"rotate(" + num(rotate) + " " + px(x) + " " + px(y) + ")\""
                       : "") +
        ">" + escape(content) + "</text>\n";
  }

  // The <svg> element (with its namespace, so it is valid both inline and standalone).
  std::string str() const {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(width_) + "\" height=\"" +
           px(height_) + "\" viewBox=\"0 0 " + px(width_) + " " + px(height_) +
           "\" font-family=\"sans-serif\"" +
           (crisp_edges_ ? " shape-rendering=\"crispEdges\"" : "") + ">\n<title>" + escape(title_) +
           "</title>\n" + "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body_ +
           "</svg>\n";
  }

 private:
  double width_, height_;
  std::string title_;
  bool crisp_edges_;
  std::string body_;
};

// About `target` round tick values (steps of 1, 2 or 5 times a power of ten) covering [lo, hi].
// Each tick is an integer times 10^e, formed as (integer / 10^-e) for e < 0 so that, e.g., 0.6
// is the double nearest 0.6.
inline std::vector<double> nice_ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  const double raw = (hi - lo) / target;
  const int exponent = static_cast<int>(std::floor(std::log10(raw)));
  const double fraction = raw / std::pow(10.0, exponent);
  const long long unit = fraction < 1.5 ? 1 : fraction < 3.5 ? 2 : fraction < 7.5 ? 5 : 10;
  auto value = [&](long long n) {
    return exponent < 0 ? static_cast<double>(n * unit) / std::pow(10.0, -exponent)
                        : static_cast<double>(n * unit) * std::pow(10.0, exponent);
  };
  const double step = value(1);
  std::vector<double> ticks;
  for (auto n = static_cast<long long>(std::ceil(lo / step - 1e-9)); value(n) <= hi + 1e-9 * step;
       ++n) {
    ticks.push_back(value(n));
  }
  return ticks;
}

// A plotting area: data range [x_lo, x_hi] x [y_lo, y_hi] drawn into the pixel rectangle
// (left, top, width, height) of a Picture.
struct Frame {
  double x_lo, x_hi, y_lo, y_hi;
  double left, top, width, height;

  double x(double value) const { return left + (value - x_lo) / (x_hi - x_lo) * width; }
  double y(double value) const { return top + (y_hi - value) / (y_hi - y_lo) * height; }

  // Box, tick marks with labels and axis titles. Tick labels default to the tick values.
  void draw_axes(Picture& picture, const std::string& x_label, const std::string& y_label,
                 std::vector<double> x_ticks = {}, std::vector<double> y_ticks = {},
                 const std::vector<std::string>& x_tick_labels = {}) const {
    if (x_ticks.empty()) x_ticks = nice_ticks(x_lo, x_hi);
    if (y_ticks.empty()) y_ticks = nice_ticks(y_lo, y_hi);
    picture.rect(left, top, width, height, "none", "#444444");
    for (std::size_t i = 0; i < x_ticks.size(); ++i) {
      const double tx = x(x_ticks[i]);
      picture.line(tx, top + height, tx, top + height + 4, "#444444");
      picture.text(tx, top + height + 16,
                   i < x_tick_labels.size() ? x_tick_labels[i] : num(x_ticks[i], 4), 11, "middle");
    }
    for (double t : y_ticks) {
      const double ty = y(t);
      picture.line(left - 4, ty, left, ty, "#444444");
      picture.line(left, ty, left + width, ty, "#e4e4e4");
      picture.text(left - 6, ty + 4, num(t, 4), 11, "end");
    }
    picture.text(left + width / 2, top + height + 34, x_label, 12, "middle");
    picture.text(left - 48, top + height / 2, y_label, 12, "middle", -90);
  }
};

struct Series {
  std::string name;
  std::vector<double> values;  // one per x value
};

// A line chart of each series against x, with axes and a legend.
// x: [n]; every series.values: [n].
inline std::string line_chart(const std::string& title, const std::string& x_label,
                              const std::string& y_label, const std::vector<double>& x,
                              const std::vector<Series>& series, double width = 760.0,
                              double height = 380.0) {
  if (x.size() < 2) posemb::fail("x.size()", x.size(), "expected >= 2 points");
  if (series.empty()) posemb::fail("series.size()", 0, "expected >= 1 series");
  double y_lo = series[0].values.empty() ? 0.0 : series[0].values[0], y_hi = y_lo;
  for (const Series& s : series) {
    if (s.values.size() != x.size()) {
      posemb::fail("series \"" + s.name + "\" size", s.values.size(),
                   "expected one value per x = " + std::to_string(x.size()));
    }
    for (double v : s.values) {
      if (!std::isfinite(v)) posemb::fail("series \"" + s.name + "\" value", v, "expected finite");
      y_lo = std::min(y_lo, v);
      y_hi = std::max(y_hi, v);
    }
  }
  const double pad = y_hi > y_lo ? 0.05 * (y_hi - y_lo) : 1.0;
  const auto [x_min, x_max] = std::minmax_element(x.begin(), x.end());
  Frame frame{*x_min, *x_max, y_lo - pad, y_hi + pad, 70.0, 36.0, width - 90.0, height - 86.0};
  if (!(frame.x_hi > frame.x_lo)) posemb::fail("x range", frame.x_hi, "expected distinct x values");
  Picture picture(width, height, title);
  picture.text(width / 2, 22, title, 14, "middle");
  frame.draw_axes(picture, x_label, y_label);
  std::size_t longest_name = 0;
  for (const Series& s : series) longest_name = std::max(longest_name, s.name.size());
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::vector<std::pair<double, double>> points;
    points.reserve(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      points.emplace_back(frame.x(x[i]), frame.y(series[k].values[i]));
    }
    picture.polyline(points, series_colour(k));
  }
  // Legend on a white box above the lines.
  picture.rect(frame.left + 4, frame.top + 4, 44 + 7.0 * static_cast<double>(longest_name),
               8 + 16 * static_cast<double>(series.size()), "white", "#bbbbbb");
  for (std::size_t k = 0; k < series.size(); ++k) {
    const double ly = frame.top + 16 + 16 * static_cast<double>(k);
    picture.line(frame.left + 10, ly - 4, frame.left + 34, ly - 4, series_colour(k), 2.5);
    picture.text(frame.left + 40, ly, series[k].name, 12);
  }
  return picture.str();
}

// Writes text to path; throws posemb::Error naming the path if it cannot.
inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) posemb::fail("path", path, "cannot be opened for writing");
  out << text;
  if (!out.flush()) posemb::fail("path", path, "write failed");
}

// A standalone .svg file holding line_chart(title, x_label, y_label, x, series).
inline void write_line_chart_svg(const std::string& path, const std::string& title,
                                 const std::string& x_label, const std::string& y_label,
                                 const std::vector<double>& x, const std::vector<Series>& series) {
  write_file(path, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" +
                       line_chart(title, x_label, y_label, x, series));
}

}  // namespace svg
