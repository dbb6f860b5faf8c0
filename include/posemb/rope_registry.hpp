// posemb/rope_registry.hpp is now posemb/model/rope_registry.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/model/rope_registry.hpp"
