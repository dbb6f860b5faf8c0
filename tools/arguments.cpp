// The posemb tool's arguments (arguments.hpp).
#include "arguments.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace posemb::tool {

std::string full_precision(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string fixed(double value, int decimals) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  return out.str();
}

// ---------------------------------------------------------------------------------------------
// Numeric options. The text is checked here rather than by CLI11, so that every mistake (out of
// range, not a number, not an integer) gets one line in the tool's form
// "--seq-len = -5: expected an integer >= 1" and exit status 2.

namespace {

template <class Int>
std::string integer_expectation(Int min, Int max) {
  constexpr Int lowest = std::numeric_limits<Int>::min(), highest = std::numeric_limits<Int>::max();
  if (min == lowest && max == highest) {
    return "expected an integer from " + std::to_string(lowest) + " to " + std::to_string(highest);
  }
  if (max == highest) return "expected an integer >= " + std::to_string(min);
  return "expected an integer from " + std::to_string(min) + " to " + std::to_string(max);
}

template <class Int>
Int parse_integer(const std::string& flag, const std::string& text, Int min, Int max) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < min || value > max) {
    throw UsageError(flag + " = " + text + ": " + integer_expectation(min, max));
  }
  return value;
}

double parse_positive_number(const std::string& flag, const std::string& text) {
  char* stop = nullptr;
  const double value = text.empty() ? 0.0 : std::strtod(text.c_str(), &stop);
  if (text.empty() || stop != text.c_str() + text.size() || !std::isfinite(value) ||
      !(value > 0.0)) {
    throw UsageError(flag + " = " + text + ": expected a finite number > 0");
  }
  return value;
}

// Target: Int or std::optional<Int>.
template <class Int, class Target>
CLI::Option* add_integer_option(CLI::App* app, const std::string& flag, Target& target, Int min,
                                Int max, const std::string& description) {
  const std::string range = integer_expectation(min, max).substr(std::string("expected ").size());
  CLI::Option* option = app->add_option(
      flag,
      [flag, &target, min, max](const CLI::results_t& values) {
        target = parse_integer<Int>(flag, values.back(), min, max);
        return true;
      },
      description + " (" + range + ")");
  option->type_name("INT");
  return option;
}

}  // namespace

CLI::Option* add_integer(CLI::App* app, const std::string& flag, std::int64_t& target,
                         std::int64_t min, std::int64_t max, const std::string& description) {
  return add_integer_option(app, flag, target, min, max, description);
}
CLI::Option* add_integer(CLI::App* app, const std::string& flag,
                         std::optional<std::int64_t>& target, std::int64_t min, std::int64_t max,
                         const std::string& description) {
  return add_integer_option(app, flag, target, min, max, description);
}
CLI::Option* add_integer(CLI::App* app, const std::string& flag, int& target, int min, int max,
                         const std::string& description) {
  return add_integer_option(app, flag, target, min, max, description);
}
CLI::Option* add_integer(CLI::App* app, const std::string& flag, std::optional<int>& target,
                         int min, int max, const std::string& description) {
  return add_integer_option(app, flag, target, min, max, description);
}

CLI::Option* add_positive_number(CLI::App* app, const std::string& flag, double& target,
                                 const std::string& description) {
  CLI::Option* option = app->add_option(
      flag,
      [flag, &target](const CLI::results_t& values) {
        target = parse_positive_number(flag, values.back());
        return true;
      },
      description + " (a finite number > 0; default " + full_precision(target) + ")");
  option->type_name("FLOAT");
  return option;
}

void add_config_argument(CLI::App* app, std::string& config_path) {
  app->add_option("CONFIG", config_path, "The model's config.json")->required();
}

void add_strict_flag(CLI::App* app, bool& strict) {
  app->add_flag("--strict", strict,
                "Refuse a config with keys of its rope block or position-related keys that the "
                "reader does not use (exit status 2; `inspect` lists them)");
}

ModelPositions load_config(const std::string& config_path, bool strict) {
  ModelPositions model = load_model_positions(config_path);
  if (strict && !model.unused_keys.empty()) {
    throw UsageError(config_path + ": --strict: " + model.unused_keys.front() + " is not used" +
                     (model.unused_keys.size() > 1
                          ? " (and " + std::to_string(model.unused_keys.size() - 1) + " more)"
                          : ""));
  }
  return model;
}

void add_seq_len_option(CLI::App* app, std::optional<std::int64_t>& seq_len,
                        const std::string& when_absent) {
  add_integer(app, "--seq-len", seq_len, std::int64_t{1}, int64_max,
              "Sequence length for dynamic NTK and LongRoPE (" + when_absent + ")");
}

void check_layer(std::optional<std::int64_t> layer, std::size_t layer_count,
                 const std::string& config_path) {
  if (layer && (*layer < 0 || *layer >= static_cast<std::int64_t>(layer_count))) {
    throw UsageError("--layer = " + std::to_string(*layer) + ": expected a layer in [0, " +
                     std::to_string(layer_count) + ") for " + config_path);
  }
}

// ---------------------------------------------------------------------------------------------
// Names

TensorLayout layout_named(const std::string& name) {
  return name == "bshd" ? TensorLayout::BSHD : TensorLayout::BHSD;
}

const char* layout_axes(TensorLayout layout) {
  return layout == TensorLayout::BSHD ? "[batch, seq, heads, head_dim]"
                                      : "[batch, heads, seq, head_dim]";
}

Pairing pairing_named(const std::string& name) {
  return name == "interleaved" ? Pairing::Interleaved : Pairing::RotateHalf;
}

// ---------------------------------------------------------------------------------------------
// Positions

std::int64_t sequence_length(std::optional<std::int64_t> seq_len, double max_position) {
  if (seq_len) return *seq_len;
  const double whole = std::ceil(max_position);
  return whole >= 9.2e18 ? int64_max : static_cast<std::int64_t>(std::max(whole, -1.0)) + 1;
}

void QueryKeyOptions::add_to(CLI::App* app, std::int64_t min_offset) {
  add_integer(app, "--q-len", q_len, std::int64_t{1}, int64_max, "Number of queries")->required();
  add_integer(app, "--k-len", k_len, std::int64_t{1}, int64_max,
              "Number of keys (positions 0..k_len-1)")
      ->required();
  add_integer(app, "--q-offset", q_offset, min_offset, int64_max,
              "Position of the first query (default k_len - q_len: the last q_len keys)");
}

std::int64_t QueryKeyOptions::query_offset() const {
  const std::int64_t offset = q_offset.value_or(k_len - q_len);
  if (offset > int64_max - (q_len - 1)) {
    throw UsageError("--q-offset = " + std::to_string(offset) +
                     ": expected q_offset + q_len - 1 to fit in int64");
  }
  return offset;
}

void QueryKeyOptions::check_size(std::optional<std::int64_t> heads) const {
  // q_len * k_len <= 2^28 first, so that heads (< 2^31) * q_len * k_len cannot overflow.
  if (q_len <= max_output_elements / k_len &&
      heads.value_or(1) * q_len * k_len <= max_output_elements) {
    return;
  }
  throw UsageError(std::string(heads ? "heads * " : "") + "--q-len * --k-len = " +
                   (heads ? std::to_string(*heads) + " * " : "") + std::to_string(q_len) + " * " +
                   std::to_string(k_len) + ": expected at most 2^28 elements");
}

PositionVector QueryKeyOptions::query_positions() const {
  const std::int64_t offset = query_offset();
  PositionVector positions(q_len);
  for (std::int64_t i = 0; i < q_len; ++i) positions[i] = offset + i;
  return positions;
}

PositionVector QueryKeyOptions::key_positions() const {
  PositionVector positions(k_len);
  for (std::int64_t j = 0; j < k_len; ++j) positions[j] = j;
  return positions;
}

// ---------------------------------------------------------------------------------------------
// Errors

void rethrow_as_flag(const Error& error, const std::string& parameter, const std::string& flag) {
  const std::string message = error.what();
  const std::string prefix = "posemb: " + parameter + " = ";
  if (message.compare(0, prefix.size(), prefix) == 0) {
    throw UsageError(flag + " = " + message.substr(prefix.size()));
  }
  throw error;
}

}  // namespace posemb::tool
