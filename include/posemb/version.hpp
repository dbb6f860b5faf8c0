// posemb version: the one place it is defined (CMakeLists.txt parses these lines).
#pragma once

#define POSEMB_VERSION_MAJOR 0
#define POSEMB_VERSION_MINOR 1
#define POSEMB_VERSION_PATCH 0

namespace posemb {
inline constexpr const char* version_string = "0.1.0";
}  // namespace posemb
