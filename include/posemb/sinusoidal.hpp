// posemb/sinusoidal.hpp is now posemb/absolute/sinusoidal.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/absolute/sinusoidal.hpp"
