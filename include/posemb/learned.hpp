// posemb/learned.hpp is now posemb/absolute/learned.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/absolute/learned.hpp"
