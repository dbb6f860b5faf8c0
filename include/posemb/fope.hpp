// posemb/fope.hpp is now posemb/rotary/fope.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/fope.hpp"
