// posemb version: the one place it is defined. CMakeLists.txt and pyproject.toml (the wheel's
// metadata, through scikit-build-core's regex provider) parse the three lines below.
#pragma once

#define POSEMB_VERSION_MAJOR 0
#define POSEMB_VERSION_MINOR 2
#define POSEMB_VERSION_PATCH 0

#define POSEMB_VERSION_TEXT_(x) #x
#define POSEMB_VERSION_TEXT(x) POSEMB_VERSION_TEXT_(x)

namespace posemb {
// "MAJOR.MINOR.PATCH", spelled from the three numbers above.
inline constexpr const char* version_string =
    POSEMB_VERSION_TEXT(POSEMB_VERSION_MAJOR) "." POSEMB_VERSION_TEXT(
        POSEMB_VERSION_MINOR) "." POSEMB_VERSION_TEXT(POSEMB_VERSION_PATCH);
}  // namespace posemb
