// posemb/packed.hpp is now posemb/rotary/packed.hpp; this path keeps existing includes compiling.
#pragma once
#include "posemb/rotary/packed.hpp"
