// posemb::Error: the one exception type for bad input, and the checks that throw it.
#pragma once

#include <cmath>
#include <cstddef>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace posemb {

// Thrown for any invalid argument. The message names the parameter, the value received and
// what was expected, e.g. "posemb: rotary_dim = 7: expected an even number >= 2".
class Error : public std::invalid_argument {
 public:
  explicit Error(const std::string& message) : std::invalid_argument("posemb: " + message) {}
};

namespace detail {

// Builds "name = value: expectation" for an Error message.
template <class Value>
std::string describe(const std::string& name, const Value& value, const std::string& expected) {
  std::ostringstream out;
  out.precision(17);
  out << name << " = " << value << ": " << expected;
  return out.str();
}

template <class Value>
[[noreturn]] void fail(const std::string& name, const Value& value, const std::string& expected) {
  throw Error(describe(name, value, expected));
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
