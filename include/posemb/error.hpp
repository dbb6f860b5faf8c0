// posemb::Error: the one exception type for bad input, and the checks that throw it.
#pragma once

#include <cmath>
#include <cstddef>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace posemb {

// Thrown for any invalid argument. The message names the parameter, the value received and
// what was expected, e.g. "posemb: rotary_dim = 7: expected an even number >= 2". Code that
// knows where the value came from adds that on the way out, without rewriting the text:
//   add_context("config.json")   puts a place in front: "posemb: config.json: rotary_dim = 7: ..."
//   qualify("rope_scaling.")     puts a key path before the parameter: "rope_scaling.sigma = -1:
//   ..."
//
// Example:
//   try {
//     model = posemb::load_model_positions("config.json");
//   } catch (const posemb::Error& error) {
//     std::cerr << error.what() << "\n";  // posemb: config.json: rope_scaling.factor: missing; ...
//   }
class Error : public std::invalid_argument {
 public:
  // A message without a parameter of its own.
  explicit Error(const std::string& message) : Error(std::string(), message) {}
  // "parameter<rest>", e.g. parameter "rotary_dim" and rest " = 7: expected an even number".
  Error(std::string parameter, std::string rest)
      : std::invalid_argument(parameter + rest),
        parameter_(std::move(parameter)),
        rest_(std::move(rest)) {
    update();
  }

  // The parameter the message names ("" if none), with the key path given by qualify().
  const std::string& parameter() const { return parameter_; }
  // Where the error happened, outermost first (e.g. {"config.json", "rope_scaling"}).
  const std::vector<std::string>& context() const { return context_; }
  // The full message without the "posemb: " prefix.
  std::string message() const { return text_.substr(prefix_length); }

  // Puts `where` in front of the current context (call it on the way out, innermost first).
  Error& add_context(const std::string& where) {
    context_.insert(context_.begin(), where);
    update();
    return *this;
  }
  // Puts a key path in front of the parameter name ("rope_scaling." + "sigma"); a message
  // without a parameter gets the path as context instead.
  Error& qualify(const std::string& key_path) {
    if (!parameter_.empty()) {
      parameter_ = key_path + parameter_;
      update();
    } else if (!key_path.empty() && key_path.back() == '.') {
      add_context(key_path.substr(0, key_path.size() - 1));
    } else {
      add_context(key_path);
    }
    return *this;
  }

  // Names the parameter by the key that held its value ("num_buckets" ->
  // "relative_attention_num_buckets").
  Error& rename_parameter(const std::string& name) {
    parameter_ = name;
    update();
    return *this;
  }

  const char* what() const noexcept override { return text_.c_str(); }

 private:
  static constexpr std::size_t prefix_length = 8;  // "posemb: "

  void update() {
    text_ = "posemb: ";
    for (const std::string& place : context_) text_ += place + ": ";
    text_ += parameter_ + rest_;
  }

  std::string parameter_;
  std::string rest_;
  std::vector<std::string> context_;
  std::string text_;
};

// The checks posemb's functions make, public so that code around posemb (the examples, a model's
// own loader) reports its bad input the same way.

// Throws Error "name = value: expected".
template <class Value>
[[noreturn]] void fail(const std::string& name, const Value& value, const std::string& expected) {
  std::ostringstream rest;
  rest.precision(17);
  rest << " = " << value << ": " << expected;
  throw Error(name, rest.str());
}

inline void require_positive_finite(const std::string& name, double value) {
  if (!(std::isfinite(value) && value > 0.0)) fail(name, value, "expected a finite number > 0");
}

inline void require_even_positive(const std::string& name, long long value) {
  if (value < 2 || value % 2 != 0) fail(name, value, "expected an even number >= 2");
}

inline void require_positive(const std::string& name, long long value) {
  if (value <= 0) fail(name, value, "expected a number > 0");
}

namespace detail {

using posemb::fail;
using posemb::require_even_positive;
using posemb::require_positive;
using posemb::require_positive_finite;

// Runs allocate() for an array of `elements` values of `element_bytes` each, sized by the
// caller's parameter `name` = `value`: a size past what an index can hold, or an allocation that
// fails (std::bad_alloc), is a posemb::Error naming the parameter and the bytes asked for.
template <class Allocate>
void allocate_sized(const std::string& name, long long value, long double elements,
                    std::size_t element_bytes, Allocate&& allocate) {
  const long double bytes = elements * static_cast<long double>(element_bytes);
  std::ostringstream need;
  need.precision(4);
  need << "a table of " << bytes << " bytes";
  if (elements > 9.0e18L || bytes > 9.0e18L) {
    fail(name, value, "expected a size whose " + need.str() + " can be indexed");
  }
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    fail(name, value, "expected a size whose " + need.str() + " can be allocated (it cannot)");
  }
}

}  // namespace detail
}  // namespace posemb
