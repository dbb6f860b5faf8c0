// posemb/absolute.hpp is now posemb/absolute/absolute.hpp; this path keeps existing includes
// compiling.
#pragma once
#include "posemb/absolute/absolute.hpp"
