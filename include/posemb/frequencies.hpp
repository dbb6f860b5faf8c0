// posemb/frequencies.hpp is now posemb/rotary/frequencies.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/rotary/frequencies.hpp"
