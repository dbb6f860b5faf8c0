// posemb/mrope_positions.hpp is now posemb/rotary/mrope_positions.hpp; this path keeps existing
// includes compiling.
#pragma once
#include "posemb/rotary/mrope_positions.hpp"
