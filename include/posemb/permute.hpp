// posemb/permute.hpp is now posemb/rotary/permute.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/permute.hpp"
