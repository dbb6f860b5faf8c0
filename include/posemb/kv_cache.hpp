// posemb/kv_cache.hpp is now posemb/rotary/kv_cache.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/rotary/kv_cache.hpp"
