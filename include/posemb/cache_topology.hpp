// posemb/cache_topology.hpp is now posemb/machine/cache_topology.hpp; this path keeps existing
// includes compiling.
#pragma once
#include "posemb/machine/cache_topology.hpp"
