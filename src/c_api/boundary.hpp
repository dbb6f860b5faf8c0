// The C API's boundary: the one choke point that turns every C++ outcome into a posemb_status
// and the calling thread's message, and the argument checks every entry point shares (each
// throws posemb::Error naming the parameter, so the message has posemb's form).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <string>

#include "posemb/c/posemb.h"
#include "posemb/error.hpp"

namespace posemb::c_api {

// The calling thread's message of its last failed call ("" before any).
std::string& last_message();

// Runs body(); POSEMB_OK, or the status and message of what it threw. Nothing escapes.
template <class Body>
posemb_status guarded(Body&& body) noexcept {
  try {
    body();
    return POSEMB_OK;
  } catch (const Error& error) {
    last_message() = error.what();
    return POSEMB_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    last_message() = "posemb: out of memory";
    return POSEMB_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& error) {
    last_message() = std::string("posemb: internal error: ") + error.what();
    return POSEMB_ERROR_INTERNAL;
  } catch (...) {
    last_message() = "posemb: internal error: an unknown exception";
    return POSEMB_ERROR_INTERNAL;
  }
}

// Throws unless pointer is non-NULL; `what` says what it should point to.
template <class P>
P* require_pointer(P* pointer, const char* name, const char* what) {
  if (pointer == nullptr) detail::fail(name, "NULL", std::string("expected ") + what);
  return pointer;
}

// Throws unless 1 <= value.
inline void require_count(const char* name, std::int64_t value) {
  if (value < 1) detail::fail(name, value, "expected a number >= 1");
}

// a * b, or throws when it exceeds int64 (and so any buffer this process can hold).
inline std::int64_t checked_product(std::int64_t a, std::int64_t b, const char* name) {
  if (a != 0 && b > std::numeric_limits<std::int64_t>::max() / a) {
    detail::fail(name, std::to_string(a) + " * " + std::to_string(b),
                 "expected an element count that fits in int64");
  }
  return a * b;
}

// Throws unless size_t `value` fits in int64.
inline std::int64_t as_int64(const char* name, std::size_t value) {
  if (value > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())) {
    detail::fail(name, value, "expected a count that fits in int64");
  }
  return static_cast<std::int64_t>(value);
}

}  // namespace posemb::c_api
