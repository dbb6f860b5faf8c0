// posemb/mrope.hpp is now posemb/rotary/mrope.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/mrope.hpp"
