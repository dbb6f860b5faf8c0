// The C API's version functions and the thread-local message of the last failed call.
#include <string>

#include "boundary.hpp"
#include "posemb/version.hpp"

namespace posemb::c_api {

std::string& last_message() {
  thread_local std::string message;
  return message;
}

}  // namespace posemb::c_api

#define POSEMB_C_STRINGIFY2(x) #x
#define POSEMB_C_STRINGIFY(x) POSEMB_C_STRINGIFY2(x)

extern "C" {

uint32_t posemb_abi_version(void) {
  return (static_cast<uint32_t>(POSEMB_C_ABI_MAJOR) << 16) | POSEMB_C_ABI_MINOR;
}

const char* posemb_version_string(void) {
  return POSEMB_C_STRINGIFY(POSEMB_VERSION_MAJOR) "." POSEMB_C_STRINGIFY(
      POSEMB_VERSION_MINOR) "." POSEMB_C_STRINGIFY(POSEMB_VERSION_PATCH);
}

const char* posemb_last_error(void) { return posemb::c_api::last_message().c_str(); }

}  // extern "C"
