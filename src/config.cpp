// The config.json reader compiled once: the posemb::config library (CMakeLists.txt) builds this
// file with POSEMB_CONFIG_COMPILED, and every translation unit that links it includes
// posemb/model/load.hpp (no nlohmann-json) or posemb/model/config.hpp with the same definition,
// so the headers declare the functions that are defined here.
#ifndef POSEMB_CONFIG_COMPILED
#define POSEMB_CONFIG_COMPILED
#endif

#include "posemb/model/config/reader.hpp"
