// The WebAssembly entry points of the Rotary Fields page (index.html): the page passes its
// settings as "name=value" lines, and reads back the JSON of rotary_fields_view.hpp, the same
// code the native example runs with --json.

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "rotary_fields_view.hpp"

namespace {

std::string result;  // the last answer, valid until the next call

// "name=value" lines: [(name, value)]
std::vector<std::pair<std::string, std::string>> parse_lines(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> settings;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (!line.empty()) {
      const std::size_t equals = line.find('=');
      if (equals == std::string::npos) posemb::fail("setting", line, "expected name=value");
      settings.emplace_back(line.substr(0, equals), line.substr(equals + 1));
    }
    start = end + 1;
  }
  return settings;
}

}  // namespace

extern "C" {

// The view for the settings, with everything the panels in `parts` (a rotary_fields::Part
// mask) draw, or {"error": ..., "setting": ...}. Every setting is checked, whatever the parts.
const char* rotary_fields_view(const char* settings, unsigned parts) {
  try {
    const auto view = rotary_fields::compute_view(
        rotary_fields::parse_view_settings(parse_lines(settings)), parts);
    result = rotary_fields::view_json(view, true);
  } catch (const std::exception& e) {
    result = rotary_fields::error_json(e.what());
  }
  return result.c_str();
}

// The presets, their calibration and the ordering check.
const char* rotary_fields_presets() {
  try {
    result = rotary_fields::presets_json();
  } catch (const std::exception& e) {
    result = rotary_fields::error_json(e.what());
  }
  return result.c_str();
}

}  // extern "C"
